"""Untrusted text: what a transcript holds never acts on the terminal, the CI or the reader.

In every output format the CLI offers: no control sequence (CSI, OSC, C1,
bidi) reaches the output raw, no Rich markup is interpreted, no workflow
command is forged, long values are cut in human output, error messages never
quote transcript contents, and -v tracebacks never show local variables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor import runner
from apx_doctor.cli import OutputFormat, app

OUTPUT_FORMATS = [f.value for f in OutputFormat]
HOSTILE = (
    "\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07LINK\x1b]8;;\x07 \x9b31mC1 \x90dcs\x9c "
    "\u202eRLO\u202c \u2066ISO\u2069 \u200f \r\n::error::FORGED %0A::warning::FORGED \x07\x08\x7f \u2028"
)
MARKUP = "[bold red]M[/bold red][link=http://evil.example]L[/link]"
SECRET = "sk-live-0123456789SECRET"
LONG = "A" * 10_000
# What may legitimately be in the output: Rich's own colours with --color always.
_RICH_SGR = re.compile(r"\x1b\[[0-9;]*m")
_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def hostile_transcript() -> bytes:
    lines = [
        {"role": "user", "content": f"please {SECRET} {HOSTILE}"},
        {
            "role": "assistant",
            "content": HOSTILE,
            "tool_calls": [_call("c1" + HOSTILE, MARKUP + HOSTILE, json.dumps({"q": HOSTILE + SECRET}))],
        },
        {"role": "tool", "tool_call_id": "ghost" + HOSTILE, "content": SECRET},
        {"role": "assistant", "tool_calls": [_call(LONG, LONG, json.dumps({"x": LONG}))]},
        {"role": HOSTILE, "content": SECRET},
    ]
    data = b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)
    return data + b'{"role":"user","content":"' + SECRET.encode() + b" \x1b[31m cut"


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400", "GITHUB_ACTIONS": ""}, catch_exceptions=False)
    return result.exit_code, result.output


def assert_safe(output: str, colour: bool) -> None:
    shown = _RICH_SGR.sub("", output) if colour else output
    assert "\x1b" not in shown, "a raw escape sequence reached the output"
    assert "\x1b[31mRED" not in output and "\x1b]8;;" not in output
    bad = _FORBIDDEN.search(shown)
    assert bad is None, f"control or bidi character {bad.group()!r} reached the output"
    assert SECRET not in output, "transcript contents reached the output"
    for line in output.splitlines():
        stripped = _RICH_SGR.sub("", line)
        if stripped.lstrip().startswith("::"):
            # Only the github reporter's own commands, with escaped properties.
            command = stripped.lstrip()[2:].split("::", 1)[0]
            assert re.fullmatch(r"(error|warning|notice)( [a-z]+=[^:\n]*)?", command), f"forged command: {line[:120]!r}"
            assert "FORGED" not in command


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    # The file name is untrusted too.
    path = tmp_path / "s\x1b[31m\u202e\n::error::x,y.jsonl"
    path.write_bytes(hostile_transcript())
    return path


@pytest.mark.parametrize("colour", ["never", "always"])
@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
@pytest.mark.parametrize("command", [["check"], ["fix"], ["fix", "--salvage"]], ids=" ".join)
def test_hostile_transcript_text_never_acts(hostile: Path, fmt: str, colour: str, command: list[str]) -> None:
    for input_format in (["--input-format", "chat"], []):
        code, output = invoke(*command, "--output-format", fmt, "--color", colour, *input_format, str(hostile))
        assert code in (1, 2), output
        assert_safe(output, colour == "always")


def test_markup_is_shown_literally_and_long_values_are_cut(hostile: Path) -> None:
    code, output = invoke("fix", "--color", "never", "--input-format", "chat", str(hostile))
    assert code == 1
    assert "[bold red]M[/bold red]" in output, "Rich markup in a tool name was interpreted"
    assert "A" * 301 not in output, "a long value was shown whole"
    assert max(len(line) for line in output.splitlines()) <= 400


def test_machine_output_keeps_values_whole_and_equal(hostile: Path) -> None:
    _code, output = invoke("check", "--output-format", "json", "--input-format", "chat", str(hostile))
    report = json.loads(output)
    ids = [f.get("call_id") for f in report["files"][0]["findings"]]
    assert "c1" + HOSTILE in ids and LONG in ids


def test_unreadable_line_messages_quote_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b'{"role":"user","content":"' + SECRET.encode() + b'"\n'
        b'{"role":"user","content":"' + SECRET.encode() + b'\xff"}\n'
        b"[" * 5000 + SECRET.encode() + b"\n"
    )
    for fmt in OUTPUT_FORMATS:
        for command in (["check"], ["fix", "--salvage"], ["fix", "--output", str(tmp_path / "o.jsonl")]):
            code, output = invoke(*command, "--output-format", fmt, "--input-format", "chat", str(path))
            assert code == 1
            assert SECRET not in output


def test_verbose_tracebacks_show_no_local_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n')

    def crash(path, options):
        hidden_local = SECRET  # a traceback with locals would print its value
        raise RuntimeError("boom \x1b[31m" + "x" * 5000 + str(len(hidden_local)))

    monkeypatch.setattr(runner, "run_path", crash)
    code, output = invoke("check", "-v", "--jobs", "1", str(path))
    assert code == 2
    assert "Traceback" in output and "RuntimeError" in output
    assert SECRET not in output
    assert "\x1b" not in output
    assert "x" * 400 not in output, "the exception text was printed whole"


@pytest.mark.parametrize("colour", ["never", "always"])
def test_the_timeline_view_is_inert_too(hostile: Path, colour: str) -> None:
    code, output = invoke("show", "--color", colour, "--input-format", "chat", str(hostile))
    assert code in (0, 1, 2), output
    shown = _RICH_SGR.sub("", output) if colour == "always" else output
    assert "\x1b" not in shown and "\x1b[31mRED" not in output and "\x1b]8;;" not in output
    bad = _FORBIDDEN.search(shown)
    assert bad is None, f"control or bidi character {bad.group()!r} reached the output"
    assert "A" * 301 not in output
