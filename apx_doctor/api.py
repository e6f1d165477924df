"""The library: check or repair a history that is already in memory.

For runtimes that repair a history right before they send it to a model::

    from apx_doctor import repair_messages
    messages = repair_messages(messages).messages

The format is told from the messages (``format="auto"``, the default); a list
no format fits raises ``UnrecognisedHistoryError`` rather than passing as
clean. An empty list is clean.

Messages may be plain dicts, SDK objects (pydantic models such as the
``openai`` and ``anthropic`` types, also inside dicts), LangChain
``BaseMessage`` objects or pydantic-ai ``ModelMessage`` objects: the repaired
list holds the caller's own objects, unchanged and in order, and the records
it inserts are of the same family (``apx_doctor.objects``).

Positions: every ``index`` the library returns is **0-based**, a position in a
list: ``Finding.index`` and ``Edit.index`` in the input list,
``Inserted.index`` in ``RepairResult.messages``. ``Finding.line`` and
``Edit.line`` keep their meaning, the **1-based** number of the message (so
``line == index + 1``), as the CLI numbers lines. One exception is the
``datasets`` format, where each item of the list is a whole conversation:
there ``line`` is the 1-based item and ``index`` the 0-based message inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

from . import objects
from .doctor import HistoryDoctor, RepairOptions, Verdict, from_start
from .formats import AmbiguousFormatError, UnknownFormatError, adapter_class, contradicted_by, detect_format
from .formats.base import DEFAULT_MARKER, DROP, FormatAdapter
from .model import Edit, Finding

__all__ = [
    "DEFAULT_MARKER",
    "Format",
    "Inserted",
    "RepairResult",
    "Target",
    "UnrecognisedHistoryError",
    "check_messages",
    "repair_messages",
]

# The names ``format`` takes: "auto" and every format of the registry
# (``apx_doctor.formats.format_names()``; tests/test_api_typing.py keeps them equal).
Format = Literal[
    "auto",
    "chat",
    "anthropic",
    "bedrock-converse",
    "gemini-api",
    "responses",
    "claude-code",
    "qwen-code",
    "codex",
    "pi",
    "factory-droid",
    "datasets",
    "copilot-cli",
    "gemini-cli",
    "grok-cli",
    "kimi",
    "cline",
    "opencode",
]

# The providers ``target`` takes (``apx_doctor.profiles.TARGETS``), and "auto":
# the one the format implies. tests/library/test_targets.py keeps them equal.
Target = Literal["auto", "anthropic", "openai-chat", "openai-responses", "bedrock", "gemini", "deepseek"]


@dataclass(frozen=True, slots=True)
class Inserted:
    """One not-run record in the repaired list.

    ``index`` is its 0-based position in ``RepairResult.messages``, so
    ``result.messages[inserted.index] is inserted.record``. Where a format
    answers a call inside the call's own message instead of in a new one
    (``gemini-cli``), ``record`` is that rewritten message and ``index`` its
    position; several calls of one message then share it.
    """

    index: int  # 0-based position in ``RepairResult.messages``
    call_id: str
    tool: str | None
    record: Any


@dataclass(slots=True)
class RepairResult:
    """A repaired copy of a message list and what was found in it.

    ``messages`` holds the caller's messages that needed no change as the very
    same objects. ``findings`` are the check's findings (``index`` 0-based and
    ``line`` 1-based in the input list); ``removed`` and ``edits`` are the
    changes, numbered the same way (an insert stands before its ``index``; one
    past the last message means appended).
    """

    messages: list[Any]
    inserted: list[Inserted] = field(default_factory=list)
    removed: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when ``messages`` differs from the input."""
        return bool(self.inserted or self.removed) or any(e.action == "replace" for e in self.edits)

    edits: list[Edit] = field(default_factory=list)


class UnrecognisedHistoryError(ValueError):
    """The list is in no format the library reads (or not in the one named): nothing was checked.

    A history the library did not understand is never answered with "nothing
    wrong"; the message says what the list looks like.
    """


def check_messages(
    messages: Sequence[Any], *, format: Format = "auto", marker: str = DEFAULT_MARKER, target: Target | None = None
) -> list[Finding]:
    """The findings for a list of messages; the list is not changed.

    Each finding's ``index`` is the 0-based position of the message it is about
    and ``line`` the same position 1-based. Raises ``UnrecognisedHistoryError``
    for a list no format fits (or not the one named); ``[]`` is clean.

    ``target`` names the provider the history is sent to, as ``--target`` does:
    every structural refusal of that provider is an error (the APX3xx rules
    among them), and what it accepts is a warning or not reported. None (the
    default) checks by the format's own rules; ``"auto"`` takes the provider
    the format implies. An unknown name raises ``ValueError``.
    """
    # The findings of a repair with the default options are exactly the
    # check's; the repaired list it also builds costs an append a message.
    return repair_messages(messages, format=format, marker=marker, target=target).findings


def repair_messages(
    messages: Sequence[Any],
    *,
    format: Format = "auto",
    marker: str = DEFAULT_MARKER,
    drop_orphans: bool = False,
    keep_open_tail: bool = False,
    target: Target | None = None,
    drop_empty_blocks: bool = False,
) -> RepairResult:
    """A repaired copy of ``messages``: every call answered. The input is not changed.

    Messages that need no change appear in the result as the same objects.
    Each unanswered call gets one not-run record, after the results that did
    arrive and right before the next non-tool message (or at the end), listed
    in ``inserted`` with its 0-based position in the result. ``drop_orphans``
    also removes the results that answer nothing (APX002-APX004);
    ``keep_open_tail`` leaves the calls of the last turn open (a turn still
    running). ``target`` repairs for that provider, as ``--target`` does (see
    ``check_messages``): under a provider that refuses two messages of one
    role in a row, a record joins the next user message instead of standing
    alone; ``drop_empty_blocks`` (only with a target) also removes the empty
    text blocks it reports as APX304 from messages that keep other content.

    ``format="gemini-cli"`` reads the ``messages`` array of a Gemini CLI session
    document: there the answer goes into the call's own ``toolCalls`` record
    (its ``result``, and the status ``cancelled``), as ``apx-doctor fix`` writes
    it, so the message that made the call is replaced by a rewritten copy.
    """
    options = RepairOptions(
        drop_orphans=drop_orphans,
        keep_open_tail=keep_open_tail,
        target=_target(target),
        drop_empty_blocks=drop_empty_blocks,
    )
    if drop_empty_blocks and target is None:
        raise ValueError("drop_empty_blocks removes what a target reports (APX304): name the target too")
    if type(messages) is not list and type(messages) is not tuple:
        messages = list(messages)
    if objects.any_objects(messages[:64]):
        return _repair_objects(messages, format, marker, options)
    adapter = _adapter(format, messages)
    try:
        return _run(adapter, messages, marker, options, objects.nested_check(adapter.name))
    except objects.HoldsObjects:
        # An SDK object further in: the list is read again, as objects.
        return _repair_objects(messages, format, marker, options)


def _target(target: str | None) -> str | None:
    from .profiles import check_target

    return check_target(target)


def _run(
    adapter: type[FormatAdapter], messages: Sequence[Any], marker: str, options: RepairOptions, nested: Any = None
) -> RepairResult:
    if hasattr(adapter, "answer_in_place"):
        result, doctor = _repair_in_place(adapter(marker=marker), messages, options)
        if doctor.engine.starts_over:
            result, doctor = _repair_in_place(adapter(marker=marker), messages, from_start(options))
        return result
    result, doctor = _repair(adapter(marker=marker), messages, options, nested)
    if doctor.engine.starts_over:
        # No real user entry, but calls: the whole list is the history.
        result, doctor = _repair(adapter(marker=marker), messages, from_start(options), nested)
    return result


def _repair_objects(messages: Sequence[Any], format: str, marker: str, options: RepairOptions) -> RepairResult:
    """``repair_messages`` for a list that holds SDK objects (``apx_doctor.objects``)."""
    kind = objects.family(messages)
    if kind == "langchain":
        if format not in ("auto", "chat"):
            raise UnrecognisedHistoryError(f"LangChain messages are read as chat messages, not {format} (pass format='auto')")
        return _run(objects.LangChainAdapter, messages, marker, options)
    if kind == "pydantic-ai":
        if format != "auto":
            raise UnrecognisedHistoryError(f"pydantic-ai messages have a reader of their own, not {format} (pass format='auto')")
        return _run(objects.PydanticAIAdapter, messages, marker, options)
    # SDK models: read as the dicts they dump to; the caller's objects go back in their place.
    views = [objects.view(m) for m in messages]
    result = _run(_adapter(format, views), views, marker, options)
    originals = {id(v): m for v, m in zip(views, messages)}
    result.messages = [originals.get(id(m), m) for m in result.messages]
    return result


def _repair(
    adapter: FormatAdapter, messages: Sequence[Any], options: RepairOptions, nested: Any = None
) -> tuple[RepairResult, HistoryDoctor]:
    doctor = HistoryDoctor(adapter, options)
    out: list[Any] = []
    inserted: list[Inserted] = []
    if doctor.adapter.one_history_a_line or doctor.relinks:
        _feed_each(doctor, messages, out, inserted, nested)
    else:
        _feed_unrolled(doctor, messages, out, inserted, nested)
    verdict = _end(doctor, len(messages) + 1)
    if verdict is not None:
        _insert(out, inserted, verdict.insert)
    return _result(doctor, out, inserted), doctor


def _feed_each(doctor: HistoryDoctor, messages: Sequence[Any], out: list[Any], inserted: list[Inserted], nested: Any) -> None:
    """Every message through ``HistoryDoctor.entry``: a history a message, or a repair that relinks."""
    index = 0
    try:
        for index, message in enumerate(messages):
            if type(message) is not dict and objects.is_object(message):
                raise objects.HoldsObjects
            if nested is not None and nested(message):
                raise objects.HoldsObjects
            _place(out, inserted, doctor.entry(index + 1, message), message)
    except _ADAPTER_TROUBLE as exc:
        raise _trouble(doctor, f"the message at index {index}", exc) from exc


def _feed_unrolled(doctor: HistoryDoctor, messages: Sequence[Any], out: list[Any], inserted: list[Inserted], nested: Any) -> None:
    """``HistoryDoctor.entry`` unrolled, as in the streaming check: the doctor is asked only where needed.

    A runtime calls this before every request, on histories of any length.
    Where the engine is quiet (its history started, nothing pending), an
    adapter that has ``clean_run`` tells how far the messages would give it
    nothing to do; those are not fed, only the calls they settled are recorded,
    so the result is the same to the finding and the object. The kept messages
    are copied into ``out`` in slices, up to each place that changes.

    ``nested`` tests a classified message for SDK objects where its calls live
    (``objects.nested_check``); one found raises ``objects.HoldsObjects``, as
    does a message that is an SDK object itself.
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
                if type(message) is not dict and objects.is_object(message):
                    raise objects.HoldsObjects
                doctor.unrecognised(number)
                index = number
                continue
            if nested is not None and nested(message):
                raise objects.HoldsObjects
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


def _repair_in_place(
    adapter: FormatAdapter, messages: Sequence[Any], options: RepairOptions
) -> tuple[RepairResult, HistoryDoctor]:
    """The repair of a format that answers a call inside the call's own message (Gemini CLI).

    As ``apx_doctor.documents`` repairs a session file: the engine pairs the
    messages as usual, and each call it closes is answered in the message that
    made it (``answer_in_place``), which the result holds in that message's
    place. Nothing is inserted between messages.
    """
    adapter.patching = True  # type: ignore[attr-defined]
    doctor = HistoryDoctor(adapter, options)
    out: list[Any] = []
    at: dict[int, int] = {}  # message number -> its position in ``out``
    answers: list[tuple[Any, Any]] = []
    index = 0
    try:
        for index, message in enumerate(messages):
            verdict = doctor.entry(index + 1, message)
            if verdict is not None:
                answers.extend(verdict.insert)
                if verdict.replace is DROP:
                    continue
                if verdict.replace is not None:
                    message = verdict.replace
            at[index + 1] = len(out)
            out.append(message)
        verdict = doctor.end(len(messages) + 1)
        if verdict is not None:
            answers.extend(verdict.insert)
    except _ADAPTER_TROUBLE as exc:
        raise _trouble(doctor, f"the message at index {index}", exc) from exc
    by_message: dict[int, list[Any]] = {}
    for _record, pending in answers:
        by_message.setdefault(pending.line, []).append(pending)
    inserted: list[Inserted] = []
    edits = [e for e in doctor.edits if e.action != "insert"]
    for number, closed in sorted(by_message.items()):
        position = at[number]
        rewritten = adapter.answer_in_place(out[position], [p.call for p in closed])  # type: ignore[attr-defined]
        out[position] = rewritten
        edits.append(Edit("replace", number, rewritten, index=number - 1))
        inserted += [Inserted(position, p.call.id, p.call.name, rewritten) for p in closed]
    doctor.edits = edits
    return _result(doctor, out, inserted), doctor


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
    if doctor.adapter.one_history_a_line:
        # A dataset row is a whole conversation: ``index`` is already the message inside it.
        findings, edits = doctor.findings, list(doctor.edits)
    else:
        findings = [_numbered(f) for f in doctor.findings]
        edits = [_numbered_edit(e) for e in doctor.edits]
    return RepairResult(
        messages=out,
        inserted=inserted,
        removed=[e for e in edits if e.action == "remove"],
        findings=sorted(findings, key=Finding.sort_key),
        edits=edits,
    )


def _with_index(cls: Any) -> Any:
    """A function that copies a ``cls`` (a dataclass with ``line`` and ``index``) with ``index = line - 1``.

    A histories' worth of findings go through it; ``dataclasses.replace`` costs
    ten times as much. Every field is copied, whatever fields the class grows.
    """
    names = [f.name for f in fields(cls)]
    get = attrgetter(*names)
    at = names.index("index")

    def numbered(item: Any) -> Any:
        if item.index is not None or item.line is None:
            return item
        values = list(get(item))
        values[at] = item.line - 1
        return cls(*values)

    return numbered


_numbered = _with_index(Finding)
_numbered_edit = _with_index(Edit)


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
    return ValueError(f"{where}: the {doctor.adapter.name} reader cannot handle it ({type(exc).__name__}, a bug worth reporting)")


def _insert(out: list[Any], inserted: list[Inserted], records: list[Any]) -> None:
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


def _looks(samples: list[Any]) -> str:
    """What the first item of a list looks like, without quoting its contents."""
    first = samples[0]
    if isinstance(first, dict):
        # Keys only where they look like field names: the list is untrusted text.
        keys = ", ".join(repr(k) for k in list(first)[:6] if isinstance(k, str) and k.isidentifier() and len(k) <= 32)
        return f"its first item is a dict with keys {keys or 'none'}"
    return f"its first item is a {type(first).__name__}"
