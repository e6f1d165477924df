"""One JSON object a line, one line a finding: for ``jq``, log shippers and streams.

Each object is the finding's JSON (as in the json report) plus ``path`` and
``format``. A file that could not be processed gives one object with ``error``.
The summary goes to stderr, so stdout holds only records.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..model import FileReport
from ..safe import json_dumps, json_safe
from . import RenderContext, json_neutral, report_fixed, report_skipped, summary_text


def records(reports: Sequence[FileReport]) -> Iterator[dict[str, Any]]:
    for report in reports:
        if report.error is not None:
            yield {"path": report.path, "format": report.format, "error": report.error}
            continue
        # A skipped file (no transcript) has no findings: its info line goes to stderr.
        for finding in report.findings:
            yield {"path": report.path, "format": report.format, **finding.to_dict()}


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    for record in records(reports):
        ctx.out.write(json_neutral(json_safe(json_dumps(record))).decode() + "\n")
    ctx.out.flush()
    report_fixed(reports, ctx)
    report_skipped(reports, ctx)
    if not ctx.quiet:
        ctx.err.write(summary_text(reports, ctx) + "\n")
        ctx.err.flush()
