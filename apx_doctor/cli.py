"""The command line: options in, a call to the runner, a report out, an exit code.

Exit codes are a contract:
  check  0 no error findings, 1 error findings, 2 usage error, unreadable input or internal error
  fix    0 nothing to change and nothing unfixable, 1 changed (or would change) a file or
         unfixable errors remain, 2 as for check
  rule, show  0 done, 2 usage error or unreadable input

Findings go to stdout; progress, summaries and errors to stderr. Everything
heavy (Rich, the reporters, the configuration) is imported inside commands, so
``apx-doctor --version`` and ``--help`` start fast.
"""

# No ``from __future__ import annotations`` here: Typer reads every command's
# annotations at start-up, and real ones cost it nothing to evaluate.

import os
import sys
import time
from enum import Enum
from typing import List, NoReturn, Optional

import typer

from . import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_TROUBLE = 0, 1, 2

app = typer.Typer(
    name="apx-doctor",
    help="Check recorded agent sessions for tool calls that never got a result, and repair them.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# The registry's format names, in its order (formats.format_names(), which a
# test holds this to): written out, so that the CLI starts without importing
# every adapter; a check imports them only when it has a file to tell.
FORMAT_NAMES = (
    "chat",
    "anthropic",
    "bedrock-converse",
    "gemini-api",
    "responses",
    "claude-code",
    "qwen-code",
    "codex",
    "pi",
    "factory-droid",
    "datasets",
    "copilot-cli",
    "gemini-cli",
    "grok-cli",
    "opencode",
    "kimi",
    "cline",
)

InputFormat = Enum("InputFormat", {name: name for name in ("auto", *FORMAT_NAMES)}, type=str)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"
    github = "github"
    sarif = "sarif"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"apx-doctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    pass


PATHS = typer.Argument(
    None,
    metavar="[PATH]...",
    help="Transcript files, or folders to search for *.jsonl; - reads standard input. "
    "None with --call-id: the agent runtimes' homes (see `apx-doctor sessions`).",
    show_default=False,
)
CALL_ID = typer.Option(
    None,
    "--call-id",
    metavar="ID",
    help="Only the sessions (and findings) that hold this tool call id, e.g. the toolu_… or call_… "
    "a resume error names. Exit 2 if no session holds it.",
)
EXCLUDE = typer.Option(
    None,
    "--exclude",
    metavar="PATTERNS",
    help="Glob patterns (comma-separated, or repeated) of files folder runs leave out; replaces the configured "
    "and default ones (our sidecars and backups, the runtimes' bookkeeping files).",
    show_default=False,
)
EXTEND_EXCLUDE = typer.Option(
    None, "--extend-exclude", metavar="PATTERNS", help="Like --exclude, but added to the patterns in force.", show_default=False
)
FORCE_EXCLUDE = typer.Option(
    None,
    "--force-exclude/--no-force-exclude",
    help="Leave out excluded files even when they are named on the command line (for pre-commit). [default: no]",
    show_default=False,
)
INPUT_FORMAT = typer.Option("auto", "--input-format", help="The transcript format; auto tells it from the first lines.")
OUTPUT_FORMAT = typer.Option(
    None,
    "--output-format",
    help="text for people, json / json-lines for tools, github for workflow annotations, sarif for code scanning. "
    "Default: github under GitHub Actions, text elsewhere.",
    show_default=False,
)
MARKER = typer.Option(
    None, "--marker", help="The text of the not-run record. [default: not run: the turn was interrupted]", show_default=False
)
VERBOSE = typer.Option(False, "--verbose", "-v", help="Name each file as it is done; show a traceback on internal errors.")
QUIET = typer.Option(False, "--quiet", "-q", help="Print findings only, no summary.")
COLOR = typer.Option(Color.auto, "--color", help="Colour the text output (auto honours NO_COLOR and FORCE_COLOR).")
CONFIG = typer.Option(
    None, "--config", metavar="PATH", help="Read [tool.apx-doctor] from this file instead of the nearest pyproject.toml."
)
ISOLATED = typer.Option(False, "--isolated", help="Ignore every configuration file.")
SELECT = typer.Option(
    None, "--select", metavar="CODES", help="Report only these codes or prefixes (comma-separated), e.g. APX001,APX1."
)
IGNORE = typer.Option(None, "--ignore", metavar="CODES", help="Do not report these codes or prefixes (comma-separated).")
JOBS = typer.Option(
    None, "--jobs", "-j", min=1, metavar="N", help="Check files on N processes (default: all cores); the report is the same."
)
SHOW_ALL = typer.Option(False, "--show-all", help="Text output: print every row, not the first rows per file.")
KEEP_OPEN_TAIL = typer.Option(
    False, "--keep-open-tail", help="Leave calls of the last turn open: the file may still be written to."
)


@app.command()
def check(
    paths: List[str] = PATHS,
    input_format: InputFormat = INPUT_FORMAT,
    output_format: Optional[OutputFormat] = OUTPUT_FORMAT,
    marker: Optional[str] = MARKER,
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    config: Optional[str] = CONFIG,
    isolated: bool = ISOLATED,
    select: Optional[str] = SELECT,
    ignore: Optional[str] = IGNORE,
    keep_open_tail: bool = KEEP_OPEN_TAIL,
    jobs: Optional[int] = JOBS,
    show_all: bool = SHOW_ALL,
    call_id: Optional[str] = CALL_ID,
    exclude: Optional[List[str]] = EXCLUDE,
    extend_exclude: Optional[List[str]] = EXTEND_EXCLUDE,
    force_exclude: Optional[bool] = FORCE_EXCLUDE,
) -> None:
    """Report tool calls without results, and other damage. Writes nothing."""
    flags = _Flags(paths or [], input_format.value, output_format, marker, None, color, verbose, quiet, config, isolated, select, ignore)
    flags.keep_open_tail = keep_open_tail
    flags.jobs, flags.show_all = jobs, show_all
    flags.call_id, flags.exclude, flags.extend_exclude, flags.force_exclude = call_id, exclude, extend_exclude, force_exclude
    _run("check", flags, in_place=False, output=None)


@app.command()
def fix(
    paths: List[str] = PATHS,
    in_place: bool = typer.Option(False, "--in-place", "-i", help="Write each repaired file back, atomically."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Write the repaired transcript of one input here (- for stdout)."
    ),
    drop_orphans: Optional[bool] = typer.Option(
        None,
        "--drop-orphans/--no-drop-orphans",
        help="Also remove results that answer no call, duplicates and late results. [default: no]",
        show_default=False,
    ),
    input_format: InputFormat = INPUT_FORMAT,
    output_format: Optional[OutputFormat] = OUTPUT_FORMAT,
    marker: Optional[str] = MARKER,
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    config: Optional[str] = CONFIG,
    isolated: bool = ISOLATED,
    select: Optional[str] = SELECT,
    ignore: Optional[str] = IGNORE,
    keep_open_tail: bool = KEEP_OPEN_TAIL,
    salvage: bool = typer.Option(
        False, "--salvage", help="Move unparseable lines to <file>.rejected.jsonl, then repair the rest."
    ),
    jobs: Optional[int] = JOBS,
    show_all: bool = SHOW_ALL,
    call_id: Optional[str] = CALL_ID,
    exclude: Optional[List[str]] = EXCLUDE,
    extend_exclude: Optional[List[str]] = EXTEND_EXCLUDE,
    force_exclude: Optional[bool] = FORCE_EXCLUDE,
    force: bool = typer.Option(
        False, "--force", help="--in-place: rewrite even a file another process holds open for writing (a live session)."
    ),
    backup: bool = typer.Option(
        False, "--backup", help="--in-place: keep the original bytes beside each file it replaces (<file>.bak, .bak.1, ...)."
    ),
) -> None:
    """Close every interrupted tool call with a not-run record.

    Without --in-place or --output this is a dry run: it shows what it would
    change and writes nothing. Nothing under .apc/ and no AGENTS.md is ever written.
    """
    paths = paths or []
    if in_place and output is not None:
        _usage_error("--in-place and --output exclude each other")
    if output is not None and len(paths) != 1 and not (call_id is not None and not paths):
        _usage_error("--output takes exactly one input")
    if (force or backup) and not in_place:
        _usage_error(f"{'--force' if force else '--backup'} is for --in-place: nothing else replaces a file")
    if in_place and "-" in paths:
        _usage_error("standard input cannot be fixed in place; use --output")
    if salvage and "-" in paths and output is not None:
        _usage_error("--salvage needs a file: the rejected lines are kept beside it")
    if output not in (None, "-"):
        from .discover import contract_reason

        reason = contract_reason(output)
        if reason is not None:
            _usage_error(f"refusing to write {output}: it is in the portable project contract ({reason})")
    flags = _Flags(paths, input_format.value, output_format, marker, drop_orphans, color, verbose, quiet, config, isolated, select, ignore)
    flags.keep_open_tail, flags.salvage = keep_open_tail, salvage
    flags.jobs, flags.show_all = jobs, show_all
    flags.call_id, flags.exclude, flags.extend_exclude, flags.force_exclude = call_id, exclude, extend_exclude, force_exclude
    flags.force, flags.backup = force, backup
    _run("fix", flags, in_place=in_place, output=output)


class _Flags:
    """What check and fix share, as given on the command line (None: not given)."""

    # Set after construction by the commands that have them.
    keep_open_tail: bool = False
    salvage: bool = False
    jobs: int | None = None  # None: all cores
    show_all: bool = False
    call_id: str | None = None
    exclude: list[str] | None = None  # None: as configured
    extend_exclude: list[str] | None = None
    force_exclude: bool | None = None
    force: bool = False
    backup: bool = False

    def __init__(self, paths, input_format, output_format, marker, drop_orphans, color, verbose, quiet, config, isolated, select, ignore):
        self.paths: list[str] = paths
        self.input_format: str = input_format
        self.output_format: OutputFormat | None = output_format
        self.marker: str | None = marker
        self.drop_orphans: bool | None = drop_orphans
        self.color: Color = color
        self.verbose: bool = verbose
        self.quiet: bool = quiet
        self.config: str | None = config
        self.isolated: bool = isolated
        self.select: str | None = select
        self.ignore: str | None = ignore


def output_format_name(given: OutputFormat | None, environ=os.environ) -> str:
    """An explicit choice wins; under GitHub Actions the default is annotations."""
    if given is not None:
        return given.value
    return "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"


def color_choice(color: Color, environ=os.environ) -> bool | None:
    """True/False for always/never; auto is plain under NO_COLOR, else Rich decides (terminal, FORCE_COLOR)."""
    if color is Color.auto and environ.get("NO_COLOR"):
        # Rich's own NO_COLOR keeps bold and dim; no-color.org asks for no escapes at all.
        return False
    return {"always": True, "never": False}.get(color.value)


def _settings(flags: _Flags):
    from .config import check_codes, load, merged

    def codes(value: str | None, name: str):
        return None if value is None else check_codes(value.split(","), name)

    settings = load(flags.config, isolated=flags.isolated)
    select, ignore = codes(flags.select, "--select"), codes(flags.ignore, "--ignore")
    if select is not None and ignore is None:
        # A rule selected on the command line is reported even if the file ignores it.
        ignore = ()
    exclude = None if flags.exclude is None else _patterns(flags.exclude, "--exclude")
    extend = None if not flags.extend_exclude else settings.extend_exclude + _patterns(flags.extend_exclude, "--extend-exclude")
    return merged(
        settings,
        marker=flags.marker,
        drop_orphans=flags.drop_orphans,
        select=select,
        ignore=ignore,
        exclude=exclude,
        extend_exclude=extend,
        force_exclude=flags.force_exclude,
    )


def _patterns(values: list[str], option: str) -> tuple[str, ...]:
    """Glob patterns given comma-separated, or by repeating the option."""
    from .errors import UsageError

    out = tuple(p.strip() for value in values for p in value.split(",") if p.strip())
    if not out and any(v.strip() for v in values):
        raise UsageError(f"{option}: no pattern given")
    return out


def _run(command: str, flags: _Flags, *, in_place: bool, output: str | None) -> NoReturn:
    from .errors import UsageError

    if not flags.paths and flags.call_id is None:
        _usage_error("give PATH... (files, folders, or - for standard input), or --call-id ID to search the agent homes")
    reports = []
    try:
        settings = _settings(flags)
        options = _options(command, flags, settings, in_place, output)
        inputs, found_homes = _inputs(flags, settings)
        if not inputs:
            if flags.paths:
                typer.echo("apx-doctor: no *.jsonl transcripts found", err=True)
                raise typer.Exit(EXIT_OK)
            typer.echo(f"apx-doctor: --call-id {_shown(flags.call_id)}: no session in the agent homes ({_looked_in(found_homes)})", err=True)
            raise typer.Exit(EXIT_TROUBLE)
        per_path = [_for_input(options, flags, item) for item in inputs]
        if flags.call_id is None:
            reports = _process([i.path for i in inputs], per_path, settings, flags)
        else:
            reports = _find_call(flags, settings, options, inputs, per_path, found_homes)
        _render(command, flags, options, reports)
    except UsageError as exc:
        _usage_error(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:  # the one place an unexpected error becomes exit 2
        _internal_error(exc, flags.verbose)
    raise typer.Exit(_exit_code(command, reports))


def _internal_error(exc: Exception, verbose: bool) -> NoReturn:
    from .safe import printable

    # Plain tracebacks (no local variables), every line made safe and cut:
    # an exception's text may quote a transcript.
    if verbose:
        import traceback

        for line in traceback.format_exc().splitlines():
            typer.echo(printable(line, 300), err=True)
    typer.echo(printable(f"apx-doctor: internal error: {type(exc).__name__}: {exc}", 300), err=True)
    raise typer.Exit(EXIT_TROUBLE) from None


class _Input:
    """One file a run looks at: found by walking a folder (or a home), and the home's session it is."""

    __slots__ = ("path", "walked", "session")

    def __init__(self, path: str, walked: bool, session=None) -> None:
        self.path, self.walked, self.session = path, walked, session


def _inputs(flags: _Flags, settings) -> tuple[list[_Input], list | None]:
    """The files of the paths given; with none, the session files of the agent homes (and the homes)."""
    excluder = settings.excluder()
    if flags.paths:
        from .discover import discover

        found = discover(flags.paths, excluder, bool(settings.force_exclude))
        return [_Input(f.path, f.walked) for f in found], None
    files, found_homes = _home_sessions(settings, None)
    return [_Input(s.path, True, s) for s in files], found_homes


def _home_sessions(settings, runtime: str | None):
    from . import homes

    found_homes = homes.homes([runtime] if runtime else None)
    excluder = settings.excluder()
    files = [s for s in homes.session_files(found_homes) if not excluder.excluded(s.path, base=s.home.path)]
    return files, found_homes


def _looked_in(found_homes) -> str:
    if not found_homes:
        return "no runtime this installation reads"
    return "looked in " + ", ".join(
        _shown(h.path) + ("" if h.exists else " (none there)") for h in found_homes
    )


def _for_input(options, flags: _Flags, item: _Input):
    """The run's options for one input: a file found in a folder may be no transcript; a home's is in its runtime's format."""
    from dataclasses import replace

    changes = {}
    if item.walked:
        changes["skip_unrecognised"] = True
    if item.session is not None and flags.input_format == "auto":
        changes["input_format"] = item.session.runtime.format
    return replace(options, **changes) if changes else options


def _find_call(flags: _Flags, settings, options, inputs: list[_Input], per_path: list, found_homes) -> list:
    """--call-id: check every input, then run the command on the ones that hold the call."""
    from dataclasses import replace

    from . import checker
    from .runner import Mode

    call_id = flags.call_id
    checks = [replace(o, mode=Mode.CHECK, output=None) for o in per_path]
    first = _process([i.path for i in inputs], checks, settings, flags)
    holding = [n for n, r in enumerate(first) if r.error is None and checker.holds_call(r, call_id)]
    failed = [n for n, r in enumerate(first) if r.error is not None]
    if not holding:
        where = _looked_in(found_homes) if found_homes is not None else f"{len(inputs)} file{'' if len(inputs) == 1 else 's'} checked"
        for n in failed:
            typer.echo(f"apx-doctor: error: {_shown(first[n].error)}", err=True)
        typer.echo(f"apx-doctor: --call-id {_shown(call_id)}: no session holds this call id ({where})", err=True)
        raise typer.Exit(EXIT_TROUBLE)
    if not flags.quiet:
        for n in holding:
            typer.echo(f"apx-doctor: call id {_shown(call_id)} is in {_shown(inputs[n].path)}{_session_note(inputs[n])}", err=True)
    if options.mode is Mode.CHECK:
        chosen = {n: first[n] for n in holding}
    else:
        if options.mode is Mode.OUTPUT and len(holding) != 1:
            from .errors import UsageError

            raise UsageError(f"--output takes exactly one input; call id {call_id} is in {len(holding)} files")
        done = _process([inputs[n].path for n in holding], [per_path[n] for n in holding], settings, flags)
        chosen = dict(zip(holding, done))
    for report in chosen.values():
        # Only its findings; a repair still closes every call of the file, and its edits say so.
        report.findings = [f for f in report.findings if f.call_id == call_id]
    chosen.update({n: first[n] for n in failed})
    return [chosen[n] for n in sorted(chosen)]


def _session_note(item: _Input) -> str:
    session = item.session
    if session is None:
        return ""
    from .homes import describe

    session_id, project = describe(session)
    parts = [f"{session.runtime.title} session {_shown(session_id or '?')}"]
    if project:
        parts.append(f"project {_shown(project)}")
    return f" ({', '.join(parts)})"


def _options(command: str, flags: _Flags, settings, in_place: bool, output: str | None):
    from .doctor import RepairOptions
    from .formats.base import DEFAULT_MARKER
    from .runner import Mode, RunOptions

    if command == "check":
        mode = Mode.CHECK
    else:
        mode = Mode.IN_PLACE if in_place else Mode.OUTPUT if output is not None else Mode.DRY_RUN
    return RunOptions(
        mode=mode,
        output=output,
        input_format=flags.input_format,
        marker=settings.marker or DEFAULT_MARKER,
        repair=RepairOptions(drop_orphans=bool(settings.drop_orphans), keep_open_tail=flags.keep_open_tail),
        salvage=flags.salvage,
        force=flags.force,
        backup=flags.backup,
    )


def _process(paths: list[str], options, settings, flags: _Flags) -> list:
    """Run every path through the project's policy, telling the user as it goes.

    ``options`` is one ``RunOptions`` for all paths, or one a path.
    """
    from dataclasses import replace

    from . import checker

    _settle()
    per_path = [options] * len(paths) if not isinstance(options, list) else options
    if len(paths) == 1 and not flags.quiet and sys.stderr.isatty():
        # One file: a byte progress bar if it takes a while (many files: the file count below).
        per_path = [replace(per_path[0], progress=True)]
    planned = checker.plan(paths, per_path)
    for item in planned:
        if item.refused is not None:
            typer.echo(f"apx-doctor: not editing {_shown(item.path)}: it is in the portable project contract ({item.refused})", err=True)
    reports = []
    progress = _Progress(len(paths), enabled=not flags.quiet)
    try:
        for item, report in zip(planned, checker.run(planned, settings, flags.jobs)):
            reports.append(report)
            if flags.verbose:
                n = len(report.findings)
                typer.echo(f"apx-doctor: {_shown(item.path)}: {report.format or '-'}, {n} finding{'' if n == 1 else 's'}", err=True)
            progress.advance()
    finally:
        progress.stop()
    return reports


def _settle() -> None:
    """Freeze what start-up built, in apx-doctor's own process only.

    The modules, classes and functions imported so far live until exit, so no
    garbage collection needs to walk them again: not one a long run triggers,
    not a --jobs worker's (forked: walking them would copy their pages), and
    not the last one at exit, which for a clean check of a small file is about
    a tenth of its time. A program that imports the CLI (a test runner, a
    library caller) keeps its collector as it was.
    """
    if _OWN_PROCESS:
        import gc

        gc.freeze()


def _shown(path: str) -> str:
    from .safe import printable

    return printable(path)


class _Progress:
    """A Rich progress bar on stderr, only on a terminal and only once a run takes a moment."""

    MOMENT = 0.5

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and total > 1 and sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar = None
        self.task = None

    def advance(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is None and time.monotonic() - self.started > self.MOMENT and self.done < self.total:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(file=sys.stderr), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("checking", total=self.total, completed=self.done)
        elif self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _render(command: str, flags: _Flags, options, reports) -> None:
    from .reporters import RenderContext, render
    from .runner import Mode

    transcript_on_stdout = options.mode is Mode.OUTPUT and options.output == "-"
    ctx = RenderContext(
        command=command,
        mode=options.mode.value,
        out=sys.stderr if transcript_on_stdout else sys.stdout,
        err=sys.stderr,
        quiet=flags.quiet,
        color=color_choice(flags.color),
        show_all=flags.show_all,
    )
    render(output_format_name(flags.output_format), reports, ctx)


def _exit_code(command: str, reports) -> int:
    if any(r.error is not None for r in reports):
        return EXIT_TROUBLE
    if command == "check":
        return EXIT_FINDINGS if any(r.errors for r in reports) else EXIT_OK
    return EXIT_FINDINGS if any(r.changed or r.unfixable for r in reports) else EXIT_OK


class SessionsFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"


@app.command()
def sessions(
    all_: bool = typer.Option(False, "--all", help="List every session, the clean ones too."),
    runtime: Optional[str] = typer.Option(
        None, "--runtime", metavar="NAME", help="Only this runtime's home (claude-code, codex, ...)."
    ),
    call_id: Optional[str] = CALL_ID,
    output_format: SessionsFormat = typer.Option(
        SessionsFormat.text, "--output-format", help="text for people; json (one document) or json-lines (one session a line) for tools."
    ),
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    config: Optional[str] = CONFIG,
    isolated: bool = ISOLATED,
    jobs: Optional[int] = JOBS,
    exclude: Optional[List[str]] = EXCLUDE,
    extend_exclude: Optional[List[str]] = EXTEND_EXCLUDE,
) -> None:
    """List the sessions in the agent runtimes' homes on this machine that hold interrupted
    tool calls: runtime, project, session id, last write, the calls, and the command that
    resumes each. Writes nothing.

    Each runtime's home is its environment override, else its documented folder (Claude Code:
    $CLAUDE_CONFIG_DIR or ~/.claude; Codex CLI: $CODEX_HOME or ~/.codex; the README lists
    the others). Exit 0 no session with error findings, 1 some, 2 trouble.
    """
    from .errors import UsageError

    flags = _Flags([], "auto", None, None, None, color, verbose, quiet, config, isolated, None, None)
    flags.jobs, flags.call_id, flags.exclude, flags.extend_exclude = jobs, call_id, exclude, extend_exclude
    code = EXIT_OK
    try:
        code = _sessions(flags, runtime, output_format.value, all_)
    except UsageError as exc:
        _usage_error(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:
        _internal_error(exc, verbose)
    raise typer.Exit(code)


def _sessions(flags: _Flags, runtime: str | None, output_format: str, every: bool) -> int:
    from . import checker, homes
    from .doctor import RepairOptions
    from .errors import UsageError
    from .formats.base import DEFAULT_MARKER
    from .reporters.sessions import render
    from .runner import Mode, RunOptions
    from .sessions import exit_code, rows

    known = [r.name for r in homes.runtimes()]
    if runtime is not None and runtime not in known:
        raise UsageError(f"--runtime {runtime!r}: not a runtime apx-doctor reads (choose from: {', '.join(known)})")
    settings = _settings(flags)
    files, found_homes = _home_sessions(settings, runtime)
    if not any(h.exists for h in found_homes):
        if flags.call_id is not None:
            typer.echo(f"apx-doctor: --call-id {_shown(flags.call_id)}: no agent home found ({_looked_in(found_homes)})", err=True)
            return EXIT_TROUBLE
        if output_format == "text":
            if not flags.quiet:
                typer.echo(f"apx-doctor: no agent home found ({_looked_in(found_homes)})", err=True)
            return EXIT_OK
    marker = settings.marker or DEFAULT_MARKER
    options = [
        RunOptions(mode=Mode.CHECK, input_format=s.runtime.format, marker=marker, repair=RepairOptions(), skip_unrecognised=True)
        for s in files
    ]
    reports = _process([s.path for s in files], options, settings, flags) if files else []
    checked = len(files)
    if flags.call_id is not None:
        kept = [(s, r) for s, r in zip(files, reports) if r.error is not None or checker.holds_call(r, flags.call_id)]
        if not any(r.error is None for _, r in kept):
            for _, r in kept:
                typer.echo(f"apx-doctor: error: {_shown(r.error)}", err=True)
            typer.echo(
                f"apx-doctor: --call-id {_shown(flags.call_id)}: no session holds this call id ({_looked_in(found_homes)})", err=True
            )
            return EXIT_TROUBLE
        for _, r in kept:
            r.findings = [f for f in r.findings if f.call_id == flags.call_id]
        files, reports, every = [s for s, _ in kept], [r for _, r in kept], True
    listed = rows(files, reports, every=every)
    render(
        output_format,
        found_homes,
        listed,
        checked,
        sys.stdout,
        sys.stderr,
        quiet=flags.quiet,
        color=color_choice(flags.color),
        every=every,
    )
    return exit_code(listed)


@app.command()
def rule(
    code: Optional[str] = typer.Argument(None, metavar="CODE", help="A code (APX001) or a rule name."),
    all_: bool = typer.Option(False, "--all", help="Explain every rule."),
) -> None:
    """Explain a rule: what it means, why it matters, an example and its fix."""
    from .rules import RULES, rule_markdown

    if all_ == (code is not None):
        _usage_error("give one CODE, or --all")
    if all_:
        typer.echo("\n".join(rule_markdown(r) for r in RULES.values()), nl=False)
        return
    found = RULES.get(code.upper()) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if found is None:
        _usage_error(f"no rule {code!r}; `apx-doctor rule --all` lists them")
    typer.echo(rule_markdown(found), nl=False)


@app.command()
def show(
    path: str = typer.Argument(..., metavar="FILE", help="One transcript; - reads standard input."),
    around: Optional[int] = typer.Option(None, "--around", metavar="LINE", help="Show only the entries near this line."),
    context: int = typer.Option(5, "--context", "-C", min=0, help="How many entries either side of --around."),
    width: int = typer.Option(200, "--width", min=20, help="Fold content longer than this many characters."),
    input_format: InputFormat = INPUT_FORMAT,
    marker: Optional[str] = MARKER,
    color: Color = COLOR,
    config: Optional[str] = CONFIG,
    isolated: bool = ISOLATED,
) -> None:
    """Draw the conversation as a timeline: turns, calls, results, and where each interruption happened."""
    from .errors import DoctorError, UsageError

    try:
        from .config import load
        from .formats.base import DEFAULT_MARKER
        from .show import ShowOptions, render_timeline

        settings = load(config, isolated=isolated)
        options = ShowOptions(
            input_format=input_format.value,
            marker=marker or settings.marker or DEFAULT_MARKER,
            around=around,
            context=context,
            width=width,
            read_only_tools=settings.read_only_tools,
            side_effect_tools=settings.side_effect_tools,
        )
        render_timeline(path, options, sys.stdout, color_choice(color))
    except UsageError as exc:
        _usage_error(str(exc))
    except DoctorError as exc:
        typer.echo(f"apx-doctor: error: {_shown(str(exc))}", err=True)
        raise typer.Exit(EXIT_TROUBLE) from None


def _usage_error(message: str) -> NoReturn:
    typer.echo(f"apx-doctor: usage error: {message}", err=True)
    raise typer.Exit(EXIT_TROUBLE)


# Set by main(): this process is apx-doctor's own (the console script,
# python -m apx_doctor), not a program that imports the CLI.
_OWN_PROCESS = False


def main() -> None:
    global _OWN_PROCESS
    _OWN_PROCESS = True
    app()
