"""The ``sessions`` view: a table for people, one document (or one line a session) for tools.

Every value read from a session (project, ids) is untrusted: it goes through
``printable`` and reaches Rich as ``Text``; a resume command is shown quoted
for a POSIX shell.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

import orjson

from ..safe import json_dumps, json_safe, printable
from . import write_document

if TYPE_CHECKING:
    from rich.text import Text

    from ..homes import Home
    from ..sessions import SessionRow

# Interrupted call ids a row shows before it counts the rest.
FIRST_CALLS = 5


def render(
    name: str,
    found_homes: Sequence[Home],
    listed: Sequence[SessionRow],
    checked: int,
    out: IO[str],
    err: IO[str],
    *,
    quiet: bool,
    color: bool | None,
    every: bool,
) -> None:
    from ..sessions import document

    if name == "json":
        write_document(out, json_safe(json_dumps(document(found_homes, listed, checked), option=orjson.OPT_INDENT_2)))
    elif name == "json-lines":
        for row in listed:
            out.write(json_safe(json_dumps(row.to_dict())).decode() + "\n")
        out.flush()
    else:
        _table(listed, out, color)
    if not quiet and name != "json":
        err.write(summary_line(found_homes, listed, checked, every) + "\n")
        err.flush()


def shell_command(row: SessionRow) -> str | None:
    if row.resume is None:
        return None
    command = shlex.join(row.resume)
    if row.resume_cwd:
        return f"cd {shlex.quote(row.resume_cwd)} && {command}"
    return command


def _table(listed: Sequence[SessionRow], out: IO[str], color: bool | None) -> None:
    """One block a session; paths and commands on lines of their own, never folded, so they copy whole."""
    if not listed:
        return
    from rich.text import Text

    from .text import console

    draw = console(out, color)
    for row in listed:
        head = Text(row.title, style="bold")
        head.append(f"  session {printable(row.session_id or '?', 80)}", style="bold")
        head.append(f"  (last write {_local(row.mtime)})", style="dim")
        lines = [head]
        lines.append(_field("project", printable(row.project or "?", 300)))
        report = row.report
        if report is not None and report.error is not None:
            lines.append(_field("error", printable(f"could not be checked: {report.error}", 300), "bold red"))
        elif row.call_ids:
            shown = ", ".join(printable(c, 80) for c in row.call_ids[:FIRST_CALLS])
            left = len(row.call_ids) - FIRST_CALLS
            if left > 0:
                shown += f" and {left} more"
            lines.append(_field("interrupted", shown, "bold red"))
        if report is not None and report.error is None:
            others = [f"{f.code} line {f.line}" if f.line else f.code for f in report.findings if f.code != "APX001"]
            if others:
                more = f" and {len(others) - FIRST_CALLS} more" if len(others) > FIRST_CALLS else ""
                lines.append(_field("findings", ", ".join(others[:FIRST_CALLS]) + more, "yellow"))
            elif not row.call_ids:
                lines.append(_field("findings", "none", "green"))
        command = shell_command(row)
        if command is not None:
            lines.append(_field("resume", printable(command)))
        lines.append(_field("file", printable(row.path)))
        if row.call_ids or (report is not None and report.changed):
            lines.append(_field("repair", printable(f"apx-doctor fix --in-place {shlex.quote(row.path)}")))
        for line in lines:
            draw.print(line, soft_wrap=True)
        draw.print()


def _field(name: str, value: str, style: str = "") -> Text:
    from rich.text import Text

    line = Text(f"  {name:<13}", style="dim")
    line.append(value, style=style)
    return line


def _local(mtime: float | None) -> str:
    if mtime is None:
        return "?"
    return datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M")


def summary_line(found_homes: Sequence[Home], listed: Sequence[Any], checked: int, every: bool) -> str:
    present = [h for h in found_homes if h.exists]
    where = ", ".join(printable(h.path) for h in present) or "none"
    interrupted = sum(1 for r in listed if r.interrupted)
    homes = f"{len(present)} home{'' if len(present) == 1 else 's'} ({where})"
    line = f"{checked} session{'' if checked == 1 else 's'} checked in {homes}, {interrupted} with interrupted calls"
    if every:
        return line
    others = len(listed) - interrupted
    if others:
        line += f", {others} with other errors"
    return line
