"""The codex format's quiet lines: the few fields that prove a rollout line gives the engine nothing to do.

Imported only by ``CodexAdapter.quiet_lines``, once a check has lines past the
head, so that a short run never imports msgspec. Once the history has started
(the quiet loop runs only then), what ``classify`` says of a line comes down
to: a user ``message`` and ``compacted`` are boundaries; an assistant or
developer ``message``, a ``reasoning`` item, ``event_msg``, ``turn_context``
and ``session_meta`` are passed over; a call (``function_call``,
``custom_tool_call``, ``local_shell_call``) with a string ``call_id`` adds to
the calls pending, one without is passed over; an output
(``function_call_output``, ``custom_tool_call_output``) answers its call. A
step here is the calls pending together: a call line with none waiting opens
one, a call line while others wait adds to it (unless its id is waiting: the
engine reports the reuse), and it ends when its last call is answered, once,
by an output whose ``output`` is a JSON string proven neither the marker nor a
placeholder. Anything else deviates: an output of another shape, an output
that answers nothing waiting (orphan, duplicate, late), a boundary while calls
wait, the event of a prompt while calls wait (it opens the history, so ``show``
counts it as the general code reads it), any other record or item type, or a
field of a type not typed here.

The adapter keeps state ``classify`` updates on every record, which the
not-run record it writes reads: the timestamps seen (the latest is the
record's) and the last two ordinals (the record's ordinal). A line taken
updates them exactly as ``classify`` would; a line ``take`` deviates on does
not, since the general code reads it. Held lines read again by the general
code on a deviation update them a second time, which changes nothing it reads:

* the latest timestamp is the first of the latest moments among those seen.
  The held lines' timestamps come again right after their first copies, so
  they bring no moment that was not there, and each first occurrence stays
  where it was: the latest, and which of equal texts it is, are the same.
* ``_ordinal`` ends as the last held line's, as reading each line once leaves
  it. ``_prior`` may not (one held line read again makes it that line's own),
  but ``_prior`` is read only by a not-run record placed before a line, after
  that line's ``classify`` has set it from ``_ordinal``; and no held line,
  read again, makes a step (each gives the engine nothing to do).

A repair's self-check has an adapter of its own, which the lines taken do not
update: it writes no record (a self-check that would close a call stops the
run), so nothing reads that state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
import orjson

from ..quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step
from ._quiet_results import PlainResults

if TYPE_CHECKING:
    from .codex import CodexAdapter

# An integer orjson reads as one: beyond 64 bits it gives a float, which numbers
# nothing. (msgspec bounds only within int64: an ordinal from 2**63 to 2**64 - 1,
# an int to orjson too, is not typed, and goes the general way.)
_Ordinal = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class _EventItem(msgspec.Struct, gc=False):
    # What an ``item_completed`` event completed (a ``UserMessage``: a prompt).
    type: str | None = None


class _Payload(msgspec.Struct, gc=False):
    # Unknown keys are skipped; of a key given twice the last counts, as in
    # orjson's dict. A field of another type (a call id that is a number, say)
    # is not typed, and the line goes the general way.
    type: str | None = None
    role: str | None = None
    call_id: str | None = None
    # Kept as its raw JSON: only a short string is read. Empty: no output at all.
    output: msgspec.Raw = msgspec.Raw()
    item: _EventItem | None = None


class _Line(msgspec.Struct, gc=False):
    # A record type outside these is not typed (the general code passes it over).
    # gc=False: a line's fields (strings, raw bytes) can hold no cycle, so the
    # collector need not track the millions of lines of a file.
    type: Literal["response_item", "event_msg", "turn_context", "session_meta", "compacted"]
    payload: _Payload
    timestamp: str | None = None
    ordinal: _Ordinal | None = None


class CodexQuietLines:
    """``quiet.QuietLines`` for Codex rollout lines."""

    __slots__ = ("adapter", "batch", "decode", "plain_above", "results")

    def __init__(self, adapter: CodexAdapter) -> None:
        from .codex import _STAMP_BATCH

        self.decode = msgspec.json.Decoder(_Line).decode
        self.adapter = adapter
        self.batch = _STAMP_BATCH
        self.results = PlainResults(adapter)
        self.plain_above = self.results.plain_above

    def text_bytes(self, line: _Line) -> int:
        output = line.payload.output
        return len(output) if output and memoryview(output)[0] == 0x22 else 0

    def take(self, line: _Line, step: Step) -> int:
        # Item types are compared, not looked up in a set: each is a new string,
        # and hashing it costs more than the comparisons, commonest first.
        waiting = step.waiting
        if line.type == "response_item":
            payload = line.payload
            item = payload.type
            if item == "message":
                if payload.role == "user":
                    if waiting is not None:
                        return DEVIATES  # a boundary closes the waiting calls: the engine's work
                    said = QUIET
                else:
                    said = QUIET if waiting is None else HELD
            elif item == "function_call" or item == "custom_tool_call" or item == "local_shell_call":
                call_id = payload.call_id
                if call_id is None:  # a call without an id: passed over
                    said = QUIET if waiting is None else HELD
                elif waiting is None:
                    step.waiting = {call_id}
                    step.mark = len(step.answered)
                    said = OPENS
                elif call_id in waiting:
                    return DEVIATES  # the engine reports the reuse
                else:
                    # Pending calls wait for a boundary: a later call line joins them.
                    waiting.add(call_id)
                    said = HELD
            elif item == "function_call_output" or item == "custom_tool_call_output":
                call_id = payload.call_id
                if waiting is None or call_id not in waiting:
                    return DEVIATES  # a stray output: the engine reports it
                # ``plain``, with its common case (a long string) inlined.
                view = memoryview(payload.output)
                if not view or view[0] != 0x22 or len(view) <= self.plain_above and not self.plain(view):
                    return DEVIATES  # not a string, or one that may be the marker or a placeholder
                waiting.remove(call_id)
                step.answered.append(call_id)
                if waiting:
                    said = HELD
                else:
                    step.waiting = None
                    said = ENDS
            elif item == "reasoning":
                said = QUIET if waiting is None else HELD
            else:
                return DEVIATES
        elif line.type == "compacted":
            if waiting is not None:
                return DEVIATES
            said = QUIET
        elif waiting is None:  # event_msg, turn_context, session_meta: passed over
            said = QUIET
        elif line.type == "event_msg" and _prompt_event(line.payload):
            return DEVIATES  # a prompt opens the history: never held (``QuietLines.take``)
        else:
            said = HELD
        # What ``classify`` keeps of every record it reads.
        adapter = self.adapter
        adapter._prior, adapter._ordinal = adapter._ordinal, line.ordinal
        timestamp = line.timestamp
        if timestamp is not None:
            stamps = adapter._stamps
            stamps.append(timestamp)
            if len(stamps) >= self.batch:
                adapter._weigh_stamps()
        return said

    def thread(self) -> None:
        return None  # one thread

    def opens(self, line: _Line, raw: bytes) -> bool:
        """A prompt: a user message Codex did not inject, or the event of one."""
        from .codex import _is_injected

        if line.type == "event_msg":
            return _prompt_event(line.payload)
        payload = line.payload
        if line.type != "response_item" or payload.type != "message" or payload.role != "user":
            return False
        # Whether Codex injected it is in the message's text, which is not typed: read whole (a line a turn).
        return not _is_injected(orjson.loads(raw)["payload"].get("content"))

    def plain(self, view: memoryview) -> bool:
        """The output, a JSON string, is certainly neither the marker nor a placeholder."""
        # A value of another type (a dict of content, say) goes the general way.
        return view[0] == 0x22 and self.results.plain(view)


def _prompt_event(payload: _Payload) -> bool:
    """``codex._is_prompt_event`` of the typed payload."""
    kind = payload.type
    if kind == "user_message":
        return True
    return kind == "item_completed" and payload.item is not None and payload.item.type == "UserMessage"
