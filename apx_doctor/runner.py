"""Options in, one ``FileReport`` per input out.

The runner ties the byte-level pass to files: it picks the sink for the write
mode, commits or aborts it, and turns what stops a run into a report value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum

from . import files, stream
from .doctor import RepairOptions
from .errors import DoctorError, UsageError
from .formats.base import DEFAULT_MARKER
from .model import FileReport


class Mode(str, Enum):
    CHECK = "check"
    DRY_RUN = "dry-run"
    IN_PLACE = "in-place"
    OUTPUT = "output"


@dataclass(frozen=True, slots=True)
class RunOptions:
    mode: Mode = Mode.CHECK
    output: str | None = None
    input_format: str = "auto"
    marker: str = DEFAULT_MARKER
    repair: RepairOptions = field(default_factory=RepairOptions)
    # fix --salvage: unparseable lines go to <file>.rejected.jsonl.
    salvage: bool = False

    def stream_config(self) -> stream.StreamConfig:
        return stream.StreamConfig(self.input_format, self.marker, self.repair, self.salvage)


def run_path(path: str, options: RunOptions) -> FileReport:
    report = FileReport(path)
    sink = None
    try:
        with files.open_lines(path) as lines:
            sink = _sink(path, options)
            result = stream.run(lines, options.stream_config(), sink)
        report.format = result.format
        report.findings = result.findings
        report.edits = result.edits
        report.changed = result.changed
        if sink is not None:
            if result.unparsed or (options.mode is Mode.IN_PLACE and not result.changed):
                sink.abort()
            else:
                report.written = sink.commit()
        sink = None
    except DoctorError as exc:
        report.error = _naming(path, str(exc))
    finally:
        if sink is not None:
            sink.abort()
    return report


def _naming(path: str, message: str) -> str:
    """Every message that stops a run names the input it is about."""
    shown = files.describe(path)
    if message.startswith((shown, os.path.realpath(path))):
        return message
    return f"{shown}: {message}"


def _sink(path: str, options: RunOptions):
    sidecar = None
    if options.salvage and options.mode in (Mode.IN_PLACE, Mode.OUTPUT):
        if path == files.STDIN:
            raise UsageError("--salvage needs a file: the rejected lines are kept beside it")
        sidecar = files.Sidecar(path)
    if options.mode is Mode.IN_PLACE:
        return files.InPlaceSink(path, sidecar)
    if options.mode is Mode.OUTPUT:
        if options.output == files.STDIN:
            return files.StdoutSink(sidecar)
        return files.OutputFileSink(options.output, sidecar)
    if options.mode is Mode.DRY_RUN:
        return _NullSink()
    return None


class _NullSink:
    """A dry run still plans and self-checks the repair; it only discards the bytes."""

    def keep(self, raw: bytes) -> None:
        pass

    def write(self, data: bytes) -> None:
        pass

    def drop(self, raw: bytes) -> None:
        pass

    def reject(self, raw: bytes) -> None:
        pass

    def commit(self) -> bool:
        return False

    def abort(self) -> None:
        pass
