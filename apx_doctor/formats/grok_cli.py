"""Grok CLI chat history: ``~/.grok/sessions/<cwd>/<session>/chat_history.jsonl``.

One ``type``-tagged conversation item a line, with no envelope (no id, no
timestamp), as xAI's grok-build serializes its ``ConversationItem``:

    {"type": "system", "content": "..."}
    {"type": "user", "content": [{"type": "text", "text": "..."}], "prompt_index": 0}
    {"type": "reasoning", "id": "rs_...", "summary": [...], "encrypted_content": "..."}
    {"type": "assistant", "content": "...", "tool_calls": [{"id": ID, "name": ..., "arguments": "{...}"}]}
    {"type": "tool_result", "tool_call_id": ID, "content": "..."}
    {"type": "backend_tool_call", "kind": {"tool_type": "web_search", ...}}

The calls of an assistant item are answered by the ``tool_result`` items that
follow it right away: grok's own repair of a cancelled turn
(``repair_dangling_tool_calls``) counts only that run of results and splices
its stand-ins in at its end. So every other item closes what is still
pending: a user item, the next assistant item, and also ``reasoning`` and
``backend_tool_call`` items (a server-side tool the backend ran itself, which
needs no result), which belong to the next response. Grok's own cancellation
results ("Tool execution was cancelled by the user ...") are real answers.

The checked history starts at the first user item that the runtime did not
inject: items with a ``synthetic_reason`` and the ``<user_info>`` preamble
close a turn but do not start the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall, ToolCall
from .base import Detection, FormatAdapter, Insertion, detect_by_line

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)

_TYPES = frozenset({"system", "user", "assistant", "tool_result", "reasoning", "backend_tool_call"})
# Keys of other runtimes' envelopes and message lists; grok writes none of them.
_FOREIGN_KEYS = (
    "role",
    "message",
    "payload",
    "data",
    "event",
    "uuid",
    "parentUuid",
    "sessionId",
    "session_id",
    "timestamp",
    "toolCallId",
)
# Keys only grok's user items carry.
_USER_KEYS = ("prompt_index", "synthetic_reason", "prior_turn_interrupt")
# The environment preamble grok puts before the first prompt, untagged.
_PREAMBLE = "<user_info>"


class GrokCliAdapter(FormatAdapter):
    name = "grok-cli"
    description = "Grok CLI chat_history.jsonl: type-tagged conversation items, one a line"
    priority = 60
    pure_classify = True

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge)

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line: one function, each key read once.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if kind == "tool_result":
            return Entry(False, False, (self.result_for(obj.get("tool_call_id"), obj.get("content")),))
        if kind == "assistant":
            tool_calls = obj.get("tool_calls")
            if not tool_calls or type(tool_calls) is not list:
                return _BOUNDARY
            return Entry(False, True, (), _calls(tool_calls))
        if kind == "reasoning" or kind == "backend_tool_call" or kind == "system":
            return _BOUNDARY
        if kind == "user":
            if obj.get("synthetic_reason") is not None or _is_preamble(obj.get("content")):
                return _BOUNDARY
            return _USER
        return None

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        # A ToolResultItem as grok serializes it: the tag, then its fields in order.
        return Insertion([{"type": "tool_result", "tool_call_id": p.call.id, "content": self.marker} for p in closed])


def _calls(tool_calls: list[Any]) -> tuple[ToolCall, ...]:
    calls = []
    for item in tool_calls:
        if type(item) is not dict:
            continue
        call_id = item.get("id")
        if type(call_id) is not str:
            continue
        name = item.get("name")
        calls.append(ToolCall(call_id, name if type(name) is str else None, item.get("arguments")))
    return tuple(calls)


def _is_preamble(content: Any) -> bool:
    if type(content) is list and content:
        first = content[0]
        content = first.get("text") if type(first) is dict else None
    return type(content) is str and content.lstrip().startswith(_PREAMBLE)


def _judge(obj: dict[str, Any]) -> int | None:
    kind = obj.get("type")
    if type(kind) is not str or kind not in _TYPES:
        return Detection.NO
    for key in _FOREIGN_KEYS:
        if key in obj:
            return Detection.NO
    if kind == "tool_result":
        return Detection.CERTAIN if type(obj.get("tool_call_id")) is str else Detection.NO
    if kind == "assistant":
        if type(obj.get("content")) is not str:
            return Detection.NO
        tool_calls = obj.get("tool_calls")
        if tool_calls is None:
            return Detection.COMPATIBLE
        if type(tool_calls) is not list:
            return Detection.NO
        # Grok's calls are flat ``{id, name, arguments}``, not Chat Completions' ``function``.
        if tool_calls and all(
            type(c) is dict and type(c.get("id")) is str and type(c.get("name")) is str and "function" not in c
            for c in tool_calls
        ):
            return Detection.CERTAIN
        return Detection.COMPATIBLE
    if kind == "backend_tool_call":
        return Detection.CERTAIN if type(obj.get("kind")) is dict else Detection.NO
    if kind == "user":
        if type(obj.get("content")) not in (list, str):
            return Detection.NO
        return Detection.CERTAIN if any(key in obj for key in _USER_KEYS) else Detection.COMPATIBLE
    if kind == "system":
        return Detection.COMPATIBLE if type(obj.get("content")) is str else Detection.NO
    return Detection.COMPATIBLE  # reasoning: the Responses item, kept as is


ADAPTER = GrokCliAdapter
