"""Human output: a Rich table of findings per file and a one-line summary.

Every piece of transcript text goes through ``printable`` and reaches Rich as a
``Text`` object, so it is never read as markup and never written raw.
"""

from __future__ import annotations

import os
from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model import FileReport, Finding
from ..rules import Severity
from ..safe import printable
from . import RenderContext, summary, summary_text

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
ARGUMENTS_WIDTH = 80
# Rows a table shows per file unless --show-all.
FIRST_ROWS = 50
RECORD_WIDTH = 240


# Width when the output is no terminal (a pipe, a pre-commit log, CI) and
# COLUMNS says nothing: Rich's 80 folds a findings table into a narrow column.
PIPE_WIDTH = 120


def console(stream, color: bool | None) -> Console:
    return Console(
        file=stream,
        width=None if _sized(stream) else PIPE_WIDTH,
        markup=False,
        emoji=False,
        highlight=False,
        # None leaves the choice to Rich: a terminal or not, NO_COLOR, FORCE_COLOR.
        force_terminal=color,
        no_color=None if color is None else not color,
        soft_wrap=False,
    )


def _sized(stream) -> bool:
    try:
        return stream.isatty() or bool(os.environ.get("COLUMNS"))
    except (AttributeError, ValueError):
        return bool(os.environ.get("COLUMNS"))


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    out = console(ctx.out, ctx.color)
    err = console(ctx.err, ctx.color)
    for report in reports:
        if report.error is not None:
            err.print(Text(f"apx-doctor: error: {printable(report.error)}", style="bold red"), soft_wrap=True)
            continue
        limit = None if ctx.show_all else FIRST_ROWS
        if report.findings:
            out.print(_findings_table(report, limit))
            _more(out, len(report.findings), limit, "finding")
        if ctx.command == "fix" and report.edits:
            out.print(_edits_table(report, "dry-run" if report.refused else ctx.mode, limit))
            _more(out, len(report.edits), limit, "repair")
        if ctx.mode == "in-place" and report.written:
            out.print(Text(f"Fixing {printable(report.path)}"))
    if not ctx.quiet:
        err.print(_summary_line(reports, ctx))


def _more(out: Console, total: int, limit: int | None, what: str) -> None:
    """Count the rows a long table leaves out: thousands of rows help nobody, and cost seconds."""
    if limit is not None and total > limit:
        left = total - limit
        out.print(Text(f"… and {left} more {what}{'' if left == 1 else 's'} in this file (--show-all prints every row; json output holds them all)", style="dim"))


def _title(report: FileReport) -> Text:
    title = Text(printable(report.path), style="bold")
    title.append(f"  ({report.format})", style="dim")
    return title


def _findings_table(report: FileReport, limit: int | None = None) -> Table:
    table = Table(title=_title(report), title_justify="left", box=box.SIMPLE_HEAD, expand=False)
    table.add_column("Line", justify="right", no_wrap=True)
    table.add_column("Code", no_wrap=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Call id", overflow="fold", max_width=24)
    table.add_column("Tool", overflow="fold", max_width=40)
    table.add_column("What happened", overflow="fold", ratio=3)
    advice = any(f.tool_kind for f in report.findings)
    if advice:
        table.add_column("Safe next", overflow="fold", ratio=2)
    for f in report.findings[:limit]:
        line = "" if f.line is None else str(f.line) + (f"[{f.index}]" if f.index is not None else "")
        table.add_row(
            Text(line),
            Text(f.code),
            Text(str(f.severity), style=_SEVERITY_STYLE[f.severity]),
            Text(printable(f.call_id, 40)),
            Text(printable(f.tool, 40)),
            Text(printable(_what_happened(f), 200)),
            *([Text(_safe_next(f), style=_KIND_STYLE.get(f.tool_kind, ""))] if advice else []),
        )
    return table


def _what_happened(f: Finding) -> str:
    # The call id and tool stand in their own columns; the JSON message repeats
    # them so that it reads on its own.
    if f.code != "APX001":
        return f.message
    if f.fixable is False:
        return "no result: the turn was interrupted (no honest not-run record exists for this call type)"
    return "no result: the turn was interrupted"


def _safe_next(f: Finding) -> str:
    if not f.tool_kind:
        return ""
    from ..advice import SAFE_NEXT, ToolKind

    return SAFE_NEXT[ToolKind(f.tool_kind)]


_KIND_STYLE = {"read-only": "green", "side-effects": "bold yellow", "unknown": "yellow"}


def _edits_table(report: FileReport, mode: str, limit: int | None = None) -> Table:
    verb = {"dry-run": "would be made (dry run, nothing written)"}.get(mode, "made")
    title = Text(f"Repairs to {printable(report.path)} {verb}", style="bold")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, expand=False)
    table.add_column("Line", justify="right", no_wrap=True)
    table.add_column("Action", no_wrap=True)
    table.add_column("Call id", overflow="fold")
    table.add_column("Tool", overflow="fold")
    table.add_column("Arguments", overflow="fold")
    table.add_column("Record", overflow="fold")
    for e in report.edits[:limit]:
        where = f"before {e.line}" if e.action == "insert" else str(e.line)
        table.add_row(
            Text(where),
            Text(e.action),
            Text(printable(e.call_id, 40)),
            Text(printable(e.tool, 40)),
            Text(printable(e.arguments, ARGUMENTS_WIDTH)),
            Text(printable(e.record, RECORD_WIDTH)),
        )
    return table


def _summary_line(reports: Sequence[FileReport], ctx: RenderContext) -> Text:
    s = summary(reports)
    style = "bold red" if s["errors"] or s["failed"] else "bold green"
    return Text(summary_text(reports, ctx), style=style)
