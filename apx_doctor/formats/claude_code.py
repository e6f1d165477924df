"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``, ``agent-*.jsonl``).

Every line has a ``type``. Lines chain into a tree by ``uuid``/``parentUuid``:

    {"type": "user", "uuid", "parentUuid", "sessionId", "message": {"role": "user", "content": ...}}
    {"type": "assistant", ..., "message": {"id": MSG, "content": [{"type": "tool_use", "id": ID, ...}]}}
    {"type": "user", ..., "message": {"content": [{"type": "tool_result", "tool_use_id": ID, ...}]}}

Many lines are no messages (``summary``, ``file-history-snapshot``, ``progress``,
``attachment``, ``system``, ``queue-operation``, ...) and are passed over. One API
reply is written over several assistant lines sharing ``message.id``, one
content block a line, and its results may come between them in any order: only
a new reply (a new ``message.id``), a real user prompt or a ``compact_boundary``
closes the calls still pending. Sub-agent lines (``isSidechain``) pair within
their own thread. Pairing goes by id in file order; the uuid tree is only used
to place an inserted line and to keep the tree whole around it.

The tree is not kept whole, so that memory stays flat however long the file
is. A main-thread line whose parent is none or a line the tree still holds goes
into the newer of two generations; once that one is full, the older is let go
where a new main-thread reply begins. Such a line's ancestors were all written
before it, so the walk from an inserted line's place up to the reply that made
its calls meets only lines written since that reply began (or kept), and none of
those is let go before the reply ends. Every other line (a sub-agent's, or one
whose parent is missing: written after it, left behind by a far rewind, or in
another file) is kept for good, and so is every uuid let go that could equal an
inserted one. Where one uuid is written twice with two parents, the tree as
held may place a record otherwise than the whole tree would; inserted uuids
stay unique all the same.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import (
    DROP,
    NOT_A_RESULT,
    Detection,
    FormatAdapter,
    Insertion,
    stable_uuid,
    without_last_results,
)

if TYPE_CHECKING:
    from ..quiet import QuietLines

# Inserted uuids are uuid5(this, session/call line/call id): a second run writes the same bytes.
# The namespace is uuid5(NAMESPACE_URL, NAMESPACE_NAME), written out so that a
# check, which inserts nothing, imports neither uuid nor hashlib.
NAMESPACE_NAME = "https://github.com/apx-doctor/apx-doctor/formats/claude-code"
_NAMESPACE = bytes.fromhex("6efd5234ad175065801f87d9b5100248")

_MAIN: Hashable = None
_ABSENT: Any = object()
# Fields an inserted result line copies from the line that made the call, in Claude Code's order.
_COPIED = ("userType", "cwd", "sessionId", "version", "gitBranch", "agentId", "entrypoint")
# Lines that only carry these types and keys are Claude Code's for sure.
_CHAINED_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})
# User lines that are output of a local command, not something the user said:
# they close a turn but do not start the checked history.
_OUTPUT_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-stdout>",
    "<bash-stderr>",
)
# Background-task notices are written whenever a task ends, even while the
# calls of a reply are still running: they neither answer nor close anything.
_NOTICE_PREFIXES = ("<task-notification>",)
# How far up the tree to look when asking whether a line follows a call.
_ANCESTRY_LIMIT = 10_000
# Main-thread lines a generation of the uuid tree holds before the next one starts.
_GENERATION = 10_000


# Shared entries for the main thread: most lines are on it, and an Entry per line costs.
_MAIN_REPLY = Entry(boundary=True)
_MAIN_PROMPT = Entry(opens_history=True, boundary=True)
_MAIN_OUTPUT = Entry(boundary=True)


# Not frozen (a frozen dataclass's __init__ costs several times more, once per
# call), and compared by identity: it holds a line, not a value.
@dataclass(slots=True, eq=False)
class _CallSite:
    """The assistant line that made a call: what its result line needs.

    The parsed line itself is kept (no line is changed in place): most calls
    are answered, so what an inserted line copies from it is read only for the
    few that are not.
    """

    line: dict[str, Any]
    # The first line of the reply the call belongs to: a line below it is
    # part of that reply's turn, even where Claude Code hangs lines off
    # another line of the reply than the one that made this call.
    reply_start: str | None
    # The ``promptId`` of the prompt whose turn made the call: Claude Code
    # (2.1 on) writes it on its own result lines, so an inserted one has it too.
    prompt_id: Any = None

    @property
    def uuid(self) -> str | None:
        return _str(self.line.get("uuid"))

    @property
    def sidechain(self) -> bool:
        return self.line.get("isSidechain") is True

    @property
    def timestamp(self) -> Any:
        return self.line.get("timestamp")

    @property
    def fields(self) -> tuple[tuple[str, Any], ...]:
        return tuple((k, self.line[k]) for k in _COPIED if k in self.line)


class ClaudeCodeAdapter(FormatAdapter):
    name = "claude-code"
    description = "Claude Code session files (projects/<project>/<session>.jsonl and agent-*.jsonl)"
    priority = 30

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # uuid -> parentUuid, as the output has it: main-thread lines whose parent
        # is none or in these two (newest first), and the lines kept for good.
        self._new: dict[str, str | None] = {}
        self._old: dict[str, str | None] = {}
        self._kept: dict[str, str | None] = {}
        self._v5: set[str] = set()  # uuids let go that could equal an inserted one
        self._generation = _GENERATION
        self._sidechains: dict[str, Hashable] = {}  # sidechain uuid -> its thread
        self._agents: dict[str, Hashable] = {}  # agentId -> its thread
        self._named: set[Hashable] = set()  # threads an agentId names
        self._last: dict[Hashable, str] = {}  # thread -> its last line with a uuid
        self._reply: dict[Hashable, str | None] = {}  # thread -> the reply now being written
        self._reply_start: dict[Hashable, str | None] = {}  # thread -> that reply's first line
        self._dropped: dict[str, str | None] = {}  # removed uuid -> the parent its children get
        self._session: str | None = None
        self._prompt_ids: dict[Hashable, Any] = {}  # thread -> the promptId of its latest user line
        self._previous: str | None = None  # the last uuid seen, in any thread
        self._clean = True  # whether that line is in ``_new`` or ``_old`` (or let go from them)
        self._thread: Hashable = _MAIN

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        level = Detection.NO
        for obj in samples:
            if not isinstance(obj, dict):
                continue
            message = obj.get("message")
            gemini_parts = isinstance(message, dict) and "parts" in message
            if gemini_parts or "systemPayload" in obj or obj.get("type") == "tool_result":
                # Qwen Code writes the same uuid tree around Gemini ``parts``
                # (its results as tool_result lines), where this reader would
                # see no call at all.
                return Detection.NO
            if _is_claude_code_line(obj):
                level = Detection.CERTAIN
        return level

    def quiet_lines(self) -> QuietLines:
        # Imported here: a check no longer than the head never loads msgspec.
        from ._claude_code_quiet import ClaudeCodeQuietLines

        return ClaudeCodeQuietLines(self)

    # -- what a line is -------------------------------------------------------

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if not isinstance(kind, str):
            return None
        # Every line passes here: each key is read once, and main-thread lines
        # (most of them) take no helper call before their kind's own.
        uuid = obj.get("uuid")
        if not isinstance(uuid, str):
            uuid = None
        parent = obj.get("parentUuid")
        previous = self._previous
        if parent == previous:
            # Mostly the line just before: its own object, so that the tree
            # holds one copy of each uuid.
            parent = previous
            clean = self._clean
        elif not isinstance(parent, str):
            parent = None
            clean = True
        else:
            clean = parent in self._new or parent in self._old
        if self._session is None:
            self._session = _str(obj.get("sessionId"))
        if obj.get("isSidechain") is not True:
            thread = self._thread = _MAIN
        else:
            thread = self._thread = self._thread_of(obj, uuid, parent)
            clean = False
        if uuid is not None:
            if clean:
                self._new[uuid] = parent
            else:
                self._keep(uuid, parent)
            self._last[thread] = uuid
            self._previous = uuid
            self._clean = clean
        if kind == "assistant":
            return self._assistant(obj, thread, uuid)
        if kind == "user":
            return self._user(obj, thread)
        if kind == "system" and obj.get("subtype") == "compact_boundary":
            # Compaction replaces the history before it: what is pending stays unanswered.
            self._reply[thread] = None
            return Entry(boundary=True, thread=thread)
        return PASS_OVER

    def _thread_of(self, obj: dict[str, Any], uuid: str | None, parent: str | None) -> Hashable:
        """The thread of a sidechain line."""
        # A sub-agent is known by its agentId (agent-*.jsonl files, where a
        # compaction starts a new root); lines without one join their parent's
        # thread, or, in older session files holding several sub-agents, start
        # one of their own at a new root. An agentId first seen below a thread
        # that has none names that thread (some writers put it on some lines
        # only).
        agent = _str(obj.get("agentId"))
        thread = self._agents.get(agent) if agent else None
        if thread is None:
            thread = self._sidechains.get(parent) if parent is not None else None
            if agent:
                if thread is None or thread in self._named:
                    thread = ("sidechain", agent)
                self._agents[agent] = thread
                self._named.add(thread)
            elif thread is None:
                thread = ("sidechain", parent or uuid)
        if uuid is not None:
            self._sidechains[uuid] = thread
        return thread

    def _assistant(self, obj: dict[str, Any], thread: Hashable, uuid: str | None) -> Entry | None:
        message = obj.get("message")
        if type(message) is not dict:
            return None
        reply = message.get("id")
        if not isinstance(reply, str) or not reply:
            reply = _str(obj.get("requestId"))
        # Lines of the reply being written continue it; another reply closes its calls.
        new_reply = reply is None or self._reply.get(thread) != reply
        if new_reply:
            if thread is _MAIN and len(self._new) >= self._generation:
                self._rotate()
            self._reply[thread] = reply
            self._reply_start[thread] = uuid
        content = message.get("content")
        calls: list[ToolCall] | None = None
        if isinstance(content, list):
            # One pass: most lines hold one block, and most blocks are no call.
            for block in content:
                if type(block) is not dict or block.get("type") != "tool_use":
                    continue
                call_id = block.get("id")
                if not isinstance(call_id, str):
                    continue
                if calls is None:
                    calls = []
                    site = _CallSite(obj, self._reply_start.get(thread), self._prompt_ids.get(thread))
                name = block.get("name")
                calls.append(ToolCall(call_id, name if isinstance(name, str) else None, block.get("input"), True, site))
        if calls:
            return Entry(False, new_reply, (), tuple(calls), thread)
        if thread is _MAIN:
            return _MAIN_REPLY if new_reply else PASS_OVER
        return Entry(boundary=new_reply, thread=thread)

    def _user(self, obj: dict[str, Any], thread: Hashable) -> Entry | None:
        prompt_id = obj.get("promptId")
        if prompt_id is not None:
            self._prompt_ids[thread] = prompt_id
        if obj.get("isMeta") is True:
            # Caveats, skill bodies, expanded commands: written by Claude Code, not said by the user.
            return PASS_OVER
        message = obj.get("message")
        if type(message) is not dict:
            return None
        content = message.get("content")
        if isinstance(content, str):
            return self._prompt(content, thread)
        if not isinstance(content, list):
            return None
        results = []
        for block in content:
            if type(block) is dict and block.get("type") == "tool_result":
                results.append(self.result_for(block.get("tool_use_id"), block.get("content")))
        if results:
            # Text beside results is what Claude Code attaches to them (reminders,
            # hook context), not a new prompt: other calls of the reply stay open.
            return Entry(False, False, tuple(results), (), thread)
        return self._prompt(_first_text(content), thread)

    def _prompt(self, text: str | None, thread: Hashable) -> Entry:
        text = text.lstrip() if text is not None else None
        if text is not None and text.startswith(_NOTICE_PREFIXES):
            return PASS_OVER
        self._reply[thread] = None
        output = text is not None and text.startswith(_OUTPUT_PREFIXES)
        if thread is _MAIN:
            return _MAIN_OUTPUT if output else _MAIN_PROMPT
        return Entry(opens_history=not output, boundary=True, thread=thread)

    # -- the uuid tree ------------------------------------------------------------

    def _rotate(self) -> None:
        """A new main-thread reply begins at this line: let the older generation go.

        The calls still pending on the main thread are the last reply's, closed
        after this line. Their records are placed by walking up to the line
        where that reply began (it is not looked up itself), through lines
        written since then or kept. A generation was last let go at that
        reply's first line or before it, so what goes now was written no later.
        """
        gone = self._old
        self._old = self._new
        self._new = {}
        # An inserted uuid is a uuid5: only a uuid with a 5 where a uuid's version digit goes can equal one.
        self._v5.update([uuid for uuid in gone if uuid[14:15] == "5"])

    def _keep(self, uuid: str, parent: str | None) -> None:
        """Keep this line for good; it is where its uuid is looked up from now on."""
        self._new.pop(uuid, None)
        self._old.pop(uuid, None)
        self._kept[uuid] = parent
        if uuid == self._previous:
            self._clean = False

    def _link(self, uuid: str, parent: str | None, thread: Hashable) -> None:
        """Point ``uuid`` at ``parent``: an inserted line, or a line re-pointed past inserted or removed lines."""
        if thread is _MAIN and (parent is None or parent in self._new or parent in self._old):
            self._old.pop(uuid, None)
            self._kept.pop(uuid, None)
            self._new[uuid] = parent
            if uuid == self._previous:
                self._clean = True
        else:
            self._keep(uuid, parent)

    def _parent(self, uuid: str) -> str | None:
        parent: str | None = self._new.get(uuid, _ABSENT)
        if parent is _ABSENT:
            parent = self._old.get(uuid, _ABSENT)
            if parent is _ABSENT:
                parent = self._kept.get(uuid)
        return parent

    def _taken(self, uuid: str) -> bool:
        """Whether a line of the file, or a line inserted before, has this uuid (as far as an inserted one could)."""
        return uuid in self._new or uuid in self._old or uuid in self._kept or uuid in self._v5

    # -- repairs -----------------------------------------------------------------

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        """One result line per call, chained to each other and into the tree.

        Mid-file, the records go between the next line of the thread and its
        parent, when that parent lies below the reply that made the calls: the
        next line is then re-pointed at the last record, as Claude Code points
        the next reply at the last result it wrote. Otherwise (that line starts
        a new tree, or a branch that leaves the reply behind) the records hang
        off the last call's line and the next line is left alone. At the end
        they follow the thread's last line, on the same condition.
        """
        before_parent = self._before_parent(before)
        last_site = {p.thread: p.call.context for p in closed}
        tips: dict[Hashable, str | None] = {}
        anchored: dict[Hashable, bool] = {}
        records = []
        for pending in closed:
            thread = pending.thread
            if thread not in tips:
                candidate = before_parent if before is not None else self._resolve(self._last.get(thread))
                site = last_site[thread]
                anchored[thread] = self._follows(candidate, site.reply_start or site.uuid)
                tips[thread] = candidate if anchored[thread] else last_site[thread].uuid
            record = self._record(pending, tips[thread])
            tips[thread] = record["uuid"]
            self._link(record["uuid"], record["parentUuid"], thread)
            records.append(record)
        return Insertion(records, self._next_line(before, before_parent, tips, anchored))

    def _before_parent(self, before: Any | None) -> str | None:
        if type(before) is not dict:
            return None
        return self._resolve(_str(before.get("parentUuid")))

    def _next_line(
        self, before: Any | None, parent: str | None, tips: dict[Hashable, str | None], anchored: dict[Hashable, bool]
    ) -> Any:
        if type(before) is not dict:
            return None
        if anchored.get(self._thread):
            parent = tips[self._thread]
        if parent == before.get("parentUuid"):
            return None
        replaced = dict(before)
        replaced["parentUuid"] = parent
        uuid = _str(before.get("uuid"))
        if uuid is not None:
            self._link(uuid, parent, self._thread)
        return replaced

    def _follows(self, node: str | None, ancestor: str | None) -> bool:
        """Whether ``node`` is ``ancestor`` or lies below it in the tree."""
        if node is None or ancestor is None:
            return False
        # A uuid cycle (a hostile or corrupt tree) ends the walk at its first repeat, not at the limit.
        seen = set()
        for _ in range(_ANCESTRY_LIMIT):
            if node == ancestor:
                return True
            if node in seen:
                return False
            seen.add(node)
            node = self._parent(node)
            if node is None:
                return False
        return False

    def _record(self, pending: PendingCall, parent: str | None) -> dict[str, Any]:
        site: _CallSite = pending.call.context
        fields = dict(site.fields)
        session = _str(fields.get("sessionId")) or self._session
        if session is not None:
            fields["sessionId"] = session
        name = "\x00".join((session or "", site.uuid or "", pending.call.id))
        record: dict[str, Any] = {"parentUuid": parent, "isSidechain": site.sidechain}
        if site.prompt_id is not None:
            record["promptId"] = site.prompt_id
        record.update(fields)
        record["type"] = "user"
        record["message"] = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": pending.call.id, "content": self.marker}],
        }
        record["uuid"] = self._fresh_uuid(name)
        if site.timestamp is not None:
            record["timestamp"] = site.timestamp
        record["toolUseResult"] = self.marker
        if site.uuid is not None:
            record["sourceToolAssistantUUID"] = site.uuid
        return record

    def _fresh_uuid(self, name: str) -> str:
        """uuid5 of the call; where lines repeat a uuid, the next unused one in a fixed series."""
        uuid = _uuid5(name)
        n = 0
        while self._taken(uuid):
            n += 1
            uuid = _uuid5(f"{name}\x00{n}")
        return uuid

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        """The line without those results; a line left empty goes, and its children move up."""
        message: Any = obj.get("message") if type(obj) is dict else None
        content = message.get("content") if type(message) is dict else None
        if not isinstance(content, list):
            return DROP
        kept = without_last_results(content, call_ids, _answers)
        parent = self._resolve(_str(obj.get("parentUuid")))
        uuid = _str(obj.get("uuid"))
        if not kept:
            if uuid is not None:
                self._dropped[uuid] = parent
            return DROP
        replaced = dict(obj)
        replaced["message"] = {**message, "content": kept}
        if parent != obj.get("parentUuid"):
            replaced["parentUuid"] = parent
        return replaced

    def relink(self, obj: Any) -> Any:
        if not self._dropped or type(obj) is not dict:
            return None
        replaced = None
        for key in ("parentUuid", "logicalParentUuid"):
            value = obj.get(key)
            if isinstance(value, str) and value in self._dropped:
                replaced = replaced or dict(obj)
                replaced[key] = self._dropped[value]
        uuid = _str(obj.get("uuid"))
        if replaced is not None and uuid is not None:
            self._link(uuid, _str(replaced.get("parentUuid")), self._thread)
        return replaced

    def _resolve(self, uuid: str | None) -> str | None:
        # ``_dropped`` holds resolved parents, so one step is enough.
        return self._dropped.get(uuid, uuid) if uuid is not None else None


def _uuid5(name: str) -> str:
    return stable_uuid(_NAMESPACE, name)


def _answers(block: Any) -> Any:
    if type(block) is dict and block.get("type") == "tool_result":
        return _str(block.get("tool_use_id"))
    return NOT_A_RESULT


def _is_claude_code_line(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind in _CHAINED_TYPES:
        return "uuid" in obj and ("sessionId" in obj or "parentUuid" in obj)
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":
        return "snapshot" in obj
    if kind == "queue-operation":
        return "operation" in obj
    if kind == "permission-mode":
        return "permissionMode" in obj
    return False


def _first_text(content: list[Any]) -> str | None:
    for block in content:
        if type(block) is dict and block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"]  # type: ignore[no-any-return]  # a str: tested just above
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


ADAPTER = ClaudeCodeAdapter
