"""The pre-commit hooks as a user meets them: the real `pre-commit try-repo`.

The checkout is copied into a throwaway git repository and committed there, so
what is tested is exactly this working tree (try-repo on a dirty checkout
would take only tracked files). Each try-repo builds a fresh hook environment
with pip, so these few runs are the slowest tests; they need git and PyPI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
CLEAN = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}\n'
    b'{"role":"tool","tool_call_id":"c1","content":"ok"}\n'
)
BROKEN = CLEAN.rsplit(b"\n", 2)[0] + b"\n" + b'{"role":"user","content":"and?"}\n'
GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT", "VIRTUAL_ENV"))}
    env.update(GIT_ENV)
    env.update({"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "NO_COLOR": "1"})
    return env


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=_env(), capture_output=True, check=True)
    return done.stdout.decode()


def _pre_commit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args, "--color", "never"],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree, committed in a repository of its own."""
    copy = tmp_path_factory.mktemp("apx-doctor-checkout")
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "snapshot of the working tree")
    return copy


def test_manifest_validates() -> None:
    done = _pre_commit(ROOT, "validate-manifest", str(MANIFEST))
    assert done.returncode == 0, done.stdout + done.stderr


def test_hooks_are_what_the_issue_promises() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    assert hooks["apx-doctor"]["entry"] == "apx-doctor check"
    assert hooks["apx-doctor-fix"]["entry"] == "apx-doctor fix --in-place"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["files"] == r"\.jsonl$"
        assert hook["types"] == ["text"]
        assert "args" not in hook  # subcommands live in entry: a user's args only add options


def test_every_hook_id_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for hook in yaml.safe_load(MANIFEST.read_text()):
        assert re.search(rf"- id: {re.escape(hook['id'])}(?![\w-])", readme), hook["id"]


def _status(output: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\.+(Passed|Failed|\(no files to check\)Skipped)$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


@needs_git
def test_try_repo_passes_clean_files_then_fails_and_fixes_broken_ones(hook_repo: Path, tmp_path: Path) -> None:
    user = tmp_path / "sessions"
    user.mkdir()
    _git(user, "init", "-q")
    (user / "clean.jsonl").write_bytes(CLEAN)
    (user / "notes.txt").write_bytes(b'{"role":"user"}\n')  # not a transcript: no hook looks at it
    _git(user, "add", "-A")

    first = _pre_commit(user, "try-repo", str(hook_repo), "--all-files")
    out = first.stdout + first.stderr
    assert first.returncode == 0, out
    assert _status(out, "apx-doctor (check transcripts)") == "Passed"
    assert _status(out, "apx-doctor (repair transcripts)") == "Passed"

    (user / "broken.jsonl").write_bytes(BROKEN)
    _git(user, "add", "-A")
    second = _pre_commit(user, "try-repo", str(hook_repo), "--all-files")
    out = second.stdout + second.stderr
    assert second.returncode == 1, out
    assert _status(out, "apx-doctor (check transcripts)") == "Failed"
    assert _status(out, "apx-doctor (repair transcripts)") == "Failed"
    assert "APX001" in out
    assert "Fixing broken.jsonl" in out
    assert "files were modified by this hook" in out
    repaired = (user / "broken.jsonl").read_bytes()
    assert repaired == BROKEN.replace(
        b'{"role":"user","content":"and?"}',
        b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n{"role":"user","content":"and?"}',
    )
    assert (user / "clean.jsonl").read_bytes() == CLEAN

    _git(user, "add", "-A")
    third = _pre_commit(user, "try-repo", str(hook_repo), "--all-files")
    out = third.stdout + third.stderr
    assert third.returncode == 0, out
    assert _status(out, "apx-doctor (check transcripts)") == "Passed"
    assert _status(out, "apx-doctor (repair transcripts)") == "Passed"
