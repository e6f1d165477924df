"""[tool.apx-doctor] in pyproject.toml: found by walking up, validated, and beaten by flags."""

from __future__ import annotations

import json
from pathlib import Path

from ._cli import BROKEN, run_cli

ORPHAN = b'{"role":"user","content":"hi"}\n{"role":"tool","tool_call_id":"ghost","content":"42"}\n'


def _pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text("[project]\nname = 'sessions'\n\n[tool.apx-doctor]\n" + body)
    return path


def _codes(result) -> list[str]:
    return [f["code"] for f in json.loads(result.stdout)["files"][0]["findings"]]


def test_unknown_key_is_a_usage_error_naming_it(isolated_cwd: Path) -> None:
    _pyproject(isolated_cwd, 'selct = ["APX001"]\n')
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "a.jsonl")
    assert result.exit_code == 2
    assert "unknown key 'selct'" in result.stderr
    assert result.stdout == ""


def test_bad_values_are_usage_errors(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    for body, words in [
        ('select = "APX001"\n', "select must be a list of strings"),
        ('ignore = ["NOPE1"]\n', "'NOPE1' matches no rule code"),
        ("drop-orphans = 1\n", "drop-orphans must be true or false"),
    ]:
        _pyproject(isolated_cwd, body)
        result = run_cli("check", "a.jsonl")
        assert result.exit_code == 2 and words in result.stderr, (body, result.stderr)


def test_ignore_filters_findings_and_the_exit_code_follows(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    assert run_cli("check", "a.jsonl").exit_code == 1
    _pyproject(isolated_cwd, 'ignore = ["APX001"]\n')
    result = run_cli("check", "--output-format", "json", "a.jsonl")
    assert result.exit_code == 0
    assert _codes(result) == []


def test_select_takes_prefixes(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN + b"\n" + ORPHAN)  # APX001, APX105, APX002
    _pyproject(isolated_cwd, 'select = ["APX00"]\n')
    assert _codes(run_cli("check", "--output-format", "json", "a.jsonl")) == ["APX001", "APX002"]
    _pyproject(isolated_cwd, 'select = ["APX1"]\n')
    result = run_cli("check", "--output-format", "json", "a.jsonl")
    assert _codes(result) == ["APX105"]
    assert result.exit_code == 0  # only a warning is left


def test_per_file_ignores_match_globs_relative_to_the_config(isolated_cwd: Path) -> None:
    (isolated_cwd / "fixtures" / "deep").mkdir(parents=True)
    (isolated_cwd / "fixtures" / "deep" / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "live.jsonl").write_bytes(BROKEN)
    _pyproject(isolated_cwd, '[tool.apx-doctor.per-file-ignores]\n"fixtures/**" = ["APX001"]\n')
    result = run_cli("check", "--output-format", "json", ".")
    files = {f["path"]: [x["code"] for x in f["findings"]] for f in json.loads(result.stdout)["files"]}
    assert files == {"fixtures/deep/a.jsonl": [], "live.jsonl": ["APX001"]}


def test_the_nearest_configured_pyproject_above_the_working_folder_is_used(isolated_cwd: Path, monkeypatch) -> None:
    _pyproject(isolated_cwd, 'ignore = ["APX001"]\n')
    inner = isolated_cwd / "project" / "sessions"
    inner.mkdir(parents=True)
    # A pyproject.toml without the table is passed over, as ruff does with [tool.ruff].
    (isolated_cwd / "project" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (inner / "a.jsonl").write_bytes(BROKEN)
    monkeypatch.chdir(inner)
    assert run_cli("check", "a.jsonl").exit_code == 0
    assert run_cli("check", "--isolated", "a.jsonl").exit_code == 1


def test_config_option_reads_another_file(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    other = isolated_cwd / "conf"
    other.mkdir()
    path = _pyproject(other, 'ignore = ["APX001"]\n')
    assert run_cli("check", "a.jsonl").exit_code == 1
    assert run_cli("check", "--config", str(path), "a.jsonl").exit_code == 0
    missing = run_cli("check", "--config", "nope.toml", "a.jsonl")
    assert missing.exit_code == 2 and "nope.toml" in missing.stderr


def test_flags_win_over_the_file(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "b.jsonl").write_bytes(ORPHAN)
    _pyproject(isolated_cwd, 'marker = "from the file"\ndrop-orphans = true\nignore = ["APX001"]\n')
    from_file = run_cli("fix", "--output", "-", "a.jsonl")
    assert b'"content":"from the file"' in from_file.stdout_bytes
    from_flag = run_cli("fix", "--marker", "from the flag", "--output", "-", "a.jsonl")
    assert b'"content":"from the flag"' in from_flag.stdout_bytes
    dropped = run_cli("fix", "--output", "-", "b.jsonl")
    assert dropped.stdout_bytes == b'{"role":"user","content":"hi"}\n'
    kept = run_cli("fix", "--no-drop-orphans", "--output", "-", "b.jsonl")
    assert kept.stdout_bytes == ORPHAN
    selected = run_cli("check", "--select", "APX001", "--output-format", "json", "a.jsonl")
    assert selected.exit_code == 1 and _codes(selected) == ["APX001"]


def test_tool_safety_lists_decide_the_advice(isolated_cwd: Path) -> None:
    broken = BROKEN.replace(b"read_file", b"zap_widget")
    (isolated_cwd / "a.jsonl").write_bytes(broken)

    def advice() -> str:
        result = run_cli("check", "--output-format", "json", "a.jsonl")
        return json.loads(result.stdout)["files"][0]["findings"][0]["advice"]

    assert "unknown tool kind" in advice()
    _pyproject(isolated_cwd, 'read-only-tools = ["zap_*"]\n')
    assert "read-only tool: safe to re-run" in advice()
    _pyproject(isolated_cwd, 'read-only-tools = ["zap_*"]\nside-effect-tools = ["zap_widget"]\n')
    assert "check the current state first, or retry with an idempotency key" in advice()


def test_a_broken_pyproject_that_configures_us_is_reported(isolated_cwd: Path) -> None:
    (isolated_cwd / "pyproject.toml").write_text("[tool.apx-doctor]\nselect = [\n")
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "a.jsonl")
    assert result.exit_code == 2 and "cannot read the configuration" in result.stderr
