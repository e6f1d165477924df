"""Provider profiles: which structural refusals the provider a history is sent to enforces.

``--target NAME`` (``target = NAME`` in configuration) names the provider. A
profile is a small frozen value: its name, the behaviour a repair must respect
for it (roles that must alternate, results that must follow their call with
nothing between), and, from the rule registry (``Rule.targets``), which rules it
refuses. A rule the target refuses is reported as an error; one it does not is
reported with the rule's ``target_severity`` (a warning, or not at all).

With no target the doctor behaves as it always has: the format's own rules and
severities, and none of the APX3xx checks, so a plain ``check`` costs what it
did. ``--target auto`` takes the provider the format implies (chat: openai-chat,
anthropic: anthropic, ...).

The APX3xx checks run in ``Structure``, a pass beside the pairing engine over
the entries the doctor already parsed. It knows no format: each adapter says
what a message is through its ``shape`` hook (``formats.base.Shape``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .model import Finding
from .rules import RULES, Severity

TARGETS = ("anthropic", "openai-chat", "openai-responses", "bedrock", "gemini", "deepseek")
AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    summary: str
    # Two messages of one role in a row are refused: a not-run record goes into
    # the next user message instead of standing as one of its own.
    alternating: bool = False
    # A result must follow its call with no message between them.
    strict_split: bool = False
    # A history may continue a conversation the server holds (Responses'
    # previous_response_id): an output before the first user item may answer a
    # call the file does not hold, so it is only a warning.
    server_conversation: bool = False

    def severity(self, code: str) -> Severity | None | bool:
        """How ``code`` is reported under this profile: a severity, None (not at all),
        or True (as without a profile)."""
        rule = RULES[code]
        if not rule.targets:
            return True
        if self.name in rule.targets:
            return Severity.ERROR
        return rule.target_severity

    @property
    def refuses(self) -> tuple[str, ...]:
        """The codes this provider refuses, in the registry's order."""
        return tuple(code for code, rule in RULES.items() if self.name in rule.targets)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("anthropic", "Anthropic Messages API"),
        Profile("openai-chat", "OpenAI Chat Completions"),
        Profile("openai-responses", "OpenAI Responses API", server_conversation=True),
        Profile("bedrock", "Amazon Bedrock (Converse, or Anthropic models through Bedrock)", alternating=True),
        Profile("gemini", "Google Gemini API", alternating=True),
        Profile(
            "deepseek", "DeepSeek (OpenAI-compatible, stricter on tool outputs)", strict_split=True, server_conversation=True
        ),
    )
}

# The provider a format's history is written for: what ``--target auto`` takes.
_IMPLIED = {
    "chat": "openai-chat",
    "anthropic": "anthropic",
    "cline": "anthropic",
    "claude-code": "anthropic",
    "responses": "openai-responses",
    "codex": "openai-responses",
    "bedrock-converse": "bedrock",
    "gemini-api": "gemini",
    "gemini-cli": "gemini",
}


def implied(format_name: str | None) -> str | None:
    """The target a format implies, or None where it names no one provider."""
    return _IMPLIED.get(format_name or "")


def check_target(name: str | None) -> str | None:
    """``name`` if it is a target (or ``auto``); raises ValueError naming the choices."""
    if name is None or name == AUTO or name in PROFILES:
        return name
    raise ValueError(f"unknown target {name!r}; choose one of: {', '.join((AUTO, *TARGETS))}")


def resolve(target: str | None, format_name: str | None) -> Profile | None:
    """The profile for ``target`` on a history of ``format_name`` (None: no profile)."""
    if target is None:
        return None
    if target == AUTO:
        target = implied(format_name)
        if target is None:
            return None
    return PROFILES[check_target(target)]  # type: ignore[index]  # target is not None here, so neither is its check


def leveled(
    profile: Profile,
    findings: Iterable[Finding],
    *,
    first_user_line: int | None = None,
    drop_orphans: bool = False,
) -> list[Finding]:
    """``findings`` as ``profile`` reports them: re-leveled, some left out.

    A stray result removed by ``--drop-orphans`` says ``"fixable": true``: under a
    target it is an error, and it is one the repair resolved.
    """
    out = []
    for finding in findings:
        level = profile.severity(finding.code)
        if level is True:
            out.append(finding)
            continue
        if level is None:
            continue
        code = finding.code
        if (
            code == "APX002"
            and profile.server_conversation
            and (first_user_line is None or (finding.line or 0) < first_user_line)
        ):
            level = Severity.WARNING
        changes: dict[str, Any] = {"level": level}
        if drop_orphans and code in ("APX002", "APX003", "APX004") and finding.fixable is None:
            changes["fixable"] = True
        out.append(replace(finding, **changes))
    return out


class Structure:
    """The APX3xx checks, one message at a time, beside the engine.

    ``feed`` takes a line's shape and returns what it found there; ``finish``
    what the end of the history reveals (a reasoning item left last). State is
    a few ids and the previous role, plus every call id and item id seen (a
    history sent to a provider is one request: it holds them all anyway).
    """

    __slots__ = (
        "calls",
        "drop_empty_blocks",
        "first_user_line",
        "items",
        "open_calls",
        "profile",
        "reasoning",
        "role",
    )

    def __init__(self, profile: Profile, *, drop_empty_blocks: bool = False) -> None:
        self.profile = profile
        # fix --drop-empty-blocks: an empty text block the message can do without is repaired.
        self.drop_empty_blocks = drop_empty_blocks
        self.calls: dict[str, int] = {}
        self.items: dict[str, int] = {}
        # The alternating role of the previous message, and its line.
        self.role: tuple[str, int] | None = None
        # A reasoning item waiting for the item it belongs before: (line, id).
        self.reasoning: tuple[int, str | None] | None = None
        # Calls since the last turn, by id: whether a message has come between
        # them and now (APX307).
        self.open_calls: dict[str, bool] = {}
        self.first_user_line: int | None = None

    def split(self, call_id: str) -> bool:
        """Whether a message stands between the call ``call_id`` and here."""
        return self.profile.strict_split and self.open_calls.get(call_id, False)

    def feed(self, line: int, shape: Any) -> list[Finding]:
        found: list[Finding] = []
        kind = shape.kind
        if self.reasoning is not None and kind != "pass":
            if kind not in ("call", "message"):
                found.append(_lonely_reasoning(*self.reasoning))
            self.reasoning = None
        if shape.opens and self.first_user_line is None:
            self.first_user_line = line
        role = shape.role
        if role is not None:
            previous = self.role
            if previous is not None and previous[0] == role:
                found.append(
                    Finding(
                        "APX306",
                        line,
                        f"a second {role} message in a row (the one before is on line {previous[1]}); the roles must alternate",
                    )
                )
            self.role = (role, line)
        if shape.item_id is not None:
            first = self.items.get(shape.item_id)
            if first is None:
                self.items[shape.item_id] = line
            else:
                found.append(Finding("APX302", line, f"item id {shape.item_id!r} is already used on line {first}"))
        if kind == "reasoning":
            self.reasoning = (line, shape.item_id)
        for result_id in shape.results:
            split = self.open_calls.pop(result_id, None)
            if split and self.profile.strict_split:
                found.append(
                    Finding(
                        "APX307",
                        line,
                        f"a message stands between the call {result_id!r} and this result",
                        call_id=result_id,
                        fixable=False,
                    )
                )
        if kind == "message" and self.open_calls:
            for call_id in self.open_calls:
                self.open_calls[call_id] = True
        if shape.turn:
            self.open_calls.clear()
        for call_id in shape.calls:
            first = self.calls.get(call_id)
            if first is None:
                self.calls[call_id] = line
            else:
                found.append(
                    Finding(
                        "APX301",
                        line,
                        f"call id {call_id!r} is already used by the call on line {first}",
                        call_id=call_id,
                        fixable=False,
                    )
                )
            self.open_calls[call_id] = False
        if shape.empty_text:
            what = "an empty text block" if shape.empty_text == 1 else f"{shape.empty_text} empty text blocks"
            # "fixable": true only where this run removes them, false where no run could.
            fixable = (True if self.drop_empty_blocks else None) if shape.droppable else False
            found.append(Finding("APX304", line, f"this message holds {what}", fixable=fixable))
        for result_id in shape.empty_results:
            found.append(
                Finding(
                    "APX305",
                    line,
                    f"the tool result for {result_id!r} has no content" if result_id else "a tool result has no content",
                    call_id=result_id,
                    fixable=False,
                )
            )
        if shape.unsigned_thinking:
            found.append(
                Finding(
                    "APX308",
                    line,
                    "a thinking block here has an empty or missing signature; thinking blocks are never edited",
                    fixable=False,
                )
            )
        return found

    def finish(self) -> list[Finding]:
        if self.reasoning is None:
            return []
        found = [_lonely_reasoning(*self.reasoning)]
        self.reasoning = None
        return found


def _lonely_reasoning(line: int, item_id: str | None) -> Finding:
    what = "a reasoning item" if item_id is None else f"reasoning item {item_id!r}"
    return Finding(
        "APX303",
        line,
        f"{what} is not followed by the call or message it belongs before",
        fixable=False,
    )
