"""The summary a clean run prints is written without Rich: byte for byte what Rich writes.

``text.plain_line`` decides as Rich does (a terminal or not, colour, width) and
gives up (None) wherever only Rich can tell; these tests hold it to Rich's own
output over the settings that change it.
"""

from __future__ import annotations

import io

import pytest
from rich.text import Text

from apx_doctor.model import FileReport, Finding
from apx_doctor.reporters import RenderContext, text


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


ENVS = [
    {},
    {"FORCE_COLOR": "1"},
    {"FORCE_COLOR": ""},
    {"NO_COLOR": "1"},
    {"NO_COLOR": "1", "FORCE_COLOR": "1"},
    {"TTY_COMPATIBLE": "1"},
    {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
    {"TERM": "dumb"},
    {"TERM": "xterm-256color", "COLORTERM": "truecolor"},
    {"TERM": "xterm-16color"},
    {"COLUMNS": "20"},
    {"COLUMNS": "35"},  # one short of the lines: Rich folds them
    {"COLUMNS": "36"},  # exactly their width
    {"COLUMNS": "200"},
    {"COLUMNS": "0"},
    {"COLUMNS": "wide"},
    {"LINES": "10", "COLUMNS": "30"},
]
LINES = [("1 file checked, 0 errors, 0 warnings", "bold green"), ("2 files checked, 1 error, 0 warnings", "bold red")]


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "plain")
@pytest.mark.parametrize("color", [None, True, False])
@pytest.mark.parametrize("tty", [False, True])
def test_the_plain_summary_is_what_rich_writes(env: dict[str, str], color: bool | None, tty: bool, monkeypatch) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TERM", "COLORTERM", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for line, style in LINES:
        plain = text.plain_line(_Stream(tty), color, line, style)
        rich = _Stream(tty)
        text.console(rich, color).print(Text(line, style=style))
        if plain is not None:
            assert plain == rich.getvalue(), (line, style)


@pytest.mark.parametrize(
    ("tty", "color", "env", "expected"),
    [
        (False, None, {}, "1 file checked, 0 errors, 0 warnings\n"),  # a pipe, a CI log
        (False, False, {"FORCE_COLOR": "1"}, "1 file checked, 0 errors, 0 warnings\n"),
        (False, True, {"TERM": "xterm-256color"}, "\x1b[1;32m1 file checked, 0 errors, 0 warnings\x1b[0m\n"),
        (False, None, {"FORCE_COLOR": "1", "TERM": "xterm"}, "\x1b[1;32m1 file checked, 0 errors, 0 warnings\x1b[0m\n"),
        (True, None, {"TERM": "xterm-256color", "COLUMNS": "80"}, "\x1b[1;32m1 file checked, 0 errors, 0 warnings\x1b[0m\n"),
    ],
)
def test_the_usual_cases_take_the_plain_path(
    tty: bool, color: bool | None, env: dict[str, str], expected: str, monkeypatch
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TERM", "COLORTERM", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert text.plain_line(_Stream(tty), color, "1 file checked, 0 errors, 0 warnings", "bold green") == expected


@pytest.mark.parametrize("command", ["check", "fix"])
@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("color", [None, True, False])
def test_a_clean_render_is_the_rich_render(command: str, quiet: bool, color: bool | None, monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    reports = [FileReport("a.jsonl", format="chat"), FileReport("b.jsonl", format="chat")]

    def rendered(render) -> tuple[str, str]:
        out, err = _Stream(False), _Stream(False)
        render(
            reports,
            RenderContext(
                command=command, mode="check" if command == "check" else "dry-run", out=out, err=err, quiet=quiet, color=color
            ),
        )
        return out.getvalue(), err.getvalue()

    assert rendered(text.render) == rendered(text._render_rich)


def test_a_report_with_findings_is_drawn_by_rich(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    report = FileReport("a.jsonl", format="chat", findings=[Finding("APX105", 2, "an empty or whitespace-only line")])
    out, err = _Stream(False), _Stream(False)
    text.render([report], RenderContext(command="check", mode="check", out=out, err=err))
    assert "APX105" in out.getvalue()
    assert err.getvalue() == "1 file checked, 0 errors, 1 warning\n"


def test_what_only_rich_can_tell_is_left_to_rich(monkeypatch) -> None:
    from rich.console import Console
    from rich.file_proxy import FileProxy

    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TERM", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    line = "1 file checked, 0 errors, 0 warnings"
    assert text.plain_line(_Stream(False), None, line, "bold green") is not None
    assert text.plain_line(FileProxy(Console(file=_Stream(False)), _Stream(False)), None, line, "bold green") is None
    assert text.plain_line(_Stream(False), None, "1 file checked: caf\u00e9", "bold green") is None
    assert text.plain_line(_Stream(False), None, line, "dim") is None
    monkeypatch.setattr("sys.platform", "win32")
    assert text.plain_line(_Stream(False), None, line, "bold green") is None
