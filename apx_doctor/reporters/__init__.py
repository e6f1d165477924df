"""Reporters render reports; they decide nothing and read no file.

Each output format is one module with ``render(reports, ctx)``, imported only
when it is used so the CLI starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import IO, Sequence

from ..model import FileReport

# name -> module in this package
_MODULES = {"text": "text", "json": "json", "json-lines": "jsonlines", "github": "github", "sarif": "sarif"}
OUTPUT_FORMATS = tuple(_MODULES)


class RenderContext:
    """What a reporter is told besides the reports. A plain class: a dataclass costs start-up a millisecond."""

    __slots__ = ("command", "mode", "out", "err", "quiet", "color", "show_all")

    def __init__(
        self,
        command: str,
        mode: str,
        out: IO[str],
        err: IO[str],
        quiet: bool = False,
        color: bool | None = None,
        show_all: bool = False,
    ) -> None:
        self.command = command  # "check" or "fix"
        self.mode = mode  # runner.Mode value
        self.out = out  # findings
        self.err = err  # summary, progress, errors
        self.quiet = quiet
        self.color = color  # None: decide from the stream and NO_COLOR / FORCE_COLOR
        self.show_all = show_all  # text: every row, not the first rows per file


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
    module = import_module(f".{_MODULES.get(name, 'text')}", __name__)
    module.render(reports, ctx)


def summary(reports: Sequence[FileReport]) -> dict[str, int]:
    return {
        "files": len(reports),
        "errors": sum(r.errors for r in reports),
        "warnings": sum(r.warnings for r in reports),
        # A refused file (project contract) gets nothing inserted or removed.
        "inserted": sum(r.inserted for r in reports if r.refused is None),
        "removed": sum(r.removed for r in reports if r.refused is None),
        "failed": sum(1 for r in reports if r.error is not None),
        # Found in a folder, but no transcript (listed in files with the reason).
        "skipped": sum(1 for r in reports if r.skipped is not None),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary_text(reports: Sequence[FileReport], ctx: RenderContext) -> str:
    """The one-line summary every format prints to stderr (json keeps it in the document)."""
    s = summary(reports)
    parts = [
        f"{_plural(s['files'] - s['skipped'], 'file')} checked",
        _plural(s["errors"], "error"),
        _plural(s["warnings"], "warning"),
    ]
    if ctx.command == "fix":
        would = ctx.mode == "dry-run"
        records = _plural(s["inserted"], "not-run record")
        parts.append(f"{records} {'would be ' if would else ''}inserted")
        if s["removed"]:
            parts.append(f"{_plural(s['removed'], 'result')} {'would be ' if would else ''}removed")
        if not would:
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
            ctx.err.write(f"apx-doctor: skipped {printable(report.path)}: not a transcript ({printable(reason, 300)})\n")
    ctx.err.flush()


def report_fixed(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    """``Fixing <path>`` on stderr for each file rewritten in place.

    The machine formats keep stdout to their records; this line is what a
    person (or pre-commit's log, also under GitHub Actions) needs to see.
    """
    if ctx.mode != "in-place":
        return
    from ..safe import printable

    for report in reports:
        if report.written:
            ctx.err.write(f"Fixing {printable(report.path)}\n")
        if report.backup is not None:
            ctx.err.write(f"Kept the original of {printable(report.path)} as {printable(report.backup)}\n")
    ctx.err.flush()
