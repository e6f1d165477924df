"""The command line: options in, a call to the runner, a report out, an exit code.

Exit codes are a contract:
  check  0 no error findings, 1 error findings, 2 usage error, unreadable input or internal error
  fix    0 nothing to change and nothing unfixable, 1 changed (or would change) a file or
         unfixable errors remain, 2 as for check
  rule, show  0 done, 2 usage error or unreadable input
  --exit-zero turns 1 into 0; 2 stays 2.

Findings go to stdout (or --report-file); progress, summaries and errors to
stderr. Everything heavy (Rich, the reporters, the configuration) is imported
inside commands, so ``apx-doctor --version`` and ``--help`` start fast.

``check`` and ``fix`` take one option list (``_OPTIONS``); what the command
line said becomes one ``config.Flags`` value, and ``config.build`` puts it over
each file's configuration into the ``config.Options`` the run reads.
"""

# No ``from __future__ import annotations`` here: Typer reads every command's
# annotations at start-up, and real ones cost it nothing to evaluate.

import inspect
import os
import sys
import time
from collections.abc import Callable
from enum import Enum
from typing import IO, TYPE_CHECKING, Any, NoReturn

import typer

from . import __version__

if TYPE_CHECKING:
    # Annotations only: the CLI imports these inside the commands, to start fast.
    from rich.progress import Progress

    from .config import Config, Flags, Options
    from .homes import Home, SessionFile
    from .model import FileReport
    from .reporters.diff import Workspace as DiffWorkspace
    from .runner import RunOptions

EXIT_OK, EXIT_FINDINGS, EXIT_TROUBLE = 0, 1, 2

app = typer.Typer(
    name="apx-doctor",
    help="Check recorded agent sessions for tool calls that never got a result, and repair them.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
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

InputFormat = Enum("InputFormat", {name: name for name in ("auto", *FORMAT_NAMES)}, type=str)  # type: ignore[misc]  # members from FORMAT_NAMES


class OutputFormat(str, Enum):
    text = "text"
    concise = "concise"
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
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Show the version."),
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
    help="text for people, concise for editors and grep (path:line:col: CODE message), json / json-lines for tools, "
    "github for workflow annotations, sarif for code scanning. "
    "Default: output-format in the configuration, else github under GitHub Actions, else text.",
    show_default=False,
)


def _text_marker(value: str | None) -> str | None:
    # A shell passes bytes that are not UTF-8 as lone surrogates: no record can be written with them.
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            _usage_error("--marker: the text is not valid UTF-8")
    return value


MARKER = typer.Option(
    None,
    "--marker",
    help="The text of the not-run record. [default: not run: the turn was interrupted]",
    show_default=False,
    callback=_text_marker,
)
VERBOSE = typer.Option(False, "--verbose", "-v", help="Name each file as it is done; show a traceback on internal errors.")
QUIET = typer.Option(False, "--quiet", "-q", help="Print findings only, no summary.")
COLOR = typer.Option(Color.auto, "--color", help="Colour the text output (auto honours NO_COLOR and FORCE_COLOR).")
CONFIG = typer.Option(
    None,
    "--config",
    metavar="PATH",
    help="Read the configuration from this file (its [tool.apx-doctor] table, or an apx-doctor.toml's keys) "
    "for every input, instead of the nearest one above each file.",
)
ISOLATED = typer.Option(False, "--isolated", help="Ignore every configuration file.")
SELECT = typer.Option(
    None, "--select", metavar="CODES", help="Report only these codes or prefixes (comma-separated), e.g. APX001,APX1."
)
IGNORE = typer.Option(None, "--ignore", metavar="CODES", help="Do not report these codes or prefixes (comma-separated).")
EXTEND_SELECT = typer.Option(
    None,
    "--extend-select",
    metavar="CODES",
    help="Also report these codes or prefixes (comma-separated, or repeated), even where ignore names them.",
    show_default=False,
)
EXTEND_IGNORE = typer.Option(
    None,
    "--extend-ignore",
    metavar="CODES",
    help="Also leave out these codes or prefixes (comma-separated, or repeated), on top of ignore.",
    show_default=False,
)
PER_FILE_IGNORES = typer.Option(
    None,
    "--per-file-ignores",
    metavar="PATTERN:CODES",
    help="Codes not to report in files matching a glob, e.g. 'fixtures/*:APX001,APX002' (repeatable); "
    "replaces per-file-ignores of the configuration.",
    show_default=False,
)
JOBS = typer.Option(
    None, "--jobs", "-j", min=1, metavar="N", help="Check files on N processes (default: all cores); the report is the same."
)
SHOW_ALL = typer.Option(False, "--show-all", help="Text output: print every row, not the first rows per file.")
KEEP_OPEN_TAIL = typer.Option(
    False, "--keep-open-tail", help="Leave calls of the last turn open: the file may still be written to."
)
EXIT_ZERO = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings (or changes); trouble still exits 2.")
STATISTICS = typer.Option(False, "--statistics", help="Print how many findings each code has, instead of the findings.")
REPORT_FILE = typer.Option(
    None,
    "--report-file",
    metavar="PATH",
    help="Write the report (any --output-format) to this file instead of stdout; the summary stays on stderr.",
)
STDIN_FILENAME = typer.Option(
    None,
    "--stdin-filename",
    metavar="NAME",
    help="The name of standard input: reports show it, and configuration and excludes are chosen for it.",
)

TARGET = typer.Option(
    None,
    "--target",
    metavar="PROVIDER",
    help="The provider the history is sent to: anthropic, openai-chat, openai-responses, bedrock, gemini, deepseek, "
    "or auto (the one the format implies). Its refusals are errors, and the APX3xx checks run. [default: none, "
    "the format's own rules]",
    show_default=False,
)
FAIL_ON = typer.Option(
    None,
    "--fail-on",
    metavar="SEVERITY",
    help="The lowest severity that makes the exit code 1: error, warning or info. [default: error]",
    show_default=False,
)

# Every option a command can take: name -> (annotation, Typer parameter).
_OPTIONS = {
    "paths": (list[str], PATHS),
    "in_place": (bool, typer.Option(False, "--in-place", "-i", help="Write each repaired file back, atomically.")),
    "output": (
        str | None,
        typer.Option(
            None, "--output", "-o", metavar="FILE", help="Write the repaired transcript of one input here (- for stdout)."
        ),
    ),
    "diff": (
        bool,
        typer.Option(
            False,
            "--diff",
            help="Print what fix would change as a unified diff (patch -p0 and git apply -p0 take it); writes nothing. "
            "Exit 1 when there is a diff.",
        ),
    ),
    "drop_orphans": (
        bool | None,
        typer.Option(
            None,
            "--drop-orphans/--no-drop-orphans",
            help="Also remove results that answer no call, duplicates and late results. [default: no]",
            show_default=False,
        ),
    ),
    "drop_empty_blocks": (
        bool | None,
        typer.Option(
            None,
            "--drop-empty-blocks/--no-drop-empty-blocks",
            help="Also remove empty text blocks (APX304, under --target) from messages that keep other content. [default: no]",
            show_default=False,
        ),
    ),
    "target": (str | None, TARGET),
    "fail_on": (str | None, FAIL_ON),
    "input_format": (InputFormat, INPUT_FORMAT),
    "output_format": (OutputFormat | None, OUTPUT_FORMAT),
    "marker": (str | None, MARKER),
    "color": (Color, COLOR),
    "verbose": (bool, VERBOSE),
    "quiet": (bool, QUIET),
    "config": (str | None, CONFIG),
    "isolated": (bool, ISOLATED),
    "select": (str | None, SELECT),
    "ignore": (str | None, IGNORE),
    "extend_select": (list[str] | None, EXTEND_SELECT),
    "extend_ignore": (list[str] | None, EXTEND_IGNORE),
    "per_file_ignores": (list[str] | None, PER_FILE_IGNORES),
    "keep_open_tail": (bool, KEEP_OPEN_TAIL),
    "salvage": (
        bool,
        typer.Option(False, "--salvage", help="Move unparseable lines to <file>.rejected.jsonl, then repair the rest."),
    ),
    "jobs": (int | None, JOBS),
    "show_all": (bool, SHOW_ALL),
    "call_id": (str | None, CALL_ID),
    "exclude": (list[str] | None, EXCLUDE),
    "extend_exclude": (list[str] | None, EXTEND_EXCLUDE),
    "force_exclude": (bool | None, FORCE_EXCLUDE),
    "exit_zero": (bool, EXIT_ZERO),
    "statistics": (bool, STATISTICS),
    "report_file": (str | None, REPORT_FILE),
    "stdin_filename": (str | None, STDIN_FILENAME),
    "force": (
        bool,
        typer.Option(
            False, "--force", help="--in-place: rewrite even a file another process holds open for writing (a live session)."
        ),
    ),
    "backup": (
        bool,
        typer.Option(
            False, "--backup", help="--in-place: keep the original bytes beside each file it replaces (<file>.bak, .bak.1, ...)."
        ),
    ),
}

# What check and fix share, in the order --help lists it.
_SHARED = (
    "input_format",
    "output_format",
    "marker",
    "color",
    "verbose",
    "quiet",
    "config",
    "isolated",
    "select",
    "ignore",
    "extend_select",
    "extend_ignore",
    "per_file_ignores",
    "keep_open_tail",
    "jobs",
    "show_all",
    "call_id",
    "exclude",
    "extend_exclude",
    "force_exclude",
    "exit_zero",
    "statistics",
    "report_file",
    "stdin_filename",
    "target",
    "fail_on",
)
_CHECK = ("paths", *_SHARED)
_FIX = (
    "paths",
    "in_place",
    "output",
    "diff",
    "drop_orphans",
    "drop_empty_blocks",
    *_SHARED[: _SHARED.index("keep_open_tail") + 1],
    "salvage",
    *_SHARED[_SHARED.index("keep_open_tail") + 1 :],
    "force",
    "backup",
)
# Flags fields that are tuples when given and empty when not.
_EMPTY_WHEN_NOT_GIVEN = ("extend_select", "extend_ignore", "extend_exclude")


def _takes(names: tuple[str, ...]) -> Callable[[Callable[["Flags"], None]], Callable[..., None]]:
    """Give a command the options ``names`` and hand it one ``config.Flags`` of what was said."""

    def wrap(func: Callable[["Flags"], None]) -> Callable[..., None]:
        def command(**given: Any) -> None:
            return func(_flags(func.__name__, given))

        parameters = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=_OPTIONS[name][1], annotation=_OPTIONS[name][0])
            for name in names
        ]
        command.__name__ = command.__qualname__ = func.__name__
        command.__doc__ = func.__doc__
        command.__module__ = func.__module__
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]  # inspect reads it; typeshed has no such attribute
        return command

    return wrap


def _flags(command: str, given: dict[str, Any]) -> "Flags":
    from .config import Flags

    values = {}
    for name, value in given.items():
        if isinstance(value, Enum):
            value = value.value
        elif isinstance(value, list):
            value = tuple(value)
        if value is None and name in _EMPTY_WHEN_NOT_GIVEN:
            value = ()
        values[name] = value
    values["paths"] = values.get("paths") or ()
    return Flags(command=command, **values)


@app.command()
@_takes(_CHECK)
def check(flags: "Flags") -> None:
    """Report tool calls without results, and other damage. Writes nothing."""
    _run(_stdin_named(flags))


@app.command()
@_takes(_FIX)
def fix(flags: "Flags") -> None:
    """Close every interrupted tool call with a not-run record.

    Without --in-place or --output this is a dry run: it shows what it would
    change and writes nothing (--diff shows it as a patch). Nothing under .apc/
    and no AGENTS.md is ever written.
    """
    flags = _stdin_named(flags)
    paths, output, in_place = flags.paths, flags.output, flags.in_place
    if in_place and output is not None:
        _usage_error("--in-place and --output exclude each other")
    if flags.diff and (in_place or output is not None):
        _usage_error("--diff writes nothing; it excludes --in-place and --output")
    if flags.diff and (flags.output_format is not None or flags.statistics):
        _usage_error("--diff prints a diff; it takes no --output-format or --statistics")
    if flags.diff and flags.salvage:
        _usage_error("--salvage writes the rejected lines beside the file; --diff writes nothing")
    if output is not None and len(paths) != 1 and not (flags.call_id is not None and not paths):
        _usage_error("--output takes exactly one input")
    if (flags.force or flags.backup) and not in_place:
        _usage_error(f"{'--force' if flags.force else '--backup'} is for --in-place: nothing else replaces a file")
    if in_place and "-" in paths:
        _usage_error("standard input cannot be fixed in place; use --output")
    if flags.salvage and "-" in paths and output is not None:
        _usage_error("--salvage needs a file: the rejected lines are kept beside it")
    if output not in (None, "-"):
        from .discover import contract_reason

        reason = contract_reason(output)
        if reason is not None:
            _usage_error(f"refusing to write {output}: it is in the portable project contract ({reason})")
    _run(flags)


def _stdin_named(flags: "Flags") -> "Flags":
    """--stdin-filename names standard input: with no PATH it means -, and it needs - among the paths."""
    if flags.stdin_filename is None:
        return flags
    from dataclasses import replace

    if not flags.paths:
        return replace(flags, paths=("-",))
    if "-" not in flags.paths:
        _usage_error("--stdin-filename names standard input: give - as the PATH (or no PATH)")
    return flags


def output_format_name(given: OutputFormat | None, environ: Any = os.environ) -> str:
    """An explicit choice wins; under GitHub Actions the default is annotations (config.build also weighs the file)."""
    if given is not None:
        return given.value
    return "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"


def color_choice(color: "Color | str", environ: Any = os.environ) -> bool | None:
    """True/False for always/never; auto is plain under NO_COLOR, else Rich decides (terminal, FORCE_COLOR)."""
    value = color.value if isinstance(color, Color) else color
    if value == "auto" and environ.get("NO_COLOR"):
        # Rich's own NO_COLOR keeps bold and dim; no-color.org asks for no escapes at all.
        return False
    return {"always": True, "never": False}.get(value)


class _Configured:
    """Each input's ``Options``: the command line over the configuration nearest to it (one build a configuration)."""

    def __init__(self, flags: "Flags") -> None:
        from .config import Finder, build

        self.flags = flags
        self.finder = Finder(flags.config, isolated=flags.isolated)
        self.base = build(flags, self.finder.base)
        self._built = {id(self.finder.base): self.base}

    def for_input(self, path: str) -> "Options":
        """The options of one input; standard input under --stdin-filename gets its name's per-file-ignores."""
        options = self.for_path(path)
        name = self.flags.stdin_filename
        if path != "-" or name is None or not options.settings.per_file_ignores:
            return options
        from dataclasses import replace

        settings = options.settings
        # The runner knows standard input as -: the codes its name's patterns ignore are ignored outright.
        codes = tuple(c for pattern, cs in settings.per_file_ignores if _matches(settings, name, pattern) for c in cs)
        return replace(options, settings=replace(settings, extend_ignore=settings.extend_ignore + codes))

    def for_path(self, path: str, *, folder: bool = False) -> "Options":
        if path == "-" and self.flags.stdin_filename is not None:
            path = self.flags.stdin_filename
        config = self.finder.for_path(path, folder=folder)
        options = self._built.get(id(config))
        if options is None:
            options = self._built[id(config)] = self.base.for_config(config)
        return options


def _matches(settings: "Config", path: str, pattern: str) -> bool:
    from .config import _glob_matches

    return _glob_matches(settings.root, path, pattern)


def _run(flags: "Flags") -> NoReturn:
    from .errors import UsageError

    if not flags.paths and flags.call_id is None:
        _usage_error("give PATH... (files, folders, or - for standard input), or --call-id ID to search the agent homes")
    reports: list[FileReport] = []
    diff: DiffWorkspace | None = None
    fail_on = "error"
    try:
        configured = _Configured(flags)
        options = configured.base
        fail_on = options.fail_on
        if flags.statistics and options.output_format not in ("text", "concise", "json", "json-lines"):
            raise UsageError(
                f"--statistics prints counts: use --output-format text, concise, json or json-lines, not {options.output_format}"
            )
        report_out = _open_report_file(flags)
        if flags.diff:
            from .reporters.diff import Workspace

            diff = Workspace(flags.stdin_filename)
        inputs, found_homes = _inputs(flags, configured)
        if not inputs:
            if flags.paths:
                if flags.stdin_filename is not None:
                    # Standard input named like an excluded file: as ruff does, nothing is checked.
                    _pass_stdin_through(flags)
                    raise typer.Exit(EXIT_OK)
                typer.echo("apx-doctor: no *.jsonl transcripts found", err=True)
                raise typer.Exit(EXIT_OK)
            typer.echo(
                f"apx-doctor: --call-id {_shown(flags.call_id)}: no session in the agent homes ({_looked_in(found_homes)})",
                err=True,
            )
            raise typer.Exit(EXIT_TROUBLE)
        per_input = [configured.for_input(item.path) for item in inputs]
        run_options = [_for_input(_run_options(o, diff), flags, item) for o, item in zip(per_input, inputs)]
        if diff is not None:
            run_options = diff.prepare([i.path for i in inputs], run_options)
        paths = [diff.source(i.path) if diff is not None else i.path for i in inputs]
        settings = [o.settings for o in per_input]
        if flags.call_id is None:
            reports = _process(paths, run_options, settings, flags)
        else:
            reports = _find_call(flags, settings, run_options, inputs, paths, found_homes)
        if diff is not None:
            diff.finish(reports, settings)
        _name_stdin(reports, flags)
        _render(flags, options, reports, report_out, diff)
    except UsageError as exc:
        _usage_error(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:  # the one place an unexpected error becomes exit 2  # noqa: BLE001
        _internal_error(exc, flags.verbose)
    finally:
        if diff is not None:
            diff.close()
    raise typer.Exit(_exit_code(flags, reports, fail_on))


def _open_report_file(flags: "Flags") -> IO[str] | None:
    """The --report-file stream, opened before the run so that a path it cannot write stops it at once."""
    if flags.report_file is None:
        return None
    from .discover import contract_reason
    from .errors import UsageError

    path = flags.report_file
    if path == "-":
        return None
    reason = contract_reason(path)
    if reason is not None:
        raise UsageError(f"--report-file {path}: refusing to write it: it is in the portable project contract ({reason})")
    if path in flags.paths or (os.path.exists(path) and any(_same(path, p) for p in flags.paths if p != "-")):
        raise UsageError(f"--report-file {path}: it is one of the inputs")
    try:
        return open(path, "w", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise UsageError(f"--report-file {path}: cannot write it: {exc.strerror or exc}") from None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _pass_stdin_through(flags: "Flags") -> None:
    """An excluded standard input through fix --output -: printed as it came, so a pipe loses nothing."""
    if flags.command == "fix" and flags.output == "-":
        out = sys.stdout.buffer
        while chunk := sys.stdin.buffer.read(1 << 16):
            out.write(chunk)
        out.flush()


def _name_stdin(reports: "list[FileReport]", flags: "Flags") -> None:
    """--stdin-filename: reports name standard input by it."""
    name = flags.stdin_filename
    if name is None:
        return
    for report in reports:
        if report.path == "-":
            report.path = name
            if report.error is not None and report.error.startswith("<stdin>"):
                report.error = name + report.error[len("<stdin>") :]


def _internal_error(exc: Exception, verbose: bool) -> NoReturn:
    from .safe import printable

    if isinstance(exc, BrokenPipeError):
        # The reader of the report went away (`| head`): no error of ours, and
        # nobody left to tell. Later writes (the interpreter's last flush) go nowhere.
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_TROUBLE) from None

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

    __slots__ = ("path", "session", "walked")

    def __init__(self, path: str, walked: bool, session: "SessionFile | None" = None) -> None:
        self.path, self.walked, self.session = path, walked, session


def _inputs(flags: "Flags", configured: _Configured) -> "tuple[list[_Input], list[Home] | None]":
    """The files of the paths given; with none, the session files of the agent homes (and the homes)."""
    if flags.paths:
        from .discover import discover

        excluders: dict[int, tuple[Any, ...]] = {}

        def rules(path: str, folder: bool) -> tuple[Any, ...]:
            # Each file's (and each walked folder's) own configuration says what it leaves out.
            settings = configured.for_path(path, folder=folder).settings
            found = excluders.get(id(settings))
            if found is None:
                found = excluders[id(settings)] = (settings.excluder(), bool(settings.force_exclude))
            return found

        found = discover(flags.paths, rules=rules, stdin_name=flags.stdin_filename)
        return [_Input(f.path, f.walked) for f in found], None
    files, found_homes = _home_sessions(configured.base.settings, None)
    return [_Input(s.path, True, s) for s in files], found_homes


def _home_sessions(settings: "Config", runtime: str | None) -> "tuple[list[SessionFile], list[Home]]":
    from . import homes

    found_homes = homes.homes([runtime] if runtime else None)
    excluder = settings.excluder()
    files = [s for s in homes.session_files(found_homes) if not excluder.excluded(s.path, base=s.home.path)]
    return files, found_homes


def _looked_in(found_homes: "list[Home] | None") -> str:
    if not found_homes:
        return "no runtime this installation reads"
    return "looked in " + ", ".join(_shown(h.path) + ("" if h.exists else " (none there)") for h in found_homes)


def _for_input(options: "RunOptions", flags: "Flags", item: _Input) -> "RunOptions":
    """The run's options for one input: a file found in a folder may be no transcript; a home's is in its runtime's format."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    if item.walked:
        changes["skip_unrecognised"] = True
    if item.session is not None and flags.input_format == "auto":
        changes["input_format"] = item.session.runtime.format
    return replace(options, **changes) if changes else options


def _find_call(
    flags: "Flags",
    settings: "list[Config]",
    options: "list[RunOptions]",
    inputs: list[_Input],
    paths: list[str],
    found_homes: "list[Home] | None",
) -> "list[FileReport]":
    """--call-id: check every input, then run the command on the ones that hold the call."""
    from dataclasses import replace

    from . import checker
    from .runner import Mode

    call_id = flags.call_id
    assert call_id is not None  # _run calls this only under --call-id
    checks = [replace(o, mode=Mode.CHECK, output=None) for o in options]
    first = _process(paths, checks, settings, flags)
    holding = [n for n, r in enumerate(first) if r.error is None and checker.holds_call(r, call_id)]
    failed = [n for n, r in enumerate(first) if r.error is not None]
    if not holding:
        where = (
            _looked_in(found_homes) if found_homes is not None else f"{len(inputs)} file{'' if len(inputs) == 1 else 's'} checked"
        )
        for n in failed:
            typer.echo(f"apx-doctor: error: {_shown(first[n].error)}", err=True)
        typer.echo(f"apx-doctor: --call-id {_shown(call_id)}: no session holds this call id ({where})", err=True)
        raise typer.Exit(EXIT_TROUBLE)
    if not flags.quiet:
        for n in holding:
            typer.echo(
                f"apx-doctor: call id {_shown(call_id)} is in {_shown(inputs[n].path)}{_session_note(inputs[n])}", err=True
            )
    mode = options[0].mode
    if mode is Mode.CHECK:
        chosen = {n: first[n] for n in holding}
    else:
        if flags.output is not None and len(holding) != 1:
            from .errors import UsageError

            raise UsageError(f"--output takes exactly one input; call id {call_id} is in {len(holding)} files")
        done = _process([paths[n] for n in holding], [options[n] for n in holding], [settings[n] for n in holding], flags)
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


def _run_options(options: "Options", diff: "DiffWorkspace | None" = None) -> "RunOptions":
    """The runner's options for one input, read from the run's ``Options``."""
    from .doctor import RepairOptions
    from .runner import Mode, RunOptions

    flags = options.flags
    if flags.command == "check":
        mode = Mode.CHECK
    elif diff is not None:
        mode = Mode.DRY_RUN  # the diff's workspace turns it into an output to a file of its own
    else:
        mode = Mode.IN_PLACE if flags.in_place else Mode.OUTPUT if flags.output is not None else Mode.DRY_RUN
    return RunOptions(
        mode=mode,
        output=flags.output if mode is Mode.OUTPUT else None,
        input_format=flags.input_format,
        marker=options.marker,
        repair=RepairOptions(
            drop_orphans=options.drop_orphans,
            keep_open_tail=flags.keep_open_tail,
            target=options.target,
            drop_empty_blocks=options.drop_empty_blocks,
        ),
        salvage=flags.salvage,
        force=flags.force,
        backup=flags.backup,
    )


def _process(
    paths: list[str],
    options: "RunOptions | list[RunOptions]",
    settings: "Config | list[Config]",
    flags: "Flags",
) -> "list[FileReport]":
    """Run every path through the project's policy, telling the user as it goes.

    ``options`` is one ``RunOptions`` for all paths, or one a path; ``settings``
    one configuration for all, or one a path (each file's own).
    """
    from dataclasses import replace

    from . import checker

    _settle()
    per_path = [options] * len(paths) if not isinstance(options, list) else options
    per_settings = [settings] * len(paths) if not isinstance(settings, list) else settings
    if len(paths) == 1 and not flags.quiet and sys.stderr.isatty():
        # One file: a byte progress bar if it takes a while (many files: the file count below).
        per_path = [replace(per_path[0], progress=True)]
    planned = checker.plan(paths, per_path)
    for item in planned:
        if item.refused is not None:
            typer.echo(
                f"apx-doctor: not editing {_shown(item.path)}: it is in the portable project contract ({item.refused})", err=True
            )
    # One pass a configuration (most runs have one), each on every core; reports in input order.
    groups: dict[int, list[int]] = {}
    for n, config in enumerate(per_settings):
        groups.setdefault(id(config), []).append(n)
    reports: list[Any] = [None] * len(paths)
    progress = _Progress(len(paths), enabled=not flags.quiet)
    try:
        for indexes in groups.values():
            chosen = [planned[n] for n in indexes]
            for n, item, report in zip(indexes, chosen, checker.run(chosen, per_settings[indexes[0]], flags.jobs)):
                reports[n] = report
                if flags.verbose:
                    count = len(report.findings)
                    typer.echo(
                        f"apx-doctor: {_shown(item.path)}: {report.format or '-'}, {count} finding{'' if count == 1 else 's'}",
                        err=True,
                    )
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


def _shown(text: object) -> str:
    """A name or a value for a message line: made printable, and unable to start a workflow command."""
    from .reporters import shown_name

    return shown_name(text)


class _Progress:
    """A Rich progress bar on stderr, only on a terminal and only once a run takes a moment."""

    MOMENT = 0.5

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled and total > 1 and sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar: Progress | None = None
        self.task: Any = None

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


def _render(
    flags: "Flags",
    options: "Options",
    reports: "list[FileReport]",
    report_out: IO[str] | None = None,
    diff: "DiffWorkspace | None" = None,
) -> None:
    from .reporters import RenderContext, render

    transcript_on_stdout = flags.command == "fix" and flags.output == "-"
    if flags.command == "check":
        mode = "check"
    elif flags.in_place:
        mode = "in-place"
    elif flags.output is not None:
        mode = "output"
    else:
        mode = "dry-run"
    ctx = RenderContext(
        command=flags.command,
        mode=mode,
        out=report_out if report_out is not None else sys.stderr if transcript_on_stdout else sys.stdout,
        err=sys.stderr,
        quiet=flags.quiet,
        color=color_choice(flags.color),
        show_all=flags.show_all,
        statistics=flags.statistics,
        transcript_on_stdout=transcript_on_stdout,
    )
    try:
        if diff is not None:
            diff.render(reports, ctx, to_file=report_out is not None)
        else:
            render(options.output_format, reports, ctx)
    finally:
        if report_out is not None:
            report_out.close()


def _exit_code(flags: "Flags", reports: "list[FileReport]", fail_on: str = "error") -> int:
    from .rules import Severity

    if any(r.error is not None for r in reports):
        return EXIT_TROUBLE
    if flags.exit_zero:
        return EXIT_OK
    bar = Severity(fail_on)
    if flags.command == "check":
        return EXIT_FINDINGS if any(r.fails(bar) for r in reports) else EXIT_OK
    return EXIT_FINDINGS if any(r.changed or r.unfixable_at(bar) for r in reports) else EXIT_OK


class SessionsFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"


@app.command()
def sessions(
    all_: bool = typer.Option(False, "--all", help="List every session, the clean ones too."),
    runtime: str | None = typer.Option(
        None, "--runtime", metavar="NAME", help="Only this runtime's home (claude-code, codex, ...)."
    ),
    call_id: str | None = CALL_ID,
    output_format: SessionsFormat = typer.Option(
        SessionsFormat.text,
        "--output-format",
        help="text for people; json (one document) or json-lines (one session a line) for tools.",
    ),
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    config: str | None = CONFIG,
    isolated: bool = ISOLATED,
    jobs: int | None = JOBS,
    exclude: list[str] | None = EXCLUDE,
    extend_exclude: list[str] | None = EXTEND_EXCLUDE,
) -> None:
    """List the sessions in the agent runtimes' homes on this machine that hold interrupted
    tool calls: runtime, project, session id, last write, the calls, and the command that
    resumes each. Writes nothing.

    Each runtime's home is its environment override, else its documented folder (Claude Code:
    $CLAUDE_CONFIG_DIR or ~/.claude; Codex CLI: $CODEX_HOME or ~/.codex; the README lists
    the others). Exit 0 no session with error findings, 1 some, 2 trouble.
    """
    from .errors import UsageError

    given = {
        "color": color,
        "verbose": verbose,
        "quiet": quiet,
        "config": config,
        "isolated": isolated,
        "jobs": jobs,
        "call_id": call_id,
        "exclude": exclude,
        "extend_exclude": extend_exclude,
    }
    code = EXIT_OK
    try:
        code = _sessions(_flags("sessions", given), runtime, output_format.value, all_)
    except UsageError as exc:
        _usage_error(str(exc))
    except typer.Exit:
        raise
    except Exception as exc:  # an unexpected error becomes exit 2, as in check and fix  # noqa: BLE001
        _internal_error(exc, verbose)
    raise typer.Exit(code)


def _sessions(flags: "Flags", runtime: str | None, output_format: str, every: bool) -> int:
    from . import checker, homes
    from .config import Finder, build
    from .doctor import RepairOptions
    from .errors import UsageError
    from .reporters.sessions import render
    from .runner import Mode, RunOptions
    from .sessions import exit_code, rows

    known = [r.name for r in homes.runtimes()]
    if runtime is not None and runtime not in known:
        raise UsageError(f"--runtime {runtime!r}: not a runtime apx-doctor reads (choose from: {', '.join(known)})")
    options = build(flags, Finder(flags.config, isolated=flags.isolated).base)
    settings = options.settings
    files, found_homes = _home_sessions(settings, runtime)
    if not any(h.exists for h in found_homes):
        if flags.call_id is not None:
            typer.echo(
                f"apx-doctor: --call-id {_shown(flags.call_id)}: no agent home found ({_looked_in(found_homes)})", err=True
            )
            return EXIT_TROUBLE
        if output_format == "text":
            if not flags.quiet:
                typer.echo(f"apx-doctor: no agent home found ({_looked_in(found_homes)})", err=True)
            return EXIT_OK
    run_options = [
        RunOptions(
            mode=Mode.CHECK, input_format=s.runtime.format, marker=options.marker, repair=RepairOptions(), skip_unrecognised=True
        )
        for s in files
    ]
    reports = _process([s.path for s in files], run_options, settings, flags) if files else []
    checked = len(files)
    if flags.call_id is not None:
        kept = [(s, r) for s, r in zip(files, reports) if r.error is not None or checker.holds_call(r, flags.call_id)]
        if not any(r.error is None for _, r in kept):
            for _, r in kept:
                typer.echo(f"apx-doctor: error: {_shown(r.error)}", err=True)
            typer.echo(
                f"apx-doctor: --call-id {_shown(flags.call_id)}: no session holds this call id ({_looked_in(found_homes)})",
                err=True,
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
    code: str | None = typer.Argument(None, metavar="CODE", help="A code (APX001) or a rule name."),
    all_: bool = typer.Option(False, "--all", help="Explain every rule."),
    search: str | None = typer.Option(
        None,
        "--search",
        metavar="TEXT",
        help="Explain the rules that mention TEXT: a fragment of a provider's error, or the whole message. "
        "Exit 1 when none does.",
    ),
) -> None:
    """Explain a rule: what it means, why it matters, an example and its fix."""
    from .rules import RULES, rule_markdown

    if search is not None:
        if all_ or code is not None:
            _usage_error("give one CODE, --all, or --search TEXT")
        from .rules import search as search_rules

        found_rules = search_rules(search)
        if not found_rules:
            typer.echo(f"apx-doctor: no rule mentions {search!r}; `apx-doctor rule --all` lists them", err=True)
            raise typer.Exit(EXIT_FINDINGS)
        typer.echo("\n".join(rule_markdown(r) for r in found_rules), nl=False)
        return
    if all_ == (code is not None):
        _usage_error("give one CODE, or --all")
    if all_:
        typer.echo("\n".join(rule_markdown(r) for r in RULES.values()), nl=False)
        return
    assert code is not None  # not --all, so a CODE was given
    found = RULES.get(code.upper()) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if found is None:
        _usage_error(f"no rule {code!r}; `apx-doctor rule --all` lists them")
    typer.echo(rule_markdown(found), nl=False)


@app.command()
def show(
    path: str = typer.Argument(..., metavar="FILE", help="One transcript; - reads standard input."),
    around: int | None = typer.Option(None, "--around", metavar="LINE", help="Show only the entries near this line."),
    context: int = typer.Option(
        5, "--context", "-C", min=0, help="How many entries either side of each interrupted call (or of --around)."
    ),
    all_: bool = typer.Option(
        False, "--all", help="Draw every entry (by default a long session shows its interruptions with context)."
    ),
    no_pager: bool = typer.Option(False, "--no-pager", help="Never page the output (it is never paged when not a terminal)."),
    width: int = typer.Option(200, "--width", min=20, help="Fold content longer than this many characters."),
    input_format: InputFormat = INPUT_FORMAT,
    marker: str | None = MARKER,
    color: Color = COLOR,
    config: str | None = CONFIG,
    isolated: bool = ISOLATED,
) -> None:
    """Draw the conversation as a timeline: turns, calls, results, and where each interruption happened.

    A long session shows each interrupted call with its context and a summary of the rest; --all draws every entry.
    """
    from .errors import DoctorError, UsageError

    if all_ and around is not None:
        _usage_error("give --all or --around, not both")
    try:
        from .config import Finder
        from .formats.base import DEFAULT_MARKER
        from .show import ShowOptions, render_timeline

        # The configuration nearest to the file, as for check.
        settings = Finder(config, isolated=isolated).for_path(path)
        options = ShowOptions(
            input_format=input_format.value,
            marker=marker or settings.marker or DEFAULT_MARKER,
            around=around,
            context=context,
            width=width,
            read_only_tools=settings.read_only_tools,
            side_effect_tools=settings.side_effect_tools,
            all=all_,
            pager=not no_pager,
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
