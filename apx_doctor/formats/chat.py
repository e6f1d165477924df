"""The APX chat format: OpenAI Chat Completions messages, one a line.

{"role": "user", "content": ...}
{"role": "assistant", "content": ..., "tool_calls": [{"id", "type": "function", "function": {...}}]}
{"role": "tool", "tool_call_id": ID, "content": ...}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import _PLACEHOLDER_LONGEST, PLACEHOLDER_TEXTS, Detection, FormatAdapter, Insertion, Shape, text_of

if TYPE_CHECKING:
    from ..quiet import QuietLines

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)
_NON_TOOL_ROLES = frozenset({"system", "developer"})
# Roles whose message, with no call pending, gives the engine nothing to do.
_QUIET_ROLES = frozenset({"user", "system", "developer", "function"})


class ChatAdapter(FormatAdapter):
    name = "chat"
    description = "APX chat history: OpenAI Chat Completions messages, one a line"
    priority = 0
    message_list = True
    pure_classify = True

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        level = Detection.NO
        for obj in samples:
            if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
                continue
            if obj["role"] == "tool" or "tool_calls" in obj:
                return Detection.CERTAIN
            if "content" not in obj or "parts" in obj:
                # A role alone defines nothing: Gemini ``contents`` and other
                # runtimes' event lines carry one too. Their calls would be
                # invisible to this reader, so such a line vetoes it.
                return Detection.NO
            content = obj["content"]
            if (
                content is None
                or isinstance(content, str)
                or isinstance(content, list)
                and all(_is_chat_part(p) for p in content)
            ):
                level = Detection.COMPATIBLE
            else:
                return Detection.NO
        return level

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        role = obj.get("role")
        if role == "tool":
            return Entry(False, False, (self.result_for(obj.get("tool_call_id"), obj.get("content")),))
        if role == "assistant":
            tool_calls = obj.get("tool_calls")
            if not tool_calls:
                return _BOUNDARY
            return Entry(False, True, (), _calls(tool_calls))
        if role == "user":
            return _USER
        # After the common roles, before the set lookup: a dict or list role is unhashable.
        if type(role) is not str:
            return None
        if role in _NON_TOOL_ROLES:
            return _BOUNDARY
        if role == "function":
            # Legacy function results carry no call id: nothing to pair.
            return PASS_OVER
        return None

    def quiet_lines(self) -> QuietLines:
        from ._chat_quiet import ChatQuietLines

        return ChatQuietLines(self)

    def clean_run(self, messages: Sequence[Any], start: int) -> tuple[int, list[str]]:
        """How far from ``start`` the messages would give the engine nothing to do.

        For ``repair_messages``, from a point where the engine is ``quiet``:
        returns the index of the first message the engine must see, and the
        call ids answered before it, in the order their results came. It
        accepts only what certainly gives no Step: boundaries with nothing
        pending, and an assistant message whose calls (distinct string ids)
        are each answered once by the tool messages right after it, with
        results that are neither the marker nor a placeholder. Anything else,
        including anything odd, stops it: the engine then decides.
        """
        marker = self.marker
        answered: list[str] = []
        add = answered.append
        end = len(messages)
        i = start
        while i < end:
            message = messages[i]
            if type(message) is not dict:
                break
            role = message.get("role")
            if type(role) is not str:
                break
            if role != "assistant":
                if role in _QUIET_ROLES:
                    i += 1
                    continue
                break  # a stray result, or no entry of the format
            tool_calls = message.get("tool_calls")
            if not tool_calls:
                i += 1
                continue
            if type(tool_calls) is not list:
                break
            if len(tool_calls) == 1 and i + 1 < end:
                # One call, the common case: its result must come right after.
                item = tool_calls[0]
                result = messages[i + 1]
                if type(item) is not dict or type(result) is not dict or result.get("role") != "tool":
                    break
                call_id = item.get("id")
                if type(call_id) is not str or result.get("tool_call_id") != call_id:
                    break
                if _marked(result.get("content"), marker):
                    break
                add(call_id)
                i += 2
                continue
            waiting: set[str] | None = set()
            for item in tool_calls:
                call_id = item.get("id") if type(item) is dict else None
                # waiting is a set until the None that breaks out (mypy widens it in the loop).
                if type(call_id) is not str or call_id in waiting:  # type: ignore[operator]
                    waiting = None
                    break
                waiting.add(call_id)  # type: ignore[union-attr]
            if waiting is None:
                break
            mark = len(answered)
            j = i + 1
            while waiting and j < end:
                result = messages[j]
                if type(result) is not dict or result.get("role") != "tool":
                    break
                call_id = result.get("tool_call_id")
                if type(call_id) is not str or call_id not in waiting:
                    break
                if _marked(result.get("content"), marker):
                    break
                waiting.remove(call_id)
                add(call_id)
                j += 1
            if waiting:
                del answered[mark:]
                break
            i = j
        return i, answered

    def shape(self, obj: Any) -> Shape | None:
        """What a message is for the --target checks (APX3xx)."""
        if type(obj) is not dict:
            return None
        role = obj.get("role")
        if role == "tool":
            call_id = obj.get("tool_call_id")
            return Shape("output", results=(call_id,) if type(call_id) is str else ())
        if role == "assistant":
            calls = tuple(c.id for c in _calls(obj.get("tool_calls")))
            return Shape("call" if calls else "message", calls=calls)
        if role in ("user", "system", "developer"):
            return Shape("turn", opens=role == "user", turn=True)
        return None

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        return Insertion([{"role": "tool", "tool_call_id": p.call.id, "content": self.marker} for p in closed])


def _calls(tool_calls: Any) -> tuple[ToolCall, ...]:
    if not isinstance(tool_calls, list):
        return ()
    calls = []
    # Each lookup once: this runs for every call of every assistant line.
    for item in tool_calls:
        if not isinstance(item, dict):
            continue
        call_id = item.get("id")
        if not isinstance(call_id, str):
            continue
        spec = item.get("function") or item.get("custom")
        name = arguments = None
        if isinstance(spec, dict):
            name = spec.get("name")
            if not isinstance(name, str):
                name = None
            arguments = spec["arguments"] if "arguments" in spec else spec.get("input")
        calls.append(ToolCall(call_id, name, arguments))
    return tuple(calls)


def _is_chat_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in (
        "text",
        "image_url",
        "input_audio",
        "file",
        "refusal",
    )


def _marked(content: Any, marker: str) -> bool:
    """Whether a result is a not-run record or a placeholder, which only the engine may judge."""
    text = content if type(content) is str else text_of(content)
    return text is not None and (text == marker or (len(text) <= _PLACEHOLDER_LONGEST and text in PLACEHOLDER_TEXTS))


ADAPTER = ChatAdapter
