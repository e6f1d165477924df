"""Values the doctor produces: findings, edits and per-file reports.

These are plain data. Reporters render them; nothing here prints or touches files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .rules import RULES, FixSafety, Rule, Severity

# The codes that `fix` itself repairs (the others need a flag, or a person).
_REPAIRED = frozenset(code for code, rule in RULES.items() if rule.fix_safety is FixSafety.SAFE)
# Repaired only with a flag: such a finding says ``"fixable": true`` when the run had it.
_OPT_IN = frozenset(code for code, rule in RULES.items() if rule.fix_safety is FixSafety.OPT_IN)
# How low a severity ``--fail-on`` may set the bar; lower numbers are graver.
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    line: int | None
    message: str
    call_id: str | None = None
    tool: str | None = None
    # Position of the message inside a one-conversation-a-line dataset row.
    index: int | None = None
    # False where the format cannot express a not-run record honestly.
    fixable: bool | None = None
    # What a person should check before continuing (filled in for APX001).
    advice: str | None = None
    # For APX001: "read-only", "side-effects" or "unknown", which decides what is safe next.
    tool_kind: str | None = None
    # The severity a provider profile (``--target``) gives it; None: the rule's own.
    level: Severity | None = None

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    @property
    def name(self) -> str:
        return RULES[self.code].name

    @property
    def severity(self) -> Severity:
        level = self.level
        return RULES[self.code].severity if level is None else level

    def sort_key(self) -> tuple[int, int, str]:
        return (self.line or 0, self.index if self.index is not None else -1, self.code)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "line": self.line,
        }
        if self.index is not None:
            out["index"] = self.index
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.tool is not None:
            out["tool"] = self.tool
        if self.fixable is not None:
            out["fixable"] = self.fixable
        out["message"] = self.message
        if self.advice is not None:
            out["advice"] = self.advice
        if self.tool_kind is not None:
            out["tool_kind"] = self.tool_kind
        return out


@dataclass(frozen=True, slots=True)
class Edit:
    """One change a repair makes, in terms of the input's line numbers.

    ``insert`` stands before ``line`` (one past the last line means appended);
    ``remove`` and ``replace`` act on ``line`` itself.
    """

    action: str  # "insert" | "remove" | "replace"
    line: int
    record: Any = None
    call_id: str | None = None
    tool: str | None = None
    arguments: Any = None
    index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.action == "insert":
            out["before_line"] = self.line
        else:
            out["line"] = self.line
        if self.index is not None:
            out["index"] = self.index
        if self.record is not None:
            out["record"] = self.record
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.tool is not None:
            out["tool"] = self.tool
        return out


@dataclass(slots=True)
class FileReport:
    path: str
    format: str | None = None
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    changed: bool = False
    written: bool = False
    # Set when the run on this file stopped (unreadable path, failed self-check).
    error: str | None = None
    # Why a repair was planned but not written (the file is part of the project
    # contract): the edits are what a repair would do.
    refused: str | None = None
    # Why the file was not checked: found in a folder, it fits no transcript format.
    skipped: str | None = None
    # fix --in-place --backup: where the original bytes were kept.
    backup: str | None = None

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.WARNING)

    @property
    def inserted(self) -> int:
        return sum(1 for e in self.edits if e.action == "insert")

    @property
    def removed(self) -> int:
        return sum(1 for e in self.edits if e.action == "remove")

    @property
    def unfixable(self) -> bool:
        """Error findings that a repair does not resolve remain after fix."""
        return self.unfixable_at(Severity.ERROR)

    def unfixable_at(self, fail_on: Severity) -> bool:
        """Findings of ``fail_on`` or graver that a repair does not resolve remain after fix."""
        bar = _RANK[fail_on]
        return any(
            _RANK[f.severity] <= bar
            and not ((f.code in _REPAIRED and f.fixable is not False) or (f.code in _OPT_IN and f.fixable is True))
            for f in self.findings
        )

    def fails(self, fail_on: Severity) -> bool:
        """Whether a finding of ``fail_on`` or graver was reported (``check --fail-on``)."""
        bar = _RANK[fail_on]
        return any(_RANK[f.severity] <= bar for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "findings": [f.to_dict() for f in self.findings],
            "edits": [e.to_dict() for e in self.edits],
            "changed": self.changed,
            "written": self.written,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.refused is not None:
            out["refused"] = self.refused
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.backup is not None:
            out["backup"] = self.backup
        return out
