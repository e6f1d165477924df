"""One history through an adapter and the engine: findings and a repair plan.

Pure: it takes parsed entries one at a time and says what to write around each.
The byte-level streaming (``stream``) and the library (``api``) both drive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .engine import Entry, PairingEngine, PendingCall, Step
from .formats.base import DROP, Amend, FormatAdapter
from .model import Edit, Finding

if TYPE_CHECKING:
    from .profiles import Profile, Structure

_UNRECOGNISED = "valid JSON, but not an entry of the {fmt} format"


@dataclass(slots=True)
class Verdict:
    """What to write at one entry, besides the entry itself."""

    # Not-run records to write right before the entry (or at the end).
    insert: list[tuple[Any, PendingCall]] = field(default_factory=list)
    # A replacement for the entry, ``DROP`` to remove it, None to keep it as is.
    replace: Any = None


@dataclass(frozen=True, slots=True)
class RepairOptions:
    drop_orphans: bool = False
    # Leave pending calls of the last turn alone (a file that may still be live).
    keep_open_tail: bool = False
    # Check from the first entry: for a history with no real user entry (the
    # engine's ``starts_over``), asked by the drivers, never by the user.
    history_from_start: bool = False
    # The provider the history is sent to (``--target``): a name of
    # ``profiles.TARGETS``, ``auto`` (the one the format implies) or None (no
    # profile: the format's own rules, as always).
    target: str | None = None
    # Remove empty text blocks (APX304) where the message keeps other content.
    drop_empty_blocks: bool = False


def from_start(options: RepairOptions) -> RepairOptions:
    """``options`` for a second pass over a history that holds no real user entry."""
    return replace(options, history_from_start=True)


class _AmendingEngine(PairingEngine):
    """The engine for an adapter that ``amends``: an ``Amend`` entry always gets a Step.

    So every driver (the streaming loops, ``repair_messages``, ``entry``) asks
    the doctor at that entry, and ``apply`` rewrites its line. Other adapters
    keep the plain engine and pay nothing; here each entry pays one call.
    """

    def __init__(self, *, close_at_end: bool = True, from_start: bool = False) -> None:
        super().__init__(close_at_end=close_at_end, from_start=from_start)
        # The Amend entry fed last, until ``apply`` takes it.
        self.amend: Amend | None = None
        feed, amended = self.feed, self._amended

        # A closure on the instance, not an override: half the cost a line.
        def feed_amending(line: int, entry: Entry) -> Step | None:
            step = feed(line, entry)
            if entry.__class__ is not Amend:
                return step
            return amended(line, entry, step)

        self.feed = feed_amending  # type: ignore[method-assign]

    def _amended(self, line: int, entry: Amend, step: Step | None) -> Step:
        step = step or Step()
        step.findings.append(Finding(entry.code, line, entry.message, entry.call_id))
        self.amend = entry
        return step


class HistoryDoctor:
    def __init__(self, adapter: FormatAdapter, options: RepairOptions = RepairOptions()) -> None:
        self.adapter = adapter
        self.options = options
        engine = _AmendingEngine if adapter.amends else PairingEngine
        self.engine = engine(
            close_at_end=adapter.close_at_end and not options.keep_open_tail, from_start=options.history_from_start
        )
        self.findings: list[Finding] = []
        self.edits: list[Edit] = []
        # Asked on every line, so skipped where it cannot change anything: the
        # adapter keeps the base (no links), or no line is removed.
        self._relink = type(adapter).relink is not FormatAdapter.relink and options.drop_orphans
        # The provider profile (``--target``) and its per-message checks; None
        # with no target, so a plain run pays nothing for them.
        self.profile: Profile | None = None
        self.structure: Structure | None = None
        if options.target is not None:
            self._profiled(adapter, options)
        # True where every entry must come through ``entry`` (the drivers' fast
        # loops are then left aside): a linked format that re-points lines, or a
        # profile's per-message checks.
        self.relinks = self._relink or self.structure is not None

    def _profiled(self, adapter: FormatAdapter, options: RepairOptions) -> None:
        from .profiles import Structure, resolve

        self.profile = profile = resolve(options.target, adapter.name)
        if profile is None:
            return
        adapter.alternating = profile.alternating
        if type(adapter).shape is not None and not adapter.one_history_a_line:
            self.structure = Structure(profile, drop_empty_blocks=options.drop_empty_blocks)

    def entry(self, number: int, obj: Any, classified: Entry | None = None) -> Verdict | None:
        """Feed the parsed entry numbered ``number``; None means write it as it is.

        ``classified`` is what ``classify`` says of ``obj`` when the caller
        already asked a ``pure_classify`` adapter (the repair's self-check).
        """
        if self.adapter.one_history_a_line:
            return self._review(number, obj)
        entry = self.adapter.classify(obj) if classified is None else classified
        if entry is None:
            self.unrecognised(number)
            return None
        step = self.engine.feed(number, entry)
        verdict = None if step is None else self.apply(number, step, obj)
        if self.structure is not None:
            # After the engine: a call closed here is asked whether a message split it.
            verdict = self._shape(number, obj, verdict)
        if self._relink and (verdict is None or verdict.replace is None):
            # A removed line's children must point past it (linked formats only).
            relinked = self.adapter.relink(obj)
            if relinked is not None:
                verdict = verdict or Verdict()
                verdict.replace = relinked
                self.edits.append(Edit("replace", number, relinked))
        return verdict

    def _shape(self, number: int, obj: Any, verdict: Verdict | None) -> Verdict | None:
        shape = self.adapter.shape(obj)
        if shape is None:
            return verdict
        assert self.structure is not None  # entry calls _shape only with a structure
        found = self.structure.feed(number, shape)
        if not found:
            return verdict
        self.findings.extend(found)
        if shape.empty_text and shape.droppable and self.options.drop_empty_blocks:
            current = obj if verdict is None or verdict.replace is None else verdict.replace
            if current is not DROP:
                kept = self.adapter.without_empty_text(current)
                verdict = verdict or Verdict()
                if verdict.replace is None:
                    self.edits.append(Edit("replace", number, kept))
                else:  # one replace edit a line: the last one says what is written
                    for i in range(len(self.edits) - 1, -1, -1):
                        edit = self.edits[i]
                        if edit.action == "replace" and edit.line == number:
                            self.edits[i] = Edit("replace", number, kept, edit.call_id, edit.tool, edit.arguments, edit.index)
                            break
                verdict.replace = kept
        return verdict

    def _not_split(self, step: Step, closed: list[PendingCall]) -> list[PendingCall]:
        """``closed`` without the calls a message split from here (strict targets): their
        record would stand split from its call too, so they are reported as not fixable."""
        assert self.structure is not None  # only a structure's strict split calls this
        split = {p.call.id for p in closed if self.structure.split(p.call.id)}
        if not split:
            return closed
        step.findings = [_split_finding(f) if f.code == "APX001" and f.call_id in split else f for f in step.findings]
        return [p for p in closed if p.call.id not in split]

    def unrecognised(self, number: int) -> None:
        self.findings.append(Finding("APX104", number, _UNRECOGNISED.format(fmt=self.adapter.name)))

    def _review(self, number: int, obj: Any) -> Verdict | None:
        review = self.adapter.review_line(number, obj, self.options)
        self.findings.extend(review.findings)
        self.edits.extend(review.edits)
        return None if review.replacement is None else Verdict(replace=review.replacement)

    def end(self, number: int) -> Verdict | None:
        """The history ends; ``number`` is one past the last entry."""
        step = self.engine.finish()
        verdict = None if step is None else self.apply(number, step, None)
        if self.profile is not None:
            self._level()
        return verdict

    def _level(self) -> None:
        """The findings as the target reports them (once, at the end)."""
        from .profiles import leveled

        structure = self.structure
        if structure is not None:
            self.findings.extend(structure.finish())
        assert self.profile is not None  # _level runs only under a target's profile
        self.findings = leveled(
            self.profile,
            self.findings,
            first_user_line=None if structure is None else structure.first_user_line,
            drop_orphans=self.options.drop_orphans,
        )

    def apply(self, number: int, step: Step, obj: Any) -> Verdict | None:
        """Record what the engine decided at entry ``number`` and plan the writes around it."""
        verdict: Verdict | None = None
        closed = [p for p in step.closed if p.call.fixable]
        if closed and self.structure is not None and self.structure.profile.strict_split:
            closed = self._not_split(step, closed)
        self.findings.extend(step.findings)
        if closed:
            insertion = self.adapter.not_run_records(closed, obj)
            verdict = Verdict(insert=list(zip(insertion.records, closed)))
            # One edit a call, even where one record answers several of them.
            answers = insertion.records if insertion.answers is None else insertion.answers
            for record, pending in zip(answers, closed):
                call = pending.call
                self.edits.append(Edit("insert", number, record, call.id, call.name, call.arguments))
            if insertion.replace_next is not None:
                verdict.replace = insertion.replace_next
                self.edits.append(Edit("replace", number, insertion.replace_next))
        amend = getattr(self.engine, "amend", None)
        if amend is not None:
            # The engine fed this very entry (every driver applies a Step at once).
            self.engine.amend = None  # type: ignore[attr-defined]  # an _AmendingEngine's (the getattr above)
            verdict = verdict or Verdict()
            if verdict.replace is None:
                verdict.replace = amend.replacement
                self.edits.append(Edit("replace", number, amend.replacement))
            # else: the not-run records went into this message, already put in the order it wants.
        if step.stray and self.options.drop_orphans and obj is not None:
            ids = [r.call_id for r in step.stray]
            kept = self.adapter.drop_results(verdict.replace if verdict and verdict.replace is not None else obj, ids)
            verdict = verdict or Verdict()
            verdict.replace = kept
            for call_id in ids:
                self.edits.append(Edit("remove", number, None, call_id))
        return verdict


def _split_finding(finding: Finding) -> Finding:
    return replace(
        finding,
        fixable=False,
        message=finding.message + "; a message stands between the call and where its record would go, which the target refuses,"
        " so it is reported but not repaired",
    )


def is_drop(value: Any) -> bool:
    return value is DROP
