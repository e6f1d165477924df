"""Folders, verbosity, colour, and which stream gets what."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from apx_doctor.discover import walk

from ._cli import BROKEN, CLEAN, run_cli

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _tree(root: Path) -> None:
    for rel, data in {
        "a.jsonl": CLEAN,
        "sub/b.jsonl": BROKEN,
        "sub/notes.txt": BROKEN,
        "build/c.jsonl": BROKEN,
        ".git/d.jsonl": BROKEN,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / ".gitignore").write_text("# generated\nbuild/\n")


def test_folders_are_walked_for_jsonl_without_git(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(isolated_cwd)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(isolated_cwd.parent))
    assert walk(".") == ["a.jsonl", "sub/b.jsonl"]


@needs_git
def test_folders_are_walked_with_git_ignores(isolated_cwd: Path) -> None:
    _tree(isolated_cwd)
    shutil.rmtree(isolated_cwd / ".git")
    subprocess.run(["git", "init", "-q"], cwd=isolated_cwd, check=True)
    (isolated_cwd / "sub" / ".gitignore").write_text("secret-*.jsonl\n")
    (isolated_cwd / "sub" / "secret-1.jsonl").write_bytes(BROKEN)
    result = run_cli("check", "--output-format", "json", ".")
    files = [f["path"] for f in json.loads(result.stdout)["files"]]
    assert files == ["a.jsonl", "sub/b.jsonl"]
    assert result.exit_code == 1


# Session files that are not lines, by the names their runtimes give them, and
# JSON files beside them that are no session.
_DOCUMENTS = {
    "gemini/tmp/abc/chats/session-2026-12-01T10-00-1a2b.json": True,  # Gemini CLI
    "cline/tasks/17/api_conversation_history.json": True,  # Cline, Roo Code, Kilo Code
    "cline-cli/sessions/s1/s1.messages.json": True,  # Cline CLI
    "cline-cli/sessions/s1/s1.json": False,  # its metadata
    "opencode/opencode.db": True,
    "gemini/settings.json": False,
    "package.json": False,
    "notes/session-1.json": False,  # not in a chats folder
}


def _documents(root: Path) -> list[str]:
    for rel in _DOCUMENTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"{}\n")
    return sorted(rel for rel, taken in _DOCUMENTS.items() if taken)


def test_a_walk_takes_the_session_documents_by_name_without_git(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(isolated_cwd.parent))
    taken = _documents(isolated_cwd)
    assert walk(".") == taken


@needs_git
def test_a_walk_takes_the_session_documents_by_name_with_git(isolated_cwd: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated_cwd, check=True)
    taken = _documents(isolated_cwd)
    assert walk(".") == taken


def test_a_folder_without_transcripts(isolated_cwd: Path) -> None:
    result = run_cli("check", ".")
    assert result.exit_code == 0 and "no *.jsonl transcripts found" in result.stderr and result.stdout == ""


def test_findings_go_to_stdout_and_the_summary_to_stderr(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    for fmt in ("text", "github", "json-lines", "sarif"):
        result = run_cli("check", "--output-format", fmt, "a.jsonl")
        assert "APX001" in result.stdout, fmt
        assert result.stderr == "1 file checked, 1 error, 0 warnings\n", fmt
        quiet = run_cli("check", "-q", "--output-format", fmt, "a.jsonl")
        assert quiet.stderr == "" and quiet.stdout == result.stdout, fmt


def test_verbose_names_each_file_on_stderr(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "b.jsonl").write_bytes(CLEAN)
    result = run_cli("check", "-v", "--output-format", "json", "a.jsonl", "b.jsonl")
    assert "apx-doctor: a.jsonl: chat, 1 finding\n" in result.stderr
    assert "apx-doctor: b.jsonl: chat, 0 findings" in result.stderr
    json.loads(result.stdout)  # stdout is still one clean document


ANSI = "\x1b["


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ([], {}, False),  # not a terminal
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (["--color", "always"], {"NO_COLOR": "1"}, True),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_follows_flags_then_no_color_and_force_color(
    args: list[str], env: dict[str, str], coloured: bool, isolated_cwd: Path
) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("check", *args, "a.jsonl", env=env)
    assert (ANSI in result.stdout) is coloured
    assert (ANSI in result.stderr) is coloured


def test_fixing_in_place_prints_fixing_and_exits_1_then_0(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "b.jsonl").write_bytes(CLEAN)
    first = run_cli("fix", "--in-place", "a.jsonl", "b.jsonl")
    assert first.exit_code == 1
    assert "Fixing a.jsonl" in first.stdout and "Fixing b.jsonl" not in first.stdout
    second = run_cli("fix", "--in-place", "a.jsonl", "b.jsonl")
    assert second.exit_code == 0 and "Fixing" not in second.stdout


@pytest.mark.parametrize("fmt", ["github", "json", "json-lines", "sarif"])
def test_machine_formats_name_fixed_files_on_stderr(fmt: str, isolated_cwd: Path) -> None:
    # pre-commit's fix hook under GitHub Actions picks the github format: the user still sees what changed.
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("fix", "--in-place", "--output-format", fmt, "a.jsonl")
    assert result.exit_code == 1
    assert "Fixing a.jsonl\n" in result.stderr and "Fixing" not in result.stdout
    again = run_cli("fix", "--in-place", "--output-format", fmt, "a.jsonl")
    assert again.exit_code == 0 and "Fixing" not in again.stderr
