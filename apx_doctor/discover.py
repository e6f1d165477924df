"""Which files a run looks at, and which of them the doctor must never write.

A path given on the command line is taken as it is. A directory is walked for
``*.jsonl``: inside a git work tree git itself says which files are not
ignored (``git ls-files``); elsewhere ``.git`` is skipped and each folder's
``.gitignore`` is read for its simple patterns.

Transcripts are runtime state. The portable project contract (``AGENTS.md``,
the ``.apc/`` folder, agent definitions) is not, and it is never edited.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path
from typing import Iterable

SUFFIX = ".jsonl"
CONTRACT_FOLDER = ".apc"
# Files that define agents for runtimes; their names mark the contract.
_CONTRACT_NAMES = ("agents.md", "agent.md", "claude.md", "gemini.md")
_AGENT_FOLDERS = (("claude", "agents"), (".claude", "agents"), (".github", "agents"), (".codex", "agents"))
_APC = f"/{CONTRACT_FOLDER}/"
_AGENT_FOLDER_PATHS = tuple(f"/{'/'.join(folders)}/" for folders in _AGENT_FOLDERS)


def expand(paths: Iterable[str]) -> list[str]:
    """The inputs: files as given, directories replaced by the transcripts inside them."""
    out: list[str] = []
    seen: set[str] = set()
    for path in paths:
        found = walk(path) if path != "-" and os.path.isdir(path) else [path]
        for item in found:
            if item not in seen:
                seen.add(item)
                out.append(item)
    return out


def walk(folder: str) -> list[str]:
    listed = _git_files(folder)
    if listed is None:
        listed = _plain_walk(folder)
    return sorted(listed)


def _git_files(folder: str) -> list[str] | None:
    """Every not-ignored ``*.jsonl`` under ``folder``, or None when git cannot tell."""
    try:
        done = subprocess.run(
            ["git", "-C", folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", f"*{SUFFIX}"],
            capture_output=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = [n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    # --cached also lists tracked files deleted from the work tree.
    return [p for p in (os.path.normpath(os.path.join(folder, n)) for n in names) if os.path.isfile(p)]


def _plain_walk(folder: str) -> list[str]:
    out = []
    patterns: dict[str, list[str]] = {}
    for root, dirs, files in os.walk(folder):
        patterns[root] = patterns.get(os.path.dirname(root), []) + _read_gitignore(root)
        active = patterns[root]
        dirs[:] = [d for d in dirs if d != ".git" and not _ignored(d, active, folder_=True)]
        out.extend(os.path.normpath(os.path.join(root, f)) for f in files if f.endswith(SUFFIX) and not _ignored(f, active))
    return out


def _read_gitignore(root: str) -> list[str]:
    try:
        text = Path(root, ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    # Only simple name patterns; negations and anchored paths need git itself.
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "!"))]


def _ignored(name: str, patterns: list[str], folder_: bool = False) -> bool:
    for pattern in patterns:
        if pattern.endswith("/"):
            if folder_ and fnmatch.fnmatchcase(name, pattern.rstrip("/").lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, pattern.lstrip("/")):
            return True
    return False


def contract_reason(path: str) -> str | None:
    """Why ``path`` belongs to the portable project contract, or None."""
    if path == "-":
        return None
    # Plain string work, not pathlib: this is asked of every file of a run,
    # in the parent process while the workers check (--jobs).
    folder, shown = os.path.split(os.path.abspath(path))
    # Every folder name between slashes, so that a test for "/.apc/" is a test
    # for a whole folder name.
    folders = f"{folder.replace(os.sep, '/').lower()}/"
    if _APC in folders:
        return f"inside {CONTRACT_FOLDER}/"
    name = shown.lower()
    if name in _CONTRACT_NAMES or name.startswith("agents."):
        return f"{shown} is a contract file"
    if name.removesuffix(SUFFIX).endswith(".agent") or any(f in folders for f in _AGENT_FOLDER_PATHS):
        return "named like an agent definition"
    return None
