"""LLaMA-Factory's message lists, as dataset rows hold them: v1 messages and ShareGPT turns.

    v1:       {"role": "assistant", "content": [{"type": "tool_call", "value": "{\"name\": ..., \"arguments\": ...}"}]}
              {"role": "tool", "content": [{"type": "text", "value": ...}]}
    ShareGPT: {"from": "function_call", "value": "{\"name\": ..., \"arguments\": ...}"}   (or a JSON list of calls)
              {"from": "observation", "value": ...}

Neither carries call ids: a result answers by position. The results of a call
turn are the result messages right after it (v1 ``tool`` messages, ShareGPT
``observation`` turns). One result message answers every call of the turn:
that is how LLaMA-Factory's own converter writes a ShareGPT function_call turn
of several calls and its one observation as v1 messages. Several answer call
by call, the k-th the k-th call; a surplus result answers nothing (an orphan),
and calls left over are pending, closed by the next turn like any other.

The engine pairs by id, so each call gets one derived from its place in the
row (``#3.1``: message 3, call 1), and each result the id of the call it
answers. A result that answers nothing gets its own place (``#5``), which no
call has. Both are row-local and the same on every run.

These readers are no formats of their own (the registry skips ``_`` modules):
the datasets adapter picks them for a row from the keys that define it, and
asks ``plan`` for the whole row at once, since a result's call depends on the
messages around it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall, ToolCall
from .base import FormatAdapter, Insertion

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)

# What a message is, for the plan.
_PROMPT, _TURN, _CALLS, _RESULT = range(4)

# Keys that would hold calls this reader cannot see: such a message is reported, not passed over.
_FOREIGN_CALL_KEYS = ("tool_calls", "function_call")

# The thought a ShareGPT function_call value may start with (LLaMA-Factory's
# FunctionFormatter cuts the template's thought words out before it parses the JSON).
_THOUGHT_END = "</think>"


class _Unreadable:
    """A call whose value is no JSON: still a call (its type says so), of no known name."""


_UNREADABLE = _Unreadable()


class PositionalReader(FormatAdapter):
    """Calls and results paired by position within one row."""

    close_at_end = False

    def __init__(self, *, marker: str) -> None:
        super().__init__(marker=marker)
        # Call id -> the finding's message, for calls that cannot be repaired honestly.
        self.unfixable: dict[str, str] = {}

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:  # chosen by the datasets adapter, never detected
        return 0

    def classify(self, obj: Any) -> Entry | None:
        # A message alone: what it is, with nothing around it to pair with.
        return self.plan([obj])[0]

    # What a subclass says of one message: (kind, data) or None (no message of the format).
    # data: the calls' (name, arguments) for _CALLS, the result's text (or None) for _RESULT.
    def read(self, message: Any) -> tuple[int, Any] | None:
        raise NotImplementedError

    def refusal(self, messages: Sequence[Any], closing: int, count: int) -> str | None:
        """Why ``count`` records inserted right before ``messages[closing]`` would be dishonest, or None."""
        return None

    def plan(self, messages: Sequence[Any]) -> list[Entry | None]:
        """Each message's entry, in order; None for a message that is none of the format (APX104)."""
        entries: list[Entry | None] = [None] * len(messages)
        turn: tuple[int, list[Any]] | None = None  # the call turn whose results may follow
        run: list[tuple[int, Any]] = []  # the result messages since it: (index, text)
        for index, message in enumerate(messages):
            read = self.read(message)
            if read is None:
                continue  # reported; the engine does not see it, so it closes nothing
            kind, data = read
            if kind == _RESULT:
                run.append((index, data))
                continue
            self._settle(messages, entries, turn, run, index)
            turn, run = None, []
            if kind == _CALLS:
                turn = (index, data)
            else:
                entries[index] = _USER if kind == _PROMPT else _BOUNDARY
        self._settle(messages, entries, turn, run, None)
        return entries

    def _settle(
        self,
        messages: Sequence[Any],
        entries: list[Entry | None],
        turn: tuple[int, list[Any]] | None,
        run: list[tuple[int, Any]],
        closing: int | None,
    ) -> None:
        """Write the entries of a call turn and the results after it; ``closing``: the turn that ends them."""
        if turn is None:
            for index, text in run:
                entries[index] = Entry(results=(self.result_for(f"#{index}", text),))
            return
        where, specs = turn
        ids = [f"#{where}.{k}" for k in range(len(specs))]
        if len(run) == 1 and ids:
            left = 0
        else:
            left = max(len(ids) - len(run), 0)
        reason = None if closing is None or not left else self.refusal(messages, closing, left)
        calls = []
        for k, (name, arguments) in enumerate(specs):
            fixable = reason is None or k < len(ids) - left
            call = ToolCall(ids[k], name, arguments, fixable)
            if not fixable:
                self.unfixable[call.id] = _refused(call, reason)  # type: ignore[arg-type]  # not fixable: reason is set
            calls.append(call)
        entries[where] = Entry(False, True, (), tuple(calls))
        if len(run) == 1 and ids:
            index, text = run[0]
            entries[index] = Entry(results=tuple(self.result_for(call_id, text) for call_id in ids))
            return
        for k, (index, text) in enumerate(run):
            entries[index] = Entry(results=(self.result_for(ids[k] if k < len(ids) else f"#{index}", text),))


def _refused(call: ToolCall, reason: str) -> str:
    what = f"tool call {call.id!r}" + (f" ({call.name})" if call.name else "")
    return f"{what} has no result: the turn was interrupted; {reason}, so it is reported but not repaired"


class LlamaFactoryReader(PositionalReader):
    """LLaMA-Factory v1 messages: ``content`` is a list of ``{"type", "value"}`` parts."""

    name = "llamafactory"
    description = "LLaMA-Factory v1 messages, content parts {type, value}, results by position"

    def __init__(self, *, marker: str) -> None:
        super().__init__(marker=marker)
        self._weighted = False

    def plan(self, messages: Sequence[Any]) -> list[Entry | None]:
        # The row's own style: LLaMA-Factory's converters give every message a loss_weight
        # (0.0 for a tool message), so a record in such a row carries one too.
        self._weighted = any(type(m) is dict and "loss_weight" in m for m in messages)
        return super().plan(messages)

    def read(self, message: Any) -> tuple[int, Any] | None:
        if type(message) is not dict or any(message.get(key) for key in _FOREIGN_CALL_KEYS):
            return None
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            return _RESULT, _text(content)
        if role == "assistant":
            if type(content) is not list:
                return _TURN, None
            calls = [_v1_call(part.get("value")) for part in content if type(part) is dict and part.get("type") == "tool_call"]
            return (_CALLS, calls) if calls else (_TURN, None)
        if role == "user":
            text = _text(content)
            # Tool responses a row wraps in a user message, as the v1 qwen3 template
            # recognises them: results, not a new prompt.
            if text is not None and text.startswith("<tool_response>") and text.endswith("</tool_response>"):
                return _RESULT, text
            return _PROMPT, None
        if role == "system":
            return _TURN, None
        return None

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        records = []
        for _pending in closed:
            record: dict[str, Any] = {"role": "tool", "content": [{"type": "text", "value": self.marker}]}
            if self._weighted:
                record["loss_weight"] = 0.0
            records.append(record)
        return Insertion(records)


def _text(content: Any) -> str | None:
    """The text of v1 content: its text parts' values, joined as the templates join them."""
    if isinstance(content, str):
        return content
    if type(content) is not list:
        return None
    values = []
    for part in content:
        if type(part) is not dict or part.get("type") != "text" or not isinstance(part.get("value"), str):
            return None
        values.append(part["value"])
    return "".join(values)


def _v1_call(value: Any) -> tuple[str | None, Any]:
    """A tool_call part's value: a JSON string of {name, arguments}, one call a part."""
    parsed = _loads(value) if isinstance(value, str) else value
    if type(parsed) is dict:
        name = parsed.get("name")
        return (name if isinstance(name, str) else None), parsed.get("arguments")
    return None, value


class ShareGPTReader(PositionalReader):
    """LLaMA-Factory's ShareGPT turns: ``{"from": tag, "value": text}``, with its default tags."""

    name = "sharegpt"
    description = "ShareGPT turns {from, value}: human, gpt, system, function_call, observation"

    # LLaMA-Factory's sharegpt reader wants these sides to alternate, turn by turn.
    ASSISTANT_SIDE = frozenset({"gpt", "function_call"})

    def read(self, message: Any) -> tuple[int, Any] | None:
        if type(message) is not dict or message.get("tool_calls"):
            return None
        tag = message.get("from")
        if tag == "observation":
            value = message.get("value")
            return _RESULT, value if isinstance(value, str) else None
        if tag == "function_call":
            return _CALLS, _sharegpt_calls(message.get("value"))
        if tag == "human":
            return _PROMPT, None
        if tag == "gpt" or tag == "system":
            return _TURN, None
        return None

    def refusal(self, messages: Sequence[Any], closing: int, count: int) -> str | None:
        # An observation is user-side: honest only between two assistant-side turns, one at a time.
        rule = "LLaMA-Factory's sharegpt reader wants human/observation and gpt/function_call turns to alternate"
        if count > 1:
            return f"its function_call turn would need {count} observation turns in a row, and {rule}"
        before, after = _tag(messages[closing - 1]), _tag(messages[closing])
        if before not in self.ASSISTANT_SIDE:
            return f"an observation would stand right after a turn tagged {before!r}, and {rule}"
        if after not in self.ASSISTANT_SIDE:
            return f"an observation would stand right before a turn tagged {after!r}, and {rule}"
        return None

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        return Insertion([{"from": "observation", "value": self.marker} for _pending in closed])


def _tag(message: Any) -> str | None:
    tag = message.get("from") if type(message) is dict else None
    return tag if isinstance(tag, str) else None


def _sharegpt_calls(value: Any) -> list[tuple[str | None, Any]]:
    """A function_call turn's calls: one JSON object, or a JSON list of them, maybe after a thought."""
    if isinstance(value, str):
        parsed = _loads(value)
        if parsed is _UNREADABLE and _THOUGHT_END in value:
            parsed = _loads(value[value.rindex(_THOUGHT_END) + len(_THOUGHT_END) :])
    else:
        parsed = value
    if parsed is _UNREADABLE or parsed is None:
        return [(None, value)]
    calls = []
    for item in parsed if type(parsed) is list else [parsed]:
        if type(item) is dict:
            name = item.get("name")
            calls.append((name if isinstance(name, str) else None, item.get("arguments")))
        else:
            calls.append((None, item))
    return calls


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _UNREADABLE


READERS = (LlamaFactoryReader, ShareGPTReader)
