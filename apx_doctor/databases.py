"""Session stores that are SQLite databases: OpenCode's ``opencode.db``.

A database is no stream of lines, and a runtime may be writing to it: it is
read through SQLite (read-only for a check), and a repair goes into it as one
SQLite transaction that changes only the parts that answer interrupted calls.
SQLite's own lock keeps a runtime's writes and ours apart, so neither is lost;
the rows the repair does not change are not touched at all.

Every session in the store is one history. A finding's ``line`` is the
position of its message in the store: the sessions in the order they were
created, each one's messages in order, numbered from 1; the message says
which session and message it is.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from . import files
from .documents import _Options, _review
from .errors import InputError, NotATranscriptError, UsageError, WriteError
from .formats.opencode import OpenCodeAdapter, created_time
from .model import Edit, FileReport, Finding
from .stream import SQLITE_MAGIC as MAGIC

if TYPE_CHECKING:  # pragma: no cover
    from .runner import RunOptions

# How long a repair waits for a runtime's write transaction to end.
BUSY_SECONDS = 5.0
_TABLES = {
    "session": {"id", "time_created"},
    "message": {"id", "session_id", "data"},
    "part": {"id", "message_id", "session_id", "data", "time_updated"},
}


def is_database(path: str) -> bool:
    """Whether ``path`` is a regular file that starts as a SQLite database does."""
    if path == files.STDIN:
        return False
    try:
        # Non-blocking: opening a FIFO to look at it must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.pread(fd, len(MAGIC), 0) == MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


# --- reading ------------------------------------------------------------------------


@dataclass(slots=True)
class _Part:
    id: str
    message: str
    data: dict[str, Any]  # the row's ``data``, as stored (without the id columns)
    raw: str


@dataclass(slots=True)
class _Session:
    id: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # {"info", "parts"}, as OpenCode's API gives them
    parts: list[list[_Part]] = field(default_factory=list)  # each message's part rows


def _connect(path: str, write: bool) -> sqlite3.Connection:
    mode = "rw" if write else "ro"
    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode={mode}", uri=True, timeout=BUSY_SECONDS)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the SQLite database: {exc}") from None
    db.isolation_level = None  # transactions are begun and ended here, explicitly
    return db


def _ensure_store(db: sqlite3.Connection) -> None:
    tables: dict[str, set[str]] = {}
    for (name,) in db.execute("select name from sqlite_master where type = 'table'"):
        tables[name] = {row[1] for row in db.execute(f"pragma table_info({_quoted(name)})")}
    missing = [name for name, columns in _TABLES.items() if not columns <= tables.get(name, set())]
    if missing:
        raise NotATranscriptError(
            "a SQLite database, but not an OpenCode session store (it lacks the "
            f"{', '.join(missing)} table{'s' if len(missing) > 1 else ''} OpenCode keeps); nothing was checked"
        )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _load(value: str, what: str) -> Any:
    try:
        return orjson.loads(value)
    except (orjson.JSONDecodeError, TypeError):
        raise InputError(f"{what}: its data is not valid JSON; nothing was checked") from None


def _sessions(db: sqlite3.Connection) -> list[_Session]:
    sessions = [_Session(sid) for (sid,) in db.execute("select id from session order by time_created, id")]
    by_id = {s.id: s for s in sessions}
    messages: dict[str, tuple[_Session, int]] = {}
    for mid, sid, raw in db.execute("select id, session_id, data from message order by session_id, id"):
        session = by_id.get(sid)
        if session is None:
            continue  # a message of no session is in no history
        info = _load(raw, f"message {mid}")
        if type(info) is not dict:
            raise InputError(f"message {mid}: its data is not a JSON object; nothing was checked")
        messages[mid] = (session, len(session.messages))
        session.messages.append({"info": {"id": mid, "sessionID": sid, **info}, "parts": []})
        session.parts.append([])
    for pid, mid, raw in db.execute("select id, message_id, data from part order by message_id, id"):
        found = messages.get(mid)
        if found is None:
            continue
        session, position = found
        data = _load(raw, f"part {pid}")
        if type(data) is not dict:
            raise InputError(f"part {pid}: its data is not a JSON object; nothing was checked")
        session.messages[position]["parts"].append({"id": pid, "messageID": mid, "sessionID": session.id, **data})
        session.parts[position].append(_Part(pid, mid, data, raw))
    return sessions


# --- checking and planning -------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    # part id -> (the data it was read with, the data the repair writes)
    rows: dict[str, tuple[str, bytes]] = field(default_factory=dict)


def _plan(sessions: list[_Session], options: _Options) -> _Plan:
    plan = _Plan()
    adapter = OpenCodeAdapter(marker=options.marker)
    offset = 0
    for session in sessions:
        review = _review(OpenCodeAdapter, session.messages, options)
        for finding in review.findings:
            plan.findings.append(_located(finding, session, offset))
        for record, pending in review.answers:
            position = pending.line - 1
            for part in session.parts[position]:
                if part.id in plan.rows or part.data.get("callID") != pending.call.id or part.data.get("type") != "tool":
                    continue
                state = part.data.get("state")
                if type(state) is not dict or state.get("status") in ("completed", "error"):
                    continue
                data = adapter.answered_part(part.data, created_time(session.messages[position]["info"]))
                plan.rows[part.id] = (part.raw, orjson.dumps(data))
                plan.edits.append(
                    Edit("insert", offset + pending.line, {"id": part.id, **data}, pending.call.id, pending.call.name)
                )
                break
        offset += len(session.messages)
    return plan


def _located(finding: Finding, session: _Session, offset: int) -> Finding:
    number = finding.line
    if number is None or not 1 <= number <= len(session.messages):
        where = f"session {session.id}, at its end"
    else:
        where = f"session {session.id}, message {session.messages[number - 1]['info']['id']}"
    return replace(finding, line=None if number is None else offset + number, message=f"{finding.message} ({where})")


# --- the run ----------------------------------------------------------------------------


def run_path(path: str, options: RunOptions) -> FileReport:
    """Check (or repair) one OpenCode store; ``runner.run_path`` for a database."""
    from .runner import Mode

    report = FileReport(path, format=OpenCodeAdapter.name)
    config = _Options(options.marker, options.repair, False)
    try:
        if options.salvage:
            raise UsageError("--salvage is for JSON Lines files: a database has no lines to set aside")
        if options.mode is Mode.OUTPUT and options.output == files.STDIN:
            raise UsageError("a database cannot be written to standard output: use --output FILE or --in-place")
        if options.input_format not in ("auto", OpenCodeAdapter.name):
            raise InputError(
                f"the file holds no {options.input_format} entries; it looks like {OpenCodeAdapter.name} (a SQLite session store)"
            )
        db = _connect(path, write=False)
        try:
            _ensure_store(db)
            plan = _plan(_sessions(db), config)
        finally:
            db.close()
        report.findings = plan.findings
        report.edits = plan.edits
        report.changed = bool(plan.rows)
        if options.mode is Mode.IN_PLACE and plan.rows:
            if not options.force:
                files.ensure_no_writer(path, path)
            if options.backup:
                report.backup = _backup(path)
            _write(path, plan.rows)
            report.written = True
        elif options.mode is Mode.OUTPUT:
            _copy_and_write(path, options.output or "", plan.rows)
            report.written = True
    except NotATranscriptError as exc:
        if options.skip_unrecognised:
            report.skipped = str(exc)
        else:
            report.error = f"{path}: {exc}"
        report.format = None
    except (InputError, UsageError, WriteError) as exc:
        report.error = f"{path}: {exc}"
    except sqlite3.Error as exc:
        report.error = f"{path}: the SQLite database cannot be read or written ({exc}); nothing was written"
    return report


def _write(path: str, rows: dict[str, tuple[str, bytes]]) -> None:
    """The planned parts into the store, in one transaction, or nothing at all."""
    db = _connect(path, write=True)
    try:
        _apply(db, rows)
    finally:
        db.close()


def _apply(db: sqlite3.Connection, rows: dict[str, tuple[str, bytes]]) -> None:
    try:
        db.execute("begin immediate")
    except sqlite3.OperationalError as exc:
        raise WriteError(f"the database stayed busy for {BUSY_SECONDS:.0f} s ({exc}); nothing was written") from None
    try:
        for part_id, (before, after) in rows.items():
            found = db.execute("select data from part where id = ?", (part_id,)).fetchone()
            if found is None or found[0] != before:
                raise WriteError(
                    f"part {part_id} changed while it was being repaired (is OpenCode running?); nothing was written"
                )
            db.execute("update part set data = ? where id = ?", (after.decode("utf-8"), part_id))
        db.execute("commit")
    except BaseException:
        db.execute("rollback")
        raise


def _copy_and_write(source: str, target: str, rows: dict[str, tuple[str, bytes]]) -> None:
    """A repaired copy of the store at ``target``: made beside it, then renamed over it."""
    folder = os.path.dirname(os.path.abspath(target))
    temp = os.path.join(folder, f".{os.path.basename(target)}.apx-doctor-{os.getpid()}.tmp")
    try:
        _snapshot(source, temp)
        copy = _connect(temp, write=True)
        try:
            copy.execute("pragma journal_mode = delete")
            _apply(copy, rows)
        finally:
            copy.close()
        with open(temp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temp, target)
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}; nothing was written") from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _snapshot(source: str, target: str) -> None:
    """A consistent copy of the whole store (its write-ahead log included), through SQLite."""
    reading = _connect(source, write=False)
    try:
        copy = sqlite3.connect(target)
        try:
            reading.backup(copy)
        finally:
            copy.close()
    finally:
        reading.close()


def _backup(path: str) -> str:
    for n in range(100_000):
        candidate = path + files.BACKUP_SUFFIX + ("" if n == 0 else f".{n}")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        try:
            _snapshot(path, candidate)
        except BaseException:
            os.unlink(candidate)
            raise
        return candidate
    raise WriteError(f"{path}: no free name for a backup beside it; nothing was written")
