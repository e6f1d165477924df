"""Fine-tuning datasets: one whole conversation a line.

    {"messages": [...], "tools": [...], ...}
    {"conversations": [{"role": ..., "content": ...}, ...], ...}
    {"conversations": [{"from": ..., "value": ...}, ...], "tools": "...", ...}

Each line is checked as its own history, with the reader of the format its
messages are in, told apart line by line. Two are told by the keys that define
them: ShareGPT turns (every turn has ``from``) and LLaMA-Factory v1 messages
(content parts ``{"type", "value"}``); both pair results by position (see
``_llamafactory``). Otherwise the formats of message lists are asked (chat when
nothing decides). A runtime's record envelopes, such as codex or claude-code,
are never asked, so they cannot make a row ambiguous. A finding names the file
line (``line``) and the message (``index``, 0-based into the list). A call still
pending when the messages end is the example's training target, not an
interruption, so it is left open. A repaired line keeps its keys in their
order; only the message list changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ..doctor import HistoryDoctor, RepairOptions, Verdict
from ..model import Edit, Finding
from ._llamafactory import LlamaFactoryReader, PositionalReader, ShareGPTReader
from .base import DROP, Detection, FormatAdapter, LineReview

if TYPE_CHECKING:
    from ..quiet import QuietLines

_FALLBACK = "chat"


class DatasetsAdapter(FormatAdapter):
    name = "datasets"
    description = "datasets: one whole conversation a line, {messages: [...]} or {conversations: [...]}"
    priority = 50
    one_history_a_line = True
    # The final calls of a training example are its target.
    close_at_end = False
    keeps_layout = True

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        for obj in samples:
            if _is_row(obj):
                return Detection.CERTAIN
        return Detection.NO

    def quiet_lines(self) -> QuietLines:
        from ._datasets_quiet import DatasetsQuietLines

        return DatasetsQuietLines(self)

    def review_line(self, number: int, obj: Any, options: Any) -> LineReview:
        key = _messages_key(obj)
        if key is None:
            return LineReview([Finding("APX104", number, "valid JSON, but not a dataset row (no messages list)")])
        messages = obj[key]
        inner = _inner_adapter(messages)(marker=self.marker)
        drop_orphans = bool(getattr(options, "drop_orphans", False))
        doctor = HistoryDoctor(inner, RepairOptions(drop_orphans=drop_orphans, keep_open_tail=True))
        # A positional reader pairs a result by the messages around it: it reads the row at once.
        planned = inner.plan(messages) if isinstance(inner, PositionalReader) else None
        out: list[Any] = []
        changed = False
        # Where the engine is quiet, a stretch of messages the inner adapter proves
        # would give it nothing to do is not fed (as ``repair_messages`` does): the
        # calls it settled are told in bulk, and the messages kept as they are.
        clean_run = getattr(inner, "clean_run", None) if planned is None and not doctor.relinks else None
        engine, end, index = doctor.engine, len(messages), 0
        while index < end:
            if clean_run is not None and engine.quiet():
                stop, settled = clean_run(messages, index)
                if settled:
                    engine.answered(settled)
                out += messages[index:stop]
                index = stop
                if index >= end:
                    break
            message = messages[index]
            index += 1
            if planned is None:
                verdict = doctor.entry(index, message)
            elif planned[index - 1] is None:
                doctor.unrecognised(index)
                verdict = None
            else:
                verdict = doctor.entry(index, message, planned[index - 1])
            if verdict is None:
                out.append(message)
            else:
                changed |= _apply(out, message, verdict)
        changed |= _apply(out, None, doctor.end(end + 1))
        refused = getattr(inner, "unfixable", None) or {}
        review = LineReview(
            findings=[_at_line(_why(f, refused), number) for f in doctor.findings],
            edits=[_edit_at_line(e, number) for e in doctor.edits],
        )
        if changed:
            row = dict(obj)  # the same keys in the same order
            row[key] = out
            review.replacement = row
            review.edits.insert(0, Edit("replace", number))
        return review


def _is_row(obj: Any) -> bool:
    return _messages_key(obj) is not None


def _messages_key(obj: Any) -> str | None:
    """The key of a row's message list: ``messages``, or ``conversations`` holding
    role-keyed messages or ShareGPT turns (every turn keyed ``from``)."""
    if type(obj) is not dict:
        return None
    if isinstance(obj.get("messages"), list):
        return "messages"
    turns = obj.get("conversations")
    if isinstance(turns, list) and turns and (_all_keyed(turns, "role") or _is_sharegpt(turns)):
        return "conversations"
    return None


def _all_keyed(turns: list[Any], key: str) -> bool:
    return all(type(t) is dict and isinstance(t.get(key), str) for t in turns)


def _is_sharegpt(turns: list[Any]) -> bool:
    """ShareGPT turns: keyed ``from``, and none keyed ``role`` (a turn of any other type is
    then reported where it stands)."""
    found = False
    for turn in turns:
        if type(turn) is dict:
            if "role" in turn:
                return False
            found = found or isinstance(turn.get("from"), str)
    return found


def _is_v1(messages: list[Any]) -> bool:
    """LLaMA-Factory v1 messages: a content part holds its text under ``value`` (every other
    message format names it ``text``), so one such part defines the row."""
    for message in messages:
        content = message.get("content") if type(message) is dict else None
        if type(content) is list:
            for part in content:
                if type(part) is dict and isinstance(part.get("type"), str) and "value" in part and "text" not in part:
                    return True
    return False


def _inner_adapter(messages: list[Any]) -> type[FormatAdapter]:
    # Imported here: the registry imports this module while it collects adapters.
    from . import AmbiguousFormatError, UnknownFormatError, adapter_class, detect_format

    if _is_sharegpt(messages):
        return ShareGPTReader
    if _is_v1(messages):
        return LlamaFactoryReader
    try:
        found = detect_format(messages[:64], _message_formats())
    except (AmbiguousFormatError, UnknownFormatError):
        found = None
    return adapter_class(_FALLBACK) if found is None else found


@cache
def _message_formats() -> tuple[type[FormatAdapter], ...]:
    from . import adapters

    return tuple(a for a in adapters() if a.message_list)


def _apply(out: list[Any], message: Any, verdict: Verdict | None) -> bool:
    """Write ``message`` (None: the end) with what the verdict adds; True if anything changed."""
    if verdict is None:
        if message is not None:
            out.append(message)
        return False
    out.extend(record for record, _pending in verdict.insert)
    if message is not None:
        if verdict.replace is None:
            out.append(message)
        elif verdict.replace is not DROP:
            out.append(verdict.replace)
    return bool(verdict.insert) or verdict.replace is not None


def _why(finding: Finding, refused: dict[str, str]) -> Finding:
    """An unrepaired call's finding, saying why no record can stand there."""
    if finding.code == "APX001" and finding.call_id in refused:
        return dataclasses.replace(finding, message=refused[finding.call_id])
    return finding


def _at_line(finding: Finding, number: int) -> Finding:
    index = None if finding.line is None else finding.line - 1
    return dataclasses.replace(finding, line=number, index=index)


def _edit_at_line(edit: Edit, number: int) -> Edit:
    # An insert stands before message ``index`` (len(messages): appended).
    return dataclasses.replace(edit, line=number, index=edit.line - 1)


ADAPTER = DatasetsAdapter
