"""The OpenAI Responses API format: input items, one a line.

    {"role": "user", "content": "..."}                       (or "type": "message")
    {"type": "reasoning", "id": "rs_1", "summary": []}
    {"type": "function_call", "call_id": "call_1", "name": "...", "arguments": "{}"}
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", ...}]}
    {"type": "function_call_output", "call_id": "call_1", "output": "..."}

Calls link to their outputs by ``call_id``. An output may come anywhere later in
the same turn: assistant messages and reasoning of the same response may stand
between a call and its output, so only a user, system or developer message (or a
compaction, which replaces what came before) ends the turn. Server-side items
(``web_search_call``, ``mcp_call``, ``program``...) carry their own outcome and
need no output. Item types this module does not know are passed over.

A response cut off right after a ``reasoning`` item leaves it without the item
it precedes (its call or message), which the API refuses ("provided without its
required following item") whether the not-run output stands before or after
it. So the output goes where it goes for any call, right before the message
that ends the turn; the reasoning item is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import Detection, FormatAdapter, Insertion, Shape, detect_by_line, str_or_none

if TYPE_CHECKING:
    from ..quiet import QuietLines

# Call types answered by the client, and whether an honest not-run output exists.
# A shell_call_output needs an exit outcome, an apply_patch_call_output a
# completed/failed status and a computer_call_output a screenshot: each would
# claim more than "no result was received", so those calls are reported only.
_CALLS: dict[str, bool] = {
    "function_call": True,
    "custom_tool_call": True,
    "local_shell_call": True,
    "shell_call": False,
    "apply_patch_call": False,
    "computer_call": False,
}
_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
    }
)
# Client-executed tool search is a call too (its output lists loaded tools, so
# there is no honest not-run version); server-executed search is self-contained.
_TOOL_SEARCH_CALL, _TOOL_SEARCH_OUTPUT = "tool_search_call", "tool_search_output"
_SELF_CONTAINED = frozenset(
    {
        "reasoning",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "item_reference",
        "additional_tools",
        "compaction_trigger",
        "program",
        "program_output",
        "configuration_update",
    }
)
_COMPACTION = "compaction"
_KNOWN_ITEMS = frozenset(_CALLS) | _OUTPUTS | _SELF_CONTAINED | {_TOOL_SEARCH_CALL, _TOOL_SEARCH_OUTPUT, _COMPACTION}
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio", "output_text", "refusal"})
# Content parts chat messages share with Responses items prove nothing.
_DECISIVE_PARTS = _PARTS - {"refusal"}

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)


class ResponsesAdapter(FormatAdapter):
    name = "responses"
    description = "OpenAI Responses API input items, one a line"
    priority = 20
    message_list = True

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _detect_one)

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if kind is None or kind == "message":
            return _message(obj)
        if not isinstance(kind, str):
            return None
        if kind in _CALLS:
            return _call_entry(obj, kind, _CALLS[kind])
        if kind in _OUTPUTS:
            return self._output(obj, kind)
        if kind == _TOOL_SEARCH_CALL and obj.get("execution") == "client":
            return _call_entry(obj, kind, False)
        if kind == _TOOL_SEARCH_OUTPUT and obj.get("execution") == "client":
            return self._output(obj, kind)
        if kind == _COMPACTION:
            # A compaction replaces the history before it: nothing can answer across it.
            return _BOUNDARY
        return PASS_OVER

    def quiet_lines(self) -> QuietLines:
        from ._responses_quiet import ResponsesQuietLines

        return ResponsesQuietLines(self)

    def _output(self, obj: dict[str, Any], kind: str) -> Entry:
        call_id = obj.get("call_id")
        if kind == "local_shell_call_output" and not isinstance(call_id, str):
            # The SDK links this output by `id` (the call's call_id).
            call_id = obj.get("id")
        return Entry(False, False, (self.result_for(call_id, obj.get("output")),))

    def shape(self, obj: Any) -> Shape | None:
        """What an item is for the --target checks (APX3xx)."""
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        item_id = str_or_none(obj.get("id")) or None
        if kind is None or kind == "message":
            role = obj.get("role")
            if role == "assistant":
                return Shape("message", item_id=item_id)
            if role in ("user", "system", "developer"):
                return Shape("turn", opens=role == "user", turn=True, item_id=item_id)
            return Shape("pass", item_id=item_id)
        if type(kind) is not str:
            return None
        call_id = str_or_none(obj.get("call_id"))
        if kind in _CALLS or kind == _TOOL_SEARCH_CALL:
            return Shape("call", item_id=item_id, calls=(call_id,) if call_id else ())
        if kind in _OUTPUTS or kind == _TOOL_SEARCH_OUTPUT:
            if kind == "local_shell_call_output" and call_id is None:
                # Its `id` is the link to its call, not an id of its own.
                return Shape("output", results=(item_id,) if item_id else ())
            return Shape("output", item_id=item_id, results=(call_id,) if call_id else ())
        if kind == "reasoning":
            return Shape("reasoning", item_id=item_id)
        if kind == _COMPACTION:
            return Shape("turn", turn=True, item_id=item_id)
        if kind == "item_reference":
            return Shape("pass")
        if kind in _SELF_CONTAINED:
            # A server item a response makes: it may be what a reasoning item precedes.
            return Shape("call", item_id=item_id)
        return Shape("pass", item_id=item_id)

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        return Insertion([self._record(p.call) for p in closed])

    def _record(self, call: ToolCall) -> dict[str, Any]:
        kind, caller = call.context
        if kind == "local_shell_call":
            # The SDK's local_shell_call_output has no call_id: its `id` is the link.
            return {"type": "local_shell_call_output", "id": call.id, "output": self.marker}
        # The output's own `id` is assigned by the platform: left out.
        record: dict[str, Any] = {"type": f"{kind}_output", "call_id": call.id, "output": self.marker}
        if caller is not None:
            # A call made by a program is answered to that program.
            record["caller"] = caller
        return record


def _message(obj: dict[str, Any]) -> Entry | None:
    role = obj.get("role")
    if role is None and obj.get("type") is None and isinstance(obj.get("id"), str):
        return PASS_OVER  # an item reference written without its optional type
    if role == "user":
        return _USER
    if role in ("system", "developer"):
        return _BOUNDARY
    if role == "assistant":
        # Part of the same response as the calls around it: ends nothing.
        return PASS_OVER
    return None


def _call_entry(obj: dict[str, Any], kind: str, fixable: bool) -> Entry | None:
    call_id = obj.get("call_id")
    if not isinstance(call_id, str):
        return PASS_OVER
    name = obj.get("name")
    if not isinstance(name, str):
        name = None if kind in ("function_call", "custom_tool_call") else kind
    arguments = obj["arguments"] if "arguments" in obj else obj.get("input", obj.get("action"))
    caller = obj.get("caller")
    if not isinstance(caller, dict):
        caller = None
    return Entry(False, False, (), (ToolCall(call_id, name, arguments, fixable, (kind, caller)),))


def _detect_one(obj: dict[str, Any]) -> int | None:
    """The level one line supports; None where it says nothing either way."""
    if "tool_calls" in obj or "tool_call_id" in obj or "payload" in obj or "messages" in obj:
        return Detection.NO
    kind = obj.get("type")
    if kind is None or kind == "message":
        return _detect_message(obj, certain=kind == "message")
    if str_or_none(kind) in _KNOWN_ITEMS:
        return Detection.CERTAIN
    if "role" in obj or "message" in obj:
        return Detection.NO  # a line of another format (Claude Code, say)
    # An item type of a newer API, passed over: no evidence either way.
    return None


def _detect_message(obj: dict[str, Any], certain: bool) -> int:
    if str_or_none(obj.get("role")) not in _MESSAGE_ROLES:
        return Detection.NO
    content = obj.get("content")
    if isinstance(content, str):
        return Detection.CERTAIN if certain else Detection.COMPATIBLE
    if not isinstance(content, list):
        return Detection.NO
    for part in content:
        kind = str_or_none(part.get("type")) if isinstance(part, dict) else None
        if kind not in _PARTS:
            return Detection.NO
        certain = certain or kind in _DECISIVE_PARTS
    return Detection.CERTAIN if certain else Detection.COMPATIBLE


ADAPTER = ResponsesAdapter
