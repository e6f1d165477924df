"""The project's policy over the runner's reports.

The runner checks one file at a time. This applies what the project says to
every report: a transcript inside the portable project contract is never
edited (its fix becomes a dry run) and is flagged APX201, the configuration's
select, ignore and per-file-ignores filter the findings, and every interrupted
call gets its recovery advice. Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from .config import Config
from .discover import contract_reason
from .model import FileReport, Finding
from .runner import Mode, RunOptions, iter_paths


class Planned:
    """One input and how it is run. A plain class: a dataclass costs a CLI's start-up a millisecond."""

    __slots__ = ("options", "path", "refused")

    def __init__(self, path: str, options: RunOptions, refused: str | None = None) -> None:
        self.path = path
        self.options = options
        # Why an in-place fix of this file became a dry run: it is in the contract.
        self.refused = refused


def plan(paths: Sequence[str], options: RunOptions | Sequence[RunOptions]) -> list[Planned]:
    """One ``Planned`` a path; ``options`` is one for all, or one a path."""
    per_path = [options] * len(paths) if isinstance(options, RunOptions) else list(options)
    planned = []
    for path, each in zip(paths, per_path):
        if each.mode is not Mode.IN_PLACE:
            # Only an in-place fix needs the contract answer before the run; the
            # others are asked in ``finish``, while the workers run (--jobs).
            planned.append(Planned(path, each))
            continue
        reason = contract_reason(path)
        if reason is None:
            planned.append(Planned(path, each))
        else:
            # The contract is never written: the file is still checked, as a dry run.
            planned.append(Planned(path, replace(each, mode=Mode.DRY_RUN), reason))
    return planned


def run(planned: Sequence[Planned], settings: Config, jobs: int | None) -> Iterator[FileReport]:
    """The finished reports of ``planned``, in order; on ``jobs`` processes (None: all cores)."""
    done = iter_paths([p.path for p in planned], [p.options for p in planned], jobs)
    for item, report in zip(planned, done):
        yield finish(item, report, settings)


def finish(item: Planned, report: FileReport, settings: Config) -> FileReport:
    reason = item.refused or contract_reason(item.path)
    report.refused = item.refused
    if reason is not None and report.error is None and report.skipped is None:
        message = f"a transcript in the portable project contract ({reason}); transcripts are runtime state"
        report.findings.insert(0, Finding("APX201", None, message))
    report.findings = [f for f in report.findings if settings.enabled(f.code, item.path)]
    if report.findings:  # advice is for interrupted calls; a clean run never imports it
        from .advice import annotate

        annotate(report, item.options.mode.value, settings.read_only_tools, settings.side_effect_tools)
    return report


def holds_call(report: FileReport, call_id: str) -> bool:
    """Whether one of ``report``'s findings is about the call ``call_id``."""
    return any(f.call_id == call_id for f in report.findings)


def only_call(reports: Sequence[FileReport], call_id: str) -> list[FileReport]:
    """The reports that hold ``call_id``, with only its findings; files that could not be read stay.

    An unreadable file may hold the call too: it is reported, never dropped in silence.
    """
    out = []
    for report in reports:
        if report.error is not None:
            out.append(report)
        elif holds_call(report, call_id):
            report.findings = [f for f in report.findings if f.call_id == call_id]
            out.append(report)
    return out
