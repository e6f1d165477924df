"""The Claude Code format's quiet lines: the few fields that prove a session line gives the engine nothing to do.

Imported only by ``ClaudeCodeAdapter.quiet_lines``, once a check has lines past
the head, so that a short run never imports msgspec. A stretch follows one
thread, that of the line read whole last: the main thread, or a sub-agent's
(``isSidechain``; a sub-agent's own file, ``agent-*.jsonl``, is one such thread).
A line of another thread, or a sub-agent's line whose thread ``classify``
would have to make, goes the general way. Once the thread's history has
started, what ``ClaudeCodeAdapter.classify`` says of a line comes down to:

- an assistant line: a boundary when it starts a new reply (its ``message.id``,
  else its ``requestId``, differs from the reply being written, or it has
  neither); its ``tool_use`` blocks with a string id are calls;
- a user line: passed over when ``isMeta``; with ``tool_result`` blocks, their
  results (text beside them is Claude Code's, not a prompt); otherwise a prompt
  or a command's output (a boundary), or a background task's notice (passed
  over), by its text;
- a ``compact_boundary`` system line: a boundary; any other line: passed over.

A step here is the calls of one reply: an assistant line with calls and none
waiting opens one, a later line of the same reply adds its calls (unless an id
is waiting: the engine reports the reuse), and it ends when its last call is
answered, once, by a result proven neither the marker nor a placeholder.
Anything else deviates: a stray, duplicate or late result, a new reply, a
prompt or a compaction while calls wait, a line whose fields are of a type not
typed here, a message that is no object.

The adapter keeps state that ``classify`` updates on every line, and that the
records it inserts read: the uuid tree (and its generations), the last uuid
and whether the tree holds it whole, each thread's last line, the thread of
each sub-agent line, the reply being written in each thread and its first
line, each thread's latest ``promptId``, the session. A line let go
between steps (``QUIET``) updates it at once, as ``classify`` would. A held line
updates nothing until its step ends (``ENDS``): the held lines then update it
in file order, the ending line last, exactly as ``classify`` reading each would.
On a deviation the general code reads the held lines again from the state as
it was before them, so nothing is counted twice.

A repair's self-check has an adapter of its own, which the lines taken do not
update. It writes no record (a self-check that would close a call stops the
run), so its tree is never read; of the rest only the reply being written
changes what it says, and only on the first line it reads after a stretch,
from a quiet engine, where a boundary has nothing to close.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import msgspec

from ..quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step
from ._anthropic_quiet import _Block as AnthropicBlock
from ._quiet_results import PlainResults

if TYPE_CHECKING:
    from .claude_code import ClaudeCodeAdapter

_NULL = msgspec.Raw(b"null")


class _Block(AnthropicBlock, gc=False):
    """A content block as the Anthropic quiet lines type it, and a text block's text."""

    # Kept as raw JSON: read only for a prompt's first text.
    text: msgspec.Raw = _NULL


class _Message(msgspec.Struct, gc=False):
    id: str | None = None
    # Neither a string nor a list: not typed (a user line ``classify`` does not read).
    content: str | list[_Block] | None = None


class _Line(msgspec.Struct, gc=False):
    # gc=False: a line's fields (strings, raw bytes) can hold no cycle, so the
    # collector need not track the millions of lines of a file.
    type: str
    uuid: str | None = None
    parentUuid: str | None = None  # Claude Code's own key
    sessionId: str | None = None
    isSidechain: bool | None = None
    agentId: str | None = None
    message: _Message | None = None
    requestId: str | None = None
    promptId: str | None = None
    isMeta: bool | None = None
    subtype: str | None = None


# What a user line without results is, by its text (see ``_spoken``); _UNREAD: its text could not be read.
_UNREAD, _PROMPT, _OUTPUT, _NOTICE = 0, 1, 2, 3


class ClaudeCodeQuietLines:
    """``quiet.QuietLines`` for a Claude Code session, a thread at a time."""

    # The uuid tree's generations turn over as the file goes on (see ``quiet.UTF8_PIECE``).
    utf8_piece = 1 << 12

    def __init__(self, adapter: ClaudeCodeAdapter) -> None:
        self.decode = msgspec.json.Decoder(_Line).decode
        self.adapter = adapter
        self.take = _taker(adapter, PlainResults(adapter))

    def thread(self) -> Hashable:
        """The thread of the line classified last: the main thread, or a sub-agent's."""
        return self.adapter._thread

    def text_bytes(self, line: _Line) -> int:
        """The bytes of the message's strings: a string content, or its blocks' texts and string results."""
        message = line.message
        content = None if message is None else message.content
        if content is None:
            return 0
        if isinstance(content, str):
            return len(content)  # characters: at most its bytes
        total = 0
        for block in content:
            for raw in (block.content, block.text):
                if memoryview(raw)[0] == 0x22:
                    total += len(raw)
        return total

    def opens(self, line: _Line, raw: bytes) -> bool:
        """A prompt: a user line of the user's own words (no results, no command output, no notice)."""
        if line.type != "user" or line.isMeta is True or line.message is None:
            return False
        content = line.message.content
        if isinstance(content, list) and any(block.type == "tool_result" for block in content):
            return False
        return _spoken(content) == _PROMPT


def _spoken(content: str | list[_Block] | None) -> int:
    """What a user line's text makes it, as ``ClaudeCodeAdapter._prompt`` reads it."""
    from .claude_code import _NOTICE_PREFIXES, _OUTPUT_PREFIXES

    try:
        text = content if isinstance(content, str) else _first_text(content or [])
    except msgspec.MsgspecError:
        return _UNREAD
    if text is None:
        return _PROMPT
    text = text.lstrip()
    if text.startswith(_NOTICE_PREFIXES):
        return _NOTICE
    return _OUTPUT if text.startswith(_OUTPUT_PREFIXES) else _PROMPT


def _first_text(content: list[_Block]) -> str | None:
    """``claude_code._first_text`` of typed blocks: the first text block whose text is a string."""
    for block in content:
        raw = block.text
        if block.type == "text" and memoryview(raw)[0] == 0x22:
            text: str = msgspec.json.decode(raw)
            return text
    return None


def _taker(adapter: ClaudeCodeAdapter, results: PlainResults) -> Callable[[_Line, Step], int]:
    """``QuietLines.take`` for ``adapter``: a closure, as this runs for each line."""
    from .claude_code import _MAIN

    view = memoryview
    plain, plain_above = results.plain, results.plain_above
    replies = adapter._reply
    prompt_ids = adapter._prompt_ids
    last = adapter._last
    agents = adapter._agents
    sidechains = adapter._sidechains
    kept = adapter._kept
    # The step's lines (its opening line first), applied to the adapter when it ends.
    held: list[_Line] = []
    # The opening line's reply, and whether it started a new one.
    step_reply: str | None = None
    step_new_reply = False

    def chain(line: _Line, thread: Hashable) -> None:
        """What ``classify`` keeps of every line: the tree, the thread's last line, the last uuid, the session."""
        uuid = line.uuid
        parent = line.parentUuid
        previous = adapter._previous
        if parent == previous:
            parent = previous  # the tree holds one copy of each uuid
            clean = adapter._clean
        elif parent is None:
            clean = True
        else:
            clean = thread is _MAIN and (parent in adapter._new or parent in adapter._old)
        if thread is not _MAIN:
            clean = False  # a sub-agent's line is kept for good
            if uuid is not None:
                sidechains[uuid] = thread
        if adapter._session is None:
            adapter._session = line.sessionId
        # (``_thread`` is left: it is read only for the line just classified.)
        if uuid is not None:
            if clean:
                adapter._new[uuid] = parent
            elif uuid in adapter._new or uuid in adapter._old:
                adapter._keep(uuid, parent)  # a uuid the main thread's tree held: it moves
            else:
                kept[uuid] = parent  # ``_keep``, for a uuid not seen before (``_clean`` is set just below)
            last[thread] = uuid
            adapter._previous = uuid
            adapter._clean = clean

    def begin_reply(reply: str | None, uuid: str | None, thread: Hashable) -> None:
        """What ``classify`` does where a reply begins."""
        if thread is _MAIN and len(adapter._new) >= adapter._generation:
            adapter._rotate()
        replies[thread] = reply
        adapter._reply_start[thread] = uuid

    def let_go(line: _Line, thread: Hashable) -> None:
        """The step's held lines, then ``line`` (its last), update the adapter in file order."""
        opener = held[0]
        chain(opener, thread)
        if step_new_reply:
            begin_reply(step_reply, opener.uuid, thread)
        for kept in held[1:]:
            chain(kept, thread)
            if kept.promptId is not None and kept.type == "user":  # ``classify`` reads it on user lines
                prompt_ids[thread] = kept.promptId
        held.clear()
        chain(line, thread)
        if line.promptId is not None:
            prompt_ids[thread] = line.promptId

    def take(line: _Line, step: Step) -> int:
        # One function, the kinds inlined: this runs for every line of a stretch.
        nonlocal step_reply, step_new_reply
        if line.isSidechain:
            # A sub-agent's line: its thread, as ``classify`` finds it without
            # making one (a thread it would make goes the general way).
            agent = line.agentId
            if agent:
                thread = agents.get(agent)
            else:
                parent = line.parentUuid
                thread = None if parent is None else sidechains.get(parent)
            if thread is None or thread != step.thread:
                return DEVIATES
        elif step.thread is _MAIN:
            thread = _MAIN
        else:
            return DEVIATES  # the stretch follows a sub-agent's thread
        kind = line.type
        waiting = step.waiting
        if kind == "assistant":
            message = line.message
            if message is None:
                return DEVIATES  # no message object: the general code says what it is
            reply = message.id or line.requestId
            content = message.content
            calls = None
            if type(content) is list:
                for block in content:
                    if block.type == "tool_use" and block.id is not None:
                        if calls is None:
                            calls = [block.id]
                        else:
                            calls.append(block.id)
            if waiting is None:
                new_reply = reply is None or replies.get(thread) != reply
                if calls is None:
                    chain(line, thread)
                    if new_reply:
                        begin_reply(reply, line.uuid, thread)
                    return QUIET
                if len(calls) == 1:  # one call, the common case: no id can repeat
                    step.waiting = {calls[0]}
                    step.mark = len(step.answered)
                elif not step.open(calls):
                    return DEVIATES
                held.clear()
                held.append(line)
                step_reply, step_new_reply = reply, new_reply
                return OPENS
            if reply is None or reply != step_reply:
                return DEVIATES  # a new reply closes the calls still waiting
            if calls is not None:
                for call_id in calls:
                    if call_id in waiting:
                        return DEVIATES  # a call id already waiting: the engine reports it
                    waiting.add(call_id)
            held.append(line)
            return HELD
        if kind == "user":
            if line.isMeta is not True:
                message = line.message
                if message is None:
                    return DEVIATES
                content = message.content
                if type(content) is list:
                    answered = None
                    for block in content:
                        if block.type != "tool_result":
                            continue
                        answers = block.tool_use_id
                        if waiting is None or answers is None or answers not in waiting:
                            return DEVIATES  # stray, duplicate or late: the engine's to report
                        raw = view(block.content)
                        if not (raw[0] == 0x22 and len(raw) > plain_above) and not plain(raw):
                            return DEVIATES  # the marker or a placeholder, maybe
                        waiting.remove(answers)
                        if answered is None:
                            answered = step.answered
                        answered.append(answers)
                    if answered is not None:
                        if waiting:
                            held.append(line)
                            return HELD
                        step.waiting = None
                        let_go(line, thread)
                        return ENDS
                elif content is None:
                    return DEVIATES  # content neither a string nor a list: the general code's
                spoken = _spoken(content)
                if not spoken:
                    return DEVIATES
                if spoken != _NOTICE:
                    if waiting is not None:
                        return DEVIATES  # a prompt (or a command's output) closes the calls waiting
                    chain(line, thread)
                    if line.promptId is not None:
                        prompt_ids[thread] = line.promptId
                    replies[thread] = None
                    return QUIET
            # Passed over: caveats and skill bodies (``isMeta``), a background task's notice.
            if waiting is not None:
                held.append(line)
                return HELD
            chain(line, thread)
            if line.promptId is not None:
                prompt_ids[thread] = line.promptId
            return QUIET
        if kind == "system" and line.subtype == "compact_boundary":
            if waiting is not None:
                return DEVIATES  # compaction leaves the calls waiting unanswered
            chain(line, thread)
            replies[thread] = None
            return QUIET
        if waiting is not None:
            held.append(line)
            return HELD
        chain(line, thread)
        return QUIET

    return take
