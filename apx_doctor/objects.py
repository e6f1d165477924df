"""SDK objects in, the same kind out: the library's readers for histories that are not plain dicts.

``repair_messages`` reads plain dicts directly; this module is asked only when
a list holds something else (see ``api``), so the plain path pays nothing. A
list is read as one of three families:

- **LangChain** ``BaseMessage`` objects (``HumanMessage``, ``AIMessage`` with
  ``tool_calls`` and ``invalid_tool_calls``, ``ToolMessage``, ...), read with
  the chat format's rules, attribute by attribute (nothing is converted). The
  not-run record is a ``ToolMessage``.
- **pydantic-ai** ``ModelRequest`` / ``ModelResponse`` objects. A response's
  ``ToolCallPart``\\ s are calls; a request's ``ToolReturnPart``\\ s (and
  tool-bound ``RetryPromptPart``\\ s) answer them; a request holding a user
  prompt, a system prompt or retry feedback, and every response, is a turn
  boundary. The not-run record is a ``ModelRequest`` holding one
  ``ToolReturnPart`` (``outcome="interrupted"``, stamped with the time of the
  response that made the call, so a second repair writes the same record).
- **SDK models**: any other object with ``model_dump`` (the ``openai`` and
  ``anthropic`` response types, ``ToolUseBlock``, ``ChatCompletionMessage``,
  Responses output items, ...), also where a plain dict holds them (an
  assistant message whose ``content`` is ``response.content``). Each message
  is read as the dict ``model_dump`` gives, and its format is told from those
  as for dicts; the records are the format's own param dicts (the same dicts
  the plain path inserts, which the SDKs' param types accept). A message a
  repair rewrites (``drop_orphans``, APX007) comes back as such a dict too.

The repaired list holds the caller's own objects, unchanged and in order;
nothing here mutates them. No framework is imported here: a family is told
from modules already loaded (an object cannot exist before its class's module).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .engine import PASS_OVER, Entry, PendingCall, ToolCall
from .formats.base import (
    _PLACEHOLDER_LONGEST,
    DROP,
    NOT_A_RESULT,
    PLACEHOLDER_TEXTS,
    FormatAdapter,
    Insertion,
    text_of,
    without_last_results,
)
from .formats.chat import ChatAdapter


class HoldsObjects(Exception):
    """Raised inside the plain path when it meets an SDK object: the list is read again as objects."""


# --- telling objects from plain values ---------------------------------------

_PLAIN = (str, int, float, bool, type(None))


def _pydantic_ai_messages() -> Any:
    return sys.modules.get("pydantic_ai.messages")


def _langchain_messages() -> Any:
    return sys.modules.get("langchain_core.messages")


def is_object(value: Any) -> bool:
    """True for an SDK object this module reads (a pydantic model, a LangChain or pydantic-ai message)."""
    if hasattr(value, "model_dump"):
        return True
    pai = _pydantic_ai_messages()
    return pai is not None and isinstance(value, (pai.ModelRequest, pai.ModelResponse))


def holds_objects(value: Any, depth: int = 4) -> bool:
    """True when ``value`` is, or holds within ``depth`` levels, an SDK object."""
    kind = type(value)
    if kind is dict:
        if depth:
            for item in value.values():
                if type(item) not in _PLAIN and holds_objects(item, depth - 1):
                    return True
        return False
    if kind is list or kind is tuple:
        if depth:
            for item in value:
                if type(item) not in _PLAIN and holds_objects(item, depth - 1):
                    return True
        return False
    return kind not in _PLAIN and is_object(value)


def any_objects(samples: Sequence[Any]) -> bool:
    """True when one of ``samples`` (the first messages of a list) is or holds an SDK object."""
    for message in samples:
        if type(message) is dict:
            if holds_objects(message):
                return True
        elif type(message) not in _PLAIN and is_object(message):
            return True
    return False


# The key under which each message-list format keeps what pairs (calls,
# results): where a plain dict of a long list may hold SDK objects that its
# reader would not see. The first messages are searched whole (``any_objects``).
_PAIRING_KEYS = {
    "chat": "tool_calls",
    "anthropic": "content",
    "cline": "content",
    "bedrock-converse": "content",
    "gemini-api": "parts",
}


def nested_check(format_name: str) -> Callable[[Any], bool] | None:
    """For a format, a test of one classified dict message: does it hold SDK objects where calls live?"""
    key = _PAIRING_KEYS.get(format_name)
    if key is None:
        return None

    def holds(message: Any) -> bool:
        if type(message) is not dict:
            return False
        value = message.get(key)
        if type(value) is not list:
            return False
        for item in value:
            if type(item) is not dict and type(item) not in _PLAIN and is_object(item):
                return True
        return False

    return holds


def family(messages: Sequence[Any]) -> str:
    """``"langchain"``, ``"pydantic-ai"`` or ``"sdk"``: how a list that holds objects is read.

    Told from the first messages, as a format is: a runtime keeps one kind. A
    message of another kind further on is no entry of the family's reader, and
    is reported as such (APX104), never passed over in silence.
    """
    lc = _langchain_messages()
    pai = _pydantic_ai_messages()
    found: set[str] = set()
    for message in messages[:64]:
        if type(message) is dict:
            continue
        if lc is not None and isinstance(message, lc.BaseMessage):
            found.add("langchain")
        elif pai is not None and isinstance(message, (pai.ModelRequest, pai.ModelResponse)):
            found.add("pydantic-ai")
    if len(found) > 1:
        raise ValueError("the list mixes LangChain messages and pydantic-ai messages; pass one kind")
    return found.pop() if found else "sdk"


# --- SDK models: read as the dicts they dump to ------------------------------


def view(value: Any) -> Any:
    """``value`` as plain data: SDK models dumped (``None`` fields left out), plain data as it is."""
    kind = type(value)
    if kind is dict:
        if not holds_objects(value, depth=64):
            return value
        return {k: view(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        if not holds_objects(value, depth=64):
            return value
        return [view(v) for v in value]
    if kind in _PLAIN:
        return value
    dump = getattr(value, "model_dump", None)
    if dump is None:
        return value
    try:
        dumped = dump(mode="json", exclude_none=True, by_alias=True, warnings=False)
    except TypeError:  # a model_dump of another library, without pydantic's keywords
        dumped = dump()
    return view(dumped)


# --- LangChain ----------------------------------------------------------------

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)
_AI, _TOOL, _HUMAN, _SYSTEM, _FUNCTION, _CHAT = range(6)
_LANGCHAIN_KINDS = {
    "ai": _AI,
    "AIMessageChunk": _AI,
    "tool": _TOOL,
    "ToolMessageChunk": _TOOL,
    "human": _HUMAN,
    "HumanMessageChunk": _HUMAN,
    "system": _SYSTEM,
    "SystemMessageChunk": _SYSTEM,
    "function": _FUNCTION,
    "FunctionMessageChunk": _FUNCTION,
    "chat": _CHAT,
    "ChatMessageChunk": _CHAT,
}
# With no call pending, these give the engine nothing to do.
_QUIET = frozenset({_HUMAN, _SYSTEM, _FUNCTION})


def _kind(message: Any) -> int | None:
    kind = getattr(message, "type", None) if type(message) is not dict else None
    return _LANGCHAIN_KINDS.get(kind) if type(kind) is str else None


# The LangChain message classes ``clean_run`` has met, by what their messages are to its proof
# (each class fixes its ``type``, so a class is learnt once): with calls, results, quiet.
_AI_CLASSES: set[type] = set()
_TOOL_CLASSES: set[type] = set()
_QUIET_CLASSES: set[type] = set()
_LEARNT: set[type] = set()
# The fields the proof reads; it reads them from the instance's ``__dict__``.
_PROOF_FIELDS = ("tool_calls", "invalid_tool_calls", "tool_call_id", "content")


def _learn(message: Any) -> None:
    """File ``message``'s class among the classes ``clean_run`` knows.

    A class the proof cannot read from its instances' ``__dict__`` (no
    ``__dict__``, or one of the proof's fields shadowed by a class attribute
    such as a property) is filed as nothing: its messages stop the proof, and
    the engine reads them attribute by attribute.
    """
    cls = type(message)
    lc = _langchain_messages()
    kind = _kind(message) if lc is not None and isinstance(message, lc.BaseMessage) else None
    plain = hasattr(message, "__dict__") and not any(name in vars(k) for k in cls.__mro__ for name in _PROOF_FIELDS)
    if plain and kind is _AI:
        _AI_CLASSES.add(cls)
    elif plain and kind is _TOOL:
        _TOOL_CLASSES.add(cls)
    elif kind in _QUIET:
        _QUIET_CLASSES.add(cls)
    _LEARNT.add(cls)


def _marked(content: Any, marker: str) -> bool:
    text = content if type(content) is str else text_of(content)
    return text is not None and (text == marker or (len(text) <= _PLACEHOLDER_LONGEST and text in PLACEHOLDER_TEXTS))


class LangChainAdapter(ChatAdapter):
    """The chat format's rules on LangChain messages; the not-run record is a ``ToolMessage``.

    Dicts in the list (chat messages) are read as the chat format reads them.
    """

    def classify(self, obj: Any) -> Entry | None:
        kind = _kind(obj)
        if kind is None:
            return super().classify(obj) if type(obj) is dict else None
        if kind is _TOOL:
            return Entry(False, False, (self.result_for(obj.tool_call_id, obj.content),))
        if kind is _AI:
            calls = _langchain_calls(obj)
            return Entry(False, True, (), calls) if calls else _BOUNDARY
        if kind is _HUMAN:
            return _USER
        if kind is _SYSTEM:
            return _BOUNDARY
        if kind is _FUNCTION:
            return PASS_OVER
        # A ChatMessage names its role: read as the chat dict it stands for.
        return super().classify({"role": obj.role, "content": obj.content})

    def clean_run(self, messages: Sequence[Any], start: int) -> tuple[int, list[str]]:
        """The chat adapter's ``clean_run`` on LangChain messages: how far nothing needs the engine.

        The same proof, field for field (see ``ChatAdapter.clean_run``). A
        message's kind is told by its class (a LangChain class fixes its
        ``type``), so a quiet message costs a set lookup and a turn the fields
        its proof reads. It is told here, not in a pass of its own over the
        list: the list's objects are far larger than the caches, and a second
        walk over them costs more than the lookup. Fields are read from each
        instance's ``__dict__`` (``_learn`` checks its class keeps them there):
        pydantic models define ``__getattr__``, which makes every attribute
        read take the interpreter's slowest path.
        """
        marker = self.marker
        special = PLACEHOLDER_TEXTS | {marker}
        longest = max(_PLACEHOLDER_LONGEST, len(marker))
        answered: list[str] = []
        add = answered.append
        end = len(messages)
        ais, tools, quiet, learnt = _AI_CLASSES, _TOOL_CLASSES, _QUIET_CLASSES, _LEARNT
        i = start
        try:
            while i < end:
                message = messages[i]
                cls = type(message)
                if cls not in ais:
                    if cls in quiet:
                        i += 1
                        continue
                    if cls in learnt:
                        break  # a result, a chat message, a dict, or no message at all
                    _learn(message)
                    continue
                fields = message.__dict__
                calls = fields["tool_calls"]
                if fields["invalid_tool_calls"] or type(calls) is not list:
                    break
                if not calls:
                    i += 1
                    continue
                j = i + 1
                if j == end:
                    break  # calls the list does not answer
                result = messages[j]
                if type(result) not in tools:
                    break
                if len(calls) == 1:
                    # One call, the common case: its result must come right after.
                    item = calls[0]
                    if type(item) is not dict:
                        break
                    call_id = item["id"]
                    fields = result.__dict__
                    if type(call_id) is not str or fields["tool_call_id"] != call_id:
                        break
                    content = fields["content"]
                    if type(content) is str:
                        if len(content) <= longest and content in special:
                            break
                    elif _marked(content, marker):
                        break
                    add(call_id)
                    i = j + 1
                    continue
                waiting: set[str] | None = set()
                for item in calls:
                    call_id = item["id"] if type(item) is dict else None
                    if type(call_id) is not str or call_id in waiting:  # type: ignore[operator]
                        waiting = None
                        break
                    waiting.add(call_id)  # type: ignore[union-attr]
                if waiting is None:
                    break
                mark = len(answered)
                while waiting and j < end:
                    result = messages[j]
                    if type(result) not in tools:
                        break
                    fields = result.__dict__
                    call_id = fields["tool_call_id"]
                    if type(call_id) is not str or call_id not in waiting:
                        break
                    # The single call's test above, inlined again: a call a result would cost about 5% of a repair.
                    content = fields["content"]
                    if type(content) is str:
                        if len(content) <= longest and content in special:
                            break
                    elif _marked(content, marker):
                        break
                    waiting.remove(call_id)
                    add(call_id)
                    j += 1
                if waiting:
                    del answered[mark:]
                    break
                i = j
        except KeyError:
            # A field missing from an instance (a call without an id, say). Raised before the
            # message at ``i`` added any id: the engine decides from that message.
            pass
        return i, answered

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        from langchain_core.messages import ToolMessage

        return Insertion([ToolMessage(content=self.marker, tool_call_id=p.call.id, name=p.call.name) for p in closed])


def _langchain_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = []
    for group in (message.tool_calls, getattr(message, "invalid_tool_calls", None)):
        if type(group) is not list:
            continue
        for item in group:
            if type(item) is not dict:
                continue
            call_id = item.get("id")
            if type(call_id) is not str:
                continue
            name = item.get("name")
            calls.append(ToolCall(call_id, name if type(name) is str else None, item.get("args")))
    return tuple(calls)


# --- pydantic-ai --------------------------------------------------------------


class PydanticAIAdapter(FormatAdapter):
    """pydantic-ai's ``ModelMessage``\\ s; the not-run record is a ``ToolReturnPart`` in a ``ModelRequest``."""

    name = "pydantic-ai"
    description = "pydantic-ai ModelRequest and ModelResponse objects"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import pydantic_ai.messages as pai

        self._pai = pai

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:  # pragma: no cover - never in the registry
        raise NotImplementedError

    def classify(self, obj: Any) -> Entry | None:
        pai = self._pai
        if isinstance(obj, pai.ModelResponse):
            calls = tuple(
                ToolCall(part.tool_call_id, part.tool_name, part.args, context=obj.timestamp)
                for part in obj.parts
                if isinstance(part, pai.ToolCallPart) and type(part.tool_call_id) is str
            )
            return Entry(False, True, (), calls) if calls else _BOUNDARY
        if not isinstance(obj, pai.ModelRequest):
            return None
        results = []
        prompt = other = False
        for part in obj.parts:
            if _answers_a_call(pai, part):
                results.append(self.result_for(part.tool_call_id, part.content))
            elif isinstance(part, pai.UserPromptPart):
                prompt = True
            elif isinstance(part, (pai.SystemPromptPart, pai.RetryPromptPart, pai.RetryFeedbackPart)):
                other = True
            # Anything else (deltas of tools or settings, compactions) is bookkeeping.
        return Entry(prompt, prompt or other, tuple(results))

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        pai = self._pai
        records = []
        for pending in closed:
            call = pending.call
            # The time of the response that made the call: a second repair writes the same record.
            stamp = {"timestamp": call.context} if call.context is not None else {}
            part = pai.ToolReturnPart(
                tool_name=call.name or "",
                content=self.marker,
                tool_call_id=call.id,
                outcome="interrupted",
                **stamp,
            )
            records.append(pai.ModelRequest(parts=[part], **stamp))
        return Insertion(records)

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        pai = self._pai
        kept = without_last_results(
            list(obj.parts), call_ids, lambda part: part.tool_call_id if _answers_a_call(pai, part) else NOT_A_RESULT
        )
        return dataclasses.replace(obj, parts=kept) if kept else DROP


def _answers_a_call(pai: Any, part: Any) -> bool:
    # As pydantic-ai pairs: a tool return, or a retry prompt bound to a tool.
    return isinstance(part, pai.ToolReturnPart) or (isinstance(part, pai.RetryPromptPart) and part.tool_name is not None)
