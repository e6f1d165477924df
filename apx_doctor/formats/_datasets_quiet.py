"""The datasets format's quiet lines: rows proven, from a few typed fields, to need nothing.

Imported only by ``DatasetsAdapter.quiet_lines``, once a check has lines past
the head. A row is a whole conversation, checked on its own by
``DatasetsAdapter.review_line``: parsing it whole and reviewing it costs more
than the parse of the bare loop (detection of the messages' format, then the
walk). A row is taken (``QUIET``) when its typed fields prove that the review
would find nothing and change nothing; any other row is read whole.

What a taken row must be, and why that is the review's verdict:

- **Its keys**: ``messages`` (and optionally ``tools`` and
  ``parallel_tool_calls``, as OpenAI's fine-tuning rows have them); each
  message's keys among ``role`` (a chat role), ``content`` (a JSON string or
  null), ``tool_calls``, ``tool_call_id`` and ``name``; each call's among
  ``id`` (a string), ``type`` and ``function`` (``name``, ``arguments``).
  Every other key makes the row deviate. So nothing is skipped unseen: the
  only values not typed are the raw ones, whose nesting is bounded here
  (``_shallow``), and the decode cannot accept a row nested deeper than orjson
  reads. (The chunk's UTF-8 check covers the raw values' bytes, as for every
  format.)
- **Read as chat**: the review reads a row in the format its messages are in.
  Within its first 64 messages (what detection reads), a message with a
  ``tool_calls`` key or of role ``tool``: every message format's detector but
  chat's refuses that message (a tool role, or a key none of them has), so
  chat is the one certain, or (where a message without ``content`` before it
  makes chat's refuse too) the fallback; neither ShareGPT (its turns have no
  role) nor LLaMA-Factory v1 (its content is a list) can apply.
- **Nothing to report**: each assistant message's calls (distinct ids) are
  answered by tool messages, before anything but a legacy ``function``
  message, with results that are neither the marker nor a placeholder; calls
  still open at the end are the row's training target, which the review leaves
  open. Everything odd goes the general way.

Two conditions are stricter than the review needs (a row with no call, or whose
first call comes past the messages detection reads): they keep the proof
independent of which message format detection ranks first when none is certain.
Before the first user message the review pairs nothing; the same rules hold
there all the same.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from ..quiet import DEVIATES, QUIET, Step
from ._quiet_results import PlainResults
from .base import FormatAdapter
from .chat import ChatAdapter

# A value given as raw JSON that is not a string: orjson refuses nesting past
# 1,024 levels (``jsonl.MAX_DEPTH``); a row's typed fields reach 6 levels, and a
# value of n bytes nests at most n / 2 deep, so one this short cannot reach it.
_SHORT_VALUE = 2000
# Chat's detector reads this many messages of a row (``datasets._inner_adapter``).
_DETECTED = 64
_ABSENT = msgspec.Raw(b"")
_QUOTE, _NULL = 0x22, 0x6E  # the first byte of a JSON string, and of null


class _Function(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    name: str | None = None
    arguments: msgspec.Raw = _ABSENT


class _Call(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    # Required and a string: ``chat._calls`` passes over an item without one, which the general way reports.
    id: str
    type: str | None = None
    function: _Function | None = None


class _Message(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    role: Literal["user", "assistant", "tool", "system", "developer", "function"]
    content: msgspec.Raw = _ABSENT
    # UNSET: no such key (chat's detector tells a null one from none).
    tool_calls: list[_Call] | None | UnsetType = UNSET
    tool_call_id: str | None = None
    name: str | None = None


class _Row(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    messages: list[_Message]
    tools: msgspec.Raw = _ABSENT
    parallel_tool_calls: bool | None = None


def _shallow(raw: msgspec.Raw) -> bool:
    """Whether a raw value nests no deeper than orjson reads, within a row."""
    if len(raw) <= _SHORT_VALUE or memoryview(raw)[0] == _QUOTE:
        return True
    data = bytes(raw)
    return data.count(b"[") + data.count(b"{") <= _SHORT_VALUE // 2


class DatasetsQuietLines:
    """``quiet.QuietLines`` for dataset rows: ``take`` says ``QUIET`` of a row that needs nothing, else ``DEVIATES``."""

    # ``take`` bounds every raw value's nesting: the loop need not count a long row's brackets.
    proves_depth = True

    def __init__(self, adapter: FormatAdapter) -> None:
        self.decode = msgspec.json.Decoder(_Row).decode
        results = PlainResults(ChatAdapter(marker=adapter.marker))
        self.plain = results.plain
        # Asked first: a long string (the common result) then costs no call.
        self.plain_above = results.plain_above

    def text_bytes(self, line: _Row) -> int:
        return 0  # not asked: ``proves_depth``

    def thread(self) -> None:
        return None  # each row is its own history

    def opens(self, line: _Row, raw: bytes) -> bool:
        return any(message.role == "user" for message in line.messages)

    def take(self, line: _Row, step: Step) -> int:
        # One walk over the messages, the chat format's step inlined: this runs for each message of each row.
        if line.tools is not _ABSENT and not _shallow(line.tools):
            return DEVIATES
        plain, plain_above, view = self.plain, self.plain_above, memoryview
        waiting: set[str] | None = None
        started = certain = False
        seen = 0  # messages before the one that makes chat's detector certain
        for message in line.messages:
            role, content, calls = message.role, message.content, message.tool_calls
            first = view(content)[0] if content is not _ABSENT else 0
            if first != _QUOTE and first != _NULL and first:
                return DEVIATES  # content parts (or another value): the general way
            if not certain:
                if calls is not UNSET or role == "tool":
                    certain = True
                elif seen == _DETECTED - 1:
                    return DEVIATES  # detection would not see what makes it certain
                seen += 1
            if waiting is not None:
                if role == "tool":
                    call_id = message.tool_call_id
                    if call_id not in waiting or content is _ABSENT:
                        return DEVIATES
                    if (first != _QUOTE or len(content) <= plain_above) and not plain(content):
                        return DEVIATES
                    waiting.remove(call_id)
                    if not waiting:
                        waiting = None
                elif role != "function":
                    return DEVIATES  # a boundary closes the calls still waiting
                continue
            if role == "assistant":
                if calls:  # neither UNSET, None nor empty
                    waiting = set()
                    for call in calls:
                        function = call.function
                        # (``_shallow`` inlined for the common short arguments: the absent ones are empty.)
                        if function is not None and len(function.arguments) > _SHORT_VALUE and not _shallow(function.arguments):
                            return DEVIATES
                        waiting.add(call.id)
                    if len(waiting) != len(calls):
                        return DEVIATES  # an id given twice: the engine reports it
            elif role == "user":
                started = True
            elif role == "tool":
                return DEVIATES  # a result that answers nothing here
        # Calls still open at the end are the example's training target: the review leaves them open.
        return QUIET if certain and started else DEVIATES
