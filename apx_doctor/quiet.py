"""The quiet stretches of a file: lines proven, from a few typed fields, to give the engine nothing to do.

From a point where the engine is quiet (the history has started and no call is
pending) most lines of a long session change nothing: boundaries with nothing
pending, and steps whose calls are each answered once, by plain results, before
the next boundary. A format that can prove that from a few fields says which
(``FormatAdapter.quiet_lines``): a msgspec ``Struct`` decoder that types only
those fields and skips the rest without building them, and a ``take`` that
follows one step. Such a line never reaches ``classify`` or the engine (a
repair writes it out as it came in); the call ids of each finished step are
told to the engine in bulk (``PairingEngine.answered``), so a later duplicate
or late result is still told from an orphan.

Anything else is a deviation: the lines held of the step in progress are read
again, and so is the line itself, by the general code (orjson, ``classify``,
``feed``), so every finding and every byte written is the one that code
makes. A deviation is cheap and always safe; only what ``take`` takes must be
certain. A format whose lines are whole histories (dataset rows) takes a row
only as a whole (``QUIET``), and a row it does not take goes through the
doctor's review of a row. Where deviations are the rule (lines the format does not type), the
typed decode of each would be spent in vain: such chunks are read whole for a
while (``WHOLE_SHARE``, ``RESTING``).

Exactness of the decoder: msgspec refuses what orjson refuses (malformed JSON,
NaN, lone surrogates, trailing bytes), with two exceptions inside a value it
skips, both closed here. Invalid UTF-8: each chunk of the file is checked as
UTF-8 before its lines are typed, and a chunk that fails goes the general way.
Nesting deeper than orjson's limit: a line long enough to hold it, outside the
string the format knows the length of, has its brackets counted, and one with
that many goes the general way.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Hashable, Iterable, Iterator
from io import BytesIO
from itertools import chain
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from . import jsonl

if TYPE_CHECKING:
    from .stream import _Pass

# Lines are read in chunks of about this size (completed to a line end), and a
# chunk's UTF-8 check runs in pieces small enough that the text it builds (up
# to four bytes a character) stays below the allocator's mmap threshold: on
# this kind of VM fresh pages cost more than the check itself. A format whose
# adapter keeps large tables that turn over as the file goes on (Claude Code's
# uuid tree) asks for smaller pieces (``QuietLines.utf8_piece``): measured,
# texts of 32-64 KB between those tables' growing allocations fragmented the
# heap, and peak memory grew with the file (87 MB on 1 GB, 47 MB with 4 KB).
CHUNK = 1 << 16
UTF8_PIECE = 1 << 14
# A valid JSON line of n bytes nests at most n / 2 deep: a line this short
# cannot reach orjson's depth limit, which msgspec does not keep to.
SHALLOW = 2 * jsonl.MAX_DEPTH
# Where more than one line in WHOLE_SHARE of a chunk of at least JUDGED lines
# had to be read whole (lines of a kind the format does not type), the next
# RESTING chunks are read whole straight away, without the typed decode each
# such line would cost in vain; then typing is tried again.
WHOLE_SHARE = 4
JUDGED = 8
RESTING = 8


# What ``QuietLines.take`` says of a line. DEVIATES (falsy): the general code
# must read it. The others: it gives the engine nothing to do, and
QUIET = 1  # nothing is held: a boundary with no call pending;
OPENS = 2  # a step starts with it, and it is held;
HELD = 3  # it is within the step, and held;
ENDS = 4  # it answers the step's last call: the step is settled, its lines let go.
DEVIATES = 0


class QuietLines(Protocol):
    """What a format gives the quiet loop: a typed decoder and the step it follows."""

    def decode(self, raw: bytes) -> Any:
        """The line's typed fields; raises ``msgspec.MsgspecError`` for anything it does not type."""

    def text_bytes(self, line: Any) -> int:
        """The length of a JSON string in the line (its largest, say), which holds no nesting."""

    def take(self, line: Any, step: Step) -> int:
        """What the decoded line is (``QUIET`` ... ``DEVIATES``), ``step`` updated.

        Anything but ``DEVIATES`` must be certain: such a line is never fed.
        A line that opens the history (a turn) is never held (``OPENS``,
        ``HELD``): ``show`` counts the turns among the lines let go.
        """

    def opens(self, line: Any, raw: bytes) -> bool:
        """Whether a line ``take`` let go (``QUIET``, ``ENDS``) opens the history, as ``classify`` says.

        Asked only by ``show``, whose summary counts turns; ``raw`` is the line.
        """

    # Optional: the largest piece of a chunk its UTF-8 check may decode at once (see ``UTF8_PIECE``).
    # utf8_piece: int
    # Optional: True where ``take`` deviates on any line its decoder accepts nested deeper than
    # orjson reads (dataset rows bound each raw value they keep): the loop then counts no brackets.
    # proves_depth: bool

    def thread(self) -> Hashable:
        """The thread a stretch from here follows (``Step.thread``): that of the line read whole last.

        None for a format of one thread. ``take`` takes lines of that thread
        only; the engine is asked whether it is quiet, and told the calls its
        stretch answered.
        """


class Step:
    """The step in progress within a quiet stretch, and the ids its stretch answered.

    ``waiting`` is None between steps; else the ids of the step's calls still
    unanswered. ``answered`` holds the ids answered since the engine was last
    told, in the order their results came; those from ``mark`` on belong to
    the step in progress. ``thread`` is the engine's thread they are all of.
    """

    __slots__ = ("answered", "mark", "thread", "waiting")

    def __init__(self, thread: Hashable = None) -> None:
        self.waiting: set[str] | None = None
        self.answered: list[str] = []
        self.mark = 0
        self.thread = thread

    def open(self, call_ids: list[str]) -> int:
        """A step starts with these calls (``OPENS``); ``DEVIATES`` when an id repeats (the engine reports it)."""
        waiting = set(call_ids)
        if len(waiting) != len(call_ids):
            return DEVIATES
        self.waiting = waiting
        self.mark = len(self.answered)
        return OPENS

    def settled(self) -> list[str]:
        """The ids of the finished steps, taken out; the step in progress is forgotten."""
        answered = self.answered
        done = answered if self.waiting is None else answered[: self.mark]
        self.answered, self.waiting, self.mark = [], None, 0
        return done


def loop(run_: _Pass, handle: BinaryIO, quiet_lines: Callable[[], QuietLines]) -> None:
    """The rest of a file ``handle`` (at a line start), checked or repaired, with quiet stretches typed.

    It stands for ``stream._check_loop``, or for ``stream._repair_loop`` when
    ``run_`` has a sink: a line taken then goes out as it came in, and what the
    engine is not fed the self-check is not fed either (the output holds the
    same lines, so both engines are told the same answered ids).
    ``quiet_lines`` (the adapter's) is asked only once a line is left to read,
    so that a file no longer than the lines detection read imports no msgspec.
    """
    chunks = _chunks(handle)
    first = next(chunks, None)
    if first is not None:
        _Loop(run_, quiet_lines()).run(chain((first,), chunks))


class _Loop:
    """The loop of a check (no sink) or a repair (a sink: lines taken are written, the self-check told)."""

    def __init__(self, run_: _Pass, lines: QuietLines) -> None:
        import msgspec  # here, not at import: a short check never pays for it

        self.run_ = run_
        self.doctor = run_.doctor
        self.engine = run_.doctor.engine
        self.checker = None if run_.checker is None else run_.checker.engine
        self.keep = None if run_.sink is None else run_.sink.keep
        self.lines = lines
        # msgspec skips a value nested deeper than the recursion limit with a RecursionError.
        self.refused = (msgspec.MsgspecError, RecursionError)
        self.step = Step()
        # The current step's lines, from line ``held_from`` on: written when
        # the step ends, read again on a deviation.
        self.held: list[bytes] = []
        self.held_from = 0
        # The line read whole last, and the last line a stretch since wrote.
        self.stretch_from = run_.number
        self.last: bytes | None = None
        # Lines read whole so far, and chunks still to be read whole before typing is tried again.
        self.read_whole = 0
        self.resting = 0
        self.utf8_piece = min(UTF8_PIECE, getattr(lines, "utf8_piece", UTF8_PIECE))
        # Optional: the format's ``take`` bounds the nesting of every value its decoder skips.
        self.proves_depth = getattr(lines, "proves_depth", False)
        # A line that is a whole history (dataset rows): nothing is pending between lines,
        # and a line read whole goes through the doctor's review of a row.
        self.rows = run_.doctor.adapter.one_history_a_line

    def run(self, chunks: Iterable[bytes]) -> None:
        number = self.run_.number
        for chunk in chunks:
            number = self.chunk(chunk, number)
        self.deviate(number + 1)  # the end: the engine must see a step still open
        # (Should a line stop the run, ``general`` has set its number.)
        self.run_.number = number

    def chunk(self, chunk: bytes, number: int) -> int:
        """Read one chunk of whole lines; returns the number of its last line."""
        # BytesIO shares the chunk and finds line ends with memchr, as a file
        # does (``bytes.split`` looks at each byte in turn, which costs more
        # than the typed decode on long lines).
        lines = BytesIO(chunk)
        if self.resting:
            self.resting -= 1
        elif chunk.isascii() or _utf8(chunk, self.utf8_piece):
            start, whole = number, self.read_whole
            number = self.typed(lines, number)
            if number - start >= JUDGED and (self.read_whole - whole) * WHOLE_SHARE > number - start:
                self.resting = RESTING
            return number
        # Invalid UTF-8 somewhere, or a chunk resting: every line is read whole.
        self.deviate(number + 1)
        return self.whole(lines, number)

    def quiet(self) -> bool:
        """Whether lines may be taken: no call pending, in the self-check's engine too.

        A repair also waits for the first line ending to be known: the first
        line kept gives it (``_Pass._track``).
        """
        # Read whole last, the line says which thread the stretch follows (no step is in progress then,
        # or its lines and this one are of that thread). A repair follows the first thread only: its
        # self-check's adapter reads no line taken, and where a format tells threads apart by earlier
        # lines (a Claude Code sub-agent's, by its parents) it could tell them otherwise.
        thread = self.step.thread = self.lines.thread() if self.checker is None else None
        if self.rows:
            return self.checker is None or self.run_.default_terminator is not None
        if self.checker is None:
            return self.engine.quiet(thread)
        return self.engine.quiet(thread) and self.checker.quiet(thread) and self.run_.default_terminator is not None

    def typed(self, lines: Iterable[bytes], number: int) -> int:
        """The hot loop: a line the format takes costs its typed decode and ``take``."""
        decode, take, refused = self.lines.decode, self.lines.take, self.refused
        step, held, keep, last = self.step, self.held, self.keep, self.last
        counted = not self.proves_depth
        on = self.quiet()
        for raw in lines:
            number += 1
            if on:
                try:
                    line = decode(raw)
                except refused:
                    line = None
                if line is None or len(raw) > SHALLOW and counted and not self.shallow(line, raw):
                    said = DEVIATES
                else:
                    said = take(line, step)
                if said == QUIET:
                    if keep is not None:
                        keep(raw)
                        last = raw
                    continue
                if said == ENDS:
                    if keep is not None:
                        for kept in held:
                            keep(kept)
                        keep(raw)
                        last = raw
                    held.clear()
                    continue
                if said:
                    if said == OPENS:
                        self.held_from = number
                    held.append(raw)
                    continue
                self.last = last
                self.deviate(number)
            self.general(raw, number)
            last = None
            on = self.quiet()
        self.last = last
        return number

    def deviate(self, number: int) -> None:
        """Before line ``number`` is read whole: tell both engines what was taken, then read the held lines again."""
        done = self.step.settled()
        if done:
            self.engine.answered(done, self.step.thread)
            if self.checker is not None:
                self.checker.answered(done, self.step.thread)
        if self.keep is not None:
            # Every line since the last read whole was taken: written, or held.
            run_ = self.run_
            run_.out_number += number - 1 - self.stretch_from - len(self.held)
            if self.last is not None:
                run_._track(self.last)
                self.last = None
        if self.held:
            held = self.held.copy()
            self.held.clear()  # in place: the hot loop holds this list
            for at, raw in enumerate(held, self.held_from):
                self.general(raw, at)

    def shallow(self, line: Any, raw: bytes) -> bool:
        """Whether a long line nests no deeper than orjson reads (msgspec skips deeper values).

        Each level takes two bracket bytes outside strings, so a string the
        format knows the length of (a long result's text) is left out of the
        count; only the rest is looked at, and only when it could be deep.
        """
        rest = len(raw) - self.lines.text_bytes(line)
        return rest <= SHALLOW or raw.count(b"[") + raw.count(b"{") <= jsonl.MAX_DEPTH

    def general(self, raw: bytes, number: int) -> None:
        """Line ``number`` read whole, by ``stream``'s own loop for one line (``_Pass.line`` for a repair)."""
        from .stream import _check_loop  # stream imports this module

        run_ = self.run_
        self.stretch_from = number
        self.read_whole += 1
        run_.number = number - 1  # the loops count it
        if self.keep is not None or self.rows:
            run_.line(raw, jsonl.parse(raw))
        else:
            _check_loop(run_, (raw,))

    def whole(self, lines: Iterable[bytes], number: int) -> int:
        """Every line after line ``number`` read whole, by ``stream``'s own loop; returns the last line's number."""
        from .stream import _check_loop, _generic_loop, _repair_loop  # stream imports this module

        run_ = self.run_
        run_.number = number
        if self.rows:
            _generic_loop(run_, lines)
        else:
            (_check_loop if self.keep is None else _repair_loop)(run_, lines)
        self.stretch_from = run_.number
        return run_.number


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    """The rest of ``handle`` in chunks that each end at a line end (the last: at the end of the file)."""
    read, readline = handle.read, handle.readline
    while True:
        chunk = read(CHUNK)
        if not chunk:
            return
        if chunk[-1] != 0x0A:
            chunk += readline()
        yield chunk


def _utf8(data: bytes, piece: int | None = None) -> bool:
    """Whether ``data`` is valid UTF-8, checked ``piece`` bytes at a time (default: ``UTF8_PIECE``)."""
    piece = UTF8_PIECE if piece is None else piece
    decode, view, start, end = codecs.utf_8_decode, memoryview(data), 0, len(data)
    try:
        while end - start > piece:
            # final=False: a character cut at the piece's end is left for the next piece.
            start += decode(view[start : start + piece], "strict", False)[1]
        decode(view[start:], "strict", True)
    except UnicodeDecodeError:
        return False
    return True
