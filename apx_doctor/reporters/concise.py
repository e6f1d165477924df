"""One line a finding, ``path:line:col: CODE message``, as ruff's ``concise``: for editors and grep.

An editor's problem matcher (and a terminal's link detection) opens the file
at the line. The column is 1: findings are about whole lines (or, in a JSON
document, the line where the message starts). A finding about the whole file
points at 1:1. Files that could not be read, the summary, and the files fixed
in place go to stderr.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import FileReport, Finding
from . import RenderContext, neutral, report_fixed, report_skipped, shown_name, summary_text


def line(report: FileReport, finding: Finding) -> str:
    from ..safe import printable

    where = finding.line if finding.line is not None else 1
    return neutral(f"{shown_name(report.path)}:{where}:1: {finding.code} {printable(finding.message)}")


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    from ..safe import printable

    for report in reports:
        if report.error is not None:
            ctx.err.write(neutral(f"apx-doctor: error: {printable(report.error)}") + "\n")
            continue
        for finding in report.findings:
            ctx.out.write(line(report, finding) + "\n")
    ctx.out.flush()
    report_fixed(reports, ctx)
    report_skipped(reports, ctx)
    if not ctx.quiet:
        ctx.err.write(summary_text(reports, ctx) + "\n")
    ctx.err.flush()
