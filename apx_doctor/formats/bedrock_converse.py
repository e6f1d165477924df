"""The Amazon Bedrock Converse API format: the request's ``messages``, one message a line.

    {"role": "user", "content": [{"text": "..."}]}
    {"role": "assistant", "content": [{"text": "..."}, {"toolUse": {"toolUseId", "name", "input"}}]}
    {"role": "user", "content": [{"toolResult": {"toolUseId", "content": [{"text"}|{"json"}|...], "status"?}}]}

A content block is a union: exactly one key names what it is (``text``,
``image``, ``document``, ``video``, ``audio``, ``toolUse``, ``toolResult``,
``guardContent``, ``cachePoint``, ``reasoningContent``, ``citationsContent``,
``searchResult``); there is no ``type`` field as in the Anthropic API.

What the API demands, and how it maps onto the engine:

- Roles alternate: two user (or two assistant) messages in a row are refused
  ("A conversation must alternate between user and assistant roles").
- Every ``toolUse`` of an assistant message is answered by a ``toolResult``
  in the very next message, which is a user message; the results of one
  assistant message may not be split over several user messages ("Expected
  toolResult blocks at messages.N.content for the following Ids").
- So every message is a turn boundary: a user message first delivers the
  results it holds, then closes what is still pending; an assistant message
  closes the previous one's calls (a second assistant message in a row breaks
  the alternation anyway).
- A user message with anything besides results (text, an image, a document)
  is a real user entry and starts the checked history.
- A ``toolUse`` without a ``toolUseId`` can be answered by nothing: it is
  reported as ``NAME#k`` (the k-th such call of its message; ``#`` is no
  character of a real id) with ``"fixable": false``.
- A ``toolUse`` whose ``type`` is ``server_tool_use`` (a system tool such as
  Nova's code interpreter) is answered by the server inside the assistant
  message: never a call here.

The not-run record is a ``toolResult`` block, ``{"toolUseId": ID, "content":
[{"text": MARKER}]}``, with no ``status``: ``"error"`` would tell the model the
tool failed, which nobody knows, and some model families refuse the field
altogether. Because roles alternate, the records of one assistant message go
into one user message: where the next message is a user message they are put
into it (that line is rewritten, every other block and key kept, the records
after the results it already holds); before an assistant message or at the
end of the history they form one new user message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall, ToolCall
from .base import DROP, Detection, FormatAdapter, Insertion, Shape, detect_by_line

# The members of the ContentBlock union (Bedrock Runtime API reference).
_BLOCKS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "audio",
        "toolUse",
        "toolResult",
        "guardContent",
        "cachePoint",
        "reasoningContent",
        "citationsContent",
        "searchResult",
    }
)
# Blocks no other message format has: one of them settles detection.
_DECISIVE = frozenset(_BLOCKS - {"text"})
_ROLES = frozenset({"user", "assistant"})
_KEYS = frozenset({"role", "content"})
# A toolUse the server runs and answers itself.
_SERVER_TOOL = "server_tool_use"

_BOUNDARY = Entry(boundary=True)
_PROMPT = Entry(opens_history=True, boundary=True)


class BedrockConverseAdapter(FormatAdapter):
    name = "bedrock-converse"
    description = "Amazon Bedrock Converse API: the messages list, one message a line"
    priority = 15
    message_list = True
    # No state between lines: what a line is depends on the line alone.
    pure_classify = True

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _detect_one)

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        content = obj.get("content")
        if type(content) is not list:
            return None
        role = obj.get("role")
        if role == "assistant":
            calls: list[ToolCall] | None = None
            for block in content:
                use = block.get("toolUse") if type(block) is dict else None
                if type(use) is not dict or use.get("type") == _SERVER_TOOL:
                    continue
                call_id = use.get("toolUseId")
                name = use.get("name")
                if type(name) is not str:
                    name = None
                if type(call_id) is str and call_id:
                    call = ToolCall(call_id, name, use.get("input"))
                else:
                    # No toolResult can name it: reported, never answered.
                    unnamed = sum(1 for c in calls or () if not c.fixable) + 1
                    call = ToolCall(f"{name or ''}#{unnamed}", name, use.get("input"), False)
                if calls is None:
                    calls = [call]
                else:
                    calls.append(call)
            return _BOUNDARY if calls is None else Entry(False, True, (), tuple(calls))
        if role == "user":
            results = None
            other = False
            for block in content:
                result = block.get("toolResult") if type(block) is dict else None
                if type(result) is dict:
                    answer = self.result_for(result.get("toolUseId"), _text(result.get("content")))
                    if results is None:
                        results = [answer]
                    else:
                        results.append(answer)
                elif type(block) is dict and "cachePoint" not in block:
                    other = True
            if results is None:
                return _PROMPT if other else _BOUNDARY
            # Results, then the boundary: what they leave pending is closed here.
            return Entry(other, True, tuple(results))
        return None

    def not_run_records(self, closed: Sequence[PendingCall], before: Any) -> Insertion:
        blocks = [self._block(p.call) for p in closed]
        content = before.get("content") if type(before) is dict and before.get("role") == "user" else None
        if type(content) is list:
            # The next message is the user turn the results belong in: a second
            # user message in a row would be refused.
            merged = {**before, "content": _after_results(content, blocks)}
            return Insertion([], merged, [merged] * len(closed))
        record = {"role": "user", "content": blocks}
        return Insertion([record], answers=[record] * len(closed))

    def _block(self, call: ToolCall) -> dict[str, Any]:
        return {"toolResult": {"toolUseId": call.id, "content": [{"text": self.marker}]}}

    def shape(self, obj: Any) -> Shape | None:
        """What a message is for the --target checks (APX3xx)."""
        if type(obj) is not dict or type(obj.get("content")) is not list:
            return None
        role = obj.get("role")
        if role not in ("user", "assistant"):
            return None
        calls, results, empty_results = [], [], []
        empty = kept = unsigned = 0
        other = False
        for block in obj["content"]:
            if type(block) is not dict:
                continue
            if _empty_text(block):
                empty += 1
                continue
            kept += 1
            use, result, reasoning = block.get("toolUse"), block.get("toolResult"), block.get("reasoningContent")
            if type(use) is dict:
                if type(use.get("toolUseId")) is str and use["toolUseId"]:
                    calls.append(use["toolUseId"])
            elif type(result) is dict:
                call_id = result.get("toolUseId")
                call_id = call_id if type(call_id) is str else None
                if call_id is not None:
                    results.append(call_id)
                content = result.get("content")
                if type(content) is list and all(type(b) is dict and _empty_text(b) for b in content):
                    empty_results.append(call_id)
            elif type(reasoning) is dict:
                text = reasoning.get("reasoningText")
                # Some model families sign nothing; a signature present but empty was cut off.
                if type(text) is dict and "signature" in text and not (type(text["signature"]) is str and text["signature"]):
                    unsigned += 1
            elif "cachePoint" not in block:
                other = True
        return Shape.of_blocks(role, other, calls, results, empty, kept, empty_results, unsigned)

    def without_empty_text(self, obj: Any) -> Any:
        return {**obj, "content": [b for b in obj["content"] if not (type(b) is dict and _empty_text(b))]}

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        content = obj.get("content") if type(obj) is dict else None
        if type(content) is not list:
            return DROP
        # The stray results of an id are its last occurrences: an earlier one
        # may have answered the call.
        to_drop = Counter(call_ids)
        kept_reversed = []
        for block in reversed(content):
            result = block.get("toolResult") if type(block) is dict else None
            if type(result) is dict:
                call_id = result.get("toolUseId")
                key = call_id if type(call_id) is str else None
                if to_drop[key] > 0:
                    to_drop[key] -= 1
                    continue
            kept_reversed.append(block)
        if not kept_reversed:
            return DROP
        return {**obj, "content": kept_reversed[::-1]}


def _text(content: Any) -> str | None:
    """The text of a toolResult's content when it is one text block (a not-run record, say)."""
    if type(content) is list and len(content) == 1:
        block = content[0]
        if type(block) is dict and len(block) == 1:
            text = block.get("text")
            return text if type(text) is str else None
    return None


def _empty_text(block: dict[str, Any]) -> bool:
    return len(block) == 1 and block.get("text") == ""


def _after_results(content: list[Any], blocks: list[Any]) -> list[Any]:
    """``content`` with ``blocks`` right after its last toolResult (at the front if it has none)."""
    at = 0
    for index, block in enumerate(content):
        if type(block) is dict and "toolResult" in block:
            at = index + 1
    return [*content[:at], *blocks, *content[at:]]


def _detect_one(obj: dict[str, Any]) -> int:
    # A Converse message has a role and a content list, and nothing else.
    role = obj.get("role")
    # The type test first: a dict or list role is unhashable.
    if obj.keys() - _KEYS or type(role) is not str or role not in _ROLES:
        return Detection.NO
    content = obj.get("content")
    if type(content) is not list:
        return Detection.NO
    level = Detection.COMPATIBLE
    for block in content:
        # A union: one known member name, no ``type`` (Anthropic's and OpenAI's blocks have one).
        if type(block) is not dict or len(block) != 1:
            return Detection.NO
        (key,) = block
        if key not in _BLOCKS:
            return Detection.NO
        if key in _DECISIVE:
            if type(block[key]) is not dict:
                return Detection.NO
            level = Detection.CERTAIN
        elif type(block[key]) is not str:
            return Detection.NO
    return level


ADAPTER = BedrockConverseAdapter
