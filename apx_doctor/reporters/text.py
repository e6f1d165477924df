"""Human output: a Rich table of findings per file and a one-line summary.

Every piece of transcript text goes through ``printable`` and reaches Rich as a
``Text`` object, so it is never read as markup and never written raw.

Rich is imported only when there is something to draw: a clean run prints just
its summary, which is written here byte for byte as Rich would write it (see
``plain_line``), so a check of a clean file starts fast. The findings and
repairs tables, to output that takes no colour (a pipe, a CI log), are laid
out by ``_plain_table`` as Rich lays them out, byte for byte, for a tenth of
the time; a terminal's colours, and anything that module cannot vouch for,
are Rich's to draw.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..model import FileReport, Finding
from ..rules import Severity
from . import RenderContext, neutral, report_skipped, shown_name, summary, summary_text

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from . import _plain_table

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
ARGUMENTS_WIDTH = 80
# Rows a table shows per file unless --show-all.
FIRST_ROWS = 50
RECORD_WIDTH = 240


# Width when the output is no terminal (a pipe, a pre-commit log, CI) and
# COLUMNS says nothing: Rich's 80 folds a findings table into a narrow column.
PIPE_WIDTH = 120


def console(stream: Any, color: bool | None) -> Console:
    from rich.console import Console

    return Console(
        file=stream if _is_tty(stream) else _Trimmed(stream),  # type: ignore[arg-type]  # _Trimmed is a text stream by delegation
        width=None if _sized(stream) else PIPE_WIDTH,
        markup=False,
        emoji=False,
        highlight=False,
        # None leaves the choice to Rich: a terminal or not, NO_COLOR, FORCE_COLOR.
        force_terminal=color,
        no_color=None if color is None else not color,
        soft_wrap=False,
    )


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Trimmed:
    """A stream that drops the spaces a table pads its lines with, before each line's end.

    For output that is no terminal (a pipe, a file, a CI log): trailing spaces
    only make diffs and greps noisy. Colour codes after the padding are kept.
    Everything else (isatty, fileno, encoding) is the stream's own.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        text = self._pending + text
        end = text.rfind("\n")
        if end < 0:
            self._pending = text
            return 0
        self._pending = text[end + 1 :]
        lines = text[: end + 1]
        # Trailing spaces stand right before a line end or a colour code: most
        # output has neither, and is not run through the pattern.
        if " \n" in lines or " \x1b" in lines:
            lines = _TRAILING.sub(r"\1\n", lines)
        self._stream.write(lines)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


import re as _re  # noqa: E402

# Spaces (perhaps followed by SGR codes) before a line's end.
_TRAILING = _re.compile(r" +((?:\x1b\[[0-9;]*m)*)\n")


def _sized(stream: Any) -> bool:
    try:
        return stream.isatty() or bool(os.environ.get("COLUMNS"))
    except (AttributeError, ValueError):
        return bool(os.environ.get("COLUMNS"))


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    report_skipped(reports, ctx)
    if not any(_draws(report, ctx) for report in reports):
        # Nothing but the summary: no tables, so no Rich unless only it can tell the bytes.
        if not ctx.quiet:
            line, style = summary_text(reports, ctx), _summary_style(reports)
            plain = plain_line(ctx.err, ctx.color, line, style)
            if plain is None:
                from rich.text import Text

                console(ctx.err, ctx.color).print(Text(line, style=style))
            else:
                _write(ctx.err, plain)
        return
    if not _render_plain(reports, ctx):
        _render_rich(reports, ctx)


def _render_plain(reports: Sequence[FileReport], ctx: RenderContext) -> bool:
    """The tables written as Rich writes them, without Rich, where that is certain; False: nothing written.

    Only for output Rich would write no colour to, trimmed (no terminal), and
    only for what a check or a repair draws: findings and repairs tables,
    their "and N more" lines, the lines naming a file rewritten or a backup,
    and the summary (an error goes to Rich). Everything is laid out first,
    then written.
    """
    from . import _plain_table

    width = _plain_width(ctx.out, ctx.color)
    if width is None or any(r.error is not None for r in reports):
        return False
    limit = None if ctx.show_all else FIRST_ROWS
    parts = []
    for report in reports:
        for spec, total, what in _tables(report, ctx, limit, width):
            drawn = _plain_drawn(spec, width)
            more = _more_text(total, limit, what)
            lines = [] if more is None else _plain_table.folded(more, width)
            if drawn is None or lines is None:
                return False
            parts.append(drawn + "".join(line + "\n" for line in lines))
        for note in _notes(report, ctx):
            lines = _plain_table.folded(note, width)
            if lines is None:
                return False
            parts.append("".join(line + "\n" for line in lines))
    summary_line = None
    if not ctx.quiet:
        summary_line = plain_line(ctx.err, ctx.color, summary_text(reports, ctx), _summary_style(reports))
        if summary_line is None:
            return False
    _write(ctx.out, "".join(parts))
    if summary_line is not None:
        _write(ctx.err, summary_line)
    return True


def _tables(report: FileReport, ctx: RenderContext, limit: int | None, width: int | None) -> list[tuple[_TableSpec, int, str]]:
    """The tables drawn for ``report`` (findings, then repairs), each with its row count and what a row is."""
    tables = []
    if report.findings:
        tables.append((_findings_spec(report, limit, width), len(report.findings), "finding"))
    if ctx.command == "fix" and report.edits:
        tables.append((_edits_spec(report, "dry-run" if report.refused else ctx.mode, limit), len(report.edits), "repair"))
    return tables


def _notes(report: FileReport, ctx: RenderContext) -> list[str]:
    """The lines after the tables: the file rewritten in place, and where its original was kept."""
    notes = []
    if ctx.mode == "in-place" and report.written:
        notes.append(f"Fixing {shown_name(report.path)}")
    if report.backup is not None:
        notes.append(f"Kept the original of {shown_name(report.path)} as {shown_name(report.backup)}")
    return notes


def _plain_width(stream: Any, color: bool | None) -> int | None:
    """The console width where Rich would write to ``stream`` without colour, through ``_Trimmed``; else None."""
    if sys.platform == "win32" or color or _is_tty(stream) or hasattr(stream, "rich_proxied_file"):
        return None
    import builtins

    if hasattr(builtins, "get_ipython") or (color is None and _is_terminal(stream, os.environ)):
        return None
    return _console_width(stream, os.environ)


def _draws(report: FileReport, ctx: RenderContext) -> bool:
    """Whether ``_render_rich`` prints anything for ``report`` besides the summary."""
    return bool(
        report.findings
        or report.error is not None
        or (ctx.command == "fix" and report.edits)
        or (ctx.mode == "in-place" and report.written)
    )


def _render_rich(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    from rich.text import Text

    from ..safe import printable

    out = console(ctx.out, ctx.color)
    err = console(ctx.err, ctx.color)
    for report in reports:
        if report.error is not None:
            err.print(Text(neutral(f"apx-doctor: error: {printable(report.error)}"), style="bold red"), soft_wrap=True)
            continue
        limit = None if ctx.show_all else FIRST_ROWS
        for spec, total, what in _tables(report, ctx, limit, out.width):
            out.print(_rich_table(spec))
            _more(out, total, limit, what)
        for note in _notes(report, ctx):
            out.print(Text(note))
    if not ctx.quiet:
        err.print(_summary_line(reports, ctx))


def _more(out: Console, total: int, limit: int | None, what: str) -> None:
    """Count the rows a long table leaves out: thousands of rows help nobody, and cost seconds."""
    from rich.text import Text

    more = _more_text(total, limit, what)
    if more is not None:
        out.print(Text(more, style="dim"))


def _more_text(total: int, limit: int | None, what: str) -> str | None:
    if limit is None or total <= limit:
        return None
    left = total - limit
    return f"… and {left} more {what}{'' if left == 1 else 's'} in this file (--show-all prints every row; json output holds them all)"


def _title(report: FileReport) -> Text:
    from rich.text import Text

    title = Text(shown_name(report.path), style="bold")
    title.append(f"  ({report.format})", style="dim")
    return title


# Below this width the findings table folds its advice into the prose column
# and shows severity as the code's colour, so ids keep their room.
NARROW = 100


# A table's cells (and its title) as (text, style) runs, before Rich or ``_plain_table`` lays them out.
_Cell = list[tuple[str, str]]


class _TableSpec:
    """A table before layout. (A plain class: a clean run imports this module and builds none.)"""

    __slots__ = ("columns", "rows", "title")

    def __init__(self, title: _Cell, columns: list[_plain_table.Column], rows: list[list[_Cell]]) -> None:
        self.title = title
        self.columns = columns
        self.rows = rows


def _findings_spec(report: FileReport, limit: int | None, width: int | None) -> _TableSpec:
    from ..safe import printable
    from ._plain_table import Column

    narrow = width is not None and width < NARROW
    advice = any(f.tool_kind for f in report.findings)
    # Ids and names are never folded inside: one wider than its column is cut
    # with an ellipsis (the json output holds it whole). Prose folds between words.
    columns = [
        Column("Line", right=True, wraps=False),
        Column("Code", wraps=False),
        *([] if narrow else [Column("Severity", wraps=False)]),
        Column("Call id", wraps=False, max_width=20 if narrow else 32),
        Column("Tool", wraps=False, max_width=16 if narrow else 40),
        Column("What happened", ratio=3),
        *([Column("Safe next", ratio=2)] if advice and not narrow else []),
    ]
    rows = []
    for f in report.findings[:limit]:
        line = "" if f.line is None else str(f.line) + (f"[{f.index}]" if f.index is not None else "")
        style = _SEVERITY_STYLE[f.severity]
        what: _Cell = [(printable(_what_happened(f), 200), "")]
        if advice and narrow and f.tool_kind:
            what.append(("\nnext: " + _safe_next(f), _KIND_STYLE.get(f.tool_kind, "")))
        rows.append(
            [
                [(line, "")],
                [(f.code, style if narrow else "")],
                *([] if narrow else [[(str(f.severity), style)]]),
                [(printable(f.call_id, 40), "")],
                [(printable(f.tool, 40), "")],
                what,
                *([[(_safe_next(f), _KIND_STYLE.get(f.tool_kind, ""))]] if advice and not narrow else []),
            ]
        )
    return _TableSpec([(shown_name(report.path), "bold"), (f"  ({report.format})", "dim")], columns, rows)


def _rich_table(spec: _TableSpec) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=_text(spec.title), title_justify="left", box=box.SIMPLE_HEAD, expand=False)
    for column in spec.columns:
        table.add_column(
            column.header,
            justify="right" if column.right else "left",
            no_wrap=not column.wraps,
            overflow="ellipsis",
            max_width=column.max_width,
            ratio=column.ratio,
        )
    for row in spec.rows:
        table.add_row(*map(_text, row))
    return table


def _text(runs: _Cell) -> Text:
    from rich.text import Text

    text = Text(runs[0][0], style=runs[0][1])
    for part, style in runs[1:]:
        text.append(part, style=style)
    return text


def _plain_drawn(spec: _TableSpec, width: int) -> str | None:
    from . import _plain_table

    rows = [["".join(part for part, _style in cell) for cell in row] for row in spec.rows]
    title = "".join(part for part, _style in spec.title)
    return _plain_table.table(title, spec.columns, rows, width)


def _what_happened(f: Finding) -> str:
    # The call id and tool stand in their own columns; the JSON message repeats
    # them so that it reads on its own.
    if f.code != "APX001":
        return f.message
    if f.fixable is False:
        return "no result: the turn was interrupted (not repaired: no honest not-run record can be written here)"
    return "no result: the turn was interrupted"


def _safe_next(f: Finding) -> str:
    if not f.tool_kind:
        return ""
    from ..advice import SAFE_NEXT, ToolKind

    return SAFE_NEXT[ToolKind(f.tool_kind)]


_KIND_STYLE: dict[str | None, str] = {"read-only": "green", "side-effects": "bold yellow", "unknown": "yellow"}


def _edits_spec(report: FileReport, mode: str, limit: int | None = None) -> _TableSpec:
    from ..safe import printable
    from ._plain_table import Column

    verb = {"dry-run": "would be made (dry run, nothing written)"}.get(mode, "made")
    # JSON is shown with a space after each separator, so it folds between tokens;
    # a token wider than the column is cut with an ellipsis, never split.
    columns = [
        Column("Line", right=True, wraps=False),
        Column("Action", wraps=False),
        Column("Call id", max_width=32),
        Column("Tool", max_width=40),
        Column("Arguments", ratio=1),
        Column("Record", ratio=2),
    ]
    rows = []
    for e in report.edits[:limit]:
        where = f"before {e.line}" if e.action == "insert" else str(e.line)
        cells = (
            where,
            e.action,
            printable(e.call_id, 40),
            printable(e.tool, 40),
            printable(spaced_json(e.arguments), ARGUMENTS_WIDTH),
            printable(spaced_json(e.record), RECORD_WIDTH),
        )
        rows.append([[(cell, "")] for cell in cells])
    return _TableSpec([(f"Repairs to {shown_name(report.path)} {verb}", "bold")], columns, rows)


def spaced_json(value: object) -> object:
    """JSON (a value, or a string that holds JSON) written with a space after each separator, for folding."""
    import json

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return value
    if value is None or isinstance(value, (str, int, float, bool)):
        return value if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        return value


def _summary_line(reports: Sequence[FileReport], ctx: RenderContext) -> Text:
    from rich.text import Text

    return Text(summary_text(reports, ctx), style=_summary_style(reports))


def _summary_style(reports: Sequence[FileReport]) -> str:
    s = summary(reports)
    return "bold red" if s["errors"] or s["failed"] else "bold green"


# The SGR parameters Rich writes for a summary's style, the same in every colour
# system (standard, 256, truecolor): bold, then a standard foreground colour.
_SGR = {"bold green": "1;32", "bold red": "1;31"}


def plain_line(stream: Any, color: bool | None, line: str, style: str) -> str | None:
    """What ``console(stream, color).print(Text(line, style=style))`` writes, or None.

    None where only Rich can tell: Windows, Jupyter, a stream Rich stands in for
    while it draws, a dumb terminal, colour left to Rich with NO_COLOR set (Rich
    keeps bold), text that is not plain ASCII, a style not in ``_SGR``, or a line
    wider than the console (Rich folds it). Everywhere else the same decisions
    as Rich: a terminal or not (``color``, else TTY_COMPATIBLE, FORCE_COLOR, the
    stream), and the console width.
    """
    if sys.platform == "win32" or style not in _SGR or not (line.isascii() and line.isprintable()):
        return None
    import builtins

    if hasattr(builtins, "get_ipython"):  # IPython or Jupyter: Rich may display, not write
        return None
    if hasattr(stream, "rich_proxied_file"):  # a live Rich display's stand-in: Rich writes past it
        return None
    environ = os.environ
    terminal = color if color is not None else _is_terminal(stream, environ)
    if terminal:
        if environ.get("TERM", "").lower() in ("dumb", "unknown"):
            return None
        if color is None and environ.get("NO_COLOR", "") != "":
            return None
    width = _console_width(stream, environ)
    if len(line) > width:
        return None
    return f"\x1b[{_SGR[style]}m{line}\x1b[0m\n" if terminal else line + "\n"


def _is_terminal(stream: Any, environ: Mapping[str, str]) -> bool:
    """Rich's ``Console.is_terminal`` when the terminal is not forced either way."""
    if hasattr(sys.stdin, "__module__") and sys.stdin.__module__.startswith("idlelib"):
        return False
    tty_compatible = environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    force_color = environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False


def _console_width(stream: Any, environ: Mapping[str, str]) -> int:
    """Rich's ``Console.width`` for ``console(stream, ...)`` (not a dumb terminal, not Windows)."""
    columns = environ.get("COLUMNS")
    if not _sized(stream):
        return PIPE_WIDTH
    if columns is not None and columns.isdigit():
        return int(columns)
    width = None
    for std, default in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        # Rich asks the standard streams' descriptors in this order, the first terminal wins.
        try:
            fd = std.fileno()  # type: ignore[union-attr]  # None raises, and is caught
        except Exception:  # as Rich: None, closed, detached or no descriptor  # noqa: BLE001
            fd = default
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


def _write(stream: Any, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        # What Rich does when the reader has gone: nothing more to stdout, exit 1.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None
