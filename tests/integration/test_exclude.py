"""exclude, extend-exclude and force-exclude: which files a run leaves out, as ruff's options do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apx_doctor.discover import Excluder, default_exclude

from ._cli import BROKEN, CLEAN, run_cli


@pytest.fixture
def tree(isolated_cwd: Path) -> Path:
    for name, data in {
        "sessions/a.jsonl": BROKEN,
        "sessions/keep.jsonl": CLEAN,
        "sessions/old/b.jsonl": BROKEN,
        "fixtures/c.jsonl": BROKEN,
        "deep/fixtures/d.jsonl": BROKEN,
    }.items():
        path = isolated_cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return isolated_cwd


def checked(result) -> list[str]:
    assert result.exit_code in (0, 1), result.output
    return sorted(Path(f["path"]).as_posix() for f in json.loads(result.stdout)["files"])


def test_configured_exclude_leaves_files_and_folders_out(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nexclude = ["old", "/fixtures/*.jsonl"]\n')
    got = checked(run_cli("check", "--output-format", "json", "."))
    # "old" matches a folder name anywhere; "/fixtures/*.jsonl" only at the project root.
    assert got == ["deep/fixtures/d.jsonl", "sessions/a.jsonl", "sessions/keep.jsonl"]


def test_exclude_replaces_the_defaults_and_extend_exclude_adds_to_them(tree: Path) -> None:
    (tree / "sessions/a.jsonl.rejected.jsonl").write_bytes(b"{not json\n")
    # Defaults: the sidecar is left out.
    assert "sessions/a.jsonl.rejected.jsonl" not in checked(run_cli("check", "--output-format", "json", "sessions"))
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nextend-exclude = ["keep.jsonl"]\n')
    got = checked(run_cli("check", "--output-format", "json", "sessions"))
    assert got == ["sessions/a.jsonl", "sessions/old/b.jsonl"]
    # exclude replaces the defaults: the sidecar is looked at again (and is no JSON).
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nexclude = ["old"]\n')
    result = run_cli("check", "--output-format", "json", "sessions")
    assert "sessions/a.jsonl.rejected.jsonl" in checked(result) and "sessions/old/b.jsonl" not in checked(result)


def test_command_line_patterns_win_over_the_file_and_add_up(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nexclude = ["old"]\nextend-exclude = ["keep.jsonl"]\n')
    got = checked(run_cli("check", "--output-format", "json", "--exclude", "fixtures", "sessions", "fixtures", "deep"))
    # A folder named on the command line is walked (unless --force-exclude); below it, the name counts.
    assert got == ["fixtures/c.jsonl", "sessions/a.jsonl", "sessions/old/b.jsonl"]
    forced = run_cli(
        "check", "--output-format", "json", "--force-exclude", "--exclude", "fixtures", "sessions", "fixtures", "deep"
    )
    assert checked(forced) == ["sessions/a.jsonl", "sessions/old/b.jsonl"]
    # Comma-separated or repeated, on top of the file's: nothing is left.
    left = run_cli("check", "--extend-exclude", "a.jsonl,d.jsonl", "--extend-exclude", "c.jsonl", ".")
    assert left.exit_code == 0 and "no *.jsonl transcripts found" in left.stderr
    assert checked(run_cli("check", "--output-format", "json", "--extend-exclude", "a.jsonl,d.jsonl", ".")) == [
        "fixtures/c.jsonl"
    ]


def test_force_exclude_applies_the_patterns_to_named_files(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nextend-exclude = ["fixtures/"]\n')
    named = ["fixtures/c.jsonl", "deep/fixtures/d.jsonl", "sessions/keep.jsonl"]
    # As pre-commit passes them: without force-exclude a named file is checked.
    assert checked(run_cli("check", "--output-format", "json", *named)) == sorted(named)
    assert checked(run_cli("check", "--output-format", "json", "--force-exclude", *named)) == ["sessions/keep.jsonl"]
    (tree / "pyproject.toml").write_text('[tool.apx-doctor]\nextend-exclude = ["fixtures/"]\nforce-exclude = true\n')
    assert checked(run_cli("check", "--output-format", "json", *named)) == ["sessions/keep.jsonl"]
    assert checked(run_cli("check", "--output-format", "json", "--no-force-exclude", *named)) == sorted(named)


def test_force_exclude_leaves_out_backups_and_sidecars_named_by_pre_commit(tree: Path) -> None:
    (tree / "sessions/a.jsonl.bak").write_bytes(BROKEN)
    (tree / "sessions/a.jsonl.bak.3").write_bytes(BROKEN)
    (tree / "sessions/a.jsonl.rejected.jsonl").write_bytes(b"{not json\n")
    named = ["sessions/keep.jsonl", "sessions/a.jsonl.bak", "sessions/a.jsonl.bak.3", "sessions/a.jsonl.rejected.jsonl"]
    result = run_cli("check", "--force-exclude", "--output-format", "json", *named)
    assert result.exit_code == 0 and checked(result) == ["sessions/keep.jsonl"]


@pytest.mark.parametrize(
    "table, message",
    [
        ('exclude = "old"', "exclude must be a list of strings"),
        ("extend-exclude = [1]", "extend-exclude must be a list of strings"),
        ('exclude = [" "]', "exclude holds an empty pattern"),
        ('force-exclude = "yes"', "force-exclude must be true or false"),
        ('excludes = ["old"]', "unknown key 'excludes'"),
    ],
)
def test_bad_exclude_settings_are_usage_errors(tree: Path, table: str, message: str) -> None:
    (tree / "pyproject.toml").write_text(f"[tool.apx-doctor]\n{table}\n")
    result = run_cli("check", "sessions")
    assert result.exit_code == 2
    assert message in result.stderr


def test_the_unknown_key_message_lists_the_new_keys(tree: Path) -> None:
    (tree / "pyproject.toml").write_text("[tool.apx-doctor]\nexclud = []\n")
    stderr = run_cli("check", "sessions").stderr
    assert "exclude" in stderr and "extend-exclude" in stderr and "force-exclude" in stderr


# --- the matcher ---------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, path, excluded",
    [
        ("history.jsonl", "/r/a/b/history.jsonl", True),  # a name anywhere
        ("build", "/r/build/x.jsonl", True),  # a folder name anywhere below
        ("build/", "/r/build/x.jsonl", True),
        ("build/", "/r/x/build", False),  # only folders
        ("data/*.jsonl", "/r/data/x.jsonl", True),  # a slash: from the root
        ("data/*.jsonl", "/r/sub/data/x.jsonl", False),
        ("data/*.jsonl", "/r/data/deeper/x.jsonl", False),  # * never crosses a folder
        ("**/data/*.jsonl", "/r/sub/data/x.jsonl", True),
        ("data/**", "/r/data/a/b/x.jsonl", True),
        ("/top.jsonl", "/r/top.jsonl", True),
        ("/top.jsonl", "/r/s/top.jsonl", False),
        ("*.bak.[0-9]*", "/r/s.jsonl.bak.12", True),
        ("*.bak.[0-9]*", "/r/s.jsonl.bak.old", False),
    ],
)
def test_patterns_match_as_ruff_and_gitignore_do(pattern: str, path: str, excluded: bool) -> None:
    assert Excluder([pattern], "/r").excluded(path, base="/r") is excluded


def test_folder_names_above_the_walked_folder_do_not_count() -> None:
    # `apx-doctor check /tmp/build/sessions` with exclude = ["build"] still checks it.
    assert not Excluder(["build"], "/r").excluded("/tmp/build/sessions/a.jsonl", base="/tmp/build/sessions")


def test_the_defaults_cover_the_runtimes_bookkeeping_wherever_the_home_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", "/data/codex-home")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    excluder = Excluder(default_exclude(), "/work/project")
    for path in (
        "/home/u/.claude/history.jsonl",
        "/home/u/.claude/jobs/4f2a/timeline.jsonl",
        "/home/u/.codex/history.jsonl",
        "/home/u/.codex/session_index.jsonl",
        "/data/codex-home/history.jsonl",  # CODEX_HOME moves the home: its files too
        "/work/project/s.jsonl.rejected.jsonl",
    ):
        assert excluder.excluded(path), path
    for path in (
        "/home/u/.claude/projects/-home-u-shop/5f0c2d1e.jsonl",
        "/home/u/.codex/sessions/2025/12/05/rollout-2025-12-05T11-00-00-0199a213.jsonl",
        "/work/project/history.jsonl",  # a project's own file of that name is checked
    ):
        assert not excluder.excluded(path), path
