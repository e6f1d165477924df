"""``apx-doctor show``: a transcript drawn as a timeline people can read.

Each line is shown as what its format adapter says it is (a user turn, an
assistant reply that calls tools, results, metadata), with long content folded.
Where a turn was cut off, the timeline shows the interruption and the not-run
record a repair inserts there, with the recovery advice. Nothing is written.

All transcript text reaches Rich as ``Text`` made ``printable``: never markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from rich import box
from rich.console import Group
from rich.rule import Rule as Divider
from rich.table import Table
from rich.text import Text

from . import documents, files, jsonl
from .advice import SAFE_NEXT, tool_kind
from .doctor import HistoryDoctor, RepairOptions, from_start
from .engine import Entry, PendingCall
from .errors import InputError
from .formats.base import FormatAdapter
from .model import Finding
from .reporters import shown_name
from .reporters.text import console as text_console
from .safe import printable
from .stream import DETECT_LINES, SQLITE_MAGIC, choose_adapter


@dataclass(frozen=True, slots=True)
class ShowOptions:
    input_format: str = "auto"
    marker: str = "not run: the turn was interrupted"
    around: int | None = None
    context: int = 5
    width: int = 200
    read_only_tools: tuple[str, ...] = ()
    side_effect_tools: tuple[str, ...] = ()


@dataclass(slots=True)
class _Row:
    number: int
    raw: bytes
    value: Any
    entry: Entry | None = None
    # Not-run records a repair writes right before this line: (record, pending call).
    inserted: list[Any] = None  # type: ignore[assignment]
    findings: list[Any] = None  # type: ignore[assignment]


def render_timeline(path: str, options: ShowOptions, out: IO[str], color: bool | None) -> None:
    rows, adapter, tail, findings = _read(path, options)
    console = text_console(out, color)
    console.print(_header(path, adapter, findings))
    table = Table(box=box.SIMPLE, show_header=True, expand=False, pad_edge=False)
    table.add_column("Line", justify="right", no_wrap=True, style="dim")
    table.add_column("", no_wrap=True)
    table.add_column("Entry", overflow="fold")
    lo, hi = _window(options, len(rows))
    for row in rows[lo:hi]:
        for record, pending in row.inserted:
            table.add_row(*_interruption(record, pending, options))
        if row.entry is not None and row.entry.opens_history:
            table.add_row(Text(""), Text(""), Text("── user turn ──", style="bold"))
        table.add_row(*_entry_row(row, adapter, options))
        for finding in row.findings:
            if finding.code != "APX001":
                table.add_row(Text(""), Text("!", style="yellow"), _finding_text(finding))
    if hi >= len(rows):
        for record, pending in tail:
            table.add_row(*_interruption(record, pending, options))
    console.print(table)


def _rows(
    adapter_type: type[FormatAdapter], raw_lines: list[Any], values: list[Any], marker: str, repair: RepairOptions
) -> tuple[list[_Row], list[Any], HistoryDoctor]:
    """A row a line, with what a repair writes before it; the records at the end; the doctor."""
    doctor = HistoryDoctor(adapter_type(marker=marker), repair)
    viewer = adapter_type(marker=marker)
    rows = []
    for number, (raw, value) in enumerate(zip(raw_lines, values), 1):
        row = _Row(number, raw, value, inserted=[], findings=[])
        if type(value) is not jsonl.Unparsed:
            verdict = doctor.entry(number, value)
            if verdict is not None:
                row.inserted = list(verdict.insert)
            if not viewer.one_history_a_line:
                row.entry = viewer.classify(value)
        rows.append(row)
    end = doctor.end(len(rows) + 1)
    return rows, (list(end.insert) if end is not None else []), doctor


def _read(path: str, options: ShowOptions) -> tuple[list[_Row], Any, list[Any], list[Finding]]:
    with files.open_lines(path) as lines:
        raw_lines = list(lines)
    if raw_lines and raw_lines[0].startswith(SQLITE_MAGIC):
        raise InputError(
            f"{path}: a SQLite session store (OpenCode's): show draws files of lines or JSON documents, not a "
            "database; check and fix read it (or show an export: opencode export ID > session.json)"
        )
    values = [jsonl.parse(r.removeprefix(jsonl.BOM) if i == 0 else r) for i, r in enumerate(raw_lines)]
    try:
        whole = documents.applies(options.input_format, raw_lines[:DETECT_LINES], values[:DETECT_LINES])
        adapter_type = None if whole else choose_adapter(options.input_format, raw_lines[:DETECT_LINES], values[:DETECT_LINES])
        if whole or documents.is_whole_file(adapter_type):  # type: ignore[arg-type]  # not whole: a format was chosen
            # One JSON document (or a log read whole): a row per message, at the line where it starts.
            fmt, items, tail, findings = documents.timeline(raw_lines, options.input_format, options.marker, adapter_type)
            return (
                [_Row(line, b"", message, entry, list(inserted), own) for line, _i, message, entry, inserted, own in items],
                fmt,
                list(tail),
                findings,
            )
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    assert adapter_type is not None  # a whole file returned above
    rows, tail, doctor = _rows(adapter_type, raw_lines, values, options.marker, RepairOptions())
    if doctor.engine.starts_over:
        # No real user entry, but calls: the whole file is the history.
        rows, tail, doctor = _rows(adapter_type, raw_lines, values, options.marker, from_start(RepairOptions()))
    by_line: dict[int, list[Finding]] = {}
    for finding in doctor.findings:
        by_line.setdefault(finding.line or 0, []).append(finding)
    for row in rows:
        row.findings = by_line.get(row.number, [])
    return rows, adapter_type, tail, doctor.findings


def _window(options: ShowOptions, total: int) -> tuple[int, int]:
    if options.around is None:
        return 0, total
    line = options.around
    return max(line - 1 - options.context, 0), min(line + options.context, total)


def _header(path: str, adapter: type[FormatAdapter], findings: list[Finding]) -> Text:
    interrupted = sum(1 for f in findings if f.code == "APX001")
    text = Text(shown_name(path), style="bold")
    text.append(f"  ({adapter.name})  ", style="dim")
    if interrupted:
        text.append(f"{interrupted} interrupted call{'s' if interrupted != 1 else ''}", style="bold red")
    else:
        text.append("every call has a result", style="green")
    return text


def _entry_row(row: _Row, adapter: type[FormatAdapter], options: ShowOptions) -> tuple[Text, Text, Any]:
    number = Text(str(row.number))
    if type(row.value) is jsonl.Unparsed:
        kind = "blank line" if row.value.kind == jsonl.BLANK else f"not JSON: {row.value.reason}"
        return number, Text("✗", style="red"), Text(printable(kind, options.width), style="red")
    entry = row.entry
    preview = _preview(row.value, options.width, bare=entry is not None and bool(entry.calls or entry.results))
    if entry is None:
        symbol, label, style = ("·", "row", "") if adapter.one_history_a_line else ("?", "unrecognised", "yellow")
        return number, Text(symbol, style=style), Text(f"{label}: {preview}", style=style)
    parts: list[Any] = []
    if entry.results:
        for result in entry.results:
            mark = " (not-run record)" if result.not_run else " (placeholder)" if result.placeholder else ""
            parts.append(Text(f"← result for {printable(result.call_id, 60)}{mark}", style="green"))
    if entry.calls:
        for call in entry.calls:
            line = Text(f"→ calls {printable(call.name, 60) or '?'}", style="bold cyan")
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
    head = Text(f"{label}: ", style="bold" if entry.boundary else "dim")
    head.append(preview, style="" if entry.boundary else "dim")
    return number, Text(symbol), Group(head, *parts) if parts else head


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


def _interruption(record: Any, pending: PendingCall, options: ShowOptions) -> tuple[Text, Text, Any]:
    call = pending.call
    kind = tool_kind(call.name, options.read_only_tools, options.side_effect_tools)
    head = Text("✂ interrupted: ", style="bold red")
    head.append(f"{printable(call.name, 60) or 'a tool'} (line {pending.line}, id={printable(call.id, 60)}) got no result")
    inserted = Text("  a repair inserts: ", style="red")
    inserted.append(printable(record, options.width))
    advice = Text(f"  next: {SAFE_NEXT[kind]}", style="italic")
    return Text("+", style="red"), Text("✂", style="bold red"), Group(Divider(style="red"), head, inserted, advice)


def _finding_text(finding: Finding) -> Text:
    text = Text(f"{finding.code} {finding.name}: ", style="yellow")
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
