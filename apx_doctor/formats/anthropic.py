"""The Anthropic Messages API format: the request's ``messages`` array, one message a line.

    {"role": "user", "content": "..." | [blocks]}
    {"role": "assistant", "content": [{"type": "text", ...}, {"type": "tool_use", "id", "name", "input"}]}
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id", "content"}, {"type": "text", ...}]}

What the API demands, and how it maps onto the engine:

- Results of an assistant message's ``tool_use`` blocks belong in the very next
  user message, before its text. The API merges consecutive messages of one
  role, so a user message holding only ``tool_result`` blocks is no turn
  boundary (the next one may carry the rest), and an assistant message right
  after another assistant message continues the same reply.
- A user message with any other content (text, images, ...) and an assistant
  message after a user message both end the window for results.
- ``server_tool_use`` (and the ``*_tool_result`` blocks the server writes) are
  answered by the server inside the assistant message: never calls here.
- The not-run record is a user message holding one ``tool_result`` block; the
  API merges it into the user message it stands before.
- In a user message, ``tool_result`` blocks come first ("Any text must come
  AFTER all tool results"): the API answers a call only from the results that
  lead the message, and refuses the rest with "`tool_use` ids were found
  without `tool_result` blocks immediately after". A result placed after other
  content still answers its call here, and the line is reported APX007; the fix
  moves the message's results to its front, in their order, and leaves every
  other block as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine import Entry, PendingCall, ToolCall, ToolResult
from .base import DEFAULT_MARKER, DROP, Amend, Detection, FormatAdapter, Insertion, Shape, detect_by_line, str_or_none

if TYPE_CHECKING:
    from ..quiet import QuietLines

_ROLES = frozenset({"user", "assistant", "system"})
# Block types only the Messages API has: one of them settles detection.
_DECISIVE_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "server_tool_use",
        "thinking",
        "redacted_thinking",
        "document",
        "search_result",
        "container_upload",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
    }
)
# Keys that belong to other formats' lines (chat, Claude Code, Codex, datasets).
_FOREIGN_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call", "message", "payload", "messages"})
_BOUNDARY = Entry(boundary=True)
_PROMPT = Entry(opens_history=True, boundary=True)
_CONTINUE = Entry()


class AnthropicAdapter(FormatAdapter):
    name = "anthropic"
    description = "Anthropic Messages API: the messages array, one message a line"
    priority = 10
    message_list = True
    amends = True

    def __init__(self, *, marker: str = DEFAULT_MARKER) -> None:
        super().__init__(marker=marker)
        # The role of the previous message: consecutive same-role messages are one turn.
        self._last_role: str | None = None

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _detect_one)

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        role = obj.get("role")
        content = obj.get("content")
        # The type test first: a dict or list role is unhashable.
        if not isinstance(role, str) or role not in _ROLES or not isinstance(content, (str, list)):
            return None
        if role == "user":
            entry = self._user(obj, content)
        elif role == "assistant":
            entry = self._assistant(content)
        else:
            entry = _BOUNDARY
        self._last_role = role
        return entry

    def quiet_lines(self) -> QuietLines:
        from ._anthropic_quiet import AnthropicQuietLines

        return AnthropicQuietLines(self)

    def _user(self, obj: dict[str, Any], content: str | list[Any]) -> Entry:
        if isinstance(content, str):
            return _PROMPT
        results = []
        other = False
        # The first result that stands after other content (the API refuses it).
        late = None
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if other and late is None:
                    late = block
                results.append(self._result(block))
            else:
                other = True
        # Only text (or images, documents...) ends the window for results: a
        # message of results alone may be followed by more, merged by the API.
        # Where roles must alternate (--target bedrock) no more may follow: it
        # closes what it leaves pending, and the records go into it.
        entry = Entry(other, other or self.alternating, tuple(results))
        if late is None:
            return entry
        return _results_first(obj, content, entry, late)

    def _result(self, block: dict[str, Any]) -> ToolResult:
        return self.result_for(block.get("tool_use_id"), block.get("content"))

    def _assistant(self, content: str | list[Any]) -> Entry:
        # An assistant message right after another one continues the same reply.
        boundary = self._last_role != "assistant"
        if isinstance(content, str):
            return _BOUNDARY if boundary else _CONTINUE
        calls = []
        for block in content:
            if _is_client_call(block):
                calls.append(_call(block))
        if not calls:
            return _BOUNDARY if boundary else _CONTINUE
        return Entry(False, boundary, (), tuple(calls))

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        if self.alternating and type(before) is dict and before.get("role") == "user":
            content = before.get("content")
            if isinstance(content, (str, list)):
                # A second user message in a row would be refused: the records go
                # into this one, after the results it holds, before everything else.
                blocks = [self._record(p.call)["content"][0] for p in closed]
                if isinstance(content, str):
                    rest = [{"type": "text", "text": content}]
                    held: list[Any] = []
                else:
                    held = [b for b in content if _is_result(b)]
                    rest = [b for b in content if not _is_result(b)]
                merged = {**before, "content": held + blocks + rest}
                return Insertion([], merged, [merged] * len(closed))
        if self.alternating and len(closed) > 1:
            # One user message answers the whole assistant message, not one a call.
            record = {"role": "user", "content": [self._record(p.call)["content"][0] for p in closed]}
            return Insertion([record], answers=[record] * len(closed))
        return Insertion([self._record(p.call) for p in closed])

    def shape(self, obj: Any) -> Shape | None:
        """What a message is for the --target checks (APX3xx)."""
        if type(obj) is not dict:
            return None
        role = obj.get("role")
        content = obj.get("content")
        if role not in ("user", "assistant"):
            return None
        if isinstance(content, str):
            return Shape(
                "turn" if role == "user" else "message",
                role,
                opens=role == "user",
                turn=role == "user",
                empty_text=int(content == ""),
            )
        if not isinstance(content, list):
            return None
        calls, results, empty_results = [], [], []
        empty = kept = unsigned = 0
        other = False
        for block in content:
            kind = block.get("type") if type(block) is dict else None
            if kind == "text":
                if block.get("text") == "":
                    empty += 1
                    continue
                other = True
            elif kind in ("tool_use", "server_tool_use"):
                if isinstance(block.get("id"), str):
                    calls.append(block["id"])
            elif kind == "tool_result":
                call_id = str_or_none(block.get("tool_use_id"))
                if call_id is not None:
                    results.append(call_id)
                if "content" in block and _empty_content(block["content"]):
                    empty_results.append(call_id)
            elif kind == "thinking":
                signature = block.get("signature")
                if not isinstance(signature, str) or not signature:
                    unsigned += 1
            else:
                other = other or kind != "tool_result"
            kept += 1
        return Shape.of_blocks(role, other, calls, results, empty, kept, empty_results, unsigned)

    def without_empty_text(self, obj: Any) -> Any:
        content = obj.get("content")
        return {**obj, "content": [b for b in content if not _empty_text_block(b)]}

    def _record(self, call: ToolCall) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": self.marker}
        if call.context is not None:
            # A toolset member's result names its toolset, as the API asks.
            block["toolset_name"] = call.context
        return {"role": "user", "content": [block]}

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        content = obj.get("content") if isinstance(obj, dict) else None
        if not isinstance(content, list):
            return DROP
        # The stray results of an id are its last occurrences: an earlier one
        # may have answered the call.
        to_drop = Counter(call_ids)
        kept_reversed = []
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                key = call_id if isinstance(call_id, str) else None
                if to_drop[key] > 0:
                    to_drop[key] -= 1
                    continue
            kept_reversed.append(block)
        if not kept_reversed:
            return DROP
        return {**obj, "content": kept_reversed[::-1]}


def _detect_one(obj: dict[str, Any]) -> int:
    if str_or_none(obj.get("role")) not in _ROLES or _FOREIGN_KEYS.intersection(obj):
        return Detection.NO
    # A recorded response (`Message`, "type": "message") is a message too; any other
    # type is a Responses item or another tool's line.
    if obj.get("type", "message") != "message":
        return Detection.NO
    content = obj.get("content")
    if isinstance(content, str):
        return Detection.COMPATIBLE
    if not isinstance(content, list):
        return Detection.NO
    level = Detection.COMPATIBLE
    for block in content:
        kind = str_or_none(block.get("type")) if isinstance(block, dict) else None
        if kind in _DECISIVE_BLOCKS or (kind == "image" and isinstance(block.get("source"), dict)):
            level = Detection.CERTAIN
        elif kind != "text":
            return Detection.NO
    return level


def _results_first(obj: dict[str, Any], content: list[Any], entry: Entry, late: dict[str, Any]) -> Amend:
    """``entry`` with the rewrite that moves the message's results to its front (APX007)."""
    results = [b for b in content if _is_result(b)]
    rest = [b for b in content if not _is_result(b)]
    call_id = str_or_none(late.get("tool_use_id"))
    what = "a tool_result" if call_id is None else f"the tool_result for {call_id!r}"
    message = f"{what} follows other content in this user message; the API wants the results first"
    return Amend(entry, "APX007", message, {**obj, "content": results + rest}, call_id)


def _empty_text_block(block: Any) -> bool:
    return type(block) is dict and block.get("type") == "text" and block.get("text") == ""


def _empty_content(content: Any) -> bool:
    """A result's content that says nothing: "", [], or only empty text blocks."""
    if content == "":
        return True
    return isinstance(content, list) and all(_empty_text_block(b) for b in content)


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _is_client_call(block: Any) -> bool:
    # Only `tool_use` is answered by the client; `server_tool_use` is the server's.
    return isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str)


def _call(block: dict[str, Any]) -> ToolCall:
    name = block.get("name")
    toolset = block.get("toolset_name")
    return ToolCall(
        block["id"],
        name if isinstance(name, str) else None,
        block.get("input"),
        context=toolset if isinstance(toolset, str) else None,
    )


ADAPTER = AnthropicAdapter
