"""The command line as users meet it: exit codes, streams, writes, and untrusted text."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor import __version__
from apx_doctor.cli import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dashboard.jsonl"
CLEAN = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]}\n'
    b'{"role":"tool","tool_call_id":"c1","content":"ok"}\n'
)
BROKEN = CLEAN.rsplit(b"\n", 2)[0] + b"\n"  # the result line removed


def invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(app, list(args), input=input)


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    path = tmp_path / "clean.jsonl"
    path.write_bytes(CLEAN)
    return path


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(BROKEN)
    return path


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"apx-doctor {__version__}"


def test_check_exit_codes(clean: Path, broken: Path) -> None:
    assert invoke("check", str(clean)).exit_code == 0
    assert invoke("check", str(broken)).exit_code == 1
    assert invoke("check", str(clean), str(broken)).exit_code == 1


def test_missing_path_is_exit_2_naming_the_path(tmp_path: Path, clean: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = invoke("check", str(clean), str(missing))
    assert result.exit_code == 2
    assert str(missing) in result.stderr
    assert "Traceback" not in result.output


def test_directory_without_walking_support_or_with_it_never_tracebacks(tmp_path: Path) -> None:
    result = invoke("check", str(tmp_path))
    assert result.exit_code in (0, 2)
    assert "Traceback" not in result.output


def test_check_reads_standard_input(clean: Path) -> None:
    result = invoke("check", "--output-format", "json", "-", input=BROKEN)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["files"][0]["path"] == "-"
    assert report["files"][0]["findings"][0]["code"] == "APX001"


def test_json_report_shape(broken: Path) -> None:
    report = json.loads(invoke("check", "--output-format", "json", str(broken)).stdout)
    assert report["version"] == 1
    file = report["files"][0]
    assert set(file) >= {"path", "format", "findings", "edits", "changed", "written"}
    finding = file["findings"][0]
    assert finding | {"message": ""} == {
        "code": "APX001",
        "name": "interrupted-tool-call",
        "severity": "error",
        "line": 2,
        "call_id": "c1",
        "tool": "read",
        "fixable": True,
        "message": "",
    } | {k: v for k, v in finding.items() if k in ("advice", "tool_kind")}
    assert file["edits"] == [
        {
            "action": "insert",
            "before_line": 3,
            "record": {"role": "tool", "tool_call_id": "c1", "content": "not run: the turn was interrupted"},
            "call_id": "c1",
            "tool": "read",
        }
    ]
    assert file["changed"] is True and file["written"] is False
    assert {"files", "errors", "warnings", "inserted", "removed"} <= set(report["summary"])
    assert report["summary"]["errors"] == 1 and report["summary"]["inserted"] == 1


def test_dry_run_writes_nothing(broken: Path) -> None:
    before = broken.stat()
    result = invoke("fix", str(broken))
    assert result.exit_code == 1
    assert broken.read_bytes() == BROKEN
    assert broken.stat().st_mtime_ns == before.st_mtime_ns
    assert "c1" in result.stdout and "dry run" in result.stdout


def test_fix_clean_file_exits_0_and_does_not_touch_it(clean: Path) -> None:
    before = clean.stat()
    result = invoke("fix", "--in-place", str(clean))
    assert result.exit_code == 0
    after = clean.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_fix_in_place_repairs_keeps_mode_and_leaves_no_temp(broken: Path) -> None:
    broken.chmod(0o640)
    result = invoke("fix", "--in-place", str(broken))
    assert result.exit_code == 1
    assert broken.read_bytes() == BROKEN + b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
    assert stat.S_IMODE(broken.stat().st_mode) == 0o640
    assert sorted(p.name for p in broken.parent.iterdir()) == ["broken.jsonl"]
    assert invoke("fix", "--in-place", str(broken)).exit_code == 0


def test_fix_in_place_writes_through_a_symlink(broken: Path) -> None:
    link = broken.parent / "link.jsonl"
    link.symlink_to(broken.name)
    assert invoke("fix", "--in-place", str(link)).exit_code == 1
    assert link.is_symlink()
    assert broken.read_bytes().endswith(b'"not run: the turn was interrupted"}\n')


def test_fix_never_writes_a_file_with_an_unparseable_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    data = BROKEN + b'{"role":"tool","tool_call_id":"c'
    path.write_bytes(data)
    result = invoke("fix", "--in-place", "--output-format", "json", str(path))
    assert result.exit_code == 1
    assert path.read_bytes() == data
    codes = [f["code"] for f in json.loads(result.stdout)["files"][0]["findings"]]
    assert "APX102" in codes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.jsonl"]


def test_output_dash_puts_the_transcript_on_stdout_and_the_report_on_stderr(broken: Path) -> None:
    result = invoke("fix", "--output", "-", "--output-format", "json", str(broken))
    assert result.exit_code == 1
    assert (
        result.stdout.encode() == BROKEN + b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
    )
    assert json.loads(result.stderr)["files"][0]["written"] is True


def test_output_file_and_marker(broken: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert invoke("fix", "--marker", "lost", "--output", str(out), str(broken)).exit_code == 1
    assert out.read_bytes() == BROKEN + b'{"role":"tool","tool_call_id":"c1","content":"lost"}\n'
    assert broken.read_bytes() == BROKEN


@pytest.mark.parametrize("command", ["check", "fix", "show"])
def test_a_marker_that_is_not_utf8_is_a_usage_error(command: str, broken: Path) -> None:
    # A shell hands bytes that are not UTF-8 to Python as lone surrogates.
    result = invoke(command, "--marker", "lost \udcff", str(broken))
    assert result.exit_code == 2
    assert "--marker: the text is not valid UTF-8" in result.output
    assert "Traceback" not in result.output
    assert broken.read_bytes() == BROKEN


@pytest.mark.parametrize(
    "args",
    [
        ["fix", "--in-place", "--output", "x.jsonl", "a.jsonl"],
        ["fix", "--output", "x.jsonl", "a.jsonl", "b.jsonl"],
        ["fix", "--in-place", "-"],
        ["check"],
        ["check", "--output-format", "yaml", "a.jsonl"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_undetectable_format_exits_2_and_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"foo": 1}\n{"bar": [2]}\n')
    result = invoke("check", str(path))
    assert result.exit_code == 2
    assert "--input-format" in result.stderr and str(path) in result.stderr


def test_transcript_text_is_never_markup_or_a_control_sequence(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    call = {
        "id": "c\u202e1",
        "type": "function",
        "function": {"name": "[bold red]x[/]", "arguments": "\x1b]0;pwned\x07 :smile:"},
    }
    lines = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    path.write_text("".join(json.dumps(record) + "\n" for record in lines))
    result = invoke("fix", "--color", "always", str(path))
    out = result.stdout
    assert "[bold red]x[/]" in out
    assert "\x1b]0;" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]0;" in out or "\\x1b" in out
    assert ":smile:" in out or "smile" in out
    report = invoke("check", "--output-format", "json", str(path)).stdout
    assert "\u202e" not in report and "\x1b" not in report
    assert json.loads(report)["files"][0]["findings"][0]["call_id"] == "c\u202e1"


def test_internal_errors_are_one_line_without_traceback(monkeypatch, broken: Path) -> None:
    from apx_doctor import runner

    def boom(*_a, **_k):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(runner, "run_path", boom)
    result = invoke("check", str(broken))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "internal error" in result.stderr


def test_example_dashboard_is_found(tmp_path: Path) -> None:
    report = json.loads(invoke("check", "--output-format", "json", str(EXAMPLE)).stdout)
    finding = report["files"][0]["findings"][0]
    assert (finding["code"], finding["tool"]) == ("APX001", "browser_text")
