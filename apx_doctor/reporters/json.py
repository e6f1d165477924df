"""The stable machine report (version 1). Fields may be added, never renamed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ..model import FileReport
from ..safe import json_dumps, json_safe
from . import RenderContext, json_neutral, report_fixed, report_skipped, summary, write_document

VERSION = 1


def document(reports: Sequence[FileReport]) -> dict[str, Any]:
    return {
        "version": VERSION,
        "files": [r.to_dict() for r in reports],
        "summary": summary(reports),
    }


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    write_document(ctx.out, json_neutral(json_safe(json_dumps(document(reports), option=orjson.OPT_INDENT_2))))
    report_fixed(reports, ctx)
    report_skipped(reports, ctx)
