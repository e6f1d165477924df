"""Recovery advice for interrupted calls.

Whoever continues a repaired session asks three questions: was a tool
requested (which, with what arguments), was a result received, and what is safe
to do next. The third depends on what the tool does. The configured lists are
asked first; then the tool's name is read word by word. Side-effect words win
over read-only words ("get_and_delete" is not safe to repeat), and a name that
says neither is reported as unknown rather than guessed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from .model import FileReport, Finding
from .safe import printable


class ToolKind(str, Enum):
    READ_ONLY = "read-only"
    SIDE_EFFECTS = "side-effects"
    UNKNOWN = "unknown"


# Whole tool names that the word rule below would get wrong or miss.
_READ_ONLY_NAMES = frozenset({"browser_text", "ls", "glob", "grep", "webfetch", "websearch", "todoread", "cat"})
_SIDE_EFFECT_NAMES = frozenset({"apply_patch", "multiedit", "notebookedit", "todowrite", "computer"})

_READ_ONLY_WORDS = frozenset(
    """get read list search fetch view text find lookup query describe inspect show grep glob cat
    head tail stat status count check lint diff peek preview screenshot snapshot retrieve""".split()
)
_SIDE_EFFECT_WORDS = frozenset(
    """write create delete remove rm update edit patch put post send exec execute run bash shell sh
    cmd command terminal apply move mv rename insert upsert set submit deploy publish push merge commit
    click fill press upload install uninstall kill stop start restart cancel approve pay transfer
    charge book email reply invite drop truncate reset revert save append replace modify add assign
    close archive""".split()
)

SAFE_NEXT = {
    ToolKind.READ_ONLY: "read-only tool: safe to re-run",
    ToolKind.SIDE_EFFECTS: (
        "tool with side effects: it may have run; check the current state first, or retry with an idempotency key"
    ),
    ToolKind.UNKNOWN: "unknown tool kind: find out whether it changes anything before re-running it",
}

ARGUMENTS_WIDTH = 80


def words(name: str) -> list[str]:
    """``mcp__github__createIssue`` -> mcp, github, create, issue."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def tool_kind(name: str | None, read_only: Sequence[str] = (), side_effects: Sequence[str] = ()) -> ToolKind:
    if not name:
        return ToolKind.UNKNOWN
    # Configured lists first, side effects before read-only: when in doubt, be careful.
    if _listed(name, side_effects):
        return ToolKind.SIDE_EFFECTS
    if _listed(name, read_only):
        return ToolKind.READ_ONLY
    lowered = name.lower()
    if lowered in _SIDE_EFFECT_NAMES:
        return ToolKind.SIDE_EFFECTS
    if lowered in _READ_ONLY_NAMES:
        return ToolKind.READ_ONLY
    found = words(name)
    if any(w in _SIDE_EFFECT_WORDS for w in found):
        return ToolKind.SIDE_EFFECTS
    if any(w in _READ_ONLY_WORDS for w in found):
        return ToolKind.READ_ONLY
    return ToolKind.UNKNOWN


def _listed(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def advice_for(
    finding: Finding,
    *,
    arguments: Any = None,
    received: str,
    read_only: Sequence[str] = (),
    side_effects: Sequence[str] = (),
) -> str:
    """The three answers, one sentence each."""
    tool = printable(finding.tool) if finding.tool else "an unnamed tool"
    requested = f"requested: {tool}"
    if arguments is not None:
        requested += f" with {printable(arguments, ARGUMENTS_WIDTH)}"
    kind = tool_kind(finding.tool, read_only, side_effects)
    return f"{requested}; result: {received}; next: {SAFE_NEXT[kind]}"


def _received(finding: Finding, inserted: bool, mode: str, unparsed: bool) -> str:
    if finding.fixable is False:
        return "none received; no honest not-run record can be written here (the finding says why), so none is inserted"
    if not inserted:
        if unparsed:
            return "none received; nothing inserted until the unreadable lines are fixed"
        return "none received"
    return {
        "check": "none received; `fix` inserts a not-run record",
        "dry-run": "none received; a not-run record would be inserted",
    }.get(mode, "none received; a not-run record was inserted")


def annotate(report: FileReport, mode: str, read_only: Sequence[str] = (), side_effects: Sequence[str] = ()) -> None:
    """Give every APX001 finding of ``report`` its advice (in place)."""
    if not any(f.code == "APX001" for f in report.findings):
        return
    planned = {(e.call_id, e.tool): e for e in report.edits if e.action == "insert"}
    unparsed = any(f.code in ("APX101", "APX102") for f in report.findings)
    out = []
    for f in report.findings:
        if f.code == "APX001" and f.advice is None:
            edit = planned.get((f.call_id, f.tool))
            applied = edit is not None and (mode not in ("in-place", "output") or report.written)
            received = _received(f, applied, mode, unparsed)
            arguments = edit.arguments if edit is not None else None
            f = replace(
                f,
                advice=advice_for(f, arguments=arguments, received=received, read_only=read_only, side_effects=side_effects),
                tool_kind=tool_kind(f.tool, read_only, side_effects).value,
            )
        out.append(f)
    report.findings = out
