"""``--statistics``: how many findings each code has, instead of the findings (as ruff's).

text and concise print one line a code, ``COUNT<TAB>CODE<TAB>name``, most
frequent first; json prints one document (``version``, ``statistics``,
``summary``) and json-lines one object a code. Files that could not be read
are reported on stderr, and the summary goes there too (json keeps it inside).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson

from ..model import FileReport
from ..rules import RULES
from ..safe import json_dumps, json_safe
from . import RenderContext, json_neutral, neutral, report_skipped, summary, summary_text, write_document


def counts(reports: Sequence[FileReport]) -> list[dict[str, Any]]:
    """One entry a code found, most frequent first, then by code."""
    counter = Counter(f.code for r in reports for f in r.findings)
    out = []
    for code, count in sorted(counter.items(), key=lambda item: (-item[1], item[0])):
        rule = RULES.get(code)
        out.append(
            {
                "code": code,
                "name": rule.name if rule is not None else None,
                "severity": str(rule.severity) if rule is not None else None,
                "count": count,
            }
        )
    return out


def render(name: str, reports: Sequence[FileReport], ctx: RenderContext) -> None:
    from ..safe import printable

    rows = counts(reports)
    if name == "json":
        from .json import VERSION

        document = {"version": VERSION, "statistics": rows, "summary": summary(reports)}
        write_document(ctx.out, json_neutral(json_safe(json_dumps(document, option=orjson.OPT_INDENT_2))))
    elif name == "json-lines":
        for row in rows:
            ctx.out.write(json_neutral(json_safe(json_dumps(row))).decode() + "\n")
        ctx.out.flush()
    else:
        width = max((len(str(r["count"])) for r in rows), default=1)
        for row in rows:
            ctx.out.write(f"{row['count']:>{width}}\t{row['code']}\t{row['name'] or ''}\n")
        ctx.out.flush()
    for report in reports:
        if report.error is not None:
            ctx.err.write(neutral(f"apx-doctor: error: {printable(report.error)}") + "\n")
    report_skipped(reports, ctx)
    if not ctx.quiet and name != "json":
        ctx.err.write(summary_text(reports, ctx) + "\n")
    ctx.err.flush()
