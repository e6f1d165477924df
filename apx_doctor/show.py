"""``apx-doctor show``: a transcript drawn as a timeline people can read.

Each line is shown as what its format adapter says it is (a user turn, an
assistant reply that calls tools, results, metadata), with long content folded.
Where a turn was cut off, the timeline shows the interruption and the not-run
record a repair inserts there, with the recovery advice. Nothing is written.

A file of lines is read twice, streaming, so memory stays flat however long the
session (issue 15): pass 1 is ``check``'s own pass (its quiet stretches too,
typed and never classified) with a doctor that keeps only small facts (where
each interruption is, the records a repair inserts, the findings, counts);
pass 2 reads the lines again, parsing only the rows the view asks for, and
draws them a batch at a time. Input that cannot be read twice
(standard input, a pipe) is spooled to a temporary file first. JSON documents
are small and read whole, as before.

By default a long session is drawn as what a person looks for in it: each
interrupted call with a few entries either side, the rows with other findings,
and a one-line summary of the rest; ``--all`` draws every entry, ``--around``
one window. On a terminal, long output goes through a pager, as ``git log``.

All transcript text reaches Rich as ``Text`` made ``printable``: never markup.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from itertools import islice, pairwise
from typing import IO, Any

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console
from rich.style import Style
from rich.text import Span, Text

from . import documents, files, jsonl, quiet, stream
from .advice import SAFE_NEXT, tool_kind
from .doctor import HistoryDoctor, RepairOptions, Verdict, from_start
from .engine import Entry, PendingCall
from .engine import Step as EngineStep
from .errors import InputError
from .formats.base import FormatAdapter
from .model import Finding
from .reporters import shown_name
from .reporters.text import console as text_console
from .safe import printable
from .stream import DETECT_LINES, SQLITE_MAGIC, choose_adapter

# A session this short is drawn whole by default: its windows would cover most of it anyway.
SHORT_SESSION = 50
# Rows a batch holds at most: ``--all`` on a long file is printed a batch at a time, never built whole.
TABLE_ROWS = 200
# Interruption lines the summary names before it says "and N more".
NAMED_LINES = 5


@dataclass(frozen=True, slots=True)
class ShowOptions:
    input_format: str = "auto"
    marker: str = "not run: the turn was interrupted"
    around: int | None = None
    context: int = 5
    width: int = 200
    read_only_tools: tuple[str, ...] = ()
    side_effect_tools: tuple[str, ...] = ()
    # Draw every entry (else: the interruptions and findings with their context, for a long session).
    all: bool = False
    # Page long output on a terminal (never when the output is not one).
    pager: bool = True


@dataclass(slots=True)
class _Row:
    number: int
    raw: bytes
    value: Any
    entry: Entry | None = None
    # Not-run records a repair writes right before this line: (record, pending call).
    inserted: list[tuple[Any, PendingCall]] = None  # type: ignore[assignment]
    findings: list[Finding] = None  # type: ignore[assignment]


@dataclass(slots=True)
class _Plan:
    """What pass 1 learnt of a file: small facts, never its lines."""

    adapter: type[FormatAdapter]
    total: int = 0
    turns: int = 0
    calls: int = 0
    results: int = 0
    # Line -> the not-run records a repair inserts right before it, with their pending calls.
    inserted: dict[int, list[tuple[Any, PendingCall]]] = field(default_factory=dict)
    # The records inserted at the end of the file.
    tail: list[tuple[Any, PendingCall]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    by_line: dict[int, list[Finding]] = field(default_factory=dict)
    # Lines that are no JSON value (blank, invalid): drawn in the default view too.
    unparsed: list[int] = field(default_factory=list)
    # False where the adapter's entries hold no calls to count (a dataset: a history a line).
    counted: bool = True
    # Entries (by position) drawn with context in the default view: each interrupted call and where
    # its record goes; and entries drawn alone: other findings, lines that are no JSON.
    around: list[int] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)


def render_timeline(path: str, options: ShowOptions, out: IO[str], color: bool | None) -> None:
    with _replayable(path) as reopen:
        with reopen() as lines:
            head = list(islice(lines, DETECT_LINES))
        if head and head[0].startswith(SQLITE_MAGIC):
            raise InputError(
                f"{path}: a SQLite session store (OpenCode's): show draws files of lines or JSON documents, not a "
                "database; check and fix read it (or show an export: opencode export ID > session.json)"
            )
        parsed = [jsonl.parse(r.removeprefix(jsonl.BOM) if i == 0 else r) for i, r in enumerate(head)]
        try:
            whole = documents.applies(options.input_format, head, parsed)
            adapter_type = None if whole else choose_adapter(options.input_format, head, parsed)
            if adapter_type is None or documents.is_whole_file(adapter_type):
                with reopen() as lines:
                    rows, plan = _document(list(lines), options, adapter_type)
                _draw(path, plan, options, out, color, lambda spans: _listed_rows(rows, spans))
                return
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        plan = _scan(reopen, adapter_type, options)
        _draw(path, plan, options, out, color, lambda spans: _streamed_rows(reopen, plan, options, spans))


@contextlib.contextmanager
def _replayable(path: str) -> Iterator[Callable[[], AbstractContextManager[Iterable[bytes]]]]:
    """Something that opens ``path``'s lines afresh each time it is called.

    A regular file is simply opened again. Standard input or a pipe cannot be
    read twice: its lines are spooled to a temporary file first (on disk, so
    memory stays flat), with the same limits ``open_lines`` enforces.
    """
    if _regular(path):
        yield lambda: files.open_lines(path)
        return
    with tempfile.TemporaryFile(prefix="apx-doctor-show-") as spool:
        with files.open_lines(path) as lines:
            spool.writelines(lines)

        @contextlib.contextmanager
        def rewound() -> Iterator[Iterable[bytes]]:
            spool.seek(0)
            yield spool

        yield rewound


def _regular(path: str) -> bool:
    if path == files.STDIN:
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # open_lines reports it, naming the file


# What an adapter raises when a line holds a value of a type it did not expect (as in ``stream``).
_ADAPTER_TROUBLE = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def _scan(
    reopen: Callable[[], AbstractContextManager[Iterable[bytes]]], adapter_type: type[FormatAdapter], options: ShowOptions
) -> _Plan:
    """Pass 1: the doctor over every line, as ``check`` runs it; what is kept is small."""
    plan, doctor = _pass(reopen, adapter_type, options, RepairOptions())
    if doctor.engine.starts_over:
        # No real user entry, but calls: the whole file is the history.
        plan, doctor = _pass(reopen, adapter_type, options, from_start(RepairOptions()))
    plan.findings = doctor.findings
    for finding in doctor.findings:
        plan.by_line.setdefault(finding.line or 0, []).append(finding)
        if finding.code != "APX001" and finding.line:
            plan.marks.append(finding.line)
    return plan


_Reopen = Callable[[], AbstractContextManager[Iterable[bytes]]]


def _pass(
    reopen: _Reopen, adapter_type: type[FormatAdapter], options: ShowOptions, repair: RepairOptions
) -> tuple[_Plan, HistoryDoctor]:
    """The lines read as ``check`` reads them (its quiet stretches too), by a doctor that notes what ``show`` needs."""
    plan = _Plan(adapter_type, counted=not adapter_type.one_history_a_line)
    doctor = _Scanning(adapter_type(marker=options.marker), repair, plan)
    run_ = stream._Pass(adapter_type, stream.StreamConfig(marker=options.marker, repair=repair), None, doctor)
    try:
        with reopen() as lines:
            head = list(islice(lines, DETECT_LINES))
            parsed = [_parse(i, raw) for i, raw in enumerate(head, 1)]
            result = stream._drive(run_, head, parsed, lines, doctor.quiet_lines)
    except _ADAPTER_TROUBLE as exc:
        # As check says it: the line named, never a traceback (nor the exception's text, which may quote the file).
        raise InputError(
            f"line {run_.number}: the {adapter_type.name} reader cannot handle this line ({type(exc).__name__}, "
            "a bug worth reporting)"
        ) from None
    plan.total = result.lines
    plan.tail = plan.inserted.get(plan.total + 1, [])
    # Lines that are no JSON value: the pass reports them apart from the doctor's findings.
    plan.unparsed = sorted({f.line for f in result.findings if f.code in _UNPARSED and f.line})
    plan.marks.extend(plan.unparsed)
    return plan, doctor


# The codes of a line that is no JSON value: invalid, cut off, blank.
_UNPARSED = frozenset({"APX101", "APX102", "APX105"})


class _Scanning(HistoryDoctor):
    """``check``'s doctor, which also notes for ``show`` where each record goes and counts the entries."""

    def __init__(self, adapter: FormatAdapter, options: RepairOptions, plan: _Plan) -> None:
        super().__init__(adapter, options)
        self.plan = plan
        feed, answered = self.engine.feed, self.engine.answered

        # Closures on the engine (as ``_AmendingEngine``'s): every entry fed, and
        # every call a quiet stretch made and answered (one call, one result each).
        def counted(line: int, entry: Entry) -> EngineStep | None:
            plan.turns += entry.opens_history
            plan.calls += len(entry.calls)
            plan.results += len(entry.results)
            return feed(line, entry)

        def told(call_ids: list[str], thread: Hashable = None) -> None:
            plan.calls += len(call_ids)
            plan.results += len(call_ids)
            answered(call_ids, thread)

        self.engine.feed = counted  # type: ignore[method-assign]
        self.engine.answered = told  # type: ignore[method-assign]

    def apply(self, number: int, step: EngineStep, obj: Any) -> Verdict | None:
        verdict = super().apply(number, step, obj)
        if verdict is not None and verdict.insert:
            _note(self.plan, number, list(verdict.insert))
        return verdict

    def quiet_lines(self) -> quiet.QuietLines:
        """The adapter's quiet lines, with the turns among the lines they let go counted."""
        return _CountedTurns(self.adapter.quiet_lines(), self.plan)


class _CountedTurns:
    """A format's ``QuietLines`` that counts the turns among the lines let go (the rest are fed, and counted so)."""

    def __init__(self, lines: quiet.QuietLines, plan: _Plan) -> None:
        self._lines, self._plan, self._raw = lines, plan, b""
        self.text_bytes = lines.text_bytes
        self.utf8_piece = getattr(lines, "utf8_piece", quiet.UTF8_PIECE)

    def decode(self, raw: bytes) -> Any:
        self._raw = raw  # for ``opens``, which a format may answer from the whole line
        return self._lines.decode(raw)

    def take(self, line: Any, step: quiet.Step) -> int:
        said = self._lines.take(line, step)
        if (said == quiet.QUIET or said == quiet.ENDS) and self._lines.opens(line, self._raw):
            self._plan.turns += 1
        return said

    def opens(self, line: Any, raw: bytes) -> bool:
        return self._lines.opens(line, raw)

    def thread(self) -> Hashable:
        return self._lines.thread()


def _parse(number: int, raw: bytes) -> Any:
    return jsonl.parse(raw.removeprefix(jsonl.BOM) if number == 1 else raw)


def _note(plan: _Plan, number: int, inserted: list[tuple[Any, PendingCall]]) -> None:
    """Records inserted before entry ``number``: it and each call they close are drawn with context."""
    plan.inserted[number] = inserted
    plan.around.append(number)
    plan.around.extend(pending.line for _record, pending in inserted)


def _document(raw_lines: list[bytes], options: ShowOptions, adapter_type: type[FormatAdapter] | None) -> tuple[list[_Row], _Plan]:
    """One JSON document (or a log read whole): a row per message, at the line where it starts."""
    fmt, items, tail, findings = documents.timeline(raw_lines, options.input_format, options.marker, adapter_type)
    rows = [_Row(line, b"", message, entry, list(inserted), own) for line, _i, message, entry, inserted, own in items]
    plan = _Plan(fmt, total=len(rows), tail=list(tail), findings=findings)
    # Positions, not line numbers: a message may span many lines.
    position: dict[int, int] = {}
    for i, row in enumerate(rows, 1):
        position.setdefault(row.number, i)
        if row.entry is not None:
            plan.turns += row.entry.opens_history
            plan.calls += len(row.entry.calls)
            plan.results += len(row.entry.results)
        if row.inserted:
            plan.around.append(i)
        if any(f.code != "APX001" for f in row.findings):
            plan.marks.append(i)
    for _record, pending in [pair for row in rows for pair in row.inserted] + plan.tail:
        if pending.line in position:
            plan.around.append(position[pending.line])
    if plan.tail:
        plan.around.append(len(rows) + 1)
    return rows, plan


def _spans(plan: _Plan, options: ShowOptions) -> list[tuple[int, int]]:
    """The stretches of entries to draw (first, last), in order, apart."""
    total, context = plan.total, options.context
    if options.around is not None:
        lo, hi = max(options.around - context, 1), min(options.around + context, total)
        return [(lo, hi)] if lo <= hi else []
    if options.all or total <= SHORT_SESSION:
        return [(1, total)] if total else []
    wanted = sorted([(n - context, n + context) for n in plan.around] + [(n, n) for n in plan.marks])
    spans: list[tuple[int, int]] = []
    for lo, hi in wanted:
        lo, hi = max(lo, 1), min(hi, total)
        if lo > hi:
            continue
        # A gap of one entry takes a line to say, as the entry would: draw it.
        if spans and lo <= spans[-1][1] + 2:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hi))
        else:
            spans.append((lo, hi))
    return spans


def _streamed_rows(
    reopen: _Reopen, plan: _Plan, options: ShowOptions, spans: list[tuple[int, int]]
) -> Generator[tuple[int, _Row], None, None]:
    """Pass 2: the rows inside ``spans``, parsed and classified as they are read; the rest only counted."""
    viewer = None if plan.adapter.one_history_a_line else plan.adapter(marker=options.marker)
    # An adapter that keeps state between lines must see every line, in order, to say what each is.
    every = viewer is not None and not plan.adapter.pure_classify
    if not spans:
        return
    with reopen() as lines:
        if not every:
            yield from _span_rows(iter(lines), viewer, plan, spans)
            return
        assert viewer is not None  # every: an adapter with state
        classify, k = viewer.classify, 0
        for number, raw in enumerate(islice(lines, spans[-1][1]), 1):
            # Every line is classified, in order; only those in a span are drawn.
            value = _parse(number, raw)
            entry = None if type(value) is jsonl.Unparsed else classify(value)
            while spans[k][1] < number:
                k += 1
            if spans[k][0] <= number:
                yield number, _Row(number, raw, value, entry, plan.inserted.get(number, []), plan.by_line.get(number, []))


def _span_rows(
    lines: Iterable[bytes], viewer: FormatAdapter | None, plan: _Plan, spans: list[tuple[int, int]]
) -> Iterator[tuple[int, _Row]]:
    """The rows of ``spans`` where a line says what it is alone: the lines between are passed over unread."""
    number = 0
    for lo, hi in spans:
        # Consumed by islice, in C: most of a long file lies between the spans.
        next(islice(lines, lo - number - 1, lo - number - 1), None)
        for number, raw in enumerate(islice(lines, hi - lo + 1), lo):
            value = _parse(number, raw)
            entry = None if viewer is None or type(value) is jsonl.Unparsed else viewer.classify(value)
            yield number, _Row(number, raw, value, entry, plan.inserted.get(number, []), plan.by_line.get(number, []))


def _listed_rows(rows: list[_Row], spans: list[tuple[int, int]]) -> Generator[tuple[int, _Row], None, None]:
    for lo, hi in spans:
        for i in range(lo, hi + 1):
            yield i, rows[i - 1]


def _draw(
    path: str,
    plan: _Plan,
    options: ShowOptions,
    out: IO[str],
    color: bool | None,
    rows_in: Callable[[list[tuple[int, int]]], Generator[tuple[int, _Row], None, None]],
) -> None:
    """Print the header, the summary, and the rows of each span, a batch at a time, with the gaps said."""
    spans = _spans(plan, options)
    with _output(out, color, options, _long(plan, spans, out)) as console:
        console.print(_header(path, plan.adapter, plan.findings))
        console.print(_summary(plan, options, spans))
        sheet, shown = _Sheet(console, plan.total), 0
        with contextlib.closing(rows_in(spans)) as rows:
            for ordinal, row in rows:
                if ordinal != shown + 1:
                    sheet.gap(ordinal - shown - 1)
                _add_row(sheet, row, plan.adapter, options)
                shown = ordinal
        if spans and spans[-1][1] >= plan.total:
            for record, pending in plan.tail:
                sheet.row(*_interruption(record, pending, options))
        if spans and shown < plan.total:
            sheet.gap(plan.total - shown)
        sheet.flush()


class _Styled:
    """A row's line of text with its styled runs, as Rich's ``Text`` holds them.

    Not a ``Text``: that strips control codes from every piece it is given,
    about a quarter of a row's drawing, and a row's text is ``printable``
    already (no control codes but tabs, which ``Text`` keeps too).
    """

    __slots__ = ("plain", "spans", "style")

    def __init__(self, plain: str = "", style: str = "") -> None:
        self.plain = plain
        # The text's own style, and (start, end, style) runs on top of it.
        self.style = style
        self.spans: list[tuple[int, int, str]] = []

    def append(self, text: str, style: str = "") -> None:
        if style and text:
            self.spans.append((len(self.plain), len(self.plain) + len(text), style))
        self.plain += text

    def expand_tabs(self, size: int) -> None:
        """Tabs to spaces, to the next stop of ``size`` cells, as Rich's ``Text.expand_tabs`` (which does it)."""
        text = Text(self.plain, style=self.style, spans=[Span(*span) for span in self.spans])
        text.expand_tabs(size)
        self.plain = text.plain
        self.spans = [(span.start, span.end, str(span.style)) for span in text.spans]


class _Sheet:
    """Rows laid out as three columns (line, mark, entry), folded here and written a batch at a time.

    Not a Rich ``Table``, nor Rich's text layout: those measure and wrap every
    cell, about 4 ms a row, which made the default view of a long session cost
    several times a check. Here a row costs a fold of a few short, already
    ``printable`` texts, each run written in its style as Rich would write it
    (the console's colour system, none when colour is off); the look is the
    table's: right-aligned numbers, a hanging indent.
    """

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.number_width = max(len(str(total)), 4) + 1
        self.indent = " " * (self.number_width + 7)
        self.width = max(console.width - len(self.indent), 20)
        self.colors = None if console.no_color else console._color_system
        self.batch: list[str] = []
        self.rows = 0
        self.headed = False

    def row(self, number: str, symbol: _Styled, parts: list[_Styled | None]) -> None:
        if not self.headed:
            self._head()
        write, first = self.batch.append, True
        lead = self._run(number.rjust(self.number_width), "dim") + "   " + self._text(symbol, 0, len(symbol.plain))
        lead += " " * (4 - _cells(symbol.plain))
        for part in parts:
            # None: a rule across the entry column (where an interruption begins).
            if part is None:
                pieces = [(_Styled("─" * self.width, style="red"), 0, self.width)]
            else:
                pieces = _fold(part, self.width)
            for text, start, end in pieces:
                write(lead if first else self.indent)
                write(self._text(text, start, end))
                write("\n")
                first = False
        self.rows += 1
        if self.rows >= TABLE_ROWS:
            self.flush()

    def gap(self, count: int) -> None:
        # Written as the rows are (a console.print costs a row's drawing several times over).
        said = _gap(count)
        self.batch += ["\n", self._text(said, 0, len(said.plain)), "\n\n"]
        self.flush()

    def flush(self) -> None:
        if self.batch:
            self.console.file.write("".join(self.batch))
            self.console.file.flush()
        self.batch, self.rows = [], 0

    def _head(self) -> None:
        self.headed = True
        head = Text("Line".rjust(self.number_width), style="bold")
        head.append(" " * 7 + "Entry", style="bold")
        self.console.print(Text(""))
        self.console.print(head)
        self.console.print(Text("─" * (len(self.indent) + self.width)))

    def _text(self, text: _Styled, start: int, end: int) -> str:
        """``text[start:end]`` with its styles (the text's own, and its spans')."""
        plain = text.plain[start:end].rstrip()
        end = start + len(plain)
        if self.colors is None or not plain:
            return plain
        spans = text.spans
        cuts = sorted({start, end} | {p for span in spans for p in span[:2] if start < p < end})
        out = []
        for lo, hi in pairwise(cuts):
            styles = [text.style] + [style for a, b, style in spans if a <= lo and b >= hi]
            out.append(self._run(text.plain[lo:hi], " ".join(s for s in styles if s)))
        return "".join(out)

    def _run(self, text: str, style: str) -> str:
        if self.colors is None or not style or not text:
            return text
        return _style(style).render(text, color_system=self.colors)


@functools.lru_cache(maxsize=64)
def _style(name: str) -> Style:
    return Style.parse(name)


def _fold(text: _Styled, width: int) -> list[tuple[_Styled, int, int]]:
    """``text`` cut into lines of at most ``width`` cells, at spaces where it can be (as Rich's ``fold``):
    (text, start, end) a line."""
    if "\t" in text.plain:
        text.expand_tabs(4)
    plain = text.plain
    if len(plain) <= width and (plain.isascii() or _cells(plain) <= width):
        return [(text, 0, len(plain))]
    offsets = [0, *_breaks(plain, width), len(plain)]
    return [(text, lo, hi) for lo, hi in pairwise(offsets)]


def _cells(plain: str) -> int:
    """Rich's ``cell_len``, with its common case (no joiner, no emoji selector) a map, not a generator."""
    if "\u200d" in plain or "\ufe0f" in plain:
        return cell_len(plain)
    return sum(map(get_character_cell_size, plain))


def _breaks(plain: str, width: int) -> list[int]:
    """Where each folded line starts (the first at 0 left out)."""
    if not plain.isascii():
        cells = list(map(get_character_cell_size, plain))
        if cells.count(1) != len(cells):
            return _breaks_by_cells(plain, width, cells)
    # A character a cell: a line is the ``width`` characters from its start, cut
    # after its last space (one at its very start does not count).
    offsets, start, end = [], 0, len(plain)
    while start + width < end:
        over = start + width
        space = plain.rfind(" ", start + 1, over)
        start = over if space < 0 else space + 1
        offsets.append(start)
    return offsets


def _breaks_by_cells(plain: str, width: int, cells: list[int] | None) -> list[int]:
    """``_breaks`` a character at a time, each ``cells[i]`` wide (None: one cell each)."""
    offsets, start, used, space = [], 0, 0, -1
    for i, char in enumerate(plain):
        size = 1 if cells is None else cells[i]
        if used + size > width and i > start:
            cut = space + 1 if space > start else i
            offsets.append(cut)
            start, space = cut, -1
            used = (i - cut) if cells is None else sum(cells[cut:i])
        if char == " ":
            space = i
        used += size
    return offsets


def _add_row(sheet: _Sheet, row: _Row, adapter: type[FormatAdapter], options: ShowOptions) -> None:
    for record, pending in row.inserted:
        sheet.row(*_interruption(record, pending, options))
    if row.entry is not None and row.entry.opens_history:
        sheet.row("", _Styled(""), [_Styled("── user turn ──", style="bold")])
    sheet.row(*_entry_row(row, adapter, options))
    for finding in row.findings:
        if finding.code != "APX001":
            sheet.row("", _Styled("!", style="yellow"), [_finding_text(finding)])


def _gap(count: int) -> _Styled:
    return _Styled(f"… {count:,} entr{'y' if count == 1 else 'ies'} …", style="dim")


def _summary(plan: _Plan, options: ShowOptions, spans: list[tuple[int, int]]) -> Text:
    """One line for the whole file, e.g. ``In all: 1,204 entries, 87 turns, ...; 1 interrupted call (line 1,180)``."""
    parts = [_count(plan.total, "entry", "entries")]
    if plan.counted:
        parts += [_count(plan.turns, "turn"), _count(plan.calls, "call"), _count(plan.results, "result")]
    text = Text("In all: " + ", ".join(parts), style="dim")
    cut = sorted({f.line or 0 for f in plan.findings if f.code == "APX001"})
    interrupted = sum(1 for f in plan.findings if f.code == "APX001")
    if interrupted:
        named = ", ".join(f"{n:,}" for n in cut[:NAMED_LINES]) + (
            f" and {len(cut) - NAMED_LINES:,} more" if len(cut) > NAMED_LINES else ""
        )
        text.append(f"; {_count(interrupted, 'interrupted call')} (line{'s' if len(cut) != 1 else ''} {named})", style="red")
    others = sum(1 for f in plan.findings if f.code != "APX001")
    if others:
        text.append(f"; {_count(others, 'other finding')}", style="yellow")
    if plan.unparsed:
        text.append(f"; {_count(len(plan.unparsed), 'line')} not JSON", style="red")
    whole = spans == [(1, plan.total)] or not plan.total
    if not whole and options.around is None:
        what = f"each interrupted call and finding with {options.context} entries either side" if spans else "no entry"
        text.append(f". Drawn: {what}; --all draws every entry", style="dim")
    return text


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _long(plan: _Plan, spans: list[tuple[int, int]], out: IO[str]) -> bool:
    """Whether the drawing is likely taller than the terminal (a row takes two lines or more, mostly)."""
    rows = sum(hi - lo + 1 for lo, hi in spans) + 4 * len(plan.inserted) + len(spans)
    try:
        height = os.get_terminal_size(out.fileno()).lines
    except (AttributeError, OSError, ValueError):
        height = 24
    return 2 * rows + 2 > height


class _PagerClosed(Exception):
    """The reader quit the pager: the rest need not be drawn."""


class _PagerStream:
    """The pager's standard input, standing for the terminal: Rich colours and sizes as it would there."""

    def __init__(self, pipe: IO[str], terminal: IO[str]) -> None:
        self._pipe = pipe
        self._terminal = terminal
        self.encoding = getattr(pipe, "encoding", "utf-8")

    def write(self, text: str) -> int:
        try:
            return self._pipe.write(text)
        except (BrokenPipeError, OSError):
            raise _PagerClosed from None

    def flush(self) -> None:
        try:
            self._pipe.flush()
        except (BrokenPipeError, OSError):
            raise _PagerClosed from None

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._terminal.fileno()


def _pager_command() -> str | None:
    """``$PAGER``, else ``less``, as git does; None for none (``PAGER=cat`` or empty, no less installed)."""
    import shutil

    command = os.environ.get("PAGER")
    if command is None:
        return "less" if shutil.which("less") else None
    return None if command.strip() in ("", "cat") else command


@contextlib.contextmanager
def _output(out: IO[str], color: bool | None, options: ShowOptions, long: bool) -> Iterator[Console]:
    """The console to draw on: the pager's when ``out`` is a terminal and the drawing long, else ``out``'s own.

    Written to as it is drawn (never captured whole, as Rich's ``console.pager()`` would):
    memory stays flat for ``--all`` too. Output that is no terminal is never paged.
    """
    command = _pager_command() if options.pager and long and _is_tty(out) else None
    if command is None:
        yield text_console(out, color)
        return
    # As git: quit at once if it fits a screen, keep colours, leave the screen as it is.
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": os.environ.get("LV", "-c")}
    pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env, encoding="utf-8", errors="replace")
    assert pager.stdin is not None  # stdin=PIPE
    try:
        yield text_console(_PagerStream(pager.stdin, out), color)
    except _PagerClosed:
        pass
    finally:
        with contextlib.suppress(OSError):
            pager.stdin.close()
        pager.wait()


def _is_tty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _header(path: str, adapter: type[FormatAdapter], findings: list[Finding]) -> Text:
    interrupted = sum(1 for f in findings if f.code == "APX001")
    text = Text(shown_name(path), style="bold")
    text.append(f"  ({adapter.name})  ", style="dim")
    if interrupted:
        text.append(f"{interrupted} interrupted call{'s' if interrupted != 1 else ''}", style="bold red")
    else:
        text.append("every call has a result", style="green")
    return text


def _entry_row(row: _Row, adapter: type[FormatAdapter], options: ShowOptions) -> tuple[str, _Styled, list[_Styled | None]]:
    number = str(row.number)
    if type(row.value) is jsonl.Unparsed:
        kind = "blank line" if row.value.kind == jsonl.BLANK else f"not JSON: {row.value.reason}"
        return number, _Styled("✗", style="red"), [_Styled(printable(kind, options.width), style="red")]
    entry = row.entry
    preview = _preview(row.value, options.width, bare=entry is not None and bool(entry.calls or entry.results))
    if entry is None:
        symbol, label, style = ("·", "row", "") if adapter.one_history_a_line else ("?", "unrecognised", "yellow")
        return number, _Styled(symbol, style=style), [_Styled(f"{label}: {preview}", style=style)]
    parts: list[_Styled | None] = []
    if entry.results:
        for result in entry.results:
            mark = " (not-run record)" if result.not_run else " (placeholder)" if result.placeholder else ""
            parts.append(_Styled(f"← result for {printable(result.call_id, 60)}{mark}", style="green"))
    if entry.calls:
        for call in entry.calls:
            line = _Styled(f"→ calls {printable(call.name, 60) or '?'}", style="bold cyan")
            line.append(f"  {printable(call.arguments, options.width)}", style="cyan")
            line.append(f"  id={printable(call.id, 60)}", style="dim")
            parts.append(line)
    symbol = "→" if entry.calls else "←" if entry.results else "●" if entry.boundary else "·"
    role = _role(row.value)
    label = (
        "user"
        if entry.opens_history
        else "calls"
        if entry.calls
        else "results"
        if entry.results
        else role
        if entry.boundary and role in _INSTRUCTION_ROLES
        else "reply"
        if entry.boundary
        else "meta"
    )
    head = _Styled(f"{label}: ", style="bold" if entry.boundary else "dim")
    head.append(preview, style="" if entry.boundary else "dim")
    return number, _Styled(symbol), [head, *parts]


# Messages that instruct the model rather than answer: labelled by their role, not "reply".
_INSTRUCTION_ROLES = ("system", "developer")


def _role(value: Any) -> str | None:
    """The role an entry's message names, where the formats keep it (chat, Responses, Claude Code, Codex, ...)."""
    for _ in range(3):
        if not isinstance(value, dict):
            return None
        role = value.get("role")
        if isinstance(role, str):
            return role.lower()
        kind = value.get("type")
        if isinstance(kind, str) and kind.lower() in _INSTRUCTION_ROLES:
            return kind.lower()
        value = value.get("message") if isinstance(value.get("message"), dict) else value.get("payload")
    return None


def _interruption(record: Any, pending: PendingCall, options: ShowOptions) -> tuple[str, _Styled, list[_Styled | None]]:
    call = pending.call
    kind = tool_kind(call.name, options.read_only_tools, options.side_effect_tools)
    head = _Styled("✂ interrupted: ", style="bold red")
    head.append(f"{printable(call.name, 60) or 'a tool'} (line {pending.line}, id={printable(call.id, 60)}) got no result")
    inserted = _Styled("  a repair inserts: ", style="red")
    inserted.append(printable(record, options.width))
    advice = _Styled(f"  next: {SAFE_NEXT[kind]}", style="italic")
    return "+", _Styled("✂", style="bold red"), [None, head, inserted, advice]


def _finding_text(finding: Finding) -> _Styled:
    text = _Styled(f"{finding.code} {finding.name}: ", style="yellow")
    text.append(printable(finding.message, 200))
    return text


def _preview(value: Any, width: int, *, bare: bool = False) -> str:
    """The readable part of an entry: its text if it has one, else the JSON, folded.

    ``bare``: the entry's calls or results are listed under it, so without
    text of its own it needs no JSON dump.
    """
    text = _text(value, 0)
    if text:
        return printable(text, width)
    return "" if bare else printable(value, width)


# Keys that hold an entry's words in the formats the doctor reads (chat, Anthropic,
# Claude Code's ``message``, Codex's ``payload``, Responses items).
_TEXT_KEYS = ("message", "payload", "content", "text", "thinking", "output", "summary")


def _text(value: Any, depth: int) -> str | None:
    if depth > 6:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            if key in value:
                found = _text(value[key], depth + 1)
                if found:
                    return found
        return None
    if isinstance(value, list):
        parts = [t for t in (_text(item, depth + 1) for item in value) if t]
        return " ".join(parts) or None
    return None
