"""pi session files (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``), and OpenClaw's.

pi, the coding agent (npm ``@mariozechner/pi-coding-agent``), writes a header
line and then one entry a line; OpenClaw embeds pi's session manager and writes
the same format:

    {"type": "session", "version": 3, "id": SESSION, "timestamp": ..., "cwd": ...}
    {"type": "message", "id": "1a2b3c4d", "parentId": PREVIOUS, "timestamp": ..., "message": {...}}
    {"type": "model_change" | "thinking_level_change" | "compaction" | "branch_summary"
     | "custom" | "custom_message" | "label" | "session_info", "id", "parentId", ...}

Version 1 files have no ``version`` in the header and no ``id``/``parentId`` on
entries (a linear list, which pi migrates on load); from version 2 entries form
a tree, each appended as a child of the current leaf, and pi resumes at the
last entry of the file. ``message`` holds an agent message: ``user``,
``assistant`` (content parts ``text``, ``thinking``, ``toolCall {id, name,
arguments}``), ``toolResult {toolCallId, toolName, content, isError}``, and
pi's own ``bashExecution`` and ``custom`` (``hookMessage`` before version 3).

How that maps onto the engine, as pi's own prompt building reads it
(``buildSessionContext``, ``convertToLlm``, pi-ai's ``transformMessages``):

- Calls are the ``toolCall`` parts of an assistant message; a ``toolResult``
  message answers one by ``toolCallId``. An assistant message that stopped
  with ``error`` or ``aborted`` is never sent again and its calls never run:
  they are no calls here (a result for one answers nothing, as pi sends it).
- A user message opens the checked history and ends the turn. So do what pi
  sends as a user message (``custom``, ``bashExecution`` unless
  ``excludeFromContext``, ``custom_message`` and ``branch_summary`` entries),
  a new assistant reply, and ``compaction``, which replaces what came before.
- Settings, labels, session names and extension state are passed over, and so
  are OpenClaw's transcript-only assistant messages (provider ``openclaw``,
  model ``delivery-mirror`` or ``gateway-injected``). An assistant message
  sharing ``responseId`` or ``turnId`` with the reply whose calls are pending
  is a later fragment of that reply (OpenClaw commits tool calls of one
  streamed response one by one), not a new one.
- OpenClaw's ``[openclaw] missing tool result in session history; ...``
  synthetic results are reported as placeholders (APX006).

The not-run record is the ``toolResult`` message entry pi would append. It is
chained into the tree: it hangs off the last entry of the call's branch (the
call's line, or the results and other entries written below it since), and the
next entry, when it hangs there too, is re-pointed at the record. An entry
that starts another branch (a ``/tree`` navigation) is left as it is. Its id
is eight hex digits, as pi's are, derived from the session, the call's entry
and the call, and never one the file already used.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall, ToolResult
from .base import _PLACEHOLDER_LONGEST, DROP, PLACEHOLDER_TEXTS, Detection, FormatAdapter, Insertion, detect_by_line, text_of

_PROMPT = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)

# Roles pi sends as a user message (``convertToLlm``); ``hookMessage`` is
# version 2's name for ``custom``.
_USER_LIKE_ROLES = frozenset({"custom", "hookMessage", "branchSummary", "compactionSummary"})
# Entries pi puts into the prompt as a user message, or that replace what came before.
_BOUNDARY_TYPES = frozenset({"compaction", "branch_summary", "custom_message"})
# OpenClaw writes these assistant messages for its own bookkeeping and never sends them.
_TRANSCRIPT_ONLY_MODELS = frozenset({"delivery-mirror", "gateway-injected"})
# What OpenClaw writes where it lost a result (also under other prefixes, by plugins).
_SYNTHETIC_SUFFIX = "missing tool result in session history; inserted synthetic error result for transcript repair."
_SYNTHETIC_DETAIL = "openclawSyntheticMissingToolResult"
_SYNTHETIC_LONGEST = len(_SYNTHETIC_SUFFIX) + 40

# Ids seen are held exactly up to this many, then as a bitmap of 2**26 bits
# (8 MiB): a second run still derives the same ids, and memory stays flat.
_EXACT_IDS = 200_000
_BITMAP_BYTES = 1 << 23
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


class PiAdapter(FormatAdapter):
    name = "pi"
    description = "pi (and OpenClaw) session files: a session header, then a tree of entries"
    priority = 45

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str | None = None
        # The last entry of the branch the pending calls were made on (None: no
        # calls pending, or entries without ids), and its value before this line.
        self._tip: str | None = None
        self._tip_before: str | None = None
        # The latest timestamp as written, and the one before this line's.
        self._stamp: Any = None
        self._stamp_before: Any = None
        # ``responseId``/``turnId`` of the reply whose calls are pending.
        self._reply_ids: tuple[str, ...] = ()
        # Entry ids seen (eight characters, as pi's are): exactly, then as a bitmap.
        self._seen: set[str] | None = set()
        self._bitmap: bytearray | None = None
        # Removed entry id -> the parent its children get (``--drop-orphans``).
        self._dropped: dict[str, Any] = {}

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge)

    # -- what a line is ---------------------------------------------------------

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line of files of a gigabyte: one function, each key read
        # once, shared entries for the lines passed over.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if type(kind) is not str:
            return None
        stamp = obj.get("timestamp")
        self._stamp_before = self._stamp
        if type(stamp) is str:
            self._stamp = stamp
        tip = self._tip_before = self._tip
        entry_id = obj.get("id")
        if type(entry_id) is str:
            if len(entry_id) == 8:
                seen = self._seen
                if seen is not None:
                    seen.add(entry_id)
                    if len(seen) > _EXACT_IDS:
                        self._to_bitmap()
                else:
                    self._mark(entry_id)
            if tip is not None:
                parent = obj.get("parentId")
                if self._dropped and type(parent) is str:
                    parent = self._dropped.get(parent, parent)
                if parent == tip:
                    # The line continues the branch the pending calls were made on.
                    self._tip = entry_id
        else:
            entry_id = None
        if kind == "message":
            message = obj.get("message")
            if type(message) is not dict:
                return None
            role = message.get("role")
            if role == "toolResult":
                return Entry(False, False, (self._result(message),))
            if role == "assistant":
                return self._assistant(message, entry_id, stamp)
            if role == "user":
                self._tip = None
                self._reply_ids = ()
                return _PROMPT
            if type(role) is not str:
                return None
            if role == "bashExecution":
                if message.get("excludeFromContext") is True:
                    return PASS_OVER  # a ``!!`` command: never sent to the model
            elif role not in _USER_LIKE_ROLES:
                return PASS_OVER  # a role pi does not send
            self._tip = None
            self._reply_ids = ()
            return _BOUNDARY
        if kind in _BOUNDARY_TYPES:
            self._tip = None
            self._reply_ids = ()
            return _BOUNDARY
        if kind == "session" and self._session is None:
            self._session = entry_id
        # The header, settings, labels, names, extension state, types not known yet.
        return PASS_OVER

    def _assistant(self, message: dict[str, Any], entry_id: str | None, stamp: Any) -> Entry:
        content = message.get("content")
        stop = message.get("stopReason")
        calls: list[ToolCall] | None = None
        if isinstance(content, list) and stop != "error" and stop != "aborted":
            for part in content:
                if type(part) is not dict or part.get("type") != "toolCall":
                    continue
                call_id = part.get("id")
                if not isinstance(call_id, str) or not call_id:
                    continue
                name = part.get("name")
                if calls is None:
                    calls = []
                name = name if isinstance(name, str) else None
                calls.append(ToolCall(call_id, name, part.get("arguments"), True, (entry_id, stamp)))
        reply_ids = self._reply_ids
        if reply_ids:
            response, turn = message.get("responseId"), message.get("turnId")
            if (type(response) is str and response in reply_ids) or (type(turn) is str and turn in reply_ids):
                # A later fragment of the reply whose calls are pending.
                if calls is None:
                    return PASS_OVER
                if self._tip is None:
                    self._tip = entry_id
                return Entry(calls=tuple(calls))
        if calls is None:
            model = message.get("model") if message.get("provider") == "openclaw" else None
            if type(model) is str and model in _TRANSCRIPT_ONLY_MODELS:
                return PASS_OVER
            self._tip = None
            self._reply_ids = ()
            return _BOUNDARY
        # A new reply: its calls start a branch of their own at this line.
        self._tip = entry_id
        response, turn = message.get("responseId"), message.get("turnId")
        self._reply_ids = tuple(i for i in (response, turn) if type(i) is str and i)
        return Entry(False, True, (), tuple(calls))

    def _result(self, message: dict[str, Any]) -> ToolResult:
        call_id = message.get("toolCallId")
        content = message.get("content")
        text = content if type(content) is str else text_of(content)
        placeholder = False
        if text is not None:
            if len(text) <= _PLACEHOLDER_LONGEST:
                placeholder = text in PLACEHOLDER_TEXTS
            elif len(text) <= _SYNTHETIC_LONGEST:
                placeholder = text.endswith(_SYNTHETIC_SUFFIX)
        if not placeholder and message.get("isError") is True:
            details = message.get("details")
            placeholder = type(details) is dict and details.get(_SYNTHETIC_DETAIL) is True
        return ToolResult(call_id if isinstance(call_id, str) else None, text == self.marker, placeholder)  # type: ignore[arg-type]  # None answers no call

    # -- repairs -----------------------------------------------------------------

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        at_end = before is None
        # Mid-file this line is ``before``, already read: the state before it counts.
        tip = self._tip if at_end else self._tip_before
        prior = self._stamp if at_end else self._stamp_before
        branch = tip
        last_id = None
        records = []
        for pending in closed:
            call = pending.call
            entry_id, call_stamp = call.context
            # Each record no earlier than the line before it (the one before, for the second).
            stamp, moment = _later(prior, call_stamp)
            prior = stamp
            record: dict[str, Any] = {"type": "message"}
            if entry_id is not None:
                last_id = record["id"] = self._fresh_id(entry_id, call.id)
                record["parentId"] = branch
                branch = last_id
            if stamp is not None:
                record["timestamp"] = stamp
            message: dict[str, Any] = {
                "role": "toolResult",
                "toolCallId": call.id,
                "toolName": call.name if call.name is not None else "unknown",
                "content": [{"type": "text", "text": self.marker}],
                # No tool reported an error: it did not run in this turn, or its result was lost.
                "isError": False,
            }
            if moment is not None:
                message["timestamp"] = (moment - _EPOCH) // _MILLISECOND
            record["message"] = message
            records.append(record)
        if at_end:
            if last_id is not None:
                self._tip = last_id
            return Insertion(records)
        return Insertion(records, self._repoint(before, tip, last_id))

    def _repoint(self, before: Any, tip: str | None, last_id: str | None) -> Any:
        """``before`` hung off the records, where it hangs off the branch they extend."""
        if last_id is None or tip is None or type(before) is not dict or type(before.get("id")) is not str:
            return None
        parent = before.get("parentId")
        if type(parent) is str and self._dropped:
            parent = self._dropped.get(parent, parent)
        if parent != tip:
            return None  # another branch, or a new root: left as it is
        replaced = dict(before)
        replaced["parentId"] = last_id
        return replaced

    def _fresh_id(self, entry_id: str, call_id: str) -> str:
        """Eight hex digits derived from the session, the call's entry and the call; unused so far."""
        from hashlib import sha256

        name = "\x00".join((self._session or "", entry_id, call_id))
        n = 0
        while True:
            seed = name if n == 0 else f"{name}\x00{n}"
            candidate = sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            if not self._taken(candidate):
                break
            n += 1
        if self._seen is not None:
            self._seen.add(candidate)
        else:
            self._mark(candidate)
        return candidate

    def _taken(self, candidate: str) -> bool:
        if self._seen is not None:
            return candidate in self._seen
        bit = int(candidate, 16) >> 6
        return bool(self._bitmap[bit >> 3] & (1 << (bit & 7)))  # type: ignore[index]

    def _to_bitmap(self) -> None:
        seen, self._seen = self._seen, None
        self._bitmap = bytearray(_BITMAP_BYTES)
        for entry_id in seen or ():
            self._mark(entry_id)

    def _mark(self, entry_id: str) -> None:
        # Only hex ids can equal an inserted one (and a false hit only moves on to the next candidate).
        try:
            bit = int(entry_id, 16) >> 6
        except ValueError:
            return
        if 0 <= bit < _BITMAP_BYTES * 8:
            self._bitmap[bit >> 3] |= 1 << (bit & 7)  # type: ignore[index]

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        """A message entry holds one result: the line goes, and its children move up to its parent."""
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
        replaced = None
        # ``firstKeptEntryId``: a compaction that kept from a removed entry keeps from its parent.
        for key in ("parentId", "firstKeptEntryId"):
            value = obj.get(key)
            if type(value) is str and value in self._dropped:
                replaced = replaced or dict(obj)
                replaced[key] = self._dropped[value]
        return replaced


def _later(first: Any, second: Any) -> tuple[str | None, datetime | None]:
    """The later of two timestamps as written, and its moment (None where neither is one)."""
    a, b = _moment(first), _moment(second)
    if a is None and b is None:
        return (first if type(first) is str else second if type(second) is str else None), None
    if b is not None and (a is None or b > a):
        return second, b
    return first, a


def _moment(stamp: Any) -> datetime | None:
    if type(stamp) is not str:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    # pi writes UTC (``toISOString``); a stamp with no zone is read as UTC too.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _judge(obj: dict[str, Any]) -> int | None:
    kind = obj.get("type")
    if not isinstance(kind, str):
        return Detection.NO
    if kind == "session":
        # pi's header, in every version: a session id and the working folder.
        return Detection.CERTAIN if isinstance(obj.get("id"), str) and isinstance(obj.get("cwd"), str) else Detection.NO
    if kind == "session_start":
        return Detection.NO  # Factory Droid's header
    if kind != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return Detection.NO
    if message["role"] == "toolResult":
        return Detection.CERTAIN if isinstance(message.get("toolCallId"), str) else Detection.NO
    content = message.get("content")
    if not isinstance(content, list):
        return None
    level = None
    for part in content:
        part_type = part.get("type") if isinstance(part, dict) else None
        if part_type == "tool_use" or part_type == "tool_result":
            return Detection.NO  # Anthropic blocks: another runtime's message envelope
        if part_type == "toolCall":
            level = Detection.CERTAIN
    return level


ADAPTER = PiAdapter
