"""Fine-tuning datasets: one whole conversation a line.

    {"messages": [...], "tools": [...], ...}
    {"conversations": [{"role": ..., "content": ...}, ...], ...}

Each line is checked as its own history, with the adapter of the format its
messages are in, told apart line by line among the formats of message lists
(chat when nothing decides). A runtime's record envelopes, such as codex or
claude-code, are never asked, so they cannot make a row ambiguous. A finding
names the file line (``line``) and the message (``index``, 0-based into the
list). A call still pending when the messages end is the example's training
target, not an interruption, so it is left open. A repaired line keeps its
keys in their order; only the message list changes.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, Sequence

from ..doctor import HistoryDoctor, RepairOptions, Verdict
from ..model import Edit, Finding
from .base import DROP, Detection, FormatAdapter, LineReview

_FALLBACK = "chat"


class DatasetsAdapter(FormatAdapter):
    name = "datasets"
    description = "datasets: one whole conversation a line, {messages: [...], tools: [...]}"
    priority = 50
    one_history_a_line = True
    # The final calls of a training example are its target.
    close_at_end = False

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        for obj in samples:
            if _is_row(obj):
                return Detection.CERTAIN
        return Detection.NO

    def review_line(self, number: int, obj: Any, options: Any) -> LineReview:
        key = _messages_key(obj)
        if key is None:
            return LineReview([Finding("APX104", number, "valid JSON, but not a dataset row (no messages list)")])
        messages = obj[key]
        inner = _inner_adapter(messages)(marker=self.marker)
        drop_orphans = bool(getattr(options, "drop_orphans", False))
        doctor = HistoryDoctor(inner, RepairOptions(drop_orphans=drop_orphans, keep_open_tail=True))
        out: list[Any] = []
        changed = False
        for position, message in enumerate(messages, 1):
            verdict = doctor.entry(position, message)
            if verdict is None:
                out.append(message)
            else:
                changed |= _apply(out, message, verdict)
        changed |= _apply(out, None, doctor.end(len(messages) + 1))
        review = LineReview(
            findings=[_at_line(f, number) for f in doctor.findings],
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
    role-keyed messages (ShareGPT's ``from``/``value`` turns are another format)."""
    if type(obj) is not dict:
        return None
    if isinstance(obj.get("messages"), list):
        return "messages"
    turns = obj.get("conversations")
    if isinstance(turns, list) and turns and all(type(t) is dict and isinstance(t.get("role"), str) for t in turns):
        return "conversations"
    return None


def _inner_adapter(messages: list) -> type[FormatAdapter]:
    # Imported here: the registry imports this module while it collects adapters.
    from . import AmbiguousFormatError, UnknownFormatError, adapter_class, detect_format

    try:
        found = detect_format(messages[:64], _message_formats())
    except (AmbiguousFormatError, UnknownFormatError):
        found = None
    return adapter_class(_FALLBACK) if found is None else found


@cache
def _message_formats() -> tuple[type[FormatAdapter], ...]:
    from . import adapters

    return tuple(a for a in adapters() if a.message_list)


def _apply(out: list, message: Any, verdict: Verdict | None) -> bool:
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


def _at_line(finding: Finding, number: int) -> Finding:
    index = None if finding.line is None else finding.line - 1
    return dataclasses.replace(finding, line=number, index=index)


def _edit_at_line(edit: Edit, number: int) -> Edit:
    # An insert stands before message ``index`` (len(messages): appended).
    return dataclasses.replace(edit, line=number, index=edit.line - 1)


ADAPTER = DatasetsAdapter
