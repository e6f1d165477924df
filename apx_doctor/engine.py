"""The pairing engine: every tool call gets exactly one result.

The engine knows no format. An adapter tells it, entry by entry, which calls an
entry makes, which results it carries, whether it is a turn boundary (a
non-tool entry) and whether it is a real user entry that starts the checked
history. The engine answers with what it found and which pending calls must be
closed right before that entry.

Within one entry the engine applies, in order: the results it carries, then the
boundary, then the calls it makes. That order lets one entry both deliver
results and start a new turn (an Anthropic user message holding tool results
and text), or close a turn and open calls (an assistant message).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from .model import Finding


# Not frozen: these are built for every line, and a frozen dataclass's __init__
# (object.__setattr__ per field) costs about three times as much. Treat them
# as immutable all the same; unsafe_hash keeps them hashable.
@dataclass(slots=True, unsafe_hash=True)
class ToolCall:
    id: str
    name: str | None = None
    arguments: Any = None
    # False where no honest not-run record exists in the format (the call is
    # still reported, but never answered with a fake result).
    fixable: bool = True
    # Whatever the adapter needs later to write the not-run record.
    context: Any = None


@dataclass(slots=True, unsafe_hash=True)
class ToolResult:
    call_id: str
    # This result is a not-run record: the call is closed as interrupted.
    not_run: bool = False
    # Another runtime's placeholder: answers structurally, proves nothing (APX006).
    placeholder: bool = False


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    """What one line (or one message) is, in the engine's terms."""

    opens_history: bool = False
    boundary: bool = False
    results: tuple[ToolResult, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    thread: Hashable = None


# An entry that is none of the above: metadata, events, progress lines.
PASS_OVER = Entry()


@dataclass(slots=True, unsafe_hash=True)
class PendingCall:
    line: int
    call: ToolCall
    thread: Hashable = None


@dataclass(slots=True)
class Step:
    """What the engine decided at one entry."""

    # Pending calls to close with not-run records right before this entry
    # (or, from ``finish``, at the end), in call order.
    closed: list[PendingCall] = field(default_factory=list)
    # Results on this entry that answer nothing (orphan, duplicate, late).
    stray: list[ToolResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


_ANSWERED = 1
_INTERRUPTED = 2

# How many settled calls a thread remembers at least (and at most twice as
# many): a stray result for one of them is a duplicate (APX003) or late
# (APX004); for a call settled longer ago it is an orphan (APX002), as it is
# to an API, which pairs a result only with the turn before it. Bounded, so
# memory stays flat however long the history grows.
SETTLED_MEMORY = 10_000


class _Thread:
    __slots__ = ("key", "pending", "settled", "settled_before", "started")

    def __init__(self, key: Hashable, started: bool = False) -> None:
        self.key = key
        self.started = started
        # call id -> (line, call): a PendingCall is built only for a call that
        # is closed unanswered (a tuple costs a sixth of a dataclass, per call).
        self.pending: dict[str, tuple[int, ToolCall]] = {}
        # Recently closed call ids, and how: tells a duplicate from a late
        # result from an orphan. Two generations: when ``settled`` is full it
        # becomes ``settled_before`` and the oldest generation is forgotten.
        self.settled: dict[str, int] = {}
        self.settled_before: dict[str, int] = {}

    def settle(self, call_id: str, how: int) -> None:
        settled = self.settled
        if len(settled) >= SETTLED_MEMORY and call_id not in settled:
            self.settled_before = settled
            settled = self.settled = {}
        settled[call_id] = how

    def how_settled(self, call_id: str) -> int | None:
        how = self.settled.get(call_id)
        return self.settled_before.get(call_id) if how is None else how


class PairingEngine:
    def __init__(self, *, close_at_end: bool = True, from_start: bool = False) -> None:
        self._threads: dict[Hashable, _Thread] = {}
        self._close_at_end = close_at_end
        # Every thread's checked history starts at its first entry, not at its
        # first real user entry: for a history that holds no such entry.
        self._from_start = from_start
        self._started_any = from_start
        self._calls_before_start = False

    @property
    def starts_over(self) -> bool:
        """True when the history held no real user entry but made calls: it must be
        checked again from its first entry (``from_start``), so that a whole
        conversation is never passed over as a preamble."""
        return self._calls_before_start and not self._started_any

    def feed(self, line: int, entry: Entry) -> Step | None:
        """Apply one entry. Returns None when nothing needs attention."""
        thread = self._threads.get(entry.thread)
        if thread is None:
            thread = self._threads[entry.thread] = _Thread(entry.thread, self._from_start)
        if not thread.started:
            if not entry.opens_history:
                if entry.calls:
                    self._calls_before_start = True
                return None
            thread.started = self._started_any = True
        step: Step | None = None
        pending = thread.pending
        # Results and calls are taken here, not in helpers: a call a line less
        # for most lines of a history.
        for result in entry.results:
            answered = pending.pop(result.call_id, None)
            if answered is None:
                step = step or Step()
                step.stray.append(result)
                step.findings.append(_stray(line, result, thread.how_settled(result.call_id)))
                continue
            settled = thread.settled
            if len(settled) >= SETTLED_MEMORY:
                thread.settle(result.call_id, _INTERRUPTED if result.not_run else _ANSWERED)
            else:  # ``_Thread.settle``, inlined
                settled[result.call_id] = _INTERRUPTED if result.not_run else _ANSWERED
            if result.placeholder:
                step = step or Step()
                step.findings.append(_placeholder(line, answered[1]))
        if entry.boundary and pending:
            step = step or Step()
            self._close(thread, step)
            pending = thread.pending
        for call in entry.calls:
            if call.id in pending:
                step = step or Step()
                step.findings.append(_reused(line, call, pending[call.id][0]))
                continue
            pending[call.id] = (line, call)
        return step

    def quiet(self, thread: Hashable = None) -> bool:
        """True when ``thread``'s checked history has started and none of its calls is pending.

        From such a point an adapter that knows its fields may prove that a
        stretch of entries would give no Step (the chat adapter's
        ``clean_run``), and the library skips feeding them.
        """
        state = self._threads.get(thread)
        return state is not None and state.started and not state.pending

    def answered(self, call_ids: list[str], thread: Hashable = None) -> None:
        """Record, in order, calls made and answered by entries that were not fed.

        The entries were proven to give no Step from a ``quiet`` thread: each
        call was answered once by a result that is neither a not-run record nor
        a placeholder, before the next boundary. Their only trace in the engine
        is the settled memory, which tells a later duplicate from an orphan;
        it ends exactly as feeding the entries would have left it.
        """
        state = self._threads[thread]
        done, total = 0, len(call_ids)
        while done < total:
            settled = state.settled
            room = SETTLED_MEMORY - len(settled)
            if room > 0:
                # Fewer new ids than room: no generation can turn over, so a
                # batch stores them exactly as ``settle`` one by one would.
                batch = call_ids[done : done + room]
                # Pairs, not dict.fromkeys: one insertion an id, not two.
                settled.update(zip(batch, repeat(_ANSWERED)))
                done += len(batch)
            else:
                state.settle(call_ids[done], _ANSWERED)
                done += 1

    def finish(self) -> Step | None:
        """The history ends: close what is still pending."""
        if not self._close_at_end:
            return None
        step = Step()
        for thread in self._threads.values():
            if thread.pending:
                self._close(thread, step)
        if not step.closed:
            return None
        step.closed.sort(key=lambda p: p.line)
        return step

    def _close(self, thread: _Thread, step: Step) -> None:
        for call_id, (line, call) in thread.pending.items():
            thread.settle(call_id, _INTERRUPTED)
            pending = PendingCall(line, call, thread.key)
            step.closed.append(pending)
            step.findings.append(_interrupted(pending))
        thread.pending = {}


def _interrupted(pending: PendingCall) -> Finding:
    call = pending.call
    what = f"tool call {call.id!r}" + (f" ({call.name})" if call.name else "")
    if call.fixable:
        message = f"{what} has no result: the turn was interrupted"
    else:
        message = (
            f"{what} has no result: the turn was interrupted; this call type has no honest "
            "not-run record, so it is reported but not repaired"
        )
    return Finding(
        "APX001",
        pending.line,
        message,
        call_id=call.id,
        tool=call.name,
        fixable=call.fixable,
    )


def _stray(line: int, result: ToolResult, settled: int | None) -> Finding:
    if settled is None:
        return Finding("APX002", line, f"tool result for {result.call_id!r} answers no call", call_id=result.call_id)
    if settled == _ANSWERED:
        return Finding(
            "APX003", line, f"second tool result for {result.call_id!r}, which was already answered", call_id=result.call_id
        )
    return Finding(
        "APX004",
        line,
        f"tool result for {result.call_id!r} arrives after the call was closed as interrupted",
        call_id=result.call_id,
    )


def _reused(line: int, call: ToolCall, first_line: int) -> Finding:
    return Finding(
        "APX005",
        line,
        f"call id {call.id!r} is already waiting for a result (called on line {first_line})",
        call_id=call.id,
        tool=call.name,
    )


def _placeholder(line: int, call: ToolCall) -> Finding:
    return Finding(
        "APX006",
        line,
        f"the result for {call.id!r} is a placeholder: it does not show that the tool ran",
        call_id=call.id,
        tool=call.name,
    )
