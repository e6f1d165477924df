"""The flags people reach for from ruff and black: --diff, --exit-zero, --statistics, --report-file,
--stdin-filename, --extend-select, --extend-ignore, --per-file-ignores, -V, -h and shell completion."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from apx_doctor import __version__

from ._cli import BROKEN, CLEAN, run_cli

ORPHAN = b'{"role":"user","content":"hi"}\n{"role":"tool","tool_call_id":"ghost","content":"42"}\n'  # APX002
# Two interrupted calls, CRLF line endings and no newline at the end: the diff must carry all of it.
AWKWARD = (
    b'{"role":"user","content":"hi"}\r\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}\r\n'
    b'{"role":"user","content":"again"}\r\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}'
)


def _codes(result) -> list[str]:
    return [f["code"] for report in json.loads(result.stdout)["files"] for f in report["findings"]]


# --- --diff ---------------------------------------------------------------------


@pytest.mark.parametrize("content", [BROKEN, AWKWARD], ids=["lf", "crlf-no-final-newline"])
def test_diff_applied_with_patch_reproduces_fix_output_byte_for_byte(isolated_cwd: Path, content: bytes) -> None:
    if shutil.which("patch") is None:
        pytest.skip("patch is not installed")
    (isolated_cwd / "a.jsonl").write_bytes(content)
    want = isolated_cwd / "want.out"
    assert run_cli("fix", "--output", str(want), "a.jsonl").exit_code == 1
    result = run_cli("fix", "--diff", "a.jsonl")
    assert result.exit_code == 1
    assert result.stdout_bytes.startswith(b"--- a.jsonl\n+++ a.jsonl\n@@ ")
    assert (isolated_cwd / "a.jsonl").read_bytes() == content  # --diff writes nothing
    assert sorted(p.name for p in isolated_cwd.iterdir()) == ["a.jsonl", "want.out"]
    (isolated_cwd / "d.patch").write_bytes(result.stdout_bytes)
    done = subprocess.run(["patch", "-p0", "-i", "d.patch"], cwd=isolated_cwd, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert (isolated_cwd / "a.jsonl").read_bytes() == want.read_bytes()


def test_git_apply_takes_the_diff(isolated_cwd: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (isolated_cwd / "a.jsonl").write_bytes(AWKWARD)
    want = isolated_cwd / "want.out"
    run_cli("fix", "--output", str(want), "a.jsonl")
    (isolated_cwd / "d.patch").write_bytes(run_cli("fix", "--diff", "a.jsonl").stdout_bytes)
    done = subprocess.run(["git", "apply", "-p0", "d.patch"], cwd=isolated_cwd, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert (isolated_cwd / "a.jsonl").read_bytes() == want.read_bytes()


def test_diff_of_a_clean_file_is_empty_and_exits_0(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(CLEAN)
    result = run_cli("fix", "--diff", "a.jsonl")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "would be inserted" in result.stderr and "written" not in result.stderr


def test_diff_of_standard_input_and_a_report_file(isolated_cwd: Path) -> None:
    result = run_cli("fix", "--diff", "--stdin-filename", "s.jsonl", "--report-file", "d.patch", input=BROKEN)
    assert result.exit_code == 1 and result.stdout == ""
    patch = (isolated_cwd / "d.patch").read_bytes()
    assert patch.startswith(b"--- s.jsonl\n+++ s.jsonl\n")
    assert b'+{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n' in patch


def test_diff_under_github_actions_is_fenced_from_workflow_commands(isolated_cwd: Path) -> None:
    hostile = b'{"role":"system","content":"##[error]forged"}\n' + BROKEN
    (isolated_cwd / "a.jsonl").write_bytes(hostile)
    out = run_cli("fix", "--diff", "a.jsonl", env={"GITHUB_ACTIONS": "true"}).stdout.splitlines()
    first, last = out[0], out[-1]
    assert first.startswith("::stop-commands::") and len(first) > len("::stop-commands::") + 16
    assert last == f"::{first.removeprefix('::stop-commands::')}::"


def test_diff_excludes_writing_options(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    for extra in (["--in-place"], ["--output", "x.jsonl"], ["--salvage"], ["--output-format", "json"]):
        result = run_cli("fix", "--diff", *extra, "a.jsonl")
        assert result.exit_code == 2 and "usage error" in result.stderr, extra


# --- --exit-zero ----------------------------------------------------------------


def test_exit_zero_turns_findings_into_0_but_not_trouble(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    assert run_cli("check", "a.jsonl").exit_code == 1
    assert run_cli("check", "--exit-zero", "a.jsonl").exit_code == 0
    assert run_cli("fix", "--exit-zero", "a.jsonl").exit_code == 0
    assert run_cli("check", "--exit-zero", "missing.jsonl").exit_code == 2


# --- --statistics ---------------------------------------------------------------


def test_statistics_counts_each_code(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "b.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "c.jsonl").write_bytes(ORPHAN)
    result = run_cli("check", "--statistics", "a.jsonl", "b.jsonl", "c.jsonl")
    assert result.exit_code == 1
    assert result.stdout == "2\tAPX001\tinterrupted-tool-call\n1\tAPX002\torphan-tool-result\n"
    as_json = json.loads(run_cli("check", "--statistics", "--output-format", "json", "a.jsonl", "c.jsonl").stdout)
    assert as_json["statistics"] == [
        {"code": "APX001", "name": "interrupted-tool-call", "severity": "error", "count": 1},
        {"code": "APX002", "name": "orphan-tool-result", "severity": "warning", "count": 1},
    ]
    assert run_cli("check", "--statistics", "--output-format", "sarif", "a.jsonl").exit_code == 2


# --- --report-file --------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "json-lines", "github", "sarif"])
def test_report_file_takes_any_format_and_leaves_stdout_empty(isolated_cwd: Path, fmt: str) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    on_stdout = run_cli("check", "--output-format", fmt, "a.jsonl")
    result = run_cli("check", "--output-format", fmt, "--report-file", "report.out", "a.jsonl")
    assert result.exit_code == 1 and result.stdout == ""
    assert (isolated_cwd / "report.out").read_text() == on_stdout.stdout
    assert "1 error" in result.stderr or fmt in ("json", "sarif")


def test_report_file_beside_a_transcript_on_stdout(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("fix", "--output", "-", "--output-format", "json", "--report-file", "r.json", "a.jsonl")
    assert b'"content":"not run: the turn was interrupted"' in result.stdout_bytes
    assert json.loads((isolated_cwd / "r.json").read_text())["summary"]["inserted"] == 1


def test_report_file_that_cannot_be_written_is_a_usage_error(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "--report-file", "no/such/folder/r.txt", "a.jsonl")
    assert result.exit_code == 2 and "--report-file" in result.stderr
    same = run_cli("check", "--report-file", "a.jsonl", "a.jsonl")
    assert same.exit_code == 2 and (isolated_cwd / "a.jsonl").read_bytes() == BROKEN


# --- --stdin-filename -----------------------------------------------------------


def test_stdin_filename_names_standard_input_in_reports(isolated_cwd: Path) -> None:
    result = run_cli("check", "--output-format", "json", "--stdin-filename", "sessions/a.jsonl", "-", input=BROKEN)
    assert json.loads(result.stdout)["files"][0]["path"] == "sessions/a.jsonl"
    concise = run_cli("check", "--output-format", "concise", "--stdin-filename", "sessions/a.jsonl", input=BROKEN)
    assert concise.stdout.startswith("sessions/a.jsonl:2:1: APX001 ")


def test_stdin_filename_chooses_the_configuration_and_the_excludes(isolated_cwd: Path) -> None:
    project = isolated_cwd / "proj"
    (project / "fixtures").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.apx-doctor]\nexclude = ["old/"]\n[tool.apx-doctor.per-file-ignores]\n"fixtures/*" = ["APX001"]\n'
    )
    ignored = run_cli("check", "--stdin-filename", "proj/fixtures/a.jsonl", input=BROKEN)
    assert ignored.exit_code == 0
    assert run_cli("check", "--stdin-filename", "proj/live.jsonl", input=BROKEN).exit_code == 1
    excluded = run_cli("check", "--force-exclude", "--stdin-filename", "proj/old/a.jsonl", input=BROKEN)
    assert (excluded.exit_code, excluded.stdout) == (0, "")
    # An excluded input through fix --output - comes out as it went in: a pipe loses nothing.
    through = run_cli("fix", "--force-exclude", "--output", "-", "--stdin-filename", "proj/old/a.jsonl", "-", input=BROKEN)
    assert (through.exit_code, through.stdout_bytes) == (0, BROKEN)
    wrong = run_cli("check", "--stdin-filename", "x.jsonl", "a.jsonl")
    assert wrong.exit_code == 2 and "--stdin-filename" in wrong.stderr


# --- --extend-select, --extend-ignore, --per-file-ignores ---------------------------


def test_extend_select_and_extend_ignore(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN + b"\n" + ORPHAN)  # APX001, APX105, APX002
    (isolated_cwd / "pyproject.toml").write_text('[tool.apx-doctor]\nselect = ["APX001"]\nignore = ["APX105"]\n')
    assert _codes(run_cli("check", "--output-format", "json", "a.jsonl")) == ["APX001"]
    extended = run_cli("check", "--output-format", "json", "--extend-select", "APX002,APX105", "a.jsonl")
    assert sorted(_codes(extended)) == ["APX001", "APX002", "APX105"]
    less = run_cli("check", "--output-format", "json", "--extend-select", "APX0", "--extend-ignore", "APX001", "a.jsonl")
    assert _codes(less) == ["APX002"] and less.exit_code == 0
    bad = run_cli("check", "--extend-ignore", "NOPE", "a.jsonl")
    assert bad.exit_code == 2 and "--extend-ignore" in bad.stderr


def test_per_file_ignores_on_the_command_line_and_in_configuration(isolated_cwd: Path) -> None:
    (isolated_cwd / "fixtures").mkdir()
    (isolated_cwd / "fixtures" / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "live.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "--output-format", "json", "--per-file-ignores", "fixtures/*:APX001,APX002", ".")
    files = {f["path"]: [x["code"] for x in f["findings"]] for f in json.loads(result.stdout)["files"]}
    assert files == {"fixtures/a.jsonl": [], "live.jsonl": ["APX001"]}
    (isolated_cwd / "pyproject.toml").write_text('[tool.apx-doctor.per-file-ignores]\n"live.jsonl" = ["APX001"]\n')
    assert run_cli("check", "live.jsonl").exit_code == 0
    # The command line replaces the file's table, as ruff's does.
    assert run_cli("check", "--per-file-ignores", "fixtures/*:APX001", "live.jsonl").exit_code == 1
    bad = run_cli("check", "--per-file-ignores", "APX001", "live.jsonl")
    assert bad.exit_code == 2 and "PATTERN:CODES" in bad.stderr


# --- -V, -h, completion -----------------------------------------------------------


def test_short_version_and_help() -> None:
    for flag in ("-V", "--version"):
        result = run_cli(flag)
        assert (result.exit_code, result.stdout) == (0, f"apx-doctor {__version__}\n")
    for args in (["-h"], ["--help"], ["check", "-h"], ["fix", "-h"]):
        result = run_cli(*args)
        assert result.exit_code == 0 and result.stdout.startswith("Usage: apx-doctor"), args
    assert "--diff" in run_cli("fix", "-h").stdout


def test_shell_completion_is_offered() -> None:
    help_text = run_cli("--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text
    # The script a shell sources, asked for by name: --show-completion detects the
    # shell from the process tree, which a test run may not have (a CI runner, nohup).
    result = run_cli(env={"_APX_DOCTOR_COMPLETE": "source_bash"})
    assert result.exit_code == 0
    assert "complete -o default -F _apx_doctor_completion apx-doctor" in result.stdout
