"""Qwen Code session files (``~/.qwen/projects/<project>/chats/<session>.jsonl``).

One ``ChatRecord`` a line, chained into a tree by ``uuid``/``parentUuid``, each
carrying a Gemini ``Content`` (``role`` and ``parts``) in ``message``:

    {"uuid", "parentUuid", "sessionId", "timestamp", "type": "user", "cwd", "version", "message": {"role": "user", "parts": [{"text": ...}]}}
    {..., "type": "assistant", "model": ..., "message": {"role": "model", "parts": [{"functionCall": {"id": ID, "name", "args"}}]}}
    {..., "type": "tool_result", "message": {"role": "user", "parts": [{"functionResponse": {"id": ID, "name", "response": {"output": ...}}}]},
          "toolCallResult": {"callId": ID, "status": "success", "resultDisplay": ...}}
    {..., "type": "system", "subtype": "ui_telemetry" | "chat_compression" | "custom_title" | ..., "systemPayload": {...}}

Qwen Code writes one assistant record per model response, and submits every
result of that response before it asks the model again: so an assistant record
is the turn boundary, and so is a user prompt (a user record without a
subtype), a ``chat_compression`` (the history before it is replaced) and a
``rewind`` (the branch is abandoned). A second record with the uuid of the
assistant record before it continues that response (Qwen Code merges records
that share a uuid). Records Qwen Code injects as user content (background
``notification``s, ``cron`` prompts, ``goal_runtime`` messages, a
``mid_turn_user_message`` drained into the results) close nothing: Qwen Code's
own recovery reads a call followed only by them as still unanswered.
``realtime_message`` and ``code_mode_tool_result`` records have no place in the
model's history and are passed over, and so is every other system record.
Calls and responses without an id cannot be paired (Qwen Code pairs none of
them either) and are passed over. Sub-agent records (``isSidechain``) pair
within their own thread, one an ``agentId``. The checked history starts at the
first user prompt; a cron prompt, a mid-turn message, a slash command or a
notification turn Qwen Code delivered (``deliveredTurn``) starts it too, and
closes nothing.

The not-run record is the tool_result record Qwen Code writes for a result:
the call line's envelope, ``{"output": marker}`` as the response (what a call
returned to the model; ``error`` is Qwen Code's word for a call that failed or
was cancelled) and ``toolCallResult`` status ``cancelled``, the status Qwen
Code gives a call an abort cut off, neither ``success`` nor ``error``.

Pairing goes by id in file order. The uuid tree only places an inserted record:
Qwen Code resumes a session by walking up from its last record, so a record
goes between the next line and that line's parent, and the next line is
re-pointed at it, when that parent lies below the call's line; otherwise (a
rewind, a new root) it hangs off the call's line and the next line is left as
it is. Only the lines below a call's line while its calls are open are held,
so memory stays flat however long the file is.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall, ToolResult
from .base import (
    DROP,
    NOT_A_RESULT,
    PLACEHOLDER_TEXTS,
    Detection,
    FormatAdapter,
    Insertion,
    stable_uuid,
    without_last_results,
)

# Inserted uuids are uuid5(this, session/call line/call id): a second run writes the same bytes.
# The namespace is uuid5(NAMESPACE_URL, NAMESPACE_NAME), written out so that a
# check, which inserts nothing, imports neither uuid nor hashlib.
NAMESPACE_NAME = "https://github.com/apx-doctor/apx-doctor/formats/qwen-code"
_NAMESPACE = bytes.fromhex("26e54404f6a65ae7a117b8c665cc78a1")

# The record types a ChatRecord may have (chatRecordingService.ts).
RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})

# What Qwen Code itself puts in a response it synthesizes for a call whose
# result it lost (ORPHAN_TOOL_USE_REPAIR_REASON, llm-chat.ts): it answers the
# call, but is no evidence that the tool ran (APX006).
ORPHAN_REPAIR_TEXT = (
    "Tool execution result was not recorded \u2014 likely interrupted by network "
    "failure, abort, or process exit. Treat as failure and retry if needed."
)

_PLACEHOLDER_LONGEST = max(map(len, PLACEHOLDER_TEXTS))

# The status Qwen Code gives a call an abort cut off, whatever the tool had
# done by then: neither "success" nor "error".
NOT_RUN_STATUS = "cancelled"

# Fields an inserted record copies from the line that made the call, in the
# order Qwen Code writes them (createBaseRecord), then a sub-agent's.
_COPIED = ("cwd", "version", "gitBranch", "isSidechain", "agentId", "agentName", "agentColor", "agentRunId", "agentRound")

# User records that open the checked history but close nothing: said by the
# user (a cron prompt is user-authored, a mid-turn message rides with the
# results, a slash command is handled locally) or, with ``deliveredTurn``, a
# notification turn Qwen Code sent, but not a prompt that ends the turn before.
_OPENING_SUBTYPES = frozenset({"cron", "mid_turn_user_message", "slash_command", "agent_launch_prompt"})
# System records after which the history before them is not the model's.
_CLOSING_SYSTEM = frozenset({"chat_compression", "rewind"})

# Lines held below one call's line at most; past that the records hang off the call's line.
_BELOW_LIMIT = 100_000

_MAIN: Hashable = None
_PROMPT = Entry(opens_history=True, boundary=True)
_OPENS = Entry(opens_history=True)
_BOUNDARY = Entry(boundary=True)


class _Turn:
    """The assistant line that made calls, and the lines below it while they are open.

    Not a dataclass: one is built per assistant line with calls, and compared
    by identity.
    """

    __slots__ = ("below", "line", "open", "uuid")

    def __init__(self, line: dict[str, Any], uuid: str | None) -> None:
        self.line = line
        self.uuid = uuid
        # Uuids of the lines that lie below the call's line, itself included;
        # None once nothing is held any more (all answered, or too many lines).
        self.below: set[str] | None = {uuid} if uuid is not None else set()
        self.open: set[str] = set()


class QwenCodeAdapter(FormatAdapter):
    name = "qwen-code"
    description = "Qwen Code session files (~/.qwen/projects/<project>/chats/<session>.jsonl)"
    priority = 35

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str | None = None
        # The turn whose calls are open (the lines below its call line are
        # held), the uuid of the last assistant line and of the last line: for
        # the main thread in attributes (most lines), for sub-agents by thread.
        self._turn: _Turn | None = None
        self._reply: Any = None
        self._tail: str | None = None
        self._turns: dict[Hashable, _Turn] = {}
        self._replies: dict[Hashable, Any] = {}
        self._tails: dict[Hashable, str] = {}
        # The last line read, and the one before it: where a record goes, its
        # timestamp is the line before it's.
        self._line: dict[str, Any] | None = None
        self._line_before: dict[str, Any] | None = None
        # Uuids of the file that could equal an inserted one (uuid5s), and the inserted ones.
        self._v5: set[str] = set()
        # Removed line's uuid -> the parent its children get (--drop-orphans).
        self._dropped: dict[str, str | None] = {}

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        level = Detection.NO
        for obj in samples:
            if not isinstance(obj, dict):
                continue
            kind = obj.get("type")
            if not isinstance(kind, str):
                continue  # damaged: says nothing either way
            if kind not in RECORD_TYPES:
                return Detection.NO  # another runtime's record (every ChatRecord has one of four types)
            uuid = obj.get("uuid")
            message = obj.get("message")
            if isinstance(message, dict):
                if message.get("role") == "assistant":
                    return Detection.NO  # Qwen Code writes "model"
                parts = message.get("parts")
                if parts is None and "content" in message:
                    return Detection.NO  # Claude Code, Anthropic and chat messages hold "content"
                if isinstance(parts, list) and isinstance(uuid, str) and ("parentUuid" in obj or "sessionId" in obj):
                    level = Detection.CERTAIN
            if isinstance(uuid, str) and (
                (kind == "tool_result" and isinstance(obj.get("toolCallResult"), dict))
                or (isinstance(obj.get("systemPayload"), dict) and "sessionId" in obj)
            ):
                level = Detection.CERTAIN
            elif level == Detection.NO and "uuid" in obj and "parentUuid" in obj and "sessionId" in obj:
                # A record's envelope, nothing against it (a damaged line, say): no proof either.
                level = Detection.COMPATIBLE
        return level

    # -- what a line is -------------------------------------------------------

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line: each key read once, the main thread's state in
        # attributes, shared entries for it, and the tree touched only while a
        # call is open.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if type(kind) is not str or kind not in RECORD_TYPES:
            return None
        self._line_before = self._line
        self._line = obj
        uuid = obj.get("uuid")
        if type(uuid) is not str:
            uuid = None
        elif uuid[14:15] == "5":
            self._v5.add(uuid)
        if self._session is None:
            session = obj.get("sessionId")
            if type(session) is str:
                self._session = session
        if obj.get("isSidechain") is not True:
            thread = _MAIN
            turn = self._turn
            if uuid is not None:
                self._tail = uuid
        else:
            thread = _thread_of(obj)
            turn = self._turns.get(thread)
            if uuid is not None:
                self._tails[thread] = uuid
        if turn is not None and uuid is not None:
            below = turn.below
            if below is not None:
                parent = obj.get("parentUuid")
                if type(parent) is str and parent in below:
                    below.add(uuid)
                    if len(below) > _BELOW_LIMIT:
                        turn.below = None
        if kind == "assistant":
            return self._assistant(obj, thread, uuid, turn)
        if kind == "tool_result":
            return self._tool_result(obj, thread, turn)
        if kind == "user":
            return self._user(obj, thread, turn)
        subtype = obj.get("subtype")
        if type(subtype) is str and subtype in _CLOSING_SYSTEM:
            self._set_turn(thread, None)
            return _BOUNDARY if thread is _MAIN else Entry(boundary=True, thread=thread)
        return PASS_OVER

    def _assistant(self, obj: dict[str, Any], thread: Hashable, uuid: str | None, turn: _Turn | None) -> Entry | None:
        message = obj.get("message")
        if message is not None and type(message) is not dict:
            return None
        if obj.get("subtype") == "realtime_message":
            return PASS_OVER  # a voice exchange, never part of the model's history
        # A second record of the same response (one uuid) continues it.
        if thread is _MAIN:
            new_reply = uuid is None or self._reply != uuid
            self._reply = uuid
        else:
            new_reply = uuid is None or self._replies.get(thread) != uuid
            self._replies[thread] = uuid
        if new_reply:
            turn = None
        parts = message.get("parts") if message is not None else None
        calls: list[ToolCall] | None = None
        if type(parts) is list:
            for part in parts:
                if type(part) is not dict:
                    continue
                call = part.get("functionCall")
                if type(call) is not dict:
                    continue
                call_id = call.get("id")
                if type(call_id) is not str:
                    continue  # Qwen Code pairs no call without an id
                if turn is None:
                    turn = _Turn(obj, uuid)
                    self._set_turn(thread, turn)
                turn.open.add(call_id)
                if calls is None:
                    calls = []
                name = call.get("name")
                calls.append(ToolCall(call_id, name if type(name) is str else None, call.get("args"), True, turn))
        if new_reply and calls is None:
            self._set_turn(thread, None)
        if calls:
            return Entry(False, new_reply, (), tuple(calls), thread)
        if thread is _MAIN:
            return _BOUNDARY if new_reply else PASS_OVER
        return Entry(boundary=new_reply, thread=thread)

    def _tool_result(self, obj: dict[str, Any], thread: Hashable, turn: _Turn | None) -> Entry | None:
        message = obj.get("message")
        if message is None:
            return PASS_OVER  # UI metadata only
        if type(message) is not dict:
            return None
        if obj.get("subtype") == "code_mode_tool_result":
            return PASS_OVER  # an internal call, no model call behind it
        results = self._results(message.get("parts"), thread, turn)
        if not results:
            return PASS_OVER
        return Entry(False, False, results, (), thread)

    def _user(self, obj: dict[str, Any], thread: Hashable, turn: _Turn | None) -> Entry | None:
        message = obj.get("message")
        if message is not None and type(message) is not dict:
            return None
        subtype = obj.get("subtype")
        if subtype is None:
            if message is not None:
                results = self._results(message.get("parts"), thread, turn)
                if results:
                    # Responses the user record carries answer their calls; it is no new prompt.
                    return Entry(False, False, results, (), thread)
            self._set_turn(thread, None)
            return _PROMPT if thread is _MAIN else Entry(opens_history=True, boundary=True, thread=thread)
        if type(subtype) is not str:
            return PASS_OVER
        if subtype in _OPENING_SUBTYPES or (subtype == "notification" and obj.get("deliveredTurn") is True):
            return _OPENS if thread is _MAIN else Entry(opens_history=True, thread=thread)
        # Notifications persisted before their turn ran, goal runtime messages,
        # realtime messages, subtypes not known yet: injected, they close nothing.
        return PASS_OVER

    def _results(self, parts: Any, thread: Hashable, turn: _Turn | None) -> tuple[ToolResult, ...]:
        if type(parts) is not list:
            return ()
        results = []
        marker = self.marker
        for part in parts:
            if type(part) is not dict:
                continue
            response = part.get("functionResponse")
            if type(response) is not dict:
                continue
            call_id = response.get("id")
            if type(call_id) is not str:
                continue  # pairs with nothing, as in Qwen Code
            text = _text_of(response.get("response"))
            placeholder = text is not None and (
                text == ORPHAN_REPAIR_TEXT or (len(text) <= _PLACEHOLDER_LONGEST and text in PLACEHOLDER_TEXTS)
            )
            results.append(ToolResult(call_id, text == marker, placeholder))
            if turn is not None:
                turn.open.discard(call_id)
                if not turn.open:
                    # All answered: nothing is placed below this line any more.
                    turn.below = None
                    self._set_turn(thread, None)
                    turn = None
        return tuple(results)

    def _set_turn(self, thread: Hashable, turn: _Turn | None) -> None:
        """The turn whose lines are held now; None at a boundary or once all its calls are answered.

        A record placed at a boundary uses what its call's turn held up to it.
        """
        if thread is _MAIN:
            self._turn = turn
        elif turn is None:
            self._turns.pop(thread, None)
        else:
            self._turns[thread] = turn

    # -- repairs -----------------------------------------------------------------

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        """One tool_result record per call, chained to each other and into the tree.

        Mid-file they go between ``before`` and its parent when that parent lies
        below the call's line, and ``before`` is re-pointed at the last one; at
        the end they follow the thread's last line on the same condition.
        Otherwise they hang off the call's line.
        """
        before_parent = self._resolve(_str(before.get("parentUuid"))) if type(before) is dict else None
        # The line right before the records: the last line read, or mid-file the one before ``before``.
        line = self._line if before is None else self._line_before
        stamp = _str(line.get("timestamp")) if line is not None else None
        tips: dict[Hashable, str | None] = {}
        anchored: dict[Hashable, bool] = {}
        records = []
        for pending in closed:
            thread = pending.thread
            turn: _Turn = pending.call.context
            if thread not in tips:
                tail = self._tail if thread is _MAIN else self._tails.get(thread)
                candidate = before_parent if before is not None else self._resolve(tail)
                below = turn.below
                # ``below`` is None only when too many lines were held: the record then
                # hangs off the call's line, which is always sound.
                ok = candidate is not None and below is not None and candidate in below
                anchored[thread] = ok
                tips[thread] = candidate if ok else turn.uuid
            record = self._record(pending, turn, tips[thread], stamp)
            tips[thread] = record["uuid"]
            records.append(record)
        return Insertion(records, self._next_line(before, before_parent, closed, tips, anchored))

    def _next_line(
        self,
        before: Any | None,
        parent: str | None,
        closed: Sequence[PendingCall],
        tips: dict[Hashable, str | None],
        anchored: dict[Hashable, bool],
    ) -> Any:
        if type(before) is not dict:
            return None
        thread = closed[0].thread  # a boundary closes the calls of its own thread only
        if anchored.get(thread):
            parent = tips[thread]
        if parent == before.get("parentUuid"):
            return None
        replaced = dict(before)
        replaced["parentUuid"] = parent
        return replaced

    def _record(self, pending: PendingCall, turn: _Turn, parent: str | None, stamp: str | None) -> dict[str, Any]:
        site = turn.line
        call = pending.call
        session = _str(site.get("sessionId")) or self._session
        record: dict[str, Any] = {"uuid": self._fresh_uuid("\x00".join((session or "", turn.uuid or "", call.id)))}
        record["parentUuid"] = parent
        if session is not None:
            record["sessionId"] = session
        if stamp is None:
            stamp = _str(site.get("timestamp"))
        if stamp is not None:
            record["timestamp"] = stamp
        record["type"] = "tool_result"
        if "provenance" in site:
            # Versions that write a provenance give a result record this one.
            record["provenance"] = "tool_result"
        for key in _COPIED:
            if key in site:
                record[key] = site[key]
        response: dict[str, Any] = {"id": call.id}
        if call.name is not None:
            response["name"] = call.name
        # "output" is what a call returned to the model; "error" is Qwen Code's
        # word for a call that failed or was cancelled. Neither is known here.
        response["response"] = {"output": self.marker}
        record["message"] = {"role": "user", "parts": [{"functionResponse": response}]}
        record["toolCallResult"] = {"callId": call.id, "status": NOT_RUN_STATUS, "resultDisplay": self.marker}
        return record

    def _fresh_uuid(self, name: str) -> str:
        """uuid5 of the call; where it is taken already, the next unused one in a fixed series."""
        uuid = stable_uuid(_NAMESPACE, name)
        n = 0
        while uuid in self._v5:
            n += 1
            uuid = stable_uuid(_NAMESPACE, f"{name}\x00{n}")
        self._v5.add(uuid)
        return uuid

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        """The line without those responses; a line left without parts goes, and its children move up."""
        message: Any = obj.get("message") if type(obj) is dict else None
        parts = message.get("parts") if type(message) is dict else None
        if type(parts) is not list:
            return DROP
        kept = without_last_results(parts, call_ids, _answers)
        parent = self._resolve(_str(obj.get("parentUuid")))
        if not kept:
            uuid = _str(obj.get("uuid"))
            if uuid is not None:
                self._dropped[uuid] = parent
            return DROP
        replaced = dict(obj)
        replaced["message"] = {**message, "parts": kept}
        if parent != obj.get("parentUuid"):
            replaced["parentUuid"] = parent
        return replaced

    def relink(self, obj: Any) -> Any:
        if not self._dropped or type(obj) is not dict:
            return None
        parent = obj.get("parentUuid")
        if type(parent) is not str or parent not in self._dropped:
            return None
        replaced = dict(obj)
        replaced["parentUuid"] = self._dropped[parent]
        return replaced

    def _resolve(self, uuid: str | None) -> str | None:
        # ``_dropped`` holds resolved parents, so one step is enough.
        if uuid is None or not self._dropped:
            return uuid
        return self._dropped.get(uuid, uuid)


def _thread_of(obj: dict[str, Any]) -> Hashable:
    agent = obj.get("agentId")
    return ("sidechain", agent if type(agent) is str else None)


def _text_of(response: Any) -> str | None:
    """The text a response gives the model, as Qwen Code's converters take it: output, else error."""
    if type(response) is str:
        return response
    if type(response) is not dict:
        return None
    output = response.get("output")
    if type(output) is str:
        return output
    error = response.get("error")
    return error if type(error) is str else None


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def _answers(part: Any) -> Any:
    response = part.get("functionResponse") if type(part) is dict else None
    return _str(response.get("id")) if type(response) is dict else NOT_A_RESULT


ADAPTER = QwenCodeAdapter
