"""``apx-doctor sessions``: one row a session in the agent homes, from the checker's reports.

The sessions are checked as ``check`` checks any file (runner and checker);
this only puts each report together with what the home says about the
session: its runtime, id, project, last write, and the command that resumes
it. Nothing here prints or writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .homes import Home, SessionFile, describe, resume_command
from .model import FileReport
from .rules import Severity

# Version of the sessions document (``--output-format json``): fields may be added, never renamed.
VERSION = 1

# A session id that goes into a command line: the runtimes' own are uuids;
# anything else read from a file (which anyone could have written) is not offered.
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


@dataclass(slots=True)
class SessionRow:
    runtime: str
    title: str
    path: str
    format: str | None
    session_id: str | None
    project: str | None
    modified: str | None  # ISO 8601, UTC
    mtime: float | None
    call_ids: list[str] = field(default_factory=list)
    report: FileReport | None = None
    resume: list[str] | None = None
    resume_cwd: str | None = None

    @property
    def interrupted(self) -> bool:
        return bool(self.call_ids)

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        out: dict[str, Any] = {
            "runtime": self.runtime,
            "path": self.path,
            "format": self.format,
            "session_id": self.session_id,
            "project": self.project,
            "modified": self.modified,
            "call_ids": list(self.call_ids),
            "resume_command": self.resume,
            "resume_cwd": self.resume_cwd,
            "findings": [f.to_dict() for f in report.findings] if report is not None else [],
        }
        if report is not None and report.error is not None:
            out["error"] = report.error
        return out


def needs_attention(report: FileReport) -> bool:
    """A row is listed by default when the session has error findings or could not be read."""
    return report.error is not None or report.errors > 0


def rows(files: Sequence[SessionFile], reports: Sequence[FileReport], *, every: bool = False) -> list[SessionRow]:
    """The rows of ``files`` (checked as ``reports``, in the same order): most recent first."""
    out = []
    for session, report in zip(files, reports):
        if not every and not needs_attention(report):
            continue
        out.append(row(session, report))
    out.sort(key=lambda r: (-(r.mtime or 0.0), r.path))
    return out


def row(session: SessionFile, report: FileReport) -> SessionRow:
    runtime = session.runtime
    session_id, project = describe(session)
    try:
        mtime: float | None = os.stat(session.path).st_mtime
    except OSError:
        mtime = None
    modified = None if mtime is None else datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    call_ids = [f.call_id for f in report.findings if f.code == "APX001" and f.call_id is not None]
    usable = session_id if session_id is not None and _SAFE_ID.match(session_id) else None
    command = resume_command(runtime, usable)
    return SessionRow(
        runtime=runtime.name,
        title=runtime.title,
        path=session.path,
        format=report.format,
        session_id=session_id,
        project=project,
        modified=modified,
        mtime=mtime,
        call_ids=list(dict.fromkeys(call_ids)),
        report=report,
        resume=command,
        resume_cwd=project if command is not None and runtime.resume_in_project else None,
    )


def document(found_homes: Sequence[Home], listed: Sequence[SessionRow], checked: int) -> dict[str, Any]:
    return {
        "version": VERSION,
        "homes": [home.to_dict() for home in found_homes],
        "sessions": [r.to_dict() for r in listed],
        "summary": summary(listed, checked),
    }


def summary(listed: Sequence[SessionRow], checked: int) -> dict[str, int]:
    return {
        "checked": checked,
        "listed": len(listed),
        "interrupted": sum(1 for r in listed if r.interrupted),
        "errors": sum(r.report.errors for r in listed if r.report is not None),
        "failed": sum(1 for r in listed if r.report is not None and r.report.error is not None),
    }


def exit_code(listed: Sequence[SessionRow]) -> int:
    """0 no session with error findings, 1 some, 2 a session could not be checked."""
    if any(r.report is not None and r.report.error is not None for r in listed):
        return 2
    if any(r.report is not None and any(f.severity is Severity.ERROR for f in r.report.findings) for r in listed):
        return 1
    return 0


__all__ = ["VERSION", "SessionRow", "document", "exit_code", "needs_attention", "row", "rows", "summary"]
