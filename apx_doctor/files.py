"""The one module that reads and writes files.

Writes are atomic: a temporary file in the target's own folder, flushed and
fsynced, given the original's mode, then ``os.replace``. A failed write leaves
the original as it was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from .errors import InputError, WriteError

if TYPE_CHECKING:
    from tempfile import SpooledTemporaryFile

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, runs are not serialised
    fcntl = None  # type: ignore[assignment]  # the module, or None where there is none

STDIN = "-"
READ_BUFFER = 1 << 20
# Temporary files carry this in their name, so a stray one is recognisable.
TEMP_TAG = ".apx-doctor-"
TEMP_SUFFIX = ".tmp"
# A temporary file whose owner is alive is left alone unless it has not been
# written to for this long (a pid can be reused; a live run writes steadily).
STALE_AFTER = 15 * 60
# A long write hands each finished step of this many bytes to the kernel's writeback.
WRITEBACK_STEP = 32 << 20
HAS_FADVISE = hasattr(os, "posix_fadvise")
# How long a run waits for another apx-doctor run's lock on a file before it gives up (exit 2).
LOCK_WAIT = 10.0
LOCK_POLL = 0.05
# Tests only: called as ``hook(point, path)`` at the points a race can fall in
# ("opened", "locked", "busy", "before-commit", "before-replace", "sidecar-appended"), so a
# test can rename a file or start another run exactly there. None in production.
hook: Callable[[str, str], None] | None = None


def _at(point: str, path: str) -> None:
    if hook is not None:
        hook(point, path)


def lock(fd: int, path: str) -> None:
    """Take an exclusive advisory lock (``flock``) on ``fd``: every apx-doctor rewrite holds one.

    Another run's lock is waited for (``LOCK_WAIT`` seconds), then the run stops,
    naming ``path``, with nothing written. A file system without locks is not
    locked (there is nothing better to do there).
    """
    if fcntl is None:
        return  # type: ignore[unreachable]  # mypy checks for Linux; Windows has no fcntl
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError:  # no locks here (ENOLCK, EINVAL)
            return
        _at("busy", path)
        if time.monotonic() >= deadline:
            raise WriteError(
                f"{path}: is busy: another apx-doctor run is repairing it (it holds the file's lock); "
                "nothing was written. Run again when that one has finished"
            )
        time.sleep(LOCK_POLL)


def _same_inode(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def file_key(path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of what ``path`` names, or None (standard input, a path that cannot be stat-ed)."""
    if path == STDIN:
        return None
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def __getattr__(name: str) -> Any:
    # socket and tempfile are imported when a run first writes (a check never
    # does: it starts faster), yet stay reachable as this module's attributes.
    if name in ("socket", "tempfile"):
        import importlib

        return importlib.import_module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _host_tag() -> str:
    import socket

    return f"{zlib.crc32(socket.gethostname().encode()) & 0xFFFF:04x}"


def _owner() -> str:
    """Who writes a temporary file, as "<pid>-<host>", so another run can tell whether
    the writer is gone. The pid means nothing on another host, so it is checked
    only when the host tag matches. Asked each time: --jobs workers are forks."""
    return f"{os.getpid()}-{_host_tag()}"


_STALE_NAME = re.compile(re.escape(TEMP_TAG) + r"(\d+)-([0-9a-f]{4})-[^/]*" + re.escape(TEMP_SUFFIX) + "$")
_cleaned: set[tuple[str, int]] = set()


def remove_stale_temps(folder: str) -> list[str]:
    """Remove the temporary files that killed runs left in ``folder``; return their names.

    A folder is scanned again only once it changed. A temporary file of a run
    that is still going (its process alive, written to recently) is never touched.
    """
    try:
        # Rescanned only when the folder changed since the last scan.
        key = (os.path.realpath(folder), os.stat(folder).st_mtime_ns)
    except OSError:
        return []
    if key in _cleaned:
        return []
    _cleaned.add(key)
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _STALE_NAME.search(name)
        if match is None or not name.startswith("."):
            continue
        path = os.path.join(folder, name)
        if _is_stale(path, int(match.group(1)), match.group(2)):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(name)
    return removed


def _is_stale(path: str, pid: int, host: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    if time.time() - info.st_mtime > STALE_AFTER:
        return True
    return host == _host_tag() and pid != os.getpid() and not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def describe(path: str) -> str:
    return "<stdin>" if path == STDIN else path


# The longest line read from a pipe, a device or standard input: beyond it, an
# endless stream (/dev/zero) stops the run with a clear error naming the input.
# (A regular file's lines are bounded by its size; memory there is the limit.)
MAX_LINE = 256 << 20


@contextlib.contextmanager
def open_lines(path: str) -> Iterator[Iterable[bytes]]:
    """The raw lines of ``path`` (or standard input), terminators included."""
    if path == STDIN:
        yield _bounded(sys.stdin.buffer, path)
        return
    try:
        handle = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 (opened apart: `with handle` below)
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        try:
            yield _bounded(handle, path)
        except OSError as exc:
            raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None


def _bounded(handle: BinaryIO, path: str) -> Iterable[bytes]:
    """``handle`` itself for a regular file (its own line iterator is the fast one); else its lines, at most ``MAX_LINE`` bytes each."""
    try:
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):
        regular = False
    return handle if regular else _limited_lines(handle, describe(path))


def _limited_lines(handle: BinaryIO, shown: str) -> Iterator[bytes]:
    read, limit = handle.readline, MAX_LINE
    number = 0
    while True:
        raw = read(limit)
        if not raw:
            return
        number += 1
        if len(raw) >= limit and not raw.endswith(b"\n"):
            raise InputError(
                f"{shown}: line {number} is longer than {limit >> 20} MiB (an endless stream, such as /dev/zero?); nothing was checked"
            )
        yield raw


@contextlib.contextmanager
def open_for_rewrite(path: str) -> Iterator[BinaryIO]:
    """``path`` opened for an in-place fix: a regular file, locked, and still the file ``path`` names.

    The lock is held until the handle is closed (after the commit). A FIFO is
    refused without waiting for a writer; a file another run replaced while this
    one waited for its lock is opened again, so the run repairs what is there now.
    """
    for _attempt in range(20):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                kind = " (a FIFO)" if stat.S_ISFIFO(info.st_mode) else ""
                raise WriteError(
                    f"{path}: is not a regular file{kind}; it cannot be rewritten in place (use --output); nothing was written"
                )
            if fcntl is not None:
                flags = fcntl.fcntl(fd, fcntl.F_GETFL)
                fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
            lock(fd, path)
            _at("opened", path)
            try:
                now = os.stat(os.path.realpath(path))
            except OSError:
                now = None
            if now is not None and _same_inode(now, info):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced while we waited for the lock: read the file that is there now
    else:
        raise WriteError(f"{path}: is replaced again and again while it is being opened; nothing was written")
    _at("locked", path)
    handle = os.fdopen(fd, "rb", buffering=READ_BUFFER)
    with handle:
        try:
            yield handle
        except OSError as exc:
            raise InputError(f"{path}: read failed: {exc.strerror or exc}") from None


def _open_temp(fd: int, target: str) -> io.BufferedWriter:
    return io.BufferedWriter(_TempFile(fd, target), READ_BUFFER)


class _TempFile(io.RawIOBase):
    """The temporary file under its write buffer, which calls it about once a megabyte.

    So this is where a failed write is named, and where a long write hands each
    finished step to the kernel's writeback and frees what is already on disk: the
    final fsync then waits for one step, not the whole file, and a gigabyte
    rewrite keeps about two steps of its output cached, not all of it.
    """

    def __init__(self, fd: int, target: str) -> None:
        super().__init__()
        self.fd = fd
        self.target = target
        self.written = 0
        self.handed_over = 0

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        try:
            done = os.write(self.fd, data)
        except OSError as exc:
            raise WriteError(f"{self.target}: write failed: {exc.strerror or exc}") from None
        self._count(done)
        return done

    def copy_in(self, source: int, count: int) -> int:
        """Copy up to ``count`` bytes from the start of ``source`` inside the kernel; how many it copied.

        Only into a file nothing was written to yet. It stops early where the
        kernel cannot go on (no copy_file_range, another file system, an error,
        the source's end): the caller copies the rest from there itself.
        """
        done = 0
        copy = getattr(os, "copy_file_range", None)
        while copy is not None and done < count:
            try:
                moved = copy(source, self.fd, count - done, done)
            except OSError:
                break
            if not moved:
                break
            done += moved
        self._count(done)
        return done

    def _count(self, written: int) -> None:
        """Count bytes written; past two steps not handed over, hand over all but the last."""
        self.written += written
        if self.written - self.handed_over <= 2 * WRITEBACK_STEP:
            return
        self.handed_over = self.written - WRITEBACK_STEP
        if HAS_FADVISE:
            # Only a hint: a file system that refuses it loses nothing.
            with contextlib.suppress(OSError):
                os.posix_fadvise(self.fd, 0, self.handed_over, os.POSIX_FADV_DONTNEED)

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self.fd)
            finally:
                super().close()


class _AtomicTemp:
    """A temporary file beside ``target`` that replaces it on commit."""

    def __init__(self, target: str) -> None:
        self.target = target
        folder, name = os.path.split(target)
        remove_stale_temps(folder or ".")
        # The name keeps a bounded part of the target's (in bytes, whole
        # characters), so it fits NAME_MAX however long the target's name is.
        prefix = f".{_cut_name(name, 64)}{TEMP_TAG}{_owner()}-"
        import tempfile

        try:
            fd, self.name = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=folder or ".")
        except OSError as exc:
            raise WriteError(f"{target}: cannot create a temporary file beside it: {exc.strerror or exc}") from None
        self.handle = _open_temp(fd, target)
        self.replaced = False
        # The buffer's own method: a repair writes every kept line through it.
        self.write = self.handle.write

    def copy_in(self, source: int, count: int) -> int:
        """``_TempFile.copy_in``, before anything else is written (the buffer is empty)."""
        return cast("_TempFile", self.handle.raw).copy_in(source, count)

    def commit(
        self,
        mode: int | None,
        expect: os.stat_result | None = None,
        before_replace: Callable[[Any], None] | None = None,
        held: int | None = None,
        attributes: Any = None,
    ) -> None:
        """Replace the target; ``before_replace(old_fd)`` runs last, right before the rename.

        ``held`` is the descriptor the original was read from (an in-place fix):
        its identity (``expect``, from ``fstat``) must still be what the path
        names, and bytes appended to it during the replace are carried over.
        ``attributes(fd)`` gives the new file the original's owner and
        extended attributes. ``replaced`` tells afterwards whether the rename
        itself went through.
        """
        self.replaced = False
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            if attributes is not None:
                attributes(self.handle.fileno(), "owner")
            if mode is not None:
                os.fchmod(self.handle.fileno(), mode)
            if attributes is not None:
                attributes(self.handle.fileno(), "xattrs")
            self.handle.close()
            old = held
            if expect is not None and old is None:
                # Held open across the replace: bytes a writer appends in the
                # instant between the check and the replace are still in it.
                old = os.open(self.target, os.O_RDONLY)
            try:
                if expect is not None:
                    _ensure_unchanged(self.target, expect, old)
                if before_replace is not None:
                    before_replace(old)
                _at("before-replace", self.target)
                if expect is not None:
                    # Once more, as late as can be: the path must still name the file that was read.
                    _ensure_unchanged(self.target, expect, old)
                os.replace(self.name, self.target)
                self.replaced = True
                _fsync_folder(self.target)
                if old is not None:
                    assert expect is not None  # a held descriptor comes with its identity
                    _carry_over_late_bytes(old, self.target, expect.st_size)
            finally:
                if old is not None and old != held:
                    os.close(old)
        except WriteError:
            self.abort()
            raise
        except OSError as exc:
            self.abort()
            raise WriteError(f"{self.target}: write failed: {exc.strerror or exc}") from None

    def abort(self) -> None:
        # Closing flushes the buffer first; a write that fails again is no news.
        with contextlib.suppress(OSError, WriteError):
            self.handle.close()
        with contextlib.suppress(OSError):
            os.unlink(self.name)


def _cut_name(name: str, limit: int) -> str:
    """The start of ``name``, at most ``limit`` bytes as the file system stores it, whole characters only."""
    if len(os.fsencode(name)) <= limit:
        return name
    out, size = [], 0
    for char in name:
        size += len(os.fsencode(char))
        if size > limit:
            break
        out.append(char)
    return "".join(out)


def _ensure_unchanged(target: str, before: os.stat_result, held: int | None = None) -> None:
    """The path still names the file that was read (``before``, from its handle), and nobody wrote to it."""
    try:
        now = os.stat(target)
    except OSError:
        now = None
    if now is None or not _same_inode(now, before):
        raise WriteError(
            f"{target}: the file changed while it was being repaired: another file was put in its place; "
            "nothing was written (the file now there is untouched)"
        )
    if held is not None:
        now = os.fstat(held)
    if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise WriteError(f"{target}: the file changed while it was being repaired (still being written?); nothing was written")


def _carry_over_late_bytes(old: int, target: str, size: int) -> None:
    """Append to the new file what was appended to the old one during the replace."""
    late = os.fstat(old).st_size - size
    if late <= 0:
        return
    os.lseek(old, size, os.SEEK_SET)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND)
    try:
        while chunk := os.read(old, READ_BUFFER):
            _write_all(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    raise WriteError(
        f"{target}: the file was appended to while it was being replaced; the {late} new bytes were "
        "carried over after the repair. It is still being written: check it again when the session ends"
    )


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
    at the first change the unchanged prefix is copied from the file itself:
    from ``handle``, the locked descriptor the lines are read from (see
    ``open_for_rewrite``), never from whatever the path names by then.
    """

    def __init__(
        self,
        path: str,
        sidecar: Sidecar | None = None,
        *,
        force: bool = False,
        backup: bool = False,
        handle: BinaryIO | None = None,
    ) -> None:
        self.path = path
        self.target = os.path.realpath(path)
        self.sidecar = sidecar
        # force: rewrite even while another process holds the file open for writing.
        self.force = force
        # backup: keep the original bytes as <file>.bak (.bak.1, ...); where they went.
        self.keep_backup = backup
        self.backup: str | None = None
        # What --force wrote although it could not keep it (an owner, an attribute).
        self.notes: list[str] = []
        self.fd = handle.fileno() if handle is not None else None
        try:
            # The identity of the file read: its handle's, not the path's.
            self.before = os.fstat(self.fd) if self.fd is not None else os.stat(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
        # Every in-place run tidies what killed runs left in the folder.
        remove_stale_temps(os.path.dirname(self.target) or ".")
        self.prefix = 0
        self.temp: _AtomicTemp | None = None

    def keep(self, raw: bytes) -> None:
        if self.temp is None:
            self.prefix += len(raw)
        else:
            self.temp.write(raw)

    def write(self, data: bytes) -> None:
        self._start()
        assert self.temp is not None  # _start made it
        self.temp.write(data)

    def drop(self, raw: bytes) -> None:
        # The output stops being a copy of the input here.
        self._start()

    def reject(self, raw: bytes) -> None:
        """An unparseable line that --salvage moves to the sidecar."""
        self.drop(raw)
        assert self.sidecar is not None  # --salvage gives a sidecar
        self.sidecar.add(raw)

    def _start(self) -> None:
        if self.temp is None:
            # Checked only once a change is needed: a sound file is never refused.
            _ensure_rewritable(self.path, self.target, self.before)
            if not self.force:
                ensure_no_writer(self.path, self.target)
            self.temp = _AtomicTemp(self.target)
            self._copy_prefix()

    def _copy_prefix(self) -> None:
        if self.fd is None:
            with open(self.target, "rb") as source:
                self._copy_prefix_from(source.fileno())
        else:
            self._copy_prefix_from(self.fd)

    def _copy_prefix_from(self, source: int) -> None:
        # The unchanged prefix is most of the file when the cut turn is the last.
        # Read at offsets (pread, copy_file_range's own offset): the reader's position stays.
        assert self.temp is not None  # _start made it
        copied = self.temp.copy_in(source, self.prefix)
        left = self.prefix - copied
        offset = copied
        while left:
            chunk = os.pread(source, min(left, READ_BUFFER), offset)
            if not chunk:
                self.temp.abort()
                raise WriteError(f"{self.target}: the file shrank while it was being repaired; nothing was written")
            self.temp.write(chunk)
            left -= len(chunk)
            offset += len(chunk)

    def commit(self) -> bool:
        temp = self.temp
        if temp is None:
            return False
        try:
            if self.sidecar is not None:
                # Before the salvaged lines go anywhere: the path still names the file read.
                _ensure_unchanged(self.target, self.before, self.fd)
            _at("before-commit", self.target)
            attributes = _Attributes(self.path, self.fd, self.before, self.force, self.notes) if self.fd is not None else None
            _commit_with(
                self.sidecar,
                lambda: temp.commit(
                    self.before.st_mode & 0o7777,
                    expect=self.before,
                    before_replace=self._before_replace,
                    held=self.fd,
                    attributes=attributes,
                ),
            )
        except BaseException:
            if self.backup is not None and not temp.replaced:
                # The original stays where it was: a backup of it is no news.
                with contextlib.suppress(OSError):
                    os.unlink(self.backup)
                self.backup = None
            raise
        return True

    def _before_replace(self, old: int) -> None:
        """Right before the rename: nobody writing to the file, then the backup."""
        if not self.force:
            ensure_no_writer(self.path, self.target)
        if self.keep_backup:
            self.backup = make_backup(self.target, old)

    def abort(self) -> None:
        if self.temp is not None:
            self.temp.abort()
        if self.sidecar is not None:
            self.sidecar.close()


class _Attributes:
    """Gives the replacement of an in-place fix the original's owner, group and extended attributes.

    Mode bits are set by the caller (``fchmod``) between the owner (a chown
    clears set-id bits) and the extended attributes (an ACL, which is the
    ``system.posix_acl_access`` attribute, last, so it stays exact). What cannot
    be kept stops the write, naming it, unless ``force``: then it is noted.
    """

    def __init__(self, path: str, source: int, before: os.stat_result, force: bool, notes: list[str]) -> None:
        self.path, self.source, self.before, self.force, self.notes = path, source, before, force, notes

    def __call__(self, fd: int, step: str) -> None:
        if step == "owner":
            self._owner(fd)
        else:
            self._xattrs(fd)

    def _lost(self, what: str, exc: OSError) -> None:
        message = f"{self.path}: the repaired file cannot keep {what} ({exc.strerror or exc})"
        if not self.force:
            raise WriteError(f"{message}; nothing was written (--force writes it without)")
        self.notes.append(f"{message}; written without, as --force asks")

    def _owner(self, fd: int) -> None:
        want = (self.before.st_uid, self.before.st_gid)
        have = os.fstat(fd)
        if (have.st_uid, have.st_gid) == want:
            return
        if not hasattr(os, "fchown"):  # pragma: no cover - Windows
            return
        try:
            os.fchown(fd, *want)
        except OSError as exc:
            self._lost(f"its owner and group ({want[0]}:{want[1]})", exc)

    def _xattrs(self, fd: int) -> None:
        listxattr = getattr(os, "listxattr", None)
        if listxattr is None:  # pragma: no cover - no extended attributes on this platform
            return
        try:
            names = listxattr(self.source)
        except OSError:  # a file system without them
            names = []
        try:
            inherited = set(listxattr(fd))
        except OSError:
            inherited = set()
        # Whatever the new file got from its folder (a default ACL) and the original lacks goes.
        for name in sorted(inherited - set(names)):
            with contextlib.suppress(OSError):
                os.removexattr(fd, name)
        acl = "system.posix_acl_access"
        for name in sorted(names, key=lambda n: n == acl):
            try:
                value = os.getxattr(self.source, name)
            except OSError:
                continue
            try:
                if name in inherited and os.getxattr(fd, name) == value:
                    continue
            except OSError:
                pass
            try:
                os.setxattr(fd, name, value)
            except OSError as exc:
                self._lost("its ACL" if name == acl else f"its extended attribute {name}", exc)


def _ensure_rewritable(path: str, target: str, before: os.stat_result) -> None:
    """Refuse, naming ``path``, what an atomic rewrite would get wrong or should not do."""
    if not stat.S_ISREG(before.st_mode):
        raise WriteError(f"{path}: is not a regular file; it cannot be rewritten in place (use --output)")
    if before.st_nlink > 1:
        raise WriteError(
            f"{path}: has {before.st_nlink} hard links; an atomic rewrite would split them. "
            "Use --output and move the result yourself"
        )
    # Mode bits as well as access(): root may write anything, but a file or
    # folder nobody may write was made read-only on purpose.
    if not before.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteError(f"{path}: is read-only; nothing was written")
    folder = os.path.dirname(target) or "."
    try:
        folder_mode = os.stat(folder).st_mode
    except OSError as exc:
        raise WriteError(f"{path}: cannot reach its folder: {exc.strerror or exc}") from None
    if not folder_mode & 0o222 or not os.access(folder, os.W_OK | os.X_OK):
        raise WriteError(f"{path}: its folder {folder} is read-only; nothing was written")


def _commit_with(sidecar: Sidecar | None, commit: Callable[[], object]) -> None:
    """Salvaged lines reach the sidecar before the transcript loses them.

    A crash in between leaves them in both places, never in neither; a failed
    commit takes them back out of the sidecar.
    """
    if sidecar is None:
        commit()
        return
    try:
        sidecar.commit()
        try:
            commit()
        except BaseException:
            sidecar.undo()
            raise
    finally:
        sidecar.close()


# --- live sessions ----------------------------------------------------------


def ensure_no_writer(path: str, target: str) -> None:
    """Refuse, writing nothing, a file that another process holds open for writing.

    The rename gives the file a new inode: a runtime that keeps the old one open
    (Codex holds its rollout for the whole session) would go on appending to a
    file nobody reads, and lose everything it writes next.
    """
    found = open_writers(target)
    if not found:
        return
    from .safe import printable

    shown = ", ".join(f"{pid} ({printable(command, 120)})" for pid, command in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    noun = "process" if len(found) == 1 else "processes"
    raise WriteError(
        f"{path}: is open for writing by {noun} {shown}{more}; a runtime that still writes to it would lose "
        "what it writes next. Nothing was written: end the session first, or pass --force"
    )


def open_writers(path: str) -> list[tuple[int, str]]:
    """The processes (pid, command line) that hold ``path`` open for writing, as far as the platform tells.

    Linux: every /proc/<pid>/fd link to the same device and inode whose
    /proc/<pid>/fdinfo flags say O_WRONLY or O_RDWR (processes this user may
    inspect: its own, or all of them for root). Elsewhere ``lsof`` when it is
    installed (macOS ships it); without it, nothing is found.
    """
    try:
        info = os.stat(path)
    except OSError:
        return []
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd"):
        return _proc_writers(info.st_dev, info.st_ino, os.path.basename(path))
    if sys.platform != "win32":
        return _lsof_writers(path)
    return []  # type: ignore[unreachable]  # mypy checks for Linux; this is Windows


def _proc_writers(dev: int, ino: int, name: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            link = f"{folder}/{fd}"
            try:
                shown = os.readlink(link)
            except OSError:
                continue
            # Only files can be ours; the name (perhaps with " (deleted)", or
            # seen from another mount namespace) narrows which ones to stat.
            if not shown.startswith("/") or name not in shown.rsplit("/", 1)[-1]:
                continue
            try:
                found_info = os.stat(link)
            except OSError:
                continue
            if (found_info.st_dev, found_info.st_ino) != (dev, ino):
                continue
            flags = _fd_flags(pid, fd)
            if flags is None or flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
                found.append((int(pid), _command(pid)))
                break
    return found


def _fd_flags(pid: str, fd: str) -> int | None:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as handle:
            for line in handle:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4096)
        if not raw.strip(b"\0"):
            with open(f"/proc/{pid}/comm", "rb") as handle:
                raw = handle.read(256).strip()
    except OSError:
        return "?"
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def _lsof_writers(path: str) -> list[tuple[int, str]]:
    import shutil
    import subprocess

    lsof = shutil.which("lsof") or next((p for p in ("/usr/sbin/lsof", "/usr/bin/lsof") if os.path.exists(p)), None)
    if lsof is None:
        return []
    try:
        done = subprocess.run([lsof, "-w", "-n", "-P", "-F", "pcfa", "--", path], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    found: dict[int, str] = {}
    pid, command = None, "?"
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        tag, value = line[:1], line[1:]
        if tag == "p":
            pid, command = int(value) if value.isdigit() else None, "?"
        elif tag == "c":
            command = value
        elif tag == "a" and pid is not None and value in ("w", "u"):
            found.setdefault(pid, command)
    return list(found.items())


# --- backups ---------------------------------------------------------------

BACKUP_SUFFIX = ".bak"


def make_backup(target: str, old: int) -> str:
    """Keep the original of ``target`` beside it: ``<file>.bak``, else ``.bak.1``, ``.bak.2``, ...

    A hard link to the original inode, made before the rename, is exact and
    costs nothing; where links fail (a file system without them), a copy of
    the held original (``old``). An existing backup is never replaced.
    """
    for n in range(100_000):
        candidate = target + BACKUP_SUFFIX + ("" if n == 0 else f".{n}")
        try:
            os.link(target, candidate)
            return candidate
        except FileExistsError:
            continue
        except OSError:
            pass
        try:
            return _copy_backup(old, candidate, os.fstat(old).st_mode & 0o7777)
        except FileExistsError:
            continue
    raise WriteError(f"{target}: no free name for a backup beside it; nothing was written")


def _copy_backup(old: int, candidate: str, mode: int) -> str:
    try:
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise
    except OSError as exc:
        raise WriteError(f"{candidate}: cannot keep a backup: {exc.strerror or exc}; nothing was written") from None
    try:
        os.lseek(old, 0, os.SEEK_SET)
        while chunk := os.read(old, READ_BUFFER):
            _write_all(fd, chunk)
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(candidate)
        raise WriteError(f"{candidate}: cannot keep a backup: {exc.strerror or exc}; nothing was written") from None
    os.close(fd)
    return candidate


# --- reading a file's head ---------------------------------------------------


def head_objects(path: str, max_lines: int, max_bytes: int) -> Iterator[Any]:
    """The JSON values of the first lines of ``path`` (at most ``max_lines``, ``max_bytes``); unparseable ones skipped.

    A ``*.json`` file is one document: its value, when it is at most ``max_bytes`` long.
    """
    import orjson

    try:
        handle = open(path, "rb")  # noqa: SIM115 (opened apart: `with handle` below)
    except OSError:
        return
    with handle:
        if path.endswith(".json"):
            data = handle.read(max_bytes + 1)
            if len(data) <= max_bytes:
                try:
                    yield orjson.loads(data)
                except orjson.JSONDecodeError:
                    pass
            return
        read = 0
        for number, raw in enumerate(handle):
            read += len(raw)
            if number >= max_lines or read > max_bytes:
                return
            try:
                yield orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue


def first_line(path: str, limit: int) -> str | None:
    """The first line of a small text file (at most ``limit`` bytes read), stripped; None if unreadable."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
    except OSError:
        return None
    return data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


REJECTED_SUFFIX = ".rejected.jsonl"


def sidecar_path(source: str) -> str:
    """``<file>.rejected.jsonl`` beside ``source``; for a name too long for that, a cut
    name and a checksum of the whole one (``<start>-<crc32>.rejected.jsonl``), so it fits NAME_MAX."""
    folder, name = os.path.split(source)
    full = name + REJECTED_SUFFIX
    if len(os.fsencode(full)) <= _name_max(folder):
        return os.path.join(folder, full)
    tag = f"-{zlib.crc32(os.fsencode(name)):08x}"
    room = _name_max(folder) - len(tag) - len(REJECTED_SUFFIX)
    return os.path.join(folder, _cut_name(name, room) + tag + REJECTED_SUFFIX)


def _name_max(folder: str) -> int:
    try:
        return int(os.pathconf(folder or ".", "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


class Sidecar:
    """Lines ``fix --salvage`` moves out of a transcript: appended to ``<file>.rejected.jsonl``.

    Held until the repair commits; the sidecar is appended to, never overwritten.
    A line without a line ending gets one there, so lines never run together,
    and so does a cut last line a killed run left there. The sidecar is opened
    without following a symlink and must be a regular file of one link: the
    rejected lines are never written through something apx-doctor did not make.
    Its lock is held from its open until the transcript commits, so ``undo``
    (a failed commit) takes back only this run's own bytes.
    """

    def __init__(self, source: str) -> None:
        self.source = os.path.realpath(source)
        self.path = sidecar_path(self.source)
        import tempfile

        self.buffer = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (closed with the sidecar)
        self.count = 0
        self._fd: int | None = None
        self._size = 0
        self._end = 0
        self._created = False

    def add(self, raw: bytes) -> None:
        self.buffer.write(raw if raw.endswith(b"\n") else raw + b"\n")
        self.count += 1

    def _open(self, mode: int) -> int:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        for _attempt in range(20):
            existed = os.path.lexists(self.path)
            try:
                fd = os.open(self.path, flags, mode)
            except OSError as exc:
                if os.path.islink(self.path):
                    raise WriteError(
                        f"{self.path}: is a symbolic link; the salvaged lines are never written through one; nothing was written"
                    ) from None
                raise WriteError(
                    f"{self.path}: cannot save the salvaged lines: {exc.strerror or exc}; nothing was written"
                ) from None
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise WriteError(
                        f"{self.path}: is not a regular file; the salvaged lines are not written there; nothing was written"
                    )
                if info.st_nlink > 1:
                    raise WriteError(
                        f"{self.path}: has {info.st_nlink} hard links; the salvaged lines are not written through one; nothing was written"
                    )
                lock(fd, self.path)
                try:
                    now = os.lstat(self.path)
                except OSError:
                    now = None
                if now is not None and _same_inode(now, info):
                    self._created = not existed
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # removed or replaced while we waited for its lock: open what is there now
        raise WriteError(f"{self.path}: is replaced again and again while it is being opened; nothing was written")

    def commit(self) -> None:
        if not self.count:
            return
        try:
            mode = os.stat(self.source).st_mode & 0o666
        except OSError:
            mode = 0o600
        self._fd = self._open(mode)
        try:
            self._size = os.fstat(self._fd).st_size
            if self._size and os.pread(self._fd, 1, self._size - 1) != b"\n":
                # A killed run's cut last line: it stands alone, never glued to the next one.
                _write_all(self._fd, b"\n")
            self.buffer.seek(0)
            while chunk := self.buffer.read(READ_BUFFER):
                _write_all(self._fd, chunk)
                _at("sidecar-appended", self.path)
            os.fsync(self._fd)
            self._end = os.fstat(self._fd).st_size
        except OSError as exc:
            self.undo()
            raise WriteError(f"{self.path}: cannot save the salvaged lines: {exc.strerror or exc}") from None

    def undo(self) -> None:
        """Take back what ``commit`` appended (the transcript was not replaced): this run's bytes only, under its lock."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            now = os.fstat(self._fd).st_size
            # Only where nothing but this run wrote since (the lock sees to that for other runs):
            # never cut bytes someone else appended.
            if not self._end or now == self._end:
                os.ftruncate(self._fd, self._size)
                if self._created and self._size == 0 and _same_inode(os.lstat(self.path), os.fstat(self._fd)):
                    os.unlink(self.path)
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        self.buffer.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class OutputFileSink:
    """Writes the whole repaired transcript to ``path``, atomically.

    A missing path or a regular file of one link is replaced by rename. What
    is neither (a device such as /dev/null, a FIFO, a terminal) is never
    replaced: the repaired bytes are streamed into it at the commit, as
    ``cat > PATH`` would. A regular file with several hard links is refused:
    a rename would split them.
    """

    def __init__(self, path: str, sidecar: Sidecar | None = None, source: str = STDIN) -> None:
        self.target = os.path.realpath(path)
        self.sidecar = sidecar
        self.temp: _AtomicTemp | None = None
        self.buffer: SpooledTemporaryFile[bytes] | None = None
        self.keep: Callable[[bytes], object]
        self.write: Callable[[bytes], object]
        try:
            found = os.stat(self.target)
        except OSError:
            found = None
        if found is not None and not stat.S_ISREG(found.st_mode):
            if stat.S_ISDIR(found.st_mode):
                raise WriteError(f"{path}: is a directory; nothing was written")
            import tempfile

            self.buffer = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (closed by commit or abort)
            self.keep = self.write = self.buffer.write
            return
        if found is not None and found.st_nlink > 1:
            raise WriteError(
                f"{path}: has {found.st_nlink} hard links; replacing it would split them; nothing was written "
                "(write to another name, or remove the other links first)"
            )
        _release_replaced_pages(self.target, source)
        self.temp = _AtomicTemp(self.target)
        self.keep = self.write = self.temp.write

    def drop(self, raw: bytes) -> None:
        pass

    def reject(self, raw: bytes) -> None:
        assert self.sidecar is not None  # --salvage gives a sidecar
        self.sidecar.add(raw)

    def commit(self) -> bool:
        if self.buffer is not None:
            _commit_with(self.sidecar, self._stream)
            return True
        mode = None
        with contextlib.suppress(OSError):
            mode = os.stat(self.target).st_mode & 0o7777
        temp = self.temp
        assert temp is not None  # no buffer: __init__ made the temporary file
        _commit_with(self.sidecar, lambda: temp.commit(mode if mode is not None else 0o666 & ~_umask()))
        return True

    def _stream(self) -> None:
        """Into a device or a FIFO, as ``cat > PATH``: opened for writing, never created, replaced or truncated."""
        assert self.buffer is not None  # commit streams only a buffer
        try:
            fd = os.open(self.target, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise WriteError(f"{self.target}: cannot write: {exc.strerror or exc}; nothing was written") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                raise WriteError(f"{self.target}: was replaced while it was being written; nothing was written")
            self.buffer.seek(0)
            while chunk := self.buffer.read(READ_BUFFER):
                _write_all(fd, chunk)
        except OSError as exc:
            raise WriteError(f"{self.target}: write failed: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
            self.buffer.close()

    def abort(self) -> None:
        if self.temp is not None:
            self.temp.abort()
        if self.buffer is not None:
            self.buffer.close()
        if self.sidecar is not None:
            self.sidecar.close()


def _release_replaced_pages(target: str, source: str) -> None:
    """Let the kernel drop the cached pages of the file that the output replaces.

    The rename frees them anyway, but only at the end. Freed first, they are
    reused for the new file's pages. On a VM that returns free memory to its host
    (virtio-balloon free page reporting), writing into never-used pages costs
    about five times the system time (bench/RESULTS.md). Clean pages only: this
    never loses data. The input itself is left cached while it is being read.
    """
    if not HAS_FADVISE:
        return
    with contextlib.suppress(OSError):
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or _same_file(source, found):
                return
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _same_file(path: str, found: os.stat_result) -> bool:
    if path == STDIN:
        return False
    with contextlib.suppress(OSError):
        mine = os.stat(path)
        return (mine.st_dev, mine.st_ino) == (found.st_dev, found.st_ino)
    return False


class StdoutSink:
    """Holds the repaired transcript until it is known to be sound, then prints it."""

    def __init__(self, sidecar: Sidecar | None = None) -> None:
        self.sidecar = sidecar
        import tempfile

        self.buffer = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (closed by commit or abort)
        self.keep: Callable[[bytes], object]
        self.write: Callable[[bytes], object]
        self.keep = self.write = self.buffer.write

    def drop(self, raw: bytes) -> None:
        pass

    def reject(self, raw: bytes) -> None:
        assert self.sidecar is not None  # --salvage gives a sidecar
        self.sidecar.add(raw)

    def commit(self) -> bool:
        _commit_with(self.sidecar, self._print)
        return True

    def _print(self) -> None:
        self.buffer.seek(0)
        out = sys.stdout.buffer
        while chunk := self.buffer.read(READ_BUFFER):
            out.write(chunk)
        out.flush()
        self.buffer.close()

    def abort(self) -> None:
        self.buffer.close()
        if self.sidecar is not None:
            self.sidecar.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
