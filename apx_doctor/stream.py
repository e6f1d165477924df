"""The byte-level pass over one transcript: parse, check, and (when asked) repair.

Pure in the sense that matters: it reads raw lines from an iterable and hands
output bytes to a sink; it opens no file and prints nothing. One pass does
everything, including the self-check of the repaired output, so a file is
never held whole in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Protocol

import orjson

from . import documents, jsonl, quiet
from .doctor import HistoryDoctor, RepairOptions, Verdict
from .engine import PASS_OVER
from .errors import InputError, NotATranscriptError, SelfCheckError
from .formats import (
    AmbiguousFormatError,
    UnknownFormatError,
    adapter_class,
    contradicted_by,
    detect_format,
    format_names,
)
from .formats._layout import dumps_like
from .formats.base import DEFAULT_MARKER, DROP, FormatAdapter
from .model import Edit, Finding

# How many lines auto-detection looks at.
DETECT_LINES = 64


class Sink(Protocol):
    # -> object: a file's own write method (its count is ignored) serves as keep and write.
    def keep(self, raw: bytes) -> object:
        """An input line that goes out unchanged, terminator included."""

    def write(self, data: bytes) -> object:
        """New bytes: an inserted record or a rewritten line."""

    def drop(self, raw: bytes) -> None:
        """An input line that does not go out."""

    def reject(self, raw: bytes) -> None:
        """An unparseable line that ``--salvage`` moves out of the transcript."""


class MemorySink:
    """Collects the repaired transcript in memory: for tests, and for callers that hold bytes."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.rejected: list[bytes] = []

    def keep(self, raw: bytes) -> None:
        self.parts.append(raw)

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def drop(self, raw: bytes) -> None:
        pass

    def reject(self, raw: bytes) -> None:
        self.rejected.append(raw)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


@dataclass(frozen=True, slots=True)
class StreamConfig:
    input_format: str = "auto"
    marker: str = DEFAULT_MARKER
    repair: RepairOptions = RepairOptions()
    # Move unparseable lines out (sink.reject) instead of refusing to write.
    salvage: bool = False


@dataclass(slots=True)
class StreamResult:
    format: str | None
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    # A line could not be parsed: the file must not be written.
    unparsed: bool = False
    lines: int = 0
    # The history held no real user entry but made calls: run it again with
    # ``history_from_start`` (the driver rereads the input).
    starts_over: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.edits) and not self.unparsed


# The first bytes of a SQLite database file (apx_doctor.databases reads those).
SQLITE_MAGIC = b"SQLite format 3\x00"


def run(lines: Iterable[bytes], config: StreamConfig = StreamConfig(), sink: Sink | None = None) -> StreamResult:
    """Check ``lines``; with a sink, also write the repaired transcript to it."""
    rest = iter(lines)
    head = list(islice(rest, DETECT_LINES))
    if head and head[0].startswith(SQLITE_MAGIC):
        # A path to one goes to apx_doctor.databases; this is one as a stream (stdin).
        raise InputError(
            "line 1: this is a SQLite database (OpenCode keeps its sessions in one), which is read "
            "through SQLite from its path, not as lines: name the file; nothing was checked"
        )
    parsed = [_parse_first(raw) if i == 0 else jsonl.parse(raw) for i, raw in enumerate(head)]
    if documents.applies(config.input_format, head, parsed):
        return documents.run(head, rest, config, sink)
    adapter = choose_adapter(config.input_format, head, parsed)
    if documents.is_whole_file(adapter):
        return documents.run(head, rest, config, sink, adapter)
    run_ = _Pass(adapter, config, sink)
    try:
        return _drive(run_, head, parsed, rest)
    except _ADAPTER_TROUBLE as exc:
        # Transcripts may hold any JSON type anywhere; an adapter that trips on
        # one stops this file with its line named, never with a traceback. The
        # exception's text is left out: it may quote the transcript.
        where = f"line {run_.number}" if run_.number else "the end of the file"
        raise InputError(
            f"{where}: the {adapter.name} reader cannot handle this line ({type(exc).__name__}, "
            "a bug worth reporting); nothing was written"
        ) from None


# What an adapter raises when a line holds a value of a type it did not expect.
_ADAPTER_TROUBLE = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def _drive(
    run_: _Pass,
    head: list[bytes],
    parsed: list[Any],
    rest: Iterable[bytes],
    quiet_lines: Callable[[], quiet.QuietLines] | None = None,
) -> StreamResult:
    """The lines of a file, its ``head`` parsed already; ``quiet_lines`` stands for the adapter's (``show`` counts)."""
    for raw, value in zip(head, parsed):
        run_.line(raw, value)
    doctor = run_.doctor
    rows = doctor.adapter.one_history_a_line
    # ``show`` (its own ``quiet_lines``) reads dataset rows whole: it draws each.
    typed = type(doctor.adapter).quiet_lines is not None and _reads_chunks(rest) and not (rows and quiet_lines is not None)
    if doctor.relinks or rows and not typed:
        _generic_loop(run_, rest)
    elif typed:
        lines = quiet_lines or doctor.adapter.quiet_lines
        quiet.loop(run_, rest, lines)  # type: ignore[arg-type]  # a file: _reads_chunks
    elif run_.sink is None:
        _check_loop(run_, rest)
    else:
        _repair_loop(run_, rest)
    return run_.finish()


# The hot loops: orjson straight away, ``jsonl.parse`` and ``_Pass.line`` only
# for what it refuses. The two unrolled loops do what ``_Pass.line`` does for a
# parsed line with ``HistoryDoctor.entry`` inlined, so that a line costs the
# parser, the adapter and the engine and little else: the doctor is asked only
# where the engine found something. Formats whose lines are whole histories,
# or whose lines link to removed ones, take the general loop.


def _generic_loop(run_: _Pass, rest: Iterable[bytes]) -> None:
    line, loads, refused = run_.line, orjson.loads, orjson.JSONDecodeError
    for raw in rest:
        try:
            value = loads(raw)
        except refused:
            value = jsonl.parse(raw)
        line(raw, value)


def _reads_chunks(rest: Iterable[bytes]) -> bool:
    """Whether the rest of the input is a file that ``quiet.loop`` may read in chunks."""
    return hasattr(rest, "read") and hasattr(rest, "readline")


def _check_loop(run_: _Pass, rest: Iterable[bytes]) -> None:
    """A check writes nothing: a parsed line goes from the parser to the adapter and the engine."""
    line, loads, refused = run_.line, orjson.loads, orjson.JSONDecodeError
    doctor = run_.doctor
    classify, feed, apply = doctor.adapter.classify, doctor.engine.feed, doctor.apply
    # The engine does nothing with PASS_OVER: most lines of some formats (events,
    # metadata) skip the call.
    pass_over = PASS_OVER
    number = run_.number
    try:
        for raw in rest:
            try:
                value = loads(raw)
            except refused:
                run_.number = number
                number += 1  # as ``line`` counts it, should it raise
                line(raw, jsonl.parse(raw))
                continue
            number += 1
            entry = classify(value)
            if entry is pass_over:
                continue
            if entry is None:
                doctor.unrecognised(number)
                continue
            step = feed(number, entry)
            if step is not None:
                apply(number, step, value)
    finally:
        # An adapter that trips is reported with this line's number.
        run_.number = number


def _repair_loop(run_: _Pass, rest: Iterable[bytes]) -> None:
    """A repair: a line that needs nothing is kept and fed to the self-check, all inline.

    Locals stand in for ``run_``'s counters and are written back before
    ``run_`` is asked to do anything (an unparsed line, a rewrite) and at the end.
    """
    line, loads, refused = run_.line, orjson.loads, orjson.JSONDecodeError
    # A repair has a sink, and so a self-check.
    assert run_.sink is not None and run_.checker is not None
    doctor, checker, keep = run_.doctor, run_.checker, run_.sink.keep
    classify, feed, apply = doctor.adapter.classify, doctor.engine.feed, doctor.apply
    # With a pure adapter the self-check reuses the doctor's Entry for a kept line.
    reclassify = None if run_.share else checker.adapter.classify
    check_feed, check_apply = checker.engine.feed, checker.apply
    pass_over = PASS_OVER
    number, out_number, last = run_.number, run_.out_number, None
    # Until a kept line has a line ending, each kept line is tracked in full:
    # the first ending found is what an unterminated last line is given.
    untracked = run_.default_terminator is None
    try:
        for raw in rest:
            try:
                value = loads(raw)
            except refused:
                _sync(run_, number, out_number, last)
                last = None
                number += 1  # as ``line`` counts it, should it raise
                line(raw, jsonl.parse(raw))
                out_number = run_.out_number
                continue
            number += 1
            entry = classify(value)
            if entry is pass_over:
                verdict = None
            elif entry is None:
                doctor.unrecognised(number)
                verdict = None
            else:
                step = feed(number, entry)
                verdict = None if step is None else apply(number, step, value)
            if verdict is not None:
                _sync(run_, number, out_number, last)
                last = None
                if reclassify is None:
                    run_.entry = entry
                run_._rewrite(number, raw, value, verdict)
                out_number = run_.out_number
                untracked = run_.default_terminator is None
                continue
            keep(raw)
            last = raw
            if untracked:
                run_._track(raw)
                untracked = run_.default_terminator is None
            out_number += 1
            if reclassify is not None:
                entry = reclassify(value)
            if entry is pass_over:
                continue
            if entry is None:
                checker.unrecognised(out_number)
                continue
            step = check_feed(out_number, entry)
            if step is not None and check_apply(out_number, step, value) is not None:
                raise SelfCheckError(f"a second repair would change output line {out_number}; nothing was written")
    finally:
        _sync(run_, number, out_number, last)


def _sync(run_: _Pass, number: int, out_number: int, last: bytes | None) -> None:
    """Write a loop's counters back to ``run_`` before it is asked to do anything."""
    run_.number, run_.out_number = number, out_number
    if last is not None:
        run_._track(last)


def _checked(data: bytes, value: Any, number: int) -> bytes:
    """``data``, the serialised ``value``, once it reads back as exactly that value (never NaN or Infinity)."""
    if not jsonl.reads_back(data, value):
        raise SelfCheckError(
            f"a record written at line {number} would not read back as the value it stands for; nothing was written"
        )
    return data


def _parse_first(raw: bytes) -> Any:
    return jsonl.parse(raw.removeprefix(jsonl.BOM))


def _opens_a_document(head: list[bytes]) -> bool:
    """Whether the first non-blank line is a lone ``{`` or ``[``: no JSON Lines record
    is, and a JSON document written with indentation (a Gemini CLI session) starts so."""
    for raw in head:
        text = raw.removeprefix(jsonl.BOM)
        text = text.strip()
        if text:
            return text in (b"{", b"[")
    return False


def choose_adapter(name: str, head: list[bytes], parsed: list[Any]) -> type[FormatAdapter]:
    """The adapter for a file whose first lines are ``head``, parsed as ``parsed``.

    A file with nothing to tell the format by (no JSON object in its first
    lines) is read as chat, which pairs nothing there; but a JSON document
    written with indentation is refused rather than read as broken lines.
    """
    adapter = _choose(name, parsed)
    if adapter is not None:
        return adapter
    if name == "auto" and _opens_a_document(head):
        raise NotATranscriptError(
            "line 1: this is one pretty-printed JSON document, not JSON Lines, and no format "
            "reads such a file yet; nothing was checked"
        )
    return adapter_class("chat")


def _choose(name: str, samples: list[Any]) -> type[FormatAdapter] | None:
    choices = ", ".join(format_names())
    if name != "auto":
        try:
            chosen = adapter_class(name)
        except UnknownFormatError as exc:
            raise InputError(str(exc)) from None
        likely = contradicted_by(chosen, [s for s in samples if not isinstance(s, jsonl.Unparsed)])
        if likely is not None:
            raise InputError(
                f"the file holds no {name} entries; it looks like {likely.name} "
                f"(pass --input-format {likely.name}, or auto); nothing was checked"
            )
        return chosen
    try:
        return detect_format([s for s in samples if not isinstance(s, jsonl.Unparsed)])
    except (AmbiguousFormatError, UnknownFormatError) as exc:
        raise NotATranscriptError(f"cannot tell the transcript format: {exc}; pass --input-format ({choices})") from None


class _Pass:
    def __init__(
        self, adapter: type[FormatAdapter], config: StreamConfig, sink: Sink | None, doctor: HistoryDoctor | None = None
    ) -> None:
        # ``doctor``: one that notes more as it goes (``show``'s), else a plain one.
        self.doctor = doctor or HistoryDoctor(adapter(marker=config.marker), config.repair)
        self.sink = sink
        # The repaired output is checked again as it is written: it must need
        # no further repair.
        self.checker = HistoryDoctor(adapter(marker=config.marker), config.repair) if sink else None
        self.result = StreamResult(adapter.name)
        self.salvage = config.salvage
        self.salvaged: list[Edit] = []
        self.number = 0
        self.out_number = 0
        self.last_terminator = b"\n"
        self.default_terminator: bytes | None = None
        # With a pure adapter, the self-check reuses the doctor's Entry for a
        # line written unchanged: one classify a line instead of two.
        self.share = sink is not None and adapter.pure_classify
        self.entry: Any = None

    def line(self, raw: bytes, value: Any) -> None:
        self.number += 1
        number = self.number
        if number == 1 and raw.startswith(jsonl.BOM):
            self.result.findings.append(Finding("APX103", 1, "the file starts with a UTF-8 byte-order mark"))
        if type(value) is jsonl.Unparsed:
            if self._unparsed(number, raw, value):
                if self.sink is not None:
                    self.sink.reject(raw)
                return
            verdict = None
        elif self.share:
            self.entry = self.doctor.adapter.classify(value)
            verdict = self.doctor.entry(number, value, self.entry)
        else:
            verdict = self.doctor.entry(number, value)
        if self.sink is None:
            return
        if verdict is None:
            self._keep(raw, value)
        else:
            self._rewrite(number, raw, value, verdict)

    def finish(self) -> StreamResult:
        verdict = self.doctor.end(self.number + 1)
        if verdict is not None and self.sink is not None:
            self._insert(verdict)
        if self.checker is not None and self.checker.end(self.out_number + 1) is not None:
            raise SelfCheckError("the repaired transcript still has calls without results")
        result = self.result
        result.starts_over = self.doctor.engine.starts_over
        result.lines = self.number
        result.findings.extend(self.doctor.findings)
        result.findings.sort(key=Finding.sort_key)
        edits = sorted(self.doctor.edits + self.salvaged, key=lambda e: e.line) if self.salvaged else self.doctor.edits
        result.edits = [] if result.unparsed else edits
        return result

    def _unparsed(self, number: int, raw: bytes, value: jsonl.Unparsed) -> bool:
        """Report a line that is no JSON value; True when --salvage moves it out."""
        if value.kind == jsonl.BLANK:
            self.result.findings.append(Finding("APX105", number, "blank line"))
            return False
        if self.salvage:
            self.salvaged.append(Edit("salvage", number))
        else:
            self.result.unparsed = True
        if not raw.endswith(b"\n"):
            message = "the last line is cut off (no line ending, not valid JSON)"
            self.result.findings.append(Finding("APX102", number, message))
        else:
            self.result.findings.append(Finding("APX101", number, f"not valid JSON: {value.reason}"))
        return self.salvage

    # _keep, _rewrite, _insert and _recheck run only with a sink (and so a checker).
    def _keep(self, raw: bytes, value: Any) -> None:
        assert self.sink is not None
        self.sink.keep(raw)
        self._track(raw)
        self._recheck(value, self.entry)

    def _rewrite(self, number: int, raw: bytes, value: Any, verdict: Verdict) -> None:
        self._insert(verdict)
        if verdict.replace is None:
            self._keep(raw, value)
        elif verdict.replace is DROP:
            assert self.sink is not None
            self.sink.drop(raw)
        else:
            # The line is written again from its parsed value: every number and
            # key must come back as it was, or the line is not rewritten at all.
            reason = jsonl.inexact(raw)
            if reason is not None:
                raise SelfCheckError(
                    f"line {number} needs a rewrite, but it holds {reason}, which a rewrite would change; "
                    "the line is unfixable and nothing was written"
                )
            term = jsonl.terminator(raw)
            # In the line's own layout where the standard library reproduces it
            # (a dataset written by json.dumps), else compact as orjson writes.
            kept = self.doctor.adapter.keeps_layout and dumps_like(raw, value, verdict.replace)
            rewritten = _checked(kept or jsonl.dumps(verdict.replace), verdict.replace, number)
            if raw.startswith(jsonl.BOM):
                # The byte-order mark APX103 says is kept.
                rewritten = jsonl.BOM + rewritten
            assert self.sink is not None
            self.sink.write(rewritten + term)
            self._track(raw)
            self._recheck(verdict.replace)

    def _insert(self, verdict: Verdict) -> None:
        if not verdict.insert:
            return
        assert self.sink is not None
        if not self.last_terminator:
            # Appending after a last line that has no line ending: give it one.
            self.last_terminator = self.default_terminator or b"\n"
            self.sink.write(self.last_terminator)
        for record, _pending in verdict.insert:
            self.sink.write(_checked(jsonl.dumps(record), record, self.number) + self.last_terminator)
            self._recheck(record)

    def _track(self, raw: bytes) -> None:
        term = jsonl.terminator(raw)
        self.last_terminator = term
        if self.default_terminator is None and term:
            self.default_terminator = term

    def _recheck(self, value: Any, entry: Any = None) -> None:
        self.out_number += 1
        if type(value) is jsonl.Unparsed:
            return
        assert self.checker is not None
        if self.checker.entry(self.out_number, value, entry) is not None:
            raise SelfCheckError(f"a second repair would change output line {self.out_number}; nothing was written")
