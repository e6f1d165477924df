"""Codex CLI rollout files: one ``{timestamp, type, payload}`` record a line.

    {"timestamp": ..., "type": "session_meta" | "turn_context" | "event_msg", "payload": {...}}
    {"timestamp": ..., "type": "response_item", "payload": {"type": "function_call", "call_id": ...}}
    {"timestamp": ..., "type": "response_item", "payload": {"type": "function_call_output", "call_id": ...}}
    {"timestamp": ..., "type": "compacted", "payload": {"message": ...}}

Calls and outputs are ``response_item`` payloads linked by ``call_id``, paired
the way Codex itself pairs them when it rebuilds a prompt: ``function_call`` and
``local_shell_call`` are answered by ``function_call_output``,
``custom_tool_call`` by ``custom_tool_call_output``, a client-side
``tool_search_call`` by ``tool_search_output``. Assistant messages, reasoning
and self-contained items (``web_search_call``, ...) may stand between a call and
its output. A user message is the turn boundary; ``compacted`` replaces the
history before it, so it closes pending calls too. The prompt's own event
(``user_message``, or 0.171's ``item_completed`` ``UserMessage``) starts the
checked history where no user message does. Other event lines
(``event_msg``, including ``turn_aborted``), ``turn_context`` and
``session_meta`` are passed over: after ``turn_aborted`` Codex may still write
the outputs of the calls it cancelled, so the event itself closes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall, ToolResult
from .base import Detection, FormatAdapter, Insertion, str_or_none

if TYPE_CHECKING:
    from ..quiet import QuietLines

RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)
# The event Codex records for a prompt the user typed: the real user entry of
# rollouts (``codex exec`` among them) whose prompt has no user response_item
# before the calls. It starts the checked history; it closes nothing, because
# the response_item message, where there is one, is the turn boundary.
_PROMPT_EVENT = Entry(opens_history=True)

# Text Codex itself puts into user messages (workspace context, AGENTS.md,
# notes about an aborted turn, a shell command the user ran). Such a message
# still closes a turn, but it is not the first real user entry of a session.
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<instructions>",
    "# agents.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
    "<permissions instructions>",
    "<skill>",
)

_INJECTED_LONGEST = max(map(len, _INJECTED_PREFIXES))

# How many timestamps are kept before they are weighed (see ``_weigh_stamps``).
_STAMP_BATCH = 256

# The output item type that answers each call type (the not-run record's type).
_OUTPUT_FOR = {
    "function_call": "function_call_output",
    # Codex answers a local shell call with a function_call_output.
    "local_shell_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})


class CodexAdapter(FormatAdapter):
    name = "codex"
    description = "Codex CLI rollout files: {timestamp, type, payload} records, one a line"
    priority = 40

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The latest timestamp seen so far, as written and as a moment: an
        # inserted output takes it, so it is never earlier than its call.
        self._latest_text: str | None = None
        self._latest_moment: datetime | None = None
        # Timestamps not weighed yet, in line order: parsing them a batch at a
        # time costs a third of doing it line by line, and only an insertion
        # needs the answer.
        self._stamps: list[str] = []
        # The ``ordinal`` of the last line seen and of the one before it
        # (rollouts of Codex 0.171 number every line; see ``_ordinals``).
        self._ordinal: Any = None
        self._prior: Any = None

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        for obj in samples:
            if _is_record(obj) and obj["type"] in RECORD_TYPES:
                return Detection.CERTAIN
        return Detection.NO

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line of files of a gigabyte: one function, each key
        # looked up once, shared Entry objects for the lines passed over.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            return None
        self._prior, self._ordinal = self._ordinal, obj.get("ordinal")
        timestamp = obj.get("timestamp")
        if isinstance(timestamp, str):
            stamps = self._stamps
            stamps.append(timestamp)
            if len(stamps) >= _STAMP_BATCH:
                self._weigh_stamps()
        if kind != "response_item":
            # Events, turn context, session metadata, types not known yet.
            if kind == "event_msg":
                return _PROMPT_EVENT if _is_prompt_event(payload) else PASS_OVER
            return _BOUNDARY if kind == "compacted" else PASS_OVER
        item_type = payload.get("type")
        if item_type == "message":
            if payload.get("role") != "user":
                # Assistant messages of the same response may stand between a
                # call and its output; developer context is not a user turn.
                return PASS_OVER
            return _BOUNDARY if _is_injected(payload.get("content")) else _USER
        if item_type == "function_call_output" or item_type == "custom_tool_call_output":
            return Entry(False, False, (self._result(payload.get("call_id"), payload.get("output")),))
        if item_type == "function_call":
            call_id = payload.get("call_id")
            if not isinstance(call_id, str):
                return PASS_OVER
            name = payload.get("name")
            call = ToolCall(call_id, name if isinstance(name, str) else None, payload.get("arguments"), True, item_type)
            return Entry(False, False, (), (call,))
        return self._item(payload)

    def quiet_lines(self) -> QuietLines:
        # Imported here: a check no longer than the head never loads msgspec.
        from ._codex_quiet import CodexQuietLines

        return CodexQuietLines(self)

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        if self._stamps:
            self._weigh_stamps()
        timestamp = self._latest_text
        ordinals = self._ordinals(len(closed), at_end=before is None)
        records = []
        for pending, ordinal in zip(closed, ordinals):
            record: dict[str, Any] = {}
            if timestamp is not None:
                record["timestamp"] = timestamp
            if ordinal is not None:
                record["ordinal"] = ordinal
            record["type"] = "response_item"
            record["payload"] = {
                "type": _OUTPUT_FOR[pending.call.context],
                "call_id": pending.call.id,
                "output": self.marker,
            }
            records.append(record)
        return Insertion(records)

    def _ordinals(self, count: int, at_end: bool) -> list[int | None]:
        """The ``ordinal`` of each inserted line, where the rollout numbers its lines.

        Codex refuses to resume a rollout whose final line has no ordinal, and
        carries on numbering from it. At the end the records continue the
        series; mid-file they repeat the ordinal of the line before them, so
        that every later line stays byte for byte as it was (Codex resumes
        such a rollout and sends the records as written). Older rollouts
        number nothing, and their records get no ordinal.
        """
        # At the end the last line seen is the one before the records; mid-file
        # the line after them has been seen already, so it is the one before that.
        last = self._ordinal if at_end else self._prior
        if type(last) is not int:
            return [None] * count
        return [last + 1 + n for n in range(count)] if at_end else [last] * count

    def _item(self, item: dict[str, Any]) -> Entry:
        # What ``classify`` left: other outputs, other calls, self-contained items.
        item_type = str_or_none(item.get("type"))
        if item_type in _OUTPUT_TYPES:
            return self._output(item)
        call = _call(item)
        return PASS_OVER if call is None else Entry(calls=(call,))

    def _output(self, item: dict[str, Any]) -> Entry:
        if item.get("type") == "tool_search_output" and item.get("execution") == "server":
            return PASS_OVER  # answered by the server, for a call it made itself
        return Entry(results=(self._result(item.get("call_id"), item.get("output")),))

    def _weigh_stamps(self) -> None:
        """Take the latest of the timestamps seen since the last call into account."""
        stamps, self._stamps = self._stamps, []
        try:
            # One pass in C for the usual batch: every text a zoned timestamp.
            moments = list(map(datetime.fromisoformat, stamps))
            best = max(moments)  # TypeError where zoned and unzoned moments mix
        except (ValueError, TypeError):
            for stamp in stamps:
                self._weigh(stamp)
            return
        if best.tzinfo is None:
            return  # all without a zone: none can be compared with Codex's own
        if self._latest_moment is None or best > self._latest_moment:
            # The first of equal moments, as weighing them one by one would keep.
            self._latest_moment = best
            self._latest_text = stamps[moments.index(best)]

    def _weigh(self, stamp: str) -> None:
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            return
        # A moment with no zone cannot be compared with the zoned ones Codex writes.
        if moment.tzinfo is None:
            return
        if self._latest_moment is None or moment > self._latest_moment:
            self._latest_moment = moment
            self._latest_text = stamp

    def _result(self, call_id: Any, output: Any) -> ToolResult:
        if isinstance(output, dict):  # {content, success} payloads of some writers
            output = output.get("content")
        return self.result_for(call_id, output)


def _is_record(obj: Any) -> bool:
    return type(obj) is dict and isinstance(obj.get("type"), str) and isinstance(obj.get("payload"), dict)


def _call(item: dict[str, Any]) -> ToolCall | None:
    item_type = item.get("type")
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        # A local shell call from the Chat Completions API carries only an
        # ``id``; Codex pairs it with nothing, and so do we.
        return None
    name = item.get("name") if isinstance(item.get("name"), str) else None
    if item_type == "function_call":
        return ToolCall(call_id, name, item.get("arguments"), context=item_type)
    if item_type == "custom_tool_call":
        return ToolCall(call_id, name, item.get("input"), context=item_type)
    if item_type == "local_shell_call":
        return ToolCall(call_id, "local_shell", item.get("action"), context=item_type)
    if item_type == "tool_search_call" and item.get("execution") != "server":
        # Its output is a list of tools found: an empty list would claim the
        # search ran and found nothing, so this call is reported, not answered.
        return ToolCall(call_id, "tool_search", item.get("arguments"), fixable=False)
    return None


def _is_prompt_event(payload: dict[str, Any]) -> bool:
    """Whether an ``event_msg`` records a prompt the user typed.

    Older rollouts write ``user_message``; 0.171 writes ``item_completed``
    with a ``UserMessage`` item.
    """
    event = payload.get("type")
    if event == "user_message":
        return True
    if event == "item_completed":
        item = payload.get("item")
        return type(item) is dict and item.get("type") == "UserMessage"
    return False


def _is_injected(content: Any) -> bool:
    """Whether every non-blank text of a user message is one Codex injects."""
    texts = [p.get("text") for p in content if isinstance(p, dict)] if isinstance(content, list) else [content]
    found = False
    for text in texts:
        if not isinstance(text, str):
            continue
        head = text.lstrip()
        if not head:
            continue
        # Only the head is lowered: a prompt may be long. The prefixes are
        # ASCII, so lowering a slice answers as lowering the whole text would.
        if not head[:_INJECTED_LONGEST].lower().startswith(_INJECTED_PREFIXES):
            return False
        found = True
    return found


ADAPTER = CodexAdapter
