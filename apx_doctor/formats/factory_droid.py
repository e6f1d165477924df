"""Factory's Droid CLI: its session store, and the ``droid exec --output-format stream-json`` log.

The session store (``~/.factory/sessions/<cwd>/<id>.jsonl``, which ``droid
--resume`` reads) is a header and then a tree of entries linked by
``id``/``parentId``, the messages in the Anthropic Messages shape:

    {"type": "session_start", "id": SESSION, "title", "sessionTitle", "owner", "version", "cwd"}
    {"type": "message", "id", "parentId", "timestamp", "message": {"role": "assistant",
     "content": [{"type": "tool_use", "id", "name", "input"}]}}
    {"type": "message", ..., "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id", "content"}]}}
    {"type": "todo_state" | "compaction_state" | ..., "id", "timestamp", ...}

They pair as the Messages API pairs them: ``tool_use`` blocks are answered by
``tool_result`` blocks of the user messages that follow. A user message of
results alone closes nothing (the API merges consecutive user messages); one
with any other content opens the checked history and ends the turn, and so
does an assistant message after a user message (one right after another
assistant message continues the same reply) and ``compaction_state``. Other
entries (``todo_state``, ...) are passed over. The not-run record is the
result entry Droid writes: a user message holding one ``tool_result`` block,
chained into the tree as pi's records are (``pi.py``), with a uuid derived
from the session, the call's entry and the call.

The stream-json log is what ``droid exec`` prints while it runs:

    {"type": "system", "subtype": "init", "session_id", "cwd", "tools", "model"}
    {"type": "message", "role": "user" | "assistant", "id", "text", "timestamp", "session_id"}
    {"type": "tool_call", "id" | "toolCallId", "messageId", "toolId", "toolName", "parameters", ...}
    {"type": "tool_result", "id" | "toolCallId", "messageId", "toolId", "isError", "value" | "error", ...}
    {"type": "completion", "finalText", ...}

A ``tool_call`` is answered by the ``tool_result`` with its id; the run's
``init`` or a user message opens the checked history, and a user message, a
new ``init`` or the ``completion`` ends the turn. Such a log is a record of
one run, not a history Droid reads back: an unanswered call is reported with
``"fixable": false``, and nothing is written into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import (
    DROP,
    NOT_A_RESULT,
    Detection,
    FormatAdapter,
    Insertion,
    detect_by_line,
    stable_uuid,
    str_or_none,
    without_last_results,
)
from .pi import _later

# Inserted ids are uuid5(this, session/call entry/call id): a second run writes the same bytes.
NAMESPACE_NAME = "https://github.com/apx-doctor/apx-doctor/formats/factory-droid"
# uuid5(NAMESPACE_URL, NAMESPACE_NAME), written out so that a check imports no uuid.
_NAMESPACE = bytes.fromhex("b67e8e424a465341b777e8827800ccb7")

_PROMPT = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)


class FactoryDroidAdapter(FormatAdapter):
    name = "factory-droid"
    description = "Factory Droid CLI: the session store (~/.factory/sessions) and the stream-json log of droid exec"
    priority = 46

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str | None = None
        # The role of the previous stored message: consecutive same-role messages are one turn.
        self._last_role: str | None = None
        # As in pi.py: the last entry of the branch the pending calls were made
        # on, and its value before this line; the latest timestamp, and the one before.
        self._tip: str | None = None
        self._tip_before: str | None = None
        self._stamp: Any = None
        self._stamp_before: Any = None
        # Removed entry id -> the parent its children get (``--drop-orphans``).
        self._dropped: dict[str, Any] = {}

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge)

    # -- what a line is ---------------------------------------------------------

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if type(kind) is not str:
            return None
        if kind == "message":
            message = obj.get("message")
            if type(message) is dict:
                return self._stored(obj, message)
            # A stream-json message: the run's prompt, or the assistant's text.
            role = obj.get("role")
            if role == "user":
                return _PROMPT
            return PASS_OVER if isinstance(role, str) else None
        if kind == "tool_call":
            call_id = _stream_id(obj)
            if call_id is None:
                return PASS_OVER
            name = obj.get("toolName")
            # A log of a run: no result can be added to it honestly (see the module docstring).
            call = ToolCall(call_id, name if isinstance(name, str) else None, obj.get("parameters"), False)
            return Entry(calls=(call,))
        if kind == "tool_result":
            value = obj.get("value") if "value" in obj else obj.get("error")
            return Entry(results=(self.result_for(_stream_id(obj), value),))
        if kind == "session_start":
            if self._session is None:
                self._session = str_or_none(obj.get("id"))
            return PASS_OVER
        if kind == "compaction_state":
            self._note(obj)
            self._last_role = None
            self._tip = None
            return _BOUNDARY
        if kind == "completion":
            return _BOUNDARY
        if kind == "system":
            # A run starts with its prompt given on the command line: that opens the history.
            return _PROMPT if obj.get("subtype") == "init" else PASS_OVER
        if "timestamp" in obj or "id" in obj:
            self._note(obj)  # todo_state and other stored entries still carry the branch on
        return PASS_OVER

    def _note(self, obj: dict[str, Any]) -> str | None:
        """Track the timestamp and the branch for a stored entry; its id."""
        stamp = obj.get("timestamp")
        self._stamp_before = self._stamp
        if type(stamp) is str:
            self._stamp = stamp
        tip = self._tip_before = self._tip
        entry_id = obj.get("id")
        if type(entry_id) is not str:
            return None
        if tip is not None:
            parent = obj.get("parentId")
            if self._dropped and type(parent) is str:
                parent = self._dropped.get(parent, parent)
            if parent == tip:
                self._tip = entry_id
        return entry_id

    def _stored(self, obj: dict[str, Any], message: dict[str, Any]) -> Entry | None:
        entry_id = self._note(obj)
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            # An assistant message right after another one continues the same reply.
            boundary = self._last_role != "assistant"
            self._last_role = role
            calls: list[ToolCall] | None = None
            if isinstance(content, list):
                for block in content:
                    if type(block) is not dict or block.get("type") != "tool_use":
                        continue
                    call_id = block.get("id")
                    if not isinstance(call_id, str) or not call_id:
                        continue
                    if calls is None:
                        calls = []
                    name = block.get("name")
                    site = (entry_id, obj.get("timestamp"), "parentId" in obj)
                    calls.append(ToolCall(call_id, name if isinstance(name, str) else None, block.get("input"), True, site))
            if calls is None:
                if boundary:
                    self._tip = None
                    return _BOUNDARY
                return PASS_OVER
            if boundary or self._tip is None:
                self._tip = entry_id  # the calls start a branch of their own at this line
            return Entry(False, boundary, (), tuple(calls))
        if role == "user":
            self._last_role = role
            if isinstance(content, str):
                self._tip = None
                return _PROMPT
            if not isinstance(content, list):
                return None
            results = []
            other = False
            for block in content:
                if type(block) is dict and block.get("type") == "tool_result":
                    results.append(self.result_for(block.get("tool_use_id"), block.get("content")))
                else:
                    other = True
            if other:
                # Text, images, reminders: the turn ends here (after these results count).
                self._tip = None
                return Entry(True, True, tuple(results)) if results else _PROMPT
            return Entry(results=tuple(results)) if results else PASS_OVER
        return PASS_OVER if isinstance(role, str) else None

    # -- repairs (the session store) -----------------------------------------------

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        at_end = before is None
        tip = self._tip if at_end else self._tip_before
        prior = self._stamp if at_end else self._stamp_before
        branch = tip
        linked = False
        last_id = None
        records = []
        for pending in closed:
            call = pending.call
            entry_id, call_stamp, chained = call.context
            record: dict[str, Any] = {"type": "message"}
            last_id = record["id"] = stable_uuid(_NAMESPACE, "\x00".join((self._session or "", entry_id or "", call.id)))
            if chained:
                linked = True
                record["parentId"] = branch
                branch = last_id
            stamp, _ = _later(prior, call_stamp)
            prior = stamp
            if stamp is not None:
                record["timestamp"] = stamp
            record["message"] = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": self.marker}],
            }
            records.append(record)
        if at_end or not linked:
            return Insertion(records)
        return Insertion(records, _repoint(before, tip, last_id, self._dropped))

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        """The entry without those results; an entry left empty goes, and its children move up."""
        message: Any = obj.get("message") if type(obj) is dict else None
        content = message.get("content") if type(message) is dict else None
        if type(obj) is dict and isinstance(content, list):
            kept = without_last_results(content, call_ids, _answers)
            if kept:
                return {**obj, "message": {**message, "content": kept}}
        if type(obj) is dict:
            entry_id = obj.get("id")
            if type(entry_id) is str:
                parent = obj.get("parentId")
                if type(parent) is str:
                    parent = self._dropped.get(parent, parent)
                self._dropped[entry_id] = parent
                if self._tip == entry_id:
                    self._tip = parent if type(parent) is str else None
        return DROP

    def relink(self, obj: Any) -> Any:
        if not self._dropped or type(obj) is not dict:
            return None
        parent = obj.get("parentId")
        if type(parent) is not str or parent not in self._dropped:
            return None
        return {**obj, "parentId": self._dropped[parent]}


def _repoint(before: Any, tip: str | None, last_id: str | None, dropped: dict[str, Any]) -> Any:
    """``before`` hung off the records, where it hangs off the branch they extend."""
    if last_id is None or tip is None or type(before) is not dict or type(before.get("id")) is not str:
        return None
    parent = before.get("parentId")
    if type(parent) is str and dropped:
        parent = dropped.get(parent, parent)
    if parent != tip:
        return None
    return {**before, "parentId": last_id}


def _stream_id(obj: dict[str, Any]) -> str | None:
    """The call id of a stream-json ``tool_call`` or ``tool_result``: ``toolCallId``, else ``id``."""
    call_id = obj.get("toolCallId")
    if call_id is None:
        call_id = obj.get("id")
    return call_id if isinstance(call_id, str) else None


# Anthropic blocks only a Messages-shaped envelope holds; pi's parts contradict it.
_ANTHROPIC_CALL_BLOCKS = frozenset({"tool_use", "tool_result"})
_PI_PARTS = frozenset({"toolCall"})


def _judge(obj: dict[str, Any]) -> int | None:
    kind = obj.get("type")
    if not isinstance(kind, str):
        return Detection.NO
    if kind == "session_start":
        # The store's header: a session id with its title or folder.
        if isinstance(obj.get("id"), str) and any(k in obj for k in ("sessionTitle", "title", "cwd", "owner")):
            return Detection.CERTAIN
        return Detection.NO
    if kind == "session":
        return Detection.NO  # pi's header
    if kind == "message":
        message = obj.get("message")
        if message is None:
            # A stream-json message: a role and its text.
            return None if isinstance(obj.get("role"), str) and isinstance(obj.get("text"), str) else Detection.NO
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return Detection.NO  # pi's toolResult, custom, bashExecution messages
        content = message.get("content")
        if not isinstance(content, list):
            return None
        level = None
        for block in content:
            block_type = str_or_none(block.get("type")) if isinstance(block, dict) else None
            if block_type in _PI_PARTS:
                return Detection.NO
            if block_type in _ANTHROPIC_CALL_BLOCKS:
                # Telling, but an envelope another runtime could share: only the header settles it.
                level = Detection.COMPATIBLE
        return level
    if kind == "tool_call":
        if _stream_id(obj) is not None and isinstance(obj.get("toolName"), str) and "parameters" in obj:
            return Detection.CERTAIN
        return Detection.NO
    if kind == "tool_result":
        if _stream_id(obj) is not None and ("value" in obj or "error" in obj):
            return Detection.CERTAIN
        return Detection.NO  # e.g. ``tool_call_id``: another runtime's result line
    if kind == "completion":
        return Detection.CERTAIN if "finalText" in obj else None
    return None


def _answers(block: Any) -> Any:
    if type(block) is dict and block.get("type") == "tool_result":
        return str_or_none(block.get("tool_use_id"))
    return NOT_A_RESULT


ADAPTER = FactoryDroidAdapter
