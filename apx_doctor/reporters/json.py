"""The stable machine report (version 1). Fields may be added, never renamed."""

from __future__ import annotations

from typing import Sequence

import orjson

from ..model import FileReport
from ..safe import json_safe, json_dumps
from . import RenderContext, report_fixed, summary

VERSION = 1


def document(reports: Sequence[FileReport]) -> dict:
    return {
        "version": VERSION,
        "files": [r.to_dict() for r in reports],
        "summary": summary(reports),
    }


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    data = json_safe(json_dumps(document(reports), option=orjson.OPT_INDENT_2))
    buffer = getattr(ctx.out, "buffer", None)
    if buffer is None:
        ctx.out.write(data.decode() + "\n")
    else:
        # The bytes as they are: a report of many findings is not copied into
        # a str and encoded back (three copies of it at once, where one does).
        ctx.out.flush()
        buffer.write(data)
        buffer.write(b"\n")
        buffer.flush()
    ctx.out.flush()
    report_fixed(reports, ctx)
