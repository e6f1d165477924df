"""The command line: options in, a call to the runner, a report out, an exit code.

Exit codes are a contract:
  check  0 no error findings, 1 error findings, 2 usage error, unreadable input or internal error
  fix    0 nothing to change and nothing unfixable, 1 changed (or would change) a file or
         unfixable errors remain, 2 as for check
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, NoReturn, Optional

import typer

from . import __version__
from .formats import format_names
from .formats.base import DEFAULT_MARKER

EXIT_OK, EXIT_FINDINGS, EXIT_TROUBLE = 0, 1, 2

app = typer.Typer(
    name="apx-doctor",
    help="Check recorded agent sessions for tool calls that never got a result, and repair them.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

InputFormat = Enum("InputFormat", {name: name for name in ("auto", *format_names())}, type=str)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


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


PATHS = typer.Argument(..., metavar="PATH...", help="Transcript files; - reads standard input.")
INPUT_FORMAT = typer.Option("auto", "--input-format", help="The transcript format; auto tells it from the first lines.")
OUTPUT_FORMAT = typer.Option(OutputFormat.text, "--output-format", help="text for people, json for tools.")
MARKER = typer.Option(DEFAULT_MARKER, "--marker", help="The text of the not-run record.")
VERBOSE = typer.Option(False, "--verbose", "-v", help="Show a traceback on internal errors.")
QUIET = typer.Option(False, "--quiet", "-q", help="Print findings only, no summary.")
COLOR = typer.Option(Color.auto, "--color", help="Colour the text output.")
KEEP_OPEN_TAIL = typer.Option(
    False, "--keep-open-tail", help="Leave calls of the last turn open: the file may still be written to."
)


@app.command()
def check(
    paths: List[str] = PATHS,
    input_format: InputFormat = INPUT_FORMAT,
    output_format: OutputFormat = OUTPUT_FORMAT,
    marker: str = MARKER,
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    keep_open_tail: bool = KEEP_OPEN_TAIL,
) -> None:
    """Report tool calls without results, and other damage. Writes nothing."""
    from .doctor import RepairOptions
    from .runner import Mode, RunOptions

    options = RunOptions(
        mode=Mode.CHECK,
        input_format=input_format.value,
        marker=marker,
        repair=RepairOptions(keep_open_tail=keep_open_tail),
    )
    _run("check", paths, options, output_format, color, verbose, quiet)


@app.command()
def fix(
    paths: List[str] = PATHS,
    in_place: bool = typer.Option(False, "--in-place", "-i", help="Write each repaired file back, atomically."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Write the repaired transcript of one input here (- for stdout)."
    ),
    drop_orphans: bool = typer.Option(
        False, "--drop-orphans", help="Also remove results that answer no call, duplicates and late results."
    ),
    input_format: InputFormat = INPUT_FORMAT,
    output_format: OutputFormat = OUTPUT_FORMAT,
    marker: str = MARKER,
    color: Color = COLOR,
    verbose: bool = VERBOSE,
    quiet: bool = QUIET,
    keep_open_tail: bool = KEEP_OPEN_TAIL,
    salvage: bool = typer.Option(
        False, "--salvage", help="Move unparseable lines to <file>.rejected.jsonl, then repair the rest."
    ),
) -> None:
    """Close every interrupted tool call with a not-run record.

    Without --in-place or --output this is a dry run: it shows what it would
    change and writes nothing.
    """
    from .doctor import RepairOptions
    from .runner import Mode, RunOptions

    if in_place and output is not None:
        _usage_error("--in-place and --output exclude each other")
    if output is not None and len(paths) != 1:
        _usage_error("--output takes exactly one input")
    if in_place and "-" in paths:
        _usage_error("standard input cannot be fixed in place; use --output")
    if salvage and "-" in paths and output is not None:
        _usage_error("--salvage needs a file: the rejected lines are kept beside it")
    mode = Mode.IN_PLACE if in_place else Mode.OUTPUT if output is not None else Mode.DRY_RUN
    options = RunOptions(
        mode=mode,
        output=output,
        input_format=input_format.value,
        marker=marker,
        repair=RepairOptions(drop_orphans=drop_orphans, keep_open_tail=keep_open_tail),
        salvage=salvage,
    )
    _run("fix", paths, options, output_format, color, verbose, quiet)


def _run(command: str, paths: list[str], options, output_format: OutputFormat, color: Color, verbose: bool, quiet: bool) -> NoReturn:
    try:
        from .reporters import RenderContext, render
        from .runner import Mode, run_path

        reports = [run_path(path, options) for path in paths]
        transcript_on_stdout = options.mode is Mode.OUTPUT and options.output == "-"
        ctx = RenderContext(
            command=command,
            mode=options.mode.value,
            out=sys.stderr if transcript_on_stdout else sys.stdout,
            err=sys.stderr,
            quiet=quiet,
            color={"always": True, "never": False}.get(color.value),
        )
        render(output_format.value, reports, ctx)
    except Exception as exc:  # the one place an unexpected error becomes exit 2
        from .safe import printable

        # Plain tracebacks (no local variables), every line made safe and cut:
        # an exception's text may quote a transcript.
        if verbose:
            import traceback

            for line in traceback.format_exc().splitlines():
                typer.echo(printable(line, 300), err=True)
        typer.echo(printable(f"apx-doctor: internal error: {type(exc).__name__}: {exc}", 300), err=True)
        raise typer.Exit(EXIT_TROUBLE) from None
    raise typer.Exit(_exit_code(command, reports))


def _exit_code(command: str, reports) -> int:
    if any(r.error is not None for r in reports):
        return EXIT_TROUBLE
    if command == "check":
        return EXIT_FINDINGS if any(r.errors for r in reports) else EXIT_OK
    return EXIT_FINDINGS if any(r.changed or r.unfixable for r in reports) else EXIT_OK


def _usage_error(message: str) -> NoReturn:
    typer.echo(f"apx-doctor: usage error: {message}", err=True)
    raise typer.Exit(EXIT_TROUBLE)


def main() -> None:
    app()
