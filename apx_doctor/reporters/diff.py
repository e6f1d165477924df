"""``fix --diff``: what a repair would change, as a unified diff that ``patch -p0`` and ``git apply -p0`` take.

The repair is run for real, into files of a private temporary folder (the
same code path as ``fix --output``), so the diff applied to the input gives
byte for byte what ``fix --output`` writes. Nothing beside the input is
written. Each file's diff is headed ``--- PATH`` / ``+++ PATH`` with the path
as given, so ``patch -p0`` run where the command ran finds it.

Bytes are what ``patch`` needs, and a pipe or a file gets them unchanged. A
terminal gets the diff coloured, every line made printable (transcript text
could hold control sequences). Under GitHub Actions, a diff written to stdout
is fenced with ``::stop-commands::`` and a random token, so no transcript line
in it is read as a workflow command.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from ..model import FileReport
from . import RenderContext, neutral, shown_name, summary_text

NO_NEWLINE = b"\\ No newline at end of file\n"
CONTEXT = 3


def split_lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` as ``patch`` counts them: cut after each LF, the last one perhaps without."""
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def unified(old: bytes, new: bytes, name: bytes) -> bytes:
    """The unified diff from ``old`` to ``new``, both headed ``name`` (empty when they are equal)."""
    if old == new:
        return b""
    a, b = split_lines(old), split_lines(new)
    out = [b"--- " + name + b"\n", b"+++ " + name + b"\n"]
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        header = f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@\n"
        out.append(header.encode())
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_marked(b" ", a[i1:i2]))
                continue
            if tag in ("replace", "delete"):
                out.extend(_marked(b"-", a[i1:i2]))
            if tag in ("replace", "insert"):
                out.extend(_marked(b"+", b[j1:j2]))
    return b"".join(out)


def _marked(mark: bytes, lines: list[bytes]) -> Iterator[bytes]:
    for line in lines:
        if line.endswith(b"\n"):
            yield mark + line
        else:
            yield mark + line + b"\n" + NO_NEWLINE


class Workspace:
    """The temporary folder a --diff run repairs into, and the diffs it gives."""

    def __init__(self, stdin_name: str | None = None) -> None:
        import tempfile

        self.stdin_name = stdin_name  # what the diff of standard input is headed (--stdin-filename), else -
        self.folder = tempfile.mkdtemp(prefix="apx-doctor-diff-")
        self.stdin_copy: str | None = None
        self.outputs: dict[str, str] = {}
        self.diffs: dict[int, bytes] = {}

    def source(self, path: str) -> str:
        """The file the run reads for ``path``: standard input is kept in the folder first, to be diffed against."""
        if path != "-":
            return path
        if self.stdin_copy is None:
            self.stdin_copy = os.path.join(self.folder, "stdin")
            with open(self.stdin_copy, "wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy)
        return self.stdin_copy

    def prepare(self, paths: Sequence[str], options: list[Any]) -> list[Any]:
        """Each input's options turned into an output to a file of the folder."""
        from dataclasses import replace

        from ..runner import Mode

        out = []
        for n, (path, opts) in enumerate(zip(paths, options)):
            target = os.path.join(self.folder, f"{n}.out")
            self.outputs[self.source(path)] = target
            out.append(replace(opts, mode=Mode.OUTPUT, output=target))
        return out

    def finish(self, reports: Sequence[FileReport], settings: Sequence[Any]) -> None:
        """Read each repair back as a diff; the reports then say what a dry run says (nothing was written)."""
        from dataclasses import replace

        from ..advice import annotate

        configs = dict(zip(self.outputs, settings))
        for report in reports:
            source = report.path
            target = self.outputs.get(source)
            if report.path == self.stdin_copy:
                report.path = "-"
                if report.error is not None:
                    report.error = report.error.replace(self.stdin_copy, "<stdin>")
            if report.written and target is not None and report.error is None:
                with open(source, "rb") as old, open(target, "rb") as new:
                    name = (self.stdin_name or "-") if report.path == "-" else report.path
                    self.diffs[id(report)] = unified(old.read(), new.read(), os.fsencode(name))
            report.written = False
            if any(f.code == "APX001" for f in report.findings):
                config = configs.get(source)
                report.findings = [replace(f, advice=None, tool_kind=None) if f.code == "APX001" else f for f in report.findings]
                annotate(
                    report,
                    "dry-run",
                    getattr(config, "read_only_tools", ()),
                    getattr(config, "side_effect_tools", ()),
                )

    def render(self, reports: Sequence[FileReport], ctx: RenderContext, *, to_file: bool) -> None:
        from ..safe import printable

        ctx.mode = "dry-run"
        diffs = [self.diffs[id(r)] for r in reports if self.diffs.get(id(r))]
        out = ctx.out
        terminal = _isatty(out)
        escape = terminal or ctx.color is True
        colour = ctx.color is True or (ctx.color is None and terminal and not os.environ.get("NO_COLOR"))
        if diffs:
            if escape:
                for diff in diffs:
                    for raw in split_lines(diff):
                        out.write(
                            _painted(
                                shown_name(raw.rstrip(b"\n").decode("utf-8", "replace"))
                                if raw.startswith((b"---", b"+++"))
                                else printable(raw.rstrip(b"\n").decode("utf-8", "replace")),
                                colour,
                            )
                            + "\n"
                        )
                out.flush()
            else:
                token = None
                if not to_file and os.environ.get("GITHUB_ACTIONS") == "true":
                    import secrets

                    token = secrets.token_hex(16)
                _write_bytes(out, b"".join(diffs), token)
        for report in reports:
            if report.error is not None:
                ctx.err.write(neutral(f"apx-doctor: error: {printable(report.error)}") + "\n")
        if not ctx.quiet:
            ctx.err.write(summary_text(reports, ctx) + "\n")
        ctx.err.flush()

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_COLOURS = {"+": "32", "-": "31", "@": "36"}


def _painted(line: str, colour: bool) -> str:
    line = neutral(line)
    if not colour or not line:
        return line
    if line.startswith(("+++", "---")):
        return f"\x1b[1m{line}\x1b[0m"
    code = _COLOURS.get(line[0])
    return f"\x1b[{code}m{line}\x1b[0m" if code else line


def _write_bytes(out: Any, data: bytes, token: str | None) -> None:
    fence_on = f"::stop-commands::{token}\n".encode() if token else b""
    fence_off = f"::{token}::\n".encode() if token else b""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write((fence_on + data + fence_off).decode("utf-8", "surrogateescape"))
        out.flush()
        return
    out.flush()
    buffer.write(fence_on)
    buffer.write(data)
    buffer.write(fence_off)
    buffer.flush()
