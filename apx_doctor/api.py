"""The library: check or repair a history that is already in memory.

For runtimes that repair a history right before they send it to a model::

    from apx_doctor import repair_messages
    messages = repair_messages(messages).messages

A finding's ``line`` is the 1-based index of the message in the list. The
format is told from the messages (``format="auto"``, the default); a list no
format fits raises ``UnrecognisedHistoryError`` rather than passing as clean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .doctor import HistoryDoctor, RepairOptions, Verdict, from_start
from .formats import AmbiguousFormatError, UnknownFormatError, adapter_class, contradicted_by, detect_format
from .formats.base import DEFAULT_MARKER, DROP, FormatAdapter
from .model import Edit, Finding


@dataclass(frozen=True, slots=True)
class Inserted:
    """One not-run record in the repaired list."""

    index: int  # 0-based position in ``RepairResult.messages``
    call_id: str
    tool: str | None
    record: Any


@dataclass(slots=True)
class RepairResult:
    messages: list[Any]
    inserted: list[Inserted] = field(default_factory=list)
    removed: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.inserted or self.removed) or any(e.action == "replace" for e in self.edits)

    edits: list[Edit] = field(default_factory=list)


class UnrecognisedHistoryError(ValueError):
    """The list is in no format the library reads (or not in the one named): nothing was checked.

    A history the library did not understand is never answered with "nothing
    wrong"; the message says what the list looks like.
    """


def check_messages(
    messages: Sequence[Any], *, format: str = "auto", marker: str = DEFAULT_MARKER
) -> list[Finding]:
    """The findings for a list of messages; the list is not changed."""
    # The findings of a repair with the default options are exactly the
    # check's; the repaired list it also builds costs an append a message.
    return repair_messages(messages, format=format, marker=marker).findings


def repair_messages(
    messages: Sequence[Any],
    *,
    format: str = "auto",
    marker: str = DEFAULT_MARKER,
    drop_orphans: bool = False,
    keep_open_tail: bool = False,
) -> RepairResult:
    """A repaired copy of ``messages``: every call answered. The input is not changed.

    Messages that need no change appear in the result as the same objects.
    """
    options = RepairOptions(drop_orphans=drop_orphans, keep_open_tail=keep_open_tail)
    if type(messages) is not list and type(messages) is not tuple:
        messages = list(messages)
    adapter = _adapter(format, messages)
    result, doctor = _repair(adapter(marker=marker), messages, options)
    if doctor.engine.starts_over:
        # No real user entry, but calls: the whole list is the history.
        result, doctor = _repair(adapter(marker=marker), messages, from_start(options))
    return result


def _repair(adapter: FormatAdapter, messages: Sequence[Any], options: RepairOptions) -> tuple[RepairResult, HistoryDoctor]:
    doctor = HistoryDoctor(adapter, options)
    out: list[Any] = []
    inserted: list[Inserted] = []
    if doctor.adapter.one_history_a_line or doctor.relinks:
        _feed_each(doctor, messages, out, inserted)
    else:
        _feed_unrolled(doctor, messages, out, inserted)
    verdict = _end(doctor, len(messages) + 1)
    if verdict is not None:
        _insert(out, inserted, verdict.insert)
    return _result(doctor, out, inserted), doctor


def _feed_each(doctor: HistoryDoctor, messages: Sequence[Any], out: list[Any], inserted: list[Inserted]) -> None:
    """Every message through ``HistoryDoctor.entry``: a history a message, or a repair that relinks."""
    index = 0
    try:
        for index, message in enumerate(messages):
            _place(out, inserted, doctor.entry(index + 1, message), message)
    except _ADAPTER_TROUBLE as exc:
        raise _trouble(doctor, f"the message at index {index}", exc) from exc


def _feed_unrolled(doctor: HistoryDoctor, messages: Sequence[Any], out: list[Any], inserted: list[Inserted]) -> None:
    """``HistoryDoctor.entry`` unrolled, as in the streaming check: the doctor is asked only where needed.

    A runtime calls this before every request, on histories of any length.
    Where the engine is quiet (its history started, nothing pending), an
    adapter that has ``clean_run`` tells how far the messages would give it
    nothing to do; those are not fed, only the calls they settled are recorded,
    so the result is the same to the finding and the object. The kept messages
    are copied into ``out`` in slices, up to each place that changes.
    """
    clean_run, quiet, answered = doctor.adapter.clean_run, doctor.engine.quiet, doctor.engine.answered
    classify, feed, apply = doctor.adapter.classify, doctor.engine.feed, doctor.apply
    end = len(messages)
    copied = 0  # messages[:copied] are in ``out`` (or were replaced there)
    index = 0
    try:
        while index < end:
            if clean_run is not None and quiet():
                index, settled = clean_run(messages, index)
                if settled:
                    answered(settled)
                if index >= end:
                    break
            message = messages[index]
            number = index + 1
            entry = classify(message)
            if entry is None:
                doctor.unrecognised(number)
                index = number
                continue
            step = feed(number, entry)
            verdict = None if step is None else apply(number, step, message)
            if verdict is not None:
                out += messages[copied:index]
                _place(out, inserted, verdict, message)
                copied = number
            index = number
    except _ADAPTER_TROUBLE as exc:
        raise _trouble(doctor, f"the message at index {index}", exc) from exc
    out += messages[copied:]


def _place(out: list[Any], inserted: list[Inserted], verdict: Verdict | None, message: Any) -> None:
    """``message`` into ``out`` as ``verdict`` says: records before it, and it kept, replaced or dropped."""
    if verdict is None:
        out.append(message)
        return
    _insert(out, inserted, verdict.insert)
    if verdict.replace is None:
        out.append(message)
    elif verdict.replace is not DROP:
        out.append(verdict.replace)


def _result(doctor: HistoryDoctor, out: list[Any], inserted: list[Inserted]) -> RepairResult:
    return RepairResult(
        messages=out,
        inserted=inserted,
        removed=[e for e in doctor.edits if e.action == "remove"],
        findings=sorted(doctor.findings, key=Finding.sort_key),
        edits=list(doctor.edits),
    )


# What an adapter raises on a value of a type it did not expect. None should, on
# any JSON value (tests/test_type_confusion.py); this is the backstop, as in
# ``stream.run``: a runtime gets a ValueError naming the message, never a
# TypeError from deep inside an adapter.
_ADAPTER_TROUBLE = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)


def _end(doctor: HistoryDoctor, number: int) -> Verdict | None:
    try:
        return doctor.end(number)
    except _ADAPTER_TROUBLE as exc:
        raise _trouble(doctor, "the end of the messages", exc) from exc


def _trouble(doctor: HistoryDoctor, where: str, exc: BaseException) -> ValueError:
    # The cause is chained for the bug report; the message itself quotes no content.
    return ValueError(
        f"{where}: the {doctor.adapter.name} reader cannot handle it ({type(exc).__name__}, a bug worth reporting)"
    )


def _insert(out: list[Any], inserted: list[Inserted], records: list) -> None:
    for record, pending in records:
        inserted.append(Inserted(len(out), pending.call.id, pending.call.name, record))
        out.append(record)


def _adapter(name: str, messages: Sequence[Any]) -> type[FormatAdapter]:
    """The format of ``messages``: told from them (``auto``), or the one named if they fit it."""
    samples = list(messages[:64])
    if name != "auto":
        chosen = adapter_class(name)
        likely = contradicted_by(chosen, samples)
        if likely is not None:
            raise UnrecognisedHistoryError(
                f"the list holds no {name} messages; it looks like {likely.name} (pass format={likely.name!r}, or 'auto')"
            )
        return chosen
    if not samples:
        return adapter_class("chat")  # an empty list is clean in every format
    try:
        found = detect_format(samples)
    except (AmbiguousFormatError, UnknownFormatError) as exc:
        raise UnrecognisedHistoryError(f"cannot tell the format of the list: {exc}; {_looks(samples)}") from None
    if found is None:
        raise UnrecognisedHistoryError(f"the list holds no message objects; {_looks(samples)}")
    return found


def _looks(samples: list) -> str:
    """What the first item of a list looks like, without quoting its contents."""
    first = samples[0]
    if isinstance(first, dict):
        # Keys only where they look like field names: the list is untrusted text.
        keys = ", ".join(repr(k) for k in list(first)[:6] if isinstance(k, str) and k.isidentifier() and len(k) <= 32)
        return f"its first item is a dict with keys {keys or 'none'}"
    return f"its first item is a {type(first).__name__}"
