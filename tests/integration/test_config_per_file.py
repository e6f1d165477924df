"""Configuration as ruff finds it: for each file, the nearest apx-doctor.toml or pyproject.toml with the table above it."""

from __future__ import annotations

import json
from pathlib import Path

from apx_doctor.config import Finder

from ._cli import BROKEN, run_cli


def _project(folder: Path, body: str, name: str = "pyproject.toml") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    head = "" if name == "apx-doctor.toml" else "[tool.apx-doctor]\n"
    (folder / name).write_text(head + body)


def _findings(result) -> dict[str, list[str]]:
    return {f["path"]: [x["code"] for x in f["findings"]] for f in json.loads(result.stdout)["files"]}


def test_a_project_folders_configuration_applies_from_anywhere(isolated_cwd: Path, monkeypatch) -> None:
    proj = isolated_cwd / "proj"
    _project(proj, 'ignore = ["APX001"]\n')
    (proj / "sessions").mkdir()
    (proj / "sessions" / "a.jsonl").write_bytes(BROKEN)
    elsewhere = isolated_cwd / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert run_cli("check", str(proj)).exit_code == 0
    assert run_cli("check", str(proj / "sessions" / "a.jsonl")).exit_code == 0
    assert run_cli("check", "../proj/sessions/a.jsonl").exit_code == 0
    assert run_cli("check", "--isolated", str(proj)).exit_code == 1


def test_each_file_gets_its_nearest_configuration(isolated_cwd: Path) -> None:
    _project(isolated_cwd / "one", 'ignore = ["APX001"]\n')
    _project(isolated_cwd / "two", 'marker = "stopped"\n', name="apx-doctor.toml")
    (isolated_cwd / "three").mkdir()
    for name in ("one", "two", "three"):
        (isolated_cwd / name / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "--output-format", "json", "one", "two", "three")
    assert _findings(result) == {"one/a.jsonl": [], "two/a.jsonl": ["APX001"], "three/a.jsonl": ["APX001"]}
    fixed = run_cli("fix", "--output", "-", "two/a.jsonl")
    assert b'"content":"stopped"' in fixed.stdout_bytes


def test_a_file_with_no_configuration_above_it_gets_the_working_folders(isolated_cwd: Path, tmp_path_factory) -> None:
    _project(isolated_cwd, 'ignore = ["APX001"]\n')
    outside = tmp_path_factory.mktemp("outside") / "a.jsonl"
    outside.write_bytes(BROKEN)
    assert run_cli("check", str(outside)).exit_code == 0


def test_apx_doctor_toml_wins_over_pyproject_in_one_folder(isolated_cwd: Path) -> None:
    _project(isolated_cwd, 'ignore = ["APX001"]\n')
    _project(isolated_cwd, 'select = ["APX001"]\n', name="apx-doctor.toml")
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    assert run_cli("check", "a.jsonl").exit_code == 1
    (isolated_cwd / "apx-doctor.toml").write_text('ignore = ["APX001"]\n')
    assert run_cli("check", "a.jsonl").exit_code == 0


def test_per_file_ignores_are_relative_to_the_configuration_that_holds_them(isolated_cwd: Path, monkeypatch) -> None:
    proj = isolated_cwd / "proj"
    _project(proj, '[tool.apx-doctor.per-file-ignores]\n"fixtures/*" = ["APX001"]\n')
    (proj / "fixtures").mkdir()
    (proj / "fixtures" / "a.jsonl").write_bytes(BROKEN)
    (proj / "b.jsonl").write_bytes(BROKEN)
    monkeypatch.chdir(isolated_cwd)
    assert _findings(run_cli("check", "--output-format", "json", "proj")) == {
        "proj/b.jsonl": ["APX001"],
        "proj/fixtures/a.jsonl": [],
    }


def test_excludes_come_from_the_walked_folders_configuration(isolated_cwd: Path, monkeypatch) -> None:
    proj = isolated_cwd / "proj"
    _project(proj, 'extend-exclude = ["old/"]\n')
    (proj / "old").mkdir()
    (proj / "old" / "a.jsonl").write_bytes(BROKEN)
    (proj / "b.jsonl").write_bytes(BROKEN)
    monkeypatch.chdir(isolated_cwd)
    assert list(_findings(run_cli("check", "--output-format", "json", "proj"))) == ["proj/b.jsonl"]


def test_unknown_keys_are_still_refused_with_the_key_named(isolated_cwd: Path) -> None:
    _project(isolated_cwd / "proj", 'selct = ["APX001"]\n', name="apx-doctor.toml")
    (isolated_cwd / "proj" / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "proj")
    assert result.exit_code == 2 and "unknown key 'selct'" in result.stderr and "apx-doctor.toml" in result.stderr


def test_config_names_one_file_for_every_input(isolated_cwd: Path) -> None:
    _project(isolated_cwd / "proj", 'ignore = ["APX001"]\n')
    (isolated_cwd / "proj" / "a.jsonl").write_bytes(BROKEN)
    other = isolated_cwd / "other.toml"
    other.write_text('select = ["APX002"]\n')
    assert run_cli("check", "proj").exit_code == 0
    assert run_cli("check", "--config", str(other), "--output-format", "json", "proj").stdout.count('"APX001"') == 0
    assert run_cli("check", "--config", str(isolated_cwd / "proj" / "pyproject.toml"), "proj").exit_code == 0


def test_each_configuration_is_parsed_once_for_many_files(tmp_path: Path, monkeypatch) -> None:
    import tomllib

    parsed = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or real(text))
    _project(tmp_path / "proj", 'ignore = ["APX105"]\n')
    finder = Finder(cwd=tmp_path)
    configs = {id(finder.for_path(str(tmp_path / "proj" / "deep" / f"{n}.jsonl"))) for n in range(20)}
    assert len(configs) == 1 and len(parsed) == 1
    assert finder.for_path(str(tmp_path / "proj" / "x.jsonl")).ignore == ("APX105",)
