"""GitHub Actions workflow commands: one annotation a finding.

The runner reads every stdout line that starts with ``::`` as a command, so
transcript text must never be able to start one or end one early. Every field
is escaped as the runner's own toolkit does (``%``, CR and LF in the message;
also ``:`` and ``,`` in properties), after ``printable`` has turned control
characters into visible escapes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import FileReport, Finding
from ..rules import Severity
from ..safe import printable
from . import RenderContext, report_fixed, report_skipped, summary_text

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: object) -> str:
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{level}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(report: FileReport, finding: Finding) -> str:
    # Lines the message is made of are joined by a real newline, which the
    # escaping turns into %0A: the annotation shows them as separate lines.
    message = f"{finding.name}: {printable(finding.message)}"
    if finding.advice:
        message += "\n" + printable(finding.advice)
    return command(
        LEVEL[finding.severity],
        message,
        file=_file(report),
        line=finding.line,
        title=finding.code,
    )


def _file(report: FileReport) -> str | None:
    return None if report.path == "-" else printable(report.path)


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    for report in reports:
        if report.error is not None:
            ctx.out.write(command("error", f"apx-doctor: {printable(report.error)}", file=_file(report)) + "\n")
            continue
        for finding in report.findings:
            ctx.out.write(annotation(report, finding) + "\n")
    ctx.out.flush()
    report_fixed(reports, ctx)
    report_skipped(reports, ctx)
    if not ctx.quiet:
        ctx.err.write(summary_text(reports, ctx) + "\n")
        ctx.err.flush()
