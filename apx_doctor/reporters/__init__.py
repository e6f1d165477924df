"""Reporters render reports; they decide nothing and read no file.

Each output format is one module with ``render(reports, ctx)``, imported only
when it is used so the CLI starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import IO

from ..model import FileReport

# name -> module in this package
_MODULES = {
    "text": "text",
    "concise": "concise",
    "json": "json",
    "json-lines": "jsonlines",
    "github": "github",
    "sarif": "sarif",
}
OUTPUT_FORMATS = tuple(_MODULES)


class RenderContext:
    """What a reporter is told besides the reports. A plain class: a dataclass costs start-up a millisecond."""

    __slots__ = ("color", "command", "err", "mode", "out", "quiet", "show_all", "statistics", "transcript_on_stdout")

    def __init__(
        self,
        command: str,
        mode: str,
        out: IO[str],
        err: IO[str],
        quiet: bool = False,
        color: bool | None = None,
        show_all: bool = False,
        statistics: bool = False,
        transcript_on_stdout: bool = False,
    ) -> None:
        self.command = command  # "check" or "fix"
        self.mode = mode  # runner.Mode value
        self.out = out  # findings
        self.err = err  # summary, progress, errors
        self.quiet = quiet
        self.color = color  # None: decide from the stream and NO_COLOR / FORCE_COLOR
        self.show_all = show_all  # text: every row, not the first rows per file
        self.statistics = statistics  # counts per code instead of the findings
        self.transcript_on_stdout = transcript_on_stdout  # fix --output -: stdout holds the repaired transcript


def write_document(out: IO[str], data: bytes) -> None:
    """One whole document (JSON, SARIF) and a line ending, as the bytes it is.

    Through the stream's byte buffer where it has one (stdout): a report of
    many findings is not decoded into a str and encoded back, which for
    non-ASCII text holds four bytes a character. Text-only streams (a
    library caller's StringIO) get the text.
    """
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode() + "\n")
    else:
        out.flush()
        buffer.write(data)
        buffer.write(b"\n")
        buffer.flush()
    out.flush()


def render(name: str, reports: Sequence[FileReport], ctx: RenderContext) -> None:
    if ctx.statistics:
        from .statistics import render as statistics

        statistics(name, reports, ctx)
        return
    module = import_module(f".{_MODULES.get(name, 'text')}", __name__)
    module.render(reports, ctx)


def summary(reports: Sequence[FileReport]) -> dict[str, int]:
    return {
        "files": len(reports),
        "errors": sum(r.errors for r in reports),
        "warnings": sum(r.warnings for r in reports),
        "infos": sum(_infos(r) for r in reports),
        # A refused file (project contract) gets nothing inserted or removed.
        "inserted": sum(r.inserted for r in reports if r.refused is None),
        "removed": sum(r.removed for r in reports if r.refused is None),
        "failed": sum(1 for r in reports if r.error is not None),
        # Found in a folder, but no transcript (listed in files with the reason).
        "skipped": sum(1 for r in reports if r.skipped is not None),
    }


def _infos(report: FileReport) -> int:
    from ..rules import Severity

    return sum(1 for f in report.findings if f.severity is Severity.INFO)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary_text(reports: Sequence[FileReport], ctx: RenderContext) -> str:
    """The one-line summary every format prints to stderr (json keeps it in the document)."""
    s = summary(reports)
    # A file that could not be read (missing, unreadable) was not checked: it is counted apart.
    parts = [
        f"{_plural(s['files'] - s['skipped'] - s['failed'], 'file')} checked",
        _plural(s["errors"], "error"),
        _plural(s["warnings"], "warning"),
    ]
    if s["infos"]:
        parts.append(_plural(s["infos"], "info"))
    if ctx.command == "fix":
        would = ctx.mode == "dry-run"
        records = _plural(s["inserted"], "not-run record")
        parts.append(f"{records} {'would be ' if would else ''}inserted")
        if s["removed"]:
            parts.append(f"{_plural(s['removed'], 'result')} {'would be ' if would else ''}removed")
        if not would and not ctx.transcript_on_stdout:
            # fix --output - prints the transcript: it writes no file.
            parts.append(f"{_plural(sum(1 for r in reports if r.written), 'file')} written")
    if s["failed"]:
        parts.append(f"{s['failed']} could not be processed")
    if s["skipped"]:
        parts.append(f"{s['skipped']} skipped (not a transcript)")
    return ", ".join(parts)


def report_skipped(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    """One info line on stderr for each file of a folder that is no transcript (not with -q)."""
    if ctx.quiet or not any(r.skipped is not None for r in reports):
        return
    from ..safe import printable

    for report in reports:
        if report.skipped is not None:
            # The reason without its --input-format hint: a folder's stray file needs no format.
            reason = report.skipped.split("; pass --input-format", 1)[0]
            ctx.err.write(
                neutral(f"apx-doctor: skipped {shown_name(report.path)}: not a transcript ({printable(reason, 300)})") + "\n"
            )
    ctx.err.flush()


def report_fixed(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    """``Fixing <path>`` on stderr for each file rewritten in place.

    The machine formats keep stdout to their records; this line is what a
    person (or pre-commit's log, also under GitHub Actions) needs to see.
    """
    if ctx.mode != "in-place":
        return
    for report in reports:
        if report.written:
            ctx.err.write(f"Fixing {shown_name(report.path)}\n")
        if report.backup is not None:
            ctx.err.write(f"Kept the original of {shown_name(report.path)} as {shown_name(report.backup)}\n")
    ctx.err.flush()


# --- names and lines that a CI log reads -------------------------------------
#
# The GitHub runner reads a line as a workflow command when it starts with
# ``::`` after any leading whitespace, and its legacy form ``##[`` anywhere.
# Transcript text and file names are made ``printable`` first; these go on
# top, with the same kind of visible escape (``\x3a``, ``\x5b``).

_COLON = "\\x3a"
_BRACKET = "\\x5b"


def shown_name(name: object, limit: int | None = None) -> str:
    """A file name (or any untrusted value) as it is printed in a line of text output.

    No colon that touches another colon, or stands at the start or the end of the
    name, is kept: however a table folds the name, and whatever text is printed
    next to it, no line can start with ``::``. ``##[`` never stands in it.
    """
    from ..safe import printable

    text = printable(name, limit)
    if ":" in text:
        text = _colons(text)
    if "##[" in text:
        text = text.replace("##[", "##" + _BRACKET)
    return text


def _colons(text: str) -> str:
    out = []
    last = len(text) - 1
    for i, char in enumerate(text):
        if char == ":" and (i == 0 or i == last or text[i - 1] == ":" or text[i + 1] == ":"):
            out.append(_COLON)
        else:
            out.append(char)
    return "".join(out)


def json_neutral(data: bytes) -> bytes:
    """JSON text in which the runner's legacy ``##[`` cannot appear: it can only stand inside a
    string there (``#`` is no JSON token), where ``\\u005b`` is the same ``[``."""
    return data.replace(b"##[", b"##\\u005b") if b"##[" in data else data


def neutral(line: str) -> str:
    """One printed line that the runner cannot read as a workflow command: ``::`` at its start
    (after whitespace) and ``##[`` anywhere get a visible escape."""
    if "##[" in line:
        line = line.replace("##[", "##" + _BRACKET)
    stripped = line.lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + _COLON + stripped[1:]
    return line
