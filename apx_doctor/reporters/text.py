"""Human output: a Rich table of findings per file and a one-line summary.

Every piece of transcript text goes through ``printable`` and reaches Rich as a
``Text`` object, so it is never read as markup and never written raw.
"""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model import FileReport
from ..rules import Severity
from ..safe import printable
from . import RenderContext, summary

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
ARGUMENTS_WIDTH = 40
RECORD_WIDTH = 60


def console(stream, color: bool | None) -> Console:
    return Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        force_terminal=color,
        no_color=color is False,
        soft_wrap=False,
    )


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    out = console(ctx.out, ctx.color)
    err = console(ctx.err, ctx.color)
    for report in reports:
        if report.error is not None:
            err.print(Text(f"apx-doctor: error: {printable(report.error)}", style="bold red"))
            continue
        if report.findings:
            out.print(_findings_table(report))
        if ctx.command == "fix" and report.edits:
            out.print(_edits_table(report, ctx.mode))
        if ctx.mode == "in-place" and report.written:
            out.print(Text(f"Fixing {printable(report.path)}"))
    if not ctx.quiet:
        err.print(_summary_line(reports, ctx))


def _title(report: FileReport) -> Text:
    title = Text(printable(report.path), style="bold")
    title.append(f"  ({report.format})", style="dim")
    return title


def _findings_table(report: FileReport) -> Table:
    table = Table(title=_title(report), title_justify="left", box=box.SIMPLE_HEAD, expand=False)
    table.add_column("Line", justify="right", no_wrap=True)
    table.add_column("Code", no_wrap=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Call id", overflow="fold")
    table.add_column("Tool", overflow="fold")
    table.add_column("Message", overflow="fold")
    for f in report.findings:
        line = "" if f.line is None else str(f.line) + (f"[{f.index}]" if f.index is not None else "")
        table.add_row(
            Text(line),
            Text(f.code),
            Text(str(f.severity), style=_SEVERITY_STYLE[f.severity]),
            Text(printable(f.call_id, 40)),
            Text(printable(f.tool, 40)),
            Text(printable(f.message, 200)),
        )
    return table


def _edits_table(report: FileReport, mode: str) -> Table:
    verb = {"dry-run": "would be made (dry run, nothing written)"}.get(mode, "made")
    title = Text(f"Repairs to {printable(report.path)} {verb}", style="bold")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, expand=False)
    table.add_column("Line", justify="right", no_wrap=True)
    table.add_column("Action", no_wrap=True)
    table.add_column("Call id", overflow="fold")
    table.add_column("Tool", overflow="fold")
    table.add_column("Arguments", overflow="fold")
    table.add_column("Record", overflow="fold")
    for e in report.edits:
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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _summary_line(reports: Sequence[FileReport], ctx: RenderContext) -> Text:
    s = summary(reports)
    parts = [
        f"{_plural(s['files'], 'file')} checked",
        _plural(s["errors"], "error"),
        _plural(s["warnings"], "warning"),
    ]
    if ctx.command == "fix":
        would = ctx.mode == "dry-run"
        records = _plural(s["inserted"], "not-run record")
        parts.append(f"{records} {'would be ' if would else ''}inserted")
        if s["removed"]:
            parts.append(f"{_plural(s['removed'], 'result')} {'would be ' if would else ''}removed")
        written = sum(1 for r in reports if r.written)
        if not would:
            parts.append(f"{_plural(written, 'file')} written")
    if s["failed"]:
        parts.append(f"{s['failed']} could not be processed")
    style = "bold red" if s["errors"] or s["failed"] else "bold green"
    return Text(", ".join(parts), style=style)
