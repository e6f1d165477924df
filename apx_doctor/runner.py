"""Options in, one ``FileReport`` per input out.

The runner ties the byte-level pass to files: it picks the sink for the write
mode, commits or aborts it, and turns what stops a run into a report value.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Self

from . import files, stream
from .doctor import RepairOptions, from_start
from .errors import DoctorError, NotATranscriptError, UsageError
from .formats.base import DEFAULT_MARKER
from .model import FileReport

if TYPE_CHECKING:
    import threading
    from multiprocessing.context import BaseContext
    from tempfile import SpooledTemporaryFile


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
    # Draw a byte progress bar on stderr for a file that takes a while (the CLI
    # sets it only when stderr is a terminal).
    progress: bool = False
    # A file that fits no format is reported as skipped, not as an error (the
    # CLI sets it for files it found by walking a folder or an agent home).
    skip_unrecognised: bool = False
    # fix --in-place --force: rewrite even a file another process holds open for writing.
    force: bool = False
    # fix --in-place --backup: keep the original bytes beside the file (<file>.bak, .bak.1, ...).
    backup: bool = False

    def stream_config(self) -> stream.StreamConfig:
        return stream.StreamConfig(self.input_format, self.marker, self.repair, self.salvage)


def run_path(path: str, options: RunOptions) -> FileReport:
    from . import databases

    # A FIFO is never opened blocking for --in-place (open_for_rewrite refuses it at once).
    if not (options.mode is Mode.IN_PLACE and not _regular(path)) and databases.is_database(path):
        # OpenCode's session store: read and repaired through SQLite, not as lines.
        return databases.run_path(path, options)
    report = FileReport(path)
    sink = None
    try:
        # An in-place fix reads a regular file it holds locked until the commit (files.open_for_rewrite).
        opened = files.open_for_rewrite(path) if options.mode is Mode.IN_PLACE and path != files.STDIN else files.open_lines(path)
        with opened as lines, _ByteProgress(lines, path, options.progress):
            source = _Replayable(lines)
            sink = _sink(path, options, lines)
            config = options.stream_config()
            result = stream.run(source.first(), config, sink)
            if result.starts_over:
                # No real user entry, but calls: check the whole file from its first line.
                if sink is not None:
                    sink.abort()
                    sink = None
                sink = _sink(path, options, lines)
                result = stream.run(source.again(), replace(config, repair=from_start(config.repair)), sink)
            report.format = result.format
            report.findings = result.findings
            report.edits = result.edits
            report.changed = result.changed
            if sink is not None:
                # Inside the ``with``: an in-place fix commits while it still holds the file's lock.
                if result.unparsed or (options.mode is Mode.IN_PLACE and not result.changed):
                    sink.abort()
                    if result.unparsed and options.mode is Mode.OUTPUT and options.output == files.STDIN:
                        # A script reading the transcript from stdout must tell "printed" from "printed
                        # nothing": the latter is an error (exit 2), its findings say why.
                        report.error = (
                            f"{files.describe(path)}: nothing was printed: lines that are not JSON stop the repair "
                            "(see the findings; --salvage moves them out)"
                        )
                else:
                    report.written = sink.commit()
                    report.backup = getattr(sink, "backup", None)
                    _tell(getattr(sink, "notes", ()))
            sink = None
    except NotATranscriptError as exc:
        if options.skip_unrecognised:
            report.skipped = str(exc)
        else:
            report.error = _naming(path, str(exc))
    except DoctorError as exc:
        report.error = _naming(path, str(exc))
        # A replace that went through before the error (bytes carried over) keeps its backup.
        report.backup = getattr(sink, "backup", None)
    except MemoryError:
        report.error = f"{files.describe(path)}: out of memory while reading it (a line too long to hold?); nothing was written"
    finally:
        if sink is not None:
            sink.abort()
    return report


def _regular(path: str) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class _Replayable:
    """The lines of an input, to be read a second time where a history must start over.

    A file is read again from its start; standard input cannot be, so its
    lines are kept (in memory, then on disk past 16 MiB) as they are read.
    """

    def __init__(self, handle: Any) -> None:
        # A binary file, or (not seekable) an iterator of its lines.
        self.handle: BinaryIO = handle
        self.seekable = _seekable(handle)
        self.kept: SpooledTemporaryFile[bytes] | None = None

    def first(self) -> Iterable[bytes]:
        if self.seekable:
            return self.handle
        import tempfile

        self.kept = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (lives as long as the source)
        return _tee(self.handle, self.kept.write)

    def again(self) -> Iterable[bytes]:
        if self.kept is None:
            self.handle.seek(0)
            return self.handle
        self.kept.seek(0)
        return self.kept


def _tee(lines: Iterable[bytes], keep: Any) -> Iterator[bytes]:
    for raw in lines:
        keep(raw)
        yield raw


def _seekable(handle: BinaryIO) -> bool:
    try:
        return handle.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def _naming(path: str, message: str) -> str:
    """Every message that stops a run names the input it is about."""
    shown = files.describe(path)
    if message.startswith((shown, os.path.realpath(path))):
        return message
    return f"{shown}: {message}"


def _tell(notes: Sequence[str]) -> None:
    """What --force wrote although it could not keep it: said on stderr, never silent."""
    if notes:
        import sys

        from .safe import printable

        for note in notes:
            sys.stderr.write(f"apx-doctor: warning: {printable(note)}\n")


def _sink(path: str, options: RunOptions, handle: Any = None) -> _RunSink | None:
    sidecar = None
    if options.salvage and options.mode in (Mode.IN_PLACE, Mode.OUTPUT):
        if path == files.STDIN:
            raise UsageError("--salvage needs a file: the rejected lines are kept beside it")
        sidecar = files.Sidecar(path)
    if options.mode is Mode.IN_PLACE:
        return files.InPlaceSink(path, sidecar, force=options.force, backup=options.backup, handle=handle)
    if options.mode is Mode.OUTPUT:
        if options.output == files.STDIN:
            return files.StdoutSink(sidecar)
        assert options.output is not None  # Mode.OUTPUT has an output
        return files.OutputFileSink(options.output, sidecar, source=path)
    if options.mode is Mode.DRY_RUN:
        return _NullSink()
    return None


class _RunSink(stream.Sink, Protocol):
    """A sink the runner commits or aborts (files.InPlaceSink, OutputFileSink, StdoutSink, _NullSink)."""

    def commit(self) -> bool: ...

    def abort(self) -> None: ...


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


def run_paths(paths: Sequence[str], options: RunOptions | Sequence[RunOptions], jobs: int | None = None) -> list[FileReport]:
    """``run_path`` over ``paths``, on ``jobs`` processes (None: all cores); reports in input order."""
    return list(iter_paths(paths, options, jobs))


def iter_paths(paths: Sequence[str], options: RunOptions | Sequence[RunOptions], jobs: int | None = None) -> Iterator[FileReport]:
    """Yield the reports of ``paths`` in input order, as they become ready.

    ``options`` is one ``RunOptions`` for all, or one per path. The same
    reports as a serial run: ``run_path`` is a pure function of path and
    options, so where it runs changes nothing. A worker that dies (a crash, the
    OOM killer) costs only the report of the file it was on: every other file
    is still reported, and that one carries an error (exit 2).
    """
    per_path = [options] * len(paths) if isinstance(options, RunOptions) else list(options)
    same = _same_files(paths, per_path)
    if same:
        # One run schedules a file once: a second name of it (a symlink, the same
        # path twice) is reported as skipped, never repaired or salvaged again.
        keep = [i for i in range(len(paths)) if i not in same]
        done = iter_paths([paths[i] for i in keep], [per_path[i] for i in keep], jobs)
        for i, path in enumerate(paths):
            if i in same:
                yield FileReport(
                    path, skipped=f"the same file as {files.describe(paths[same[i]])}, which this run already looks at"
                )
            else:
                yield next(done)
        return
    jobs = jobs or os.cpu_count() or 1
    # Standard input can be read only here; one file gains nothing from a pool.
    if jobs <= 1 or len(paths) <= 1 or files.STDIN in paths:
        for path, opts in zip(paths, per_path):
            yield run_path(path, opts)
        return
    yield from _parallel(list(zip(paths, per_path)), jobs)


def _same_files(paths: Sequence[str], per_path: Sequence[RunOptions]) -> dict[int, int]:
    """For a fix, the inputs that name a file an earlier input names too (by st_dev and st_ino): index -> that input's index."""
    if not any(o.mode is not Mode.CHECK for o in per_path) or len(paths) < 2:
        return {}
    first: dict[tuple[int, int], int] = {}
    same: dict[int, int] = {}
    for i, (path, opts) in enumerate(zip(paths, per_path)):
        if opts.mode is Mode.CHECK:
            continue
        key = files.file_key(path)
        if key is None:
            continue
        if key in first:
            same[i] = first[key]
        else:
            first[key] = i
    return same


def _run_chunk(chunk: list[tuple[str, RunOptions]]) -> list[FileReport]:
    return [run_path(path, opts) for path, opts in chunk]


def _parallel(work: list[tuple[str, RunOptions]], jobs: int) -> Iterator[FileReport]:
    from concurrent.futures import ProcessPoolExecutor

    # Small chunks: few round trips for thousands of small files, yet every
    # worker busy to the end.
    size = max(1, min(64, len(work) // (jobs * 8)))
    chunks = [work[i : i + size] for i in range(0, len(work), size)]
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=_context()) as pool:
        futures = [pool.submit(_run_chunk, chunk) for chunk in chunks]
        for chunk, future in zip(chunks, futures):
            try:
                yield from future.result()
            except Exception:  # a dead worker (BrokenProcessPool) or a bug raised in one  # noqa: BLE001
                # Which file killed the worker is unknown: run each of the
                # chunk alone, so only the guilty one is lost.
                for path, opts in chunk:
                    yield _isolated(path, opts)


def _isolated(path: str, opts: RunOptions) -> FileReport:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1, mp_context=_context()) as pool:
        try:
            return pool.submit(_run_chunk, [(path, opts)]).result()[0]
        except BrokenProcessPool:
            return FileReport(path, error=f"{files.describe(path)}: the worker process died while checking this file")
        except Exception as exc:  # an internal error: this file's report carries it, the others go on  # noqa: BLE001
            from .safe import printable

            detail = printable(f"{type(exc).__name__}: {exc}", 200)
            return FileReport(path, error=f"{files.describe(path)}: internal error while checking this file: {detail}")


def _context() -> BaseContext:
    import multiprocessing
    import sys
    import threading

    if not sys.platform.startswith("linux"):
        # macOS, Windows: fork is unsafe or missing; the platform default.
        return multiprocessing.get_context()
    # fork starts a worker in milliseconds with everything imported (the CLI),
    # but only a process of one thread may fork: a child inherits the locks
    # other threads hold, and can hang on them (a library caller's threads).
    return multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")


class _ByteProgress:
    """A Rich progress bar (bytes read, rate, time left) on stderr for a file that takes a while.

    A thread looks at the file position ten times a second, so the line loop
    pays nothing; the bar appears only after about a second, and never when
    disabled (the CLI enables it only when stderr is a terminal).
    """

    DELAY = 1.0

    def __init__(self, handle: Any, path: str, enabled: bool) -> None:
        self.handle, self.path = handle, path
        self.total = _size(handle) if enabled else None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.total:
            import threading

            self.stop = threading.Event()
            self.thread = threading.Thread(target=self._draw, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread is not None:
            self.stop.set()
            self.thread.join()

    def _draw(self) -> None:
        try:
            self._show()
        except Exception:  # a progress bar that cannot be drawn is no reason to stop or to print  # noqa: BLE001, S110
            pass

    def _show(self) -> None:
        if self.stop.wait(self.DELAY):
            return
        import sys

        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        from .safe import printable

        # The path is transcript-controlled text: never markup.
        columns = (
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
            task = bar.add_task(_tail(printable(files.describe(self.path)), 40), total=self.total)
            while not self.stop.wait(0.1):
                bar.update(task, completed=_position(self.handle))


def _tail(text: str, limit: int) -> str:
    """The end of a long path, where its file name is."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _size(handle: Any) -> int | None:
    try:
        stat = os.fstat(handle.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    import stat as stat_module

    return stat.st_size if stat_module.S_ISREG(stat.st_mode) and stat.st_size else None


def _position(handle: Any) -> int:
    try:
        # The descriptor's offset: what the buffered reader has taken, to within a buffer.
        return os.lseek(handle.fileno(), 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return 0
