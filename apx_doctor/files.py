"""The one module that reads and writes files.

Writes are atomic: a temporary file in the target's own folder, flushed and
fsynced, given the original's mode, then ``os.replace``. A failed write leaves
the original as it was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import BinaryIO, Iterable

from .errors import InputError, WriteError

STDIN = "-"
READ_BUFFER = 1 << 20
# Temporary files carry this in their name, so a stray one is recognisable.
TEMP_TAG = ".apx-doctor-"


def describe(path: str) -> str:
    return "<stdin>" if path == STDIN else path


@contextlib.contextmanager
def open_lines(path: str) -> Iterator[Iterable[bytes]]:
    """The raw lines of ``path`` (or standard input), terminators included."""
    if path == STDIN:
        yield sys.stdin.buffer
        return
    try:
        handle = open(path, "rb", buffering=READ_BUFFER)
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        try:
            yield handle
        except OSError as exc:
            raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None


class _AtomicTemp:
    """A temporary file beside ``target`` that replaces it on commit."""

    def __init__(self, target: str) -> None:
        self.target = target
        folder, name = os.path.split(target)
        try:
            fd, self.name = tempfile.mkstemp(prefix=f".{name}{TEMP_TAG}", suffix=".tmp", dir=folder or ".")
        except OSError as exc:
            raise WriteError(f"{target}: cannot create a temporary file beside it: {exc.strerror or exc}") from None
        self.handle: BinaryIO = os.fdopen(fd, "wb", buffering=READ_BUFFER)

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.target}: write failed: {exc.strerror or exc}") from None

    def commit(self, mode: int | None, expect: os.stat_result | None = None) -> None:
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            if mode is not None:
                os.fchmod(self.handle.fileno(), mode)
            self.handle.close()
            if expect is not None:
                _ensure_unchanged(self.target, expect)
            os.replace(self.name, self.target)
        except WriteError:
            self.abort()
            raise
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.target}: write failed: {exc.strerror or exc}") from None
        _fsync_folder(self.target)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        with contextlib.suppress(OSError):
            os.unlink(self.name)


def _ensure_unchanged(target: str, before: os.stat_result) -> None:
    now = os.stat(target)
    if (now.st_size, now.st_mtime_ns, now.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino):
        raise WriteError(f"{target}: the file changed while it was being repaired (still being written?); nothing was written")


def _fsync_folder(target: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(os.path.dirname(target) or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class InPlaceSink:
    """Rewrites ``path`` only if something changes.

    Until the first change the output equals the input, so nothing is written;
    at the first change the unchanged prefix is copied from the file itself.
    """

    def __init__(self, path: str) -> None:
        self.target = os.path.realpath(path)
        try:
            self.before = os.stat(self.target)
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if self.before.st_nlink > 1:
            raise WriteError(
                f"{path}: has {self.before.st_nlink} hard links; an atomic rewrite would split them. "
                "Use --output and move the result yourself"
            )
        self.prefix = 0
        self.temp: _AtomicTemp | None = None

    def keep(self, raw: bytes) -> None:
        if self.temp is None:
            self.prefix += len(raw)
        else:
            self.temp.write(raw)

    def write(self, data: bytes) -> None:
        self._start()
        self.temp.write(data)

    def drop(self, raw: bytes) -> None:
        # The output stops being a copy of the input here.
        self._start()

    def _start(self) -> None:
        if self.temp is None:
            self.temp = _AtomicTemp(self.target)
            self._copy_prefix()

    def _copy_prefix(self) -> None:
        left = self.prefix
        with open(self.target, "rb") as source:
            while left:
                chunk = source.read(min(left, READ_BUFFER))
                if not chunk:
                    self.temp.abort()
                    raise WriteError(f"{self.target}: the file shrank while it was being repaired; nothing was written")
                self.temp.write(chunk)
                left -= len(chunk)

    def commit(self) -> bool:
        if self.temp is None:
            return False
        self.temp.commit(self.before.st_mode & 0o7777, expect=self.before)
        return True

    def abort(self) -> None:
        if self.temp is not None:
            self.temp.abort()


class OutputFileSink:
    """Writes the whole repaired transcript to ``path``, atomically."""

    def __init__(self, path: str) -> None:
        self.target = os.path.realpath(path)
        self.temp = _AtomicTemp(self.target)
        self.keep = self.write = self.temp.write

    def drop(self, raw: bytes) -> None:
        pass

    def commit(self) -> bool:
        mode = None
        with contextlib.suppress(OSError):
            mode = os.stat(self.target).st_mode & 0o7777
        self.temp.commit(mode if mode is not None else 0o666 & ~_umask())
        return True

    def abort(self) -> None:
        self.temp.abort()


class StdoutSink:
    """Holds the repaired transcript until it is known to be sound, then prints it."""

    def __init__(self) -> None:
        self.buffer = tempfile.SpooledTemporaryFile(max_size=16 << 20)
        self.keep = self.write = self.buffer.write

    def drop(self, raw: bytes) -> None:
        pass

    def commit(self) -> bool:
        self.buffer.seek(0)
        out = sys.stdout.buffer
        while chunk := self.buffer.read(READ_BUFFER):
            out.write(chunk)
        out.flush()
        self.buffer.close()
        return True

    def abort(self) -> None:
        self.buffer.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
