"""Files read whole: one JSON document a file, and Gemini CLI's log.

Some runtimes keep a session as one JSON document (a Gemini CLI session file,
a Cline ``api_conversation_history.json``), and Gemini CLI's newer JSONL log
can only be understood whole: a later record replaces or removes earlier
messages. Such files are small, so they are read whole (up to
``MAX_BYTES``), the document's messages are paired by the same engine as
every other history, and each finding names the message (``index``) and the
line where it starts in the file (``line``).

A document is repaired only where it can be written back exactly as its
runtime wrote it: the unrepaired document is serialised again in the layouts
runtimes use (``JSON.stringify(x, null, N)``, which is ``json.dumps(x,
indent=N, ensure_ascii=False, separators=(",", ": "))``, and compact
``JSON.stringify(x)``; with or without a final line ending), and only when one
of them gives back every byte of the file is the repaired document written in
that layout. Otherwise ``fix`` refuses (``LayoutError``, exit 2) and writes
nothing: a user's file is never reformatted. A log is never rewritten: its
lines are kept byte for byte and the repair appends, for each message it
changes, a new record of that message (the last record of an id wins, and the
message keeps its place), or a ``$set`` of the messages where a ``$set``
holds them.

Formats that read whole files set ``whole_file`` and define
``detect_document(value)``, ``document_messages(value)`` and
``with_messages(value, messages)``, and may define ``read_document(value)``
on the adapter, shown the document before its messages (Cline: the CLI's
object wants a record that names the tool); a format whose not-run answer goes into
the call's own record (Gemini CLI) also defines ``answer_in_place``, and one
with a log names the class that replays it (``log_fold``, ``gemini_cli.Fold``).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from . import jsonl
from .doctor import HistoryDoctor, RepairOptions, Verdict, from_start
from .errors import DoctorError, InputError, NotATranscriptError, SelfCheckError
from .formats import UnknownFormatError, adapter_class, adapters
from .formats.base import DEFAULT_MARKER, DROP, Detection, FormatAdapter
from .model import Edit, Finding

if TYPE_CHECKING:
    from .stream import StreamResult

# An adapter class of a format read whole: the document methods above (and
# answer_in_place, log_fold) are optional, and hasattr decides, so it is duck-typed.
_Format = Any

# The most a file read whole may hold.
MAX_BYTES = 256 << 20


class LayoutError(DoctorError):
    """A repair would have to reformat the document; nothing was written."""


# --- routing ------------------------------------------------------------------


def document_formats() -> tuple[type[FormatAdapter], ...]:
    return tuple(a for a in adapters() if hasattr(a, "detect_document"))


def is_whole_file(adapter: type[FormatAdapter]) -> bool:
    return bool(getattr(adapter, "whole_file", False))


def applies(input_format: str, head: Sequence[bytes], parsed: Sequence[Any]) -> bool:
    """Whether a file whose first lines are ``head`` (parsed as ``parsed``) is read here.

    Named formats that read whole files, documents written with indentation
    (the first line a lone ``{`` or ``[``), and a file of one line that holds
    a document some format recognises for sure. Other files go line by line
    (and may come back here once their format is told: ``is_whole_file``).
    """
    if input_format != "auto":
        try:
            return is_whole_file(adapter_class(input_format))
        except UnknownFormatError:
            return False  # the line-by-line path names the choices
    from .stream import DETECT_LINES

    first = None
    for position, raw in enumerate(head):
        text = (raw[len(jsonl.BOM) :] if position == 0 and raw.startswith(jsonl.BOM) else raw).strip()
        if not text:
            continue
        if first is not None:
            return False  # more than one line of content: JSON Lines
        if text in (b"{", b"["):
            return True
        first = position
    if first is None or len(head) >= DETECT_LINES:
        return False
    value = parsed[first]
    return type(value) in (dict, list) and any(_detect(f, value) >= Detection.CERTAIN for f in document_formats())


def _detect(adapter: _Format, value: Any) -> int:
    try:
        level: int = adapter.detect_document(value)
        return level
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError):
        return Detection.NO


# --- the pass -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    marker: str = DEFAULT_MARKER
    repair: RepairOptions = RepairOptions()
    salvage: bool = False


def run(
    head: Sequence[bytes], rest: Iterable[bytes], config: Any, sink: Any, adapter: type[FormatAdapter] | None = None
) -> StreamResult:
    """``stream.run`` for a file read whole; ``config`` is its ``StreamConfig``."""
    from .stream import StreamResult

    if adapter is None and config.input_format != "auto":
        adapter = adapter_class(config.input_format)
    lines = _read_all(head, rest)
    options = _Options(config.marker, config.repair, config.salvage)
    found = _document(lines, adapter)
    if found is not None:
        fmt, value, body = found
        findings, edits, out = _check_document(fmt, value, body, lines, options, sink is not None)
        if sink is not None and out is not None:
            sink.write(out)
        elif sink is not None:
            _keep_all(sink, lines)
        return StreamResult(fmt.name, findings, edits, False, len(lines))
    if adapter is None or not _looks_like_lines(lines):
        return _refuse_document(lines, adapter)
    return _run_lines(adapter, lines, options, sink, StreamResult)


def _read_all(head: Sequence[bytes], rest: Iterable[bytes]) -> list[bytes]:
    lines: list[bytes] = []
    size = 0
    for raw in _chain(head, rest):
        size += len(raw)
        if size > MAX_BYTES:
            limit = f"{MAX_BYTES >> 20} MiB" if MAX_BYTES >= 1 << 20 else f"{MAX_BYTES} bytes"
            raise InputError(
                f"the file is larger than {limit}, the most a file read whole (one JSON document, "
                "or a Gemini CLI log) may hold; nothing was checked"
            )
        lines.append(raw)
    return lines


def _chain(head: Sequence[bytes], rest: Iterable[bytes]) -> Iterable[bytes]:
    yield from head
    yield from rest


def _document(lines: list[bytes], adapter: type[FormatAdapter] | None) -> tuple[_Format, Any, bytes] | None:
    """(format, value, body) when the file is one JSON document a format reads; else None.

    With no format named, a document that no format reads, or no document at
    all, is refused here (``InputError``, naming the line).
    """
    data = b"".join(lines)
    body = data.removeprefix(jsonl.BOM)
    value, problem = _parse(body)
    if problem is None:
        candidates = [adapter] if adapter is not None else list(document_formats())
        need = Detection.COMPATIBLE if adapter is not None else Detection.CERTAIN
        chosen = [f for f in candidates if hasattr(f, "detect_document") and _detect(f, value) >= need]
        if len(chosen) == 1:
            return chosen[0], value, body
        if adapter is None:
            names = ", ".join(f"{f.name} ({f.description.split(':')[0]})" for f in document_formats())
            raise NotATranscriptError(
                f"line 1: this is one JSON document, but not one any format reads ({names}); nothing was checked"
            )
        return None
    if adapter is None:
        raise InputError(f"{problem}; this file is one JSON document, so nothing was checked")
    return None


def _looks_like_lines(lines: list[bytes]) -> bool:
    """False where the file opens a document (a lone ``{`` or ``[`` first) that did not parse."""
    for position, raw in enumerate(lines):
        text = (raw[len(jsonl.BOM) :] if position == 0 and raw.startswith(jsonl.BOM) else raw).strip()
        if text:
            return text not in (b"{", b"[")
    return True


def _refuse_document(lines: list[bytes], adapter: type[FormatAdapter] | None) -> NoReturn:
    data = b"".join(lines)
    _, problem = _parse(data.removeprefix(jsonl.BOM))
    if adapter is None:
        raise InputError(f"{problem}; this file is one JSON document, so nothing was checked")
    if problem is None:
        raise InputError(
            f"line 1: this JSON document is not a {adapter.name} file (try --input-format auto); nothing was checked"
        )
    raise InputError(f"{problem}; this file is one JSON document, so nothing was checked")


def _keep_all(sink: Any, lines: list[bytes]) -> None:
    for raw in lines:
        sink.keep(raw)


# --- parsing ------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _exact_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # beyond the interpreter's digit limit
        from decimal import Decimal

        return Decimal(text)


def _parse(body: bytes) -> tuple[Any, str | None]:
    """The document's value, or a reason naming the line where it goes wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        return None, f"line {line}: not UTF-8 (byte {exc.start + 1})"
    if not text.strip():
        return None, "line 1: the file holds no JSON document"
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_exact_int), None
    except RecursionError:
        return None, "line 1: the JSON document is nested too deeply to read"
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            return None, f"line {exc.lineno}: the JSON document is cut off (it ends before it is complete)"
        return None, f"line {exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})"
    except ValueError as exc:  # NaN, Infinity
        return None, f"line 1: not valid JSON: {exc}"


# --- reviewing a message list -------------------------------------------------


@dataclass(slots=True)
class _Review:
    # Numbered as the doctor numbers them: message n is messages[n - 1].
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    # The repaired messages; None when nothing changes.
    messages: list[Any] | None = None
    # Message number -> the records closed right before it (len + 1: at the end).
    before: dict[int, list[Any]] = field(default_factory=dict)
    # Patching formats: (record, pending call) for every call answered, in order.
    answers: list[Any] = field(default_factory=list)


def _review(fmt: _Format, messages: list[Any], options: _Options, document: Any = None) -> _Review:
    """The doctor over ``messages``; ``document``, the value they were read from, is
    shown to an adapter that writes its record by what holds them (``read_document``)."""
    adapter = fmt(marker=options.marker)
    if document is not None and hasattr(adapter, "read_document"):
        adapter.read_document(document)
    patching = hasattr(adapter, "answer_in_place")
    if patching:
        adapter.patching = True
    doctor = HistoryDoctor(adapter, options.repair)
    review = _Review()
    out: list[Any] = []
    changed = False
    answers: list[Any] = []
    try:
        for number, message in enumerate(messages, 1):
            changed |= _place(review, out, number, message, doctor.entry(number, message), answers)
        changed |= _place(review, out, len(messages) + 1, None, doctor.end(len(messages) + 1), answers)
    except _ADAPTER_TROUBLE as exc:
        raise InputError(
            f"the {fmt.name} reader cannot handle message {len(out)} ({type(exc).__name__}, a bug worth "
            "reporting); nothing was written"
        ) from None
    if doctor.engine.starts_over:
        # No real user entry, but calls: the whole document is the history.
        return _review(fmt, messages, dataclasses.replace(options, repair=from_start(options.repair)), document)
    review.findings = doctor.findings
    if not patching:
        review.edits = doctor.edits
        review.messages = out if changed else None
        return review
    # Patching: each answer goes into the call's own message, not before the next one.
    review.edits = [
        Edit("insert", pending.line, record, pending.call.id, pending.call.name, pending.call.arguments)
        for record, pending in answers
    ]
    if answers:
        by_message: dict[int, list[Any]] = {}
        for _record, pending in answers:
            by_message.setdefault(pending.line, []).append(pending.call)
        repaired = list(messages)
        for number, calls in sorted(by_message.items()):
            repaired[number - 1] = adapter.answer_in_place(messages[number - 1], calls)
        review.messages = repaired
        review.answers = answers
    return review


_ADAPTER_TROUBLE = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def _place(review: _Review, out: list[Any], number: int, message: Any, verdict: Verdict | None, answers: list[Any]) -> bool:
    """Put ``message`` (None: the end) into ``out`` as ``verdict`` says; True if anything changed."""
    if verdict is None:
        if message is not None:
            out.append(message)
        return False
    if verdict.insert:
        review.before[number] = list(verdict.insert)
        answers.extend(verdict.insert)
    out.extend(record for record, _pending in verdict.insert)
    if message is not None:
        if verdict.replace is None:
            out.append(message)
        elif verdict.replace is not DROP:
            out.append(verdict.replace)
    return bool(verdict.insert) or verdict.replace is not None


# --- one JSON document --------------------------------------------------------


def _check_document(
    fmt: _Format, value: Any, body: bytes, lines: list[bytes], options: _Options, repairing: bool
) -> tuple[list[Finding], list[Edit], bytes | None]:
    """Findings and edits (numbered by file line), and the repaired file's bytes (None: unchanged)."""
    messages = fmt.document_messages(value)
    review = _review(fmt, messages, options, value)
    where = _Where(body, _messages_path(fmt, value))
    findings = [_at(f, where) for f in review.findings]
    if lines and lines[0].startswith(jsonl.BOM):
        findings.append(Finding("APX103", 1, "the file starts with a UTF-8 byte-order mark"))
    findings.sort(key=Finding.sort_key)
    patching = hasattr(fmt, "answer_in_place")
    edits = [_edit_at(e, where, messages, patching) for e in review.edits]
    if not repairing or review.messages is None:
        return findings, edits, None
    layout = _reproduce(value, body)
    if isinstance(layout, int):
        raise LayoutError(
            f"line {layout}: written back as any runtime writes JSON (indentation, key order, escaping, "
            "line endings), this document would not be the same bytes, so a repair would reformat it; "
            "nothing was written (check still reports its findings)"
        )
    repaired = fmt.with_messages(value, review.messages)
    out = _dump(repaired, layout[0])
    if out is None:
        raise SelfCheckError("the repaired document cannot be written in the file's own layout; nothing was written")
    out += layout[1]
    again, problem = _parse(out)
    if problem is not None or _review(fmt, fmt.document_messages(again), options, again).edits:
        raise SelfCheckError("a second repair would change the repaired document; nothing was written")
    bom = jsonl.BOM if lines and lines[0].startswith(jsonl.BOM) else b""
    return findings, edits, bom + out


def _messages_path(fmt: _Format, value: Any) -> tuple[Any, ...]:
    return () if fmt.document_messages(value) is value else ("messages",)


def _at(finding: Finding, where: _Where) -> Finding:
    number = finding.line or 1
    return dataclasses.replace(finding, line=where.message_line(number - 1), index=number - 1)


def _edit_at(edit: Edit, where: _Where, messages: list[Any], patching: bool) -> Edit:
    index = edit.line - 1
    line = where.message_line(index)
    if patching:
        # The answer goes into the call's record, right before it closes (or, for a
        # call that has none, a new record at the end of its message's toolCalls).
        line = where.answer_line(index, _record_position(messages[index], edit.call_id)) or line
    return dataclasses.replace(edit, line=line, index=index)


def _record_position(message: Any, call_id: Any) -> int | None:
    records = message.get("toolCalls") if type(message) is dict else None
    if not isinstance(records, list):
        return None
    for position, record in enumerate(records):
        if type(record) is dict and record.get("id") == call_id:
            return position
    return None


class _Where:
    """Where each message of a document starts: byte offsets found by a light scan, then lines."""

    def __init__(self, body: bytes, path: tuple[Any, ...]) -> None:
        self.body = body
        self.newlines = [m.start() for m in re.finditer(b"\n", body)]
        root = _skip_space(body, 0)
        start = _descend(body, root, path) if root < len(body) else None
        self.starts, self.close = _children(body, start) if start is not None else ([], len(body))
        self.start = start

    def line_of(self, offset: int) -> int:
        return bisect.bisect_left(self.newlines, offset) + 1

    def message_line(self, index: int) -> int:
        if 0 <= index < len(self.starts):
            return self.line_of(self.starts[index][1])
        return self.line_of(self.close)  # at the end: where the list closes

    def answer_line(self, index: int, position: int | None) -> int | None:
        """The line where the answer to a call of message ``index`` is written: where its
        record (toolCalls[position]) closes, or else where toolCalls or the message closes."""
        if not 0 <= index < len(self.starts):
            return None
        message = self.starts[index][1]
        for path in ((("toolCalls", position),) if position is not None else ()) + (("toolCalls",), ()):
            offset = _descend(self.body, message, path)
            if offset is not None and self.body[offset : offset + 1] in (b"{", b"["):
                return self.line_of(_children(self.body, offset)[1])
        return None


_STRUCTURE = re.compile(rb'[\[\]{},:"]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SPACE = re.compile(rb"[ \t\r\n]*")


def _skip_space(body: bytes, offset: int) -> int:
    return _SPACE.match(body, offset).end()  # type: ignore[union-attr]  # matches the empty string: never None


def _children(body: bytes, start: int) -> tuple[list[tuple[Any, int]], int]:
    """The (key or None, offset) of each member of the container at ``start``, and where it closes."""
    is_object = body[start : start + 1] == b"{"
    found: list[tuple[Any, int]] = []
    depth, position, key = 1, start + 1, None
    if not is_object:
        first = _skip_space(body, position)
        if body[first : first + 1] != b"]":
            found.append((None, first))
    while True:
        match = _STRUCTURE.search(body, position)
        if match is None:
            return found, len(body)
        char, at = match.group(), match.start()
        position = at + 1
        if char == b'"':
            end = _STRING_REST.match(body, position).end()  # type: ignore[union-attr]  # the body parsed: every string closes
            if depth == 1 and is_object:
                key = json.loads(body[at:end].decode("utf-8", "surrogatepass"))
            position = end
        elif char in b"[{":
            depth += 1
        elif char in b"]}":
            depth -= 1
            if depth == 0:
                return found, at
        elif depth == 1:
            if char == b"," and not is_object:
                found.append((None, _skip_space(body, position)))
            elif char == b":" and is_object:
                found.append((key, _skip_space(body, position)))


def _descend(body: bytes, start: int, path: tuple[Any, ...]) -> int | None:
    for step in path:
        if body[start : start + 1] not in (b"{", b"["):
            return None
        members, _close = _children(body, start)
        if isinstance(step, str):
            offsets = [offset for key, offset in members if key == step]
            if not offsets:
                return None
            start = offsets[-1]  # a repeated key: the last one counts, as in the parsed value
        else:
            if step >= len(members):
                return None
            start = members[step][1]
    return start


# --- layouts ------------------------------------------------------------------

# (indent, separators, ensure_ascii); "orjson" is apx-doctor's own compact output.
_Layout = Any


def _candidates(body: bytes) -> list[_Layout]:
    text = body.rstrip(b"\n")
    if b"\n" not in text:
        return [
            (None, (",", ":"), False),  # JSON.stringify(x)
            "orjson",
            (None, (", ", ": "), False),  # json.dumps(x, ensure_ascii=False)
            (None, (",", ":"), True),
            (None, (", ", ": "), True),  # json.dumps(x)
        ]
    second = text.split(b"\n", 2)[1]
    indent = second[: len(second) - len(second.lstrip(b" \t"))].decode("ascii")
    if not indent or len(set(indent)) != 1:
        return []
    # JSON.stringify(x, null, N) and json.dumps(x, indent=N) (ensure_ascii either way).
    return [(indent, (",", ": "), False), (indent, (",", ": "), True)]


def _dump(value: Any, layout: _Layout) -> bytes | None:
    if layout == "orjson":
        try:
            return orjson.dumps(value)
        except TypeError:
            return None
    indent, separators, ensure_ascii = layout
    try:
        text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=ensure_ascii, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    if not ensure_ascii:
        # A lone surrogate can only stand in a string: JSON.stringify writes it
        # as a lower-case escape.
        text = _LONE_SURROGATE.sub(_escape_surrogate, text)
    return text.encode("utf-8")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _reproduce(value: Any, body: bytes) -> tuple[_Layout, bytes] | int:
    """The layout (and final line ending) that writes ``value`` back as ``body``, or the first line that differs."""
    first: bytes | None = None
    for layout in _candidates(body):
        out = _dump(value, layout)
        if out is None:
            continue
        first = out if first is None else first
        if body == out:
            return layout, b""
        if body == out + b"\n":
            return layout, b"\n"
    if first is None:
        return 1
    same = 0
    for same, (a, b) in enumerate(zip(body, first)):
        if a != b:
            break
    else:
        same = min(len(body), len(first))
    return body.count(b"\n", 0, same) + 1


# --- a log: JSON Lines read whole ---------------------------------------------


def _run_lines(
    adapter: _Format, lines: list[bytes], options: _Options, sink: Any, result_type: type[StreamResult]
) -> StreamResult:
    """A file of JSON Lines that only makes sense whole (Gemini CLI's log), or a document format's
    file that is no document (each line is then unrecognised)."""
    fold_type: Any = getattr(adapter, "log_fold", None)
    log = fold_type is not None
    fold: Any = fold_type() if log else None
    findings: list[Finding] = []
    salvaged: list[Edit] = []
    rejected: set[int] = set()
    unparsed = False
    for number, raw in enumerate(lines, 1):
        text = raw
        if number == 1 and raw.startswith(jsonl.BOM):
            findings.append(Finding("APX103", 1, "the file starts with a UTF-8 byte-order mark"))
            text = raw[len(jsonl.BOM) :]
        value = jsonl.parse(text)
        if type(value) is jsonl.Unparsed:
            if value.kind == jsonl.BLANK:
                findings.append(Finding("APX105", number, "blank line"))
                continue
            if options.salvage:
                salvaged.append(Edit("salvage", number))
                rejected.add(number)
            else:
                unparsed = True
            if not raw.endswith(b"\n"):
                findings.append(Finding("APX102", number, "the last line is cut off (no line ending, not valid JSON)"))
            else:
                findings.append(Finding("APX101", number, f"not valid JSON: {value.reason}"))
            continue
        if not (log and fold.add(number, value)):
            what = "a record of a Gemini CLI log" if log else f"a {adapter.name} file, which is one JSON document"
            findings.append(Finding("APX104", number, f"valid JSON, but not {what}"))
    edits: list[Edit] = []
    appended: list[Any] = []
    if log:
        messages, where = fold.conversation()
        review = _review(adapter, messages, options)
        findings += [_at_record(f, where, len(lines)) for f in review.findings]
        if review.messages is not None:
            appended, answering = _log_records(adapter(marker=options.marker), messages, review.answers, fold.replaced())
            edits = [dataclasses.replace(e, line=len(lines) + 1, record=record) for e, record in zip(review.edits, answering)]
            _self_check_log(adapter, fold, appended, len(lines), options)
    findings.sort(key=Finding.sort_key)
    edits = sorted(edits + salvaged, key=lambda e: e.line) if salvaged else edits
    if sink is not None and not unparsed:
        _write_log(sink, lines, rejected, appended)
    return result_type(adapter.name, findings, [] if unparsed else edits, unparsed, len(lines))


def _log_records(adapter: Any, messages: list[Any], answers: list[Any], replaced: bool) -> tuple[list[Any], list[Any]]:
    """The records to append, and the one that answers each call: for each message with
    answered calls, that message again with them all answered (the last record of an id
    wins, and the message keeps its place), or, where a $set holds the messages, one $set
    of them all."""
    calls: dict[int, list[Any]] = {}
    for _record, pending in answers:
        calls.setdefault(pending.line - 1, []).append(pending.call)
    current = list(messages)
    for position, answered in calls.items():
        current[position] = adapter.answer_in_place(messages[position], answered)
    if replaced:
        record = {"$set": {"messages": current}}
        return [record], [record] * len(answers)
    by_position = {position: current[position] for position in calls}
    return list(by_position.values()), [by_position[pending.line - 1] for _record, pending in answers]


def _at_record(finding: Finding, where: list[int], total: int) -> Finding:
    number = finding.line or 1
    line = where[number - 1] if 0 < number <= len(where) else total
    return dataclasses.replace(finding, line=line, index=number - 1)


def _self_check_log(adapter: _Format, fold: Any, appended: list[Any], total: int, options: _Options) -> None:
    """The log with the appended records folds to a conversation that needs nothing more."""
    for offset, record in enumerate(appended, 1):
        written = jsonl.parse(jsonl.dumps(record))  # the record as a reader will see it
        if type(written) is jsonl.Unparsed or not fold.add(total + offset, written):
            raise SelfCheckError("an appended record would not read back; nothing was written")
    messages, _ = fold.conversation()
    if _review(adapter, messages, options).edits:
        raise SelfCheckError("a second repair would change the repaired log; nothing was written")


def _write_log(sink: Any, lines: list[bytes], rejected: set[int], appended: list[Any]) -> None:
    last = None
    default = None
    for number, raw in enumerate(lines, 1):
        term = jsonl.terminator(raw)
        if default is None and term:
            default = term
        if number in rejected:
            sink.reject(raw)
            continue
        sink.keep(raw)
        last = raw
    if not appended:
        return
    term = (jsonl.terminator(last) if last is not None else b"") or default or b"\n"
    if last is not None and not jsonl.terminator(last):
        sink.write(term)  # the last line had no line ending: give it one before appending
    for record in appended:
        sink.write(jsonl.dumps(record) + term)


# --- the timeline (apx-doctor show) -------------------------------------------


def timeline(
    raw_lines: list[bytes], input_format: str, marker: str, adapter: _Format | None = None
) -> tuple[_Format, list[Any], list[Any], list[Finding]]:
    """What ``show`` draws for a file read whole: (format, rows, tail, findings).

    Each row is (line, index, message, entry to show, records closed right
    before it, its findings); ``tail`` holds the records closed at the end.
    """
    if adapter is None and input_format != "auto":
        adapter = adapter_class(input_format)
    options = _Options(marker)
    found = _document(raw_lines, adapter)
    if found is not None:
        fmt, value, body = found
        messages = fmt.document_messages(value)
        where = _Where(body, _messages_path(fmt, value))
        lines = [where.message_line(i) for i in range(len(messages))]
    elif adapter is not None and _looks_like_lines(raw_lines) and getattr(adapter, "log_fold", None) is not None:
        fmt, fold = adapter, adapter.log_fold()
        for number, raw in enumerate(raw_lines, 1):
            value = jsonl.parse(raw[len(jsonl.BOM) :] if number == 1 and raw.startswith(jsonl.BOM) else raw)
            if type(value) is not jsonl.Unparsed:
                fold.add(number, value)
        messages, lines = fold.conversation()
    elif adapter is not None and _looks_like_lines(raw_lines):
        raise InputError(f"line 1: a {adapter.name} file is one JSON document, and this one is JSON Lines; nothing to show")
    else:
        _refuse_document(raw_lines, adapter)
    review = _review(fmt, messages, options, value if found is not None else None)
    viewer = fmt(marker=marker)
    show = getattr(viewer, "describe", viewer.classify)
    findings = [dataclasses.replace(f, line=lines[f.line - 1] if f.line and f.line <= len(lines) else f.line,
                                    index=(f.line or 1) - 1) for f in review.findings]  # fmt: skip

    def closed(number: int) -> list[Any]:
        # The cut call's line in the file, not its position in the list.
        return [
            (record, dataclasses.replace(pending, line=lines[pending.line - 1]))
            for record, pending in review.before.get(number, [])
        ]

    rows = []
    for index, message in enumerate(messages):
        own = [f for f in findings if f.index == index]
        rows.append((lines[index], index, message, show(message), closed(index + 1), own))
    return fmt, rows, closed(len(messages) + 1), findings


# --- the library ---------------------------------------------------------------


@dataclass(slots=True)
class DocumentRepair:
    """A repaired copy of a parsed document. ``line`` in findings is the 1-based message index."""

    value: Any
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.edits)


def repair_document(
    value: Any,
    *,
    format: str = "auto",
    marker: str = DEFAULT_MARKER,
    drop_orphans: bool = False,
    keep_open_tail: bool = False,
) -> DocumentRepair:
    """Check and repair one parsed document (a Gemini CLI session, a Cline history); the input is not changed."""
    if format == "auto":
        chosen = [f for f in document_formats() if _detect(f, value) >= Detection.CERTAIN]
        if len(chosen) != 1:
            raise ValueError("the document fits no format read as a whole (pass format=)")
        fmt: _Format = chosen[0]
    else:
        fmt = adapter_class(format)
        if not hasattr(fmt, "detect_document") or _detect(fmt, value) < Detection.COMPATIBLE:
            raise ValueError(f"the document is not a {format} document")
    options = _Options(marker, RepairOptions(drop_orphans=drop_orphans, keep_open_tail=keep_open_tail))
    review = _review(fmt, fmt.document_messages(value), options, value)
    number: Callable[[Any], Any] = lambda item: dataclasses.replace(item, index=item.line - 1)  # noqa: E731
    repaired = value if review.messages is None else fmt.with_messages(value, review.messages)
    return DocumentRepair(repaired, [number(f) for f in review.findings], [number(e) for e in review.edits])
