"""The chat format's quiet lines: the few fields that prove a line gives the engine nothing to do.

Imported only by ``ChatAdapter.quiet_lines``, once a check has lines past the
head, so that a short run never imports msgspec. What a line must be to be
taken is ``ChatAdapter.clean_run``'s proof, made a line at a time: a boundary
with nothing pending, or a step whose calls (distinct string ids) are each
answered once, by tool lines, with results that are neither the marker nor a
placeholder, before anything else but a legacy ``function`` line.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step
from ._quiet_results import PlainResults
from .base import FormatAdapter


class _Call(msgspec.Struct, gc=False):
    # Required and a string: an item without one (which ``_calls`` skips) is
    # not typed, and the line goes the general way.
    id: str


class _Line(msgspec.Struct, gc=False):
    # Unknown keys are skipped; of a key given twice the last counts, as in
    # orjson's dict. ``content`` is kept as its raw JSON: only a short one is read.
    # A literal comes back as the one string object, with its hash kept; a
    # role outside them is not typed (the general code says APX104).
    # gc=False: a line's fields (strings, a list of ids, raw bytes) can hold no
    # cycle, so the collector need not track the two million lines of a file.
    role: Literal["user", "assistant", "tool", "system", "developer", "function"]
    tool_calls: list[_Call] | None = None
    tool_call_id: str | None = None
    content: msgspec.Raw = msgspec.Raw(b"null")


# Roles that, with nothing pending, give the engine nothing to do: user,
# system and developer are boundaries, function is passed over.
_QUIET_ROLES = frozenset({"user", "system", "developer", "function"})


class ChatQuietLines:
    """``quiet.QuietLines`` for chat lines."""

    def __init__(self, adapter: FormatAdapter) -> None:
        self.decode = msgspec.json.Decoder(_Line).decode
        results = PlainResults(adapter)
        self.plain = results.plain
        # Asked here first: a long result (the common case) costs no call.
        self.plain_above = results.plain_above

    def text_bytes(self, line: _Line) -> int:
        content = line.content
        return len(content) if memoryview(content)[0] == 0x22 else 0

    def thread(self) -> None:
        return None  # one thread

    def opens(self, line: _Line, raw: bytes) -> bool:
        return line.role == "user"

    def take(self, line: _Line, step: Step) -> int:
        # ``Step.open`` and ``Step.answer``, inlined for the common lines: this runs for each line.
        role = line.role
        waiting = step.waiting
        if waiting is None:
            if role == "assistant":
                calls = line.tool_calls
                if not calls:
                    return QUIET
                if len(calls) == 1:  # one call, the common case: no id can repeat
                    step.waiting = {calls[0].id}
                    step.mark = len(step.answered)
                    return OPENS
                return step.open([call.id for call in calls])
            return QUIET if role in _QUIET_ROLES else DEVIATES  # a result is stray here; another role is APX104
        if role == "tool":
            call_id = line.tool_call_id
            if call_id not in waiting or not self.plain(line.content):
                return DEVIATES
            waiting.remove(call_id)
            step.answered.append(call_id)
            if waiting:
                return HELD
            step.waiting = None
            return ENDS
        # Any boundary closes the waiting calls: the engine's work.
        return HELD if role == "function" else DEVIATES
