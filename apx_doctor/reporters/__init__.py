"""Reporters render reports; they decide nothing and read no file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Sequence

from ..model import FileReport

OUTPUT_FORMATS = ("text", "json")


@dataclass(frozen=True, slots=True)
class RenderContext:
    command: str  # "check" or "fix"
    mode: str  # runner.Mode value
    out: IO[str]  # findings
    err: IO[str]  # summary, progress, errors
    quiet: bool = False
    color: bool | None = None  # None: decide from the stream


def render(name: str, reports: Sequence[FileReport], ctx: RenderContext) -> None:
    if name == "json":
        from .json import render as render_json

        render_json(reports, ctx)
    else:
        from .text import render as render_text

        render_text(reports, ctx)


def summary(reports: Sequence[FileReport]) -> dict[str, int]:
    return {
        "files": len(reports),
        "errors": sum(r.errors for r in reports),
        "warnings": sum(r.warnings for r in reports),
        "inserted": sum(r.inserted for r in reports),
        "removed": sum(r.removed for r in reports),
        "failed": sum(1 for r in reports if r.error is not None),
    }
