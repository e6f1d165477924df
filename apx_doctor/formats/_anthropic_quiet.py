"""The Anthropic format's quiet lines: the few fields that prove a message gives the engine nothing to do.

Imported only by ``AnthropicAdapter.quiet_lines``, once a check has lines past
the head, so that a short run never imports msgspec. A line is taken when,
from a quiet engine, ``AnthropicAdapter.classify`` and the engine would
certainly do nothing with it:

- between steps: a system message, a user message of text (a string, or
  blocks none of which is a ``tool_result``), or an assistant message with no
  ``tool_use`` block; an assistant message whose ``tool_use`` blocks have
  distinct string ids opens a step;
- within a step: a user message whose blocks begin with results (each for a
  call still waiting, its content neither the marker nor a placeholder) and
  hold no result after other content; with other content it must answer every
  call still waiting (it is a boundary). An assistant message right after an
  assistant message continues the reply (no boundary): it is held, and its own
  calls join the step.

Anything else deviates: a stray, duplicate or late result, a result after text
(APX007), the marker, a placeholder, a prompt or a new reply while calls wait,
a ``tool_use`` whose id is no string, a block that is no object or has no
string ``type``, a role or content the adapter does not read.

The adapter keeps one piece of state, the previous message's role (an
assistant message after another continues its reply). It is kept exactly here
for every line the step lets go (``QUIET``, ``ENDS``); a held line's role is
set only when its step ends, so that the general code, reading the held lines
again after a deviation, starts from the role of the line before them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import msgspec

from ..quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step
from ._quiet_results import PlainStrings, read_plain

if TYPE_CHECKING:
    from .anthropic import AnthropicAdapter

_NULL = msgspec.Raw(b"null")


class _Block(msgspec.Struct, gc=False):
    # Required and a string: a block that is no object, or has no string type,
    # is not typed, and the line goes the general way. Unknown keys (text,
    # input, ...) are skipped; of a key given twice the last counts, as in
    # orjson's dict.
    type: str
    # A tool_use's id (a client call only when a string: another goes the general way).
    id: str | None = None
    # A tool_result's call id and content, kept as its raw JSON: only a short one is read.
    tool_use_id: str | None = None
    content: msgspec.Raw = _NULL


class _Line(msgspec.Struct, gc=False):
    # A literal comes back as the one string object; a role outside them is
    # not typed (the general code says APX104), nor is content that is neither
    # a string nor a list, nor a missing one.
    role: Literal["user", "assistant", "system"]
    content: str | list[_Block]


class AnthropicQuietLines:
    """``quiet.QuietLines`` for Anthropic messages."""

    def __init__(self, adapter: AnthropicAdapter) -> None:
        self.decode = msgspec.json.Decoder(_Line).decode
        self.result_for = adapter.result_for
        self.take = _taker(adapter, self.plain)

    def text_bytes(self, line: _Line) -> int:
        """The bytes of the line's string contents (or its string content): none of them nests."""
        content = line.content
        if isinstance(content, str):
            return len(content)  # characters: at most its bytes
        total = 0
        for block in content:
            raw = block.content
            if memoryview(raw)[0] == 0x22:
                total += len(raw)
        return total

    def thread(self) -> None:
        return None  # one thread

    def opens(self, line: _Line, raw: bytes) -> bool:
        """A prompt: a user message of text, or one holding anything besides its results."""
        content = line.content
        if line.role != "user":
            return False
        return isinstance(content, str) or any(block.type != "tool_result" for block in content)

    def plain(self, content: bytes | memoryview) -> bool:
        """The result's content (raw JSON) is certainly neither the marker nor a placeholder."""
        return read_plain(content, self.result_for)


def _taker(adapter: AnthropicAdapter, plain: Callable[[bytes | memoryview], bool]) -> Callable[[_Line, Step], int]:
    """``QuietLines.take`` for ``adapter``: a closure, as this runs for each line."""
    strings = PlainStrings(adapter.marker)
    # Under --target bedrock a message of results alone is a boundary (the
    # quiet loop is not used there; kept exact all the same).
    alternating = adapter.alternating
    view = memoryview
    # The role of the step's previous line, for the lines it holds (the
    # adapter's own ``_last_role`` holds the role of the last line let go).
    previous = "assistant"

    def take(line: _Line, step: Step) -> int:
        nonlocal previous
        role = line.role
        content = line.content
        waiting = step.waiting
        if waiting is None:
            if role == "assistant":
                if not isinstance(content, str):
                    calls = None
                    for block in content:
                        if block.type == "tool_use":
                            call_id = block.id
                            if call_id is None:
                                return DEVIATES  # no call to the adapter, but odd: the general way
                            if calls is None:
                                calls = [call_id]
                            else:
                                calls.append(call_id)
                    if calls is not None:
                        if len(calls) == 1:  # one call, the common case: no id can repeat
                            step.waiting = {calls[0]}
                            step.mark = len(step.answered)
                            said = OPENS
                        else:
                            said = step.open(calls)
                        previous = "assistant"
                        return said
            elif role == "user" and not isinstance(content, str):
                for block in content:
                    if block.type == "tool_result":
                        return DEVIATES  # stray here: the engine's to report
            adapter._last_role = role
            return QUIET
        if role == "user":
            if isinstance(content, str):
                return DEVIATES  # a prompt closes the calls still waiting
            answered = step.answered
            other = False
            for block in content:
                if block.type != "tool_result":
                    other = True
                    continue
                if other:
                    return DEVIATES  # a result after other content: APX007
                call_id = block.tool_use_id
                if call_id is None or call_id not in waiting:
                    return DEVIATES  # stray, duplicate or late: the engine's to report
                raw = view(block.content)
                if not (raw[0] == 0x22 and strings.proven(raw)) and not plain(raw):
                    return DEVIATES
                waiting.remove(call_id)
                answered.append(call_id)
            if not waiting:
                step.waiting = None
                adapter._last_role = "user"
                return ENDS
            if other or alternating:
                return DEVIATES  # a boundary with calls still waiting
            previous = "user"
            return HELD
        if role == "assistant" and previous == "assistant":
            # The same reply continued: no boundary; its calls join the step.
            if not isinstance(content, str):
                for block in content:
                    if block.type == "tool_use":
                        call_id = block.id
                        if call_id is None or call_id in waiting:
                            return DEVIATES  # a call id already waiting: APX005
                        waiting.add(call_id)
            return HELD
        return DEVIATES  # a boundary with calls still waiting

    return take
