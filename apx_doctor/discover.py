"""Which files a run looks at, and which of them the doctor must never write.

A path given on the command line is taken as it is. A directory is walked for
``*.jsonl`` and the session files that are not lines (``is_session_name``):
inside a git work tree git itself says which files are not
ignored (``git ls-files``); elsewhere ``.git`` is skipped and each folder's
``.gitignore`` is read for its simple patterns. What ``exclude`` and
``extend-exclude`` match is left out of a walk (and, with ``--force-exclude``,
out of the files named too): by default our own sidecars and backups, and the
files the agent runtimes keep in their homes that are no session.

Transcripts are runtime state. The portable project contract (``AGENTS.md``,
the ``.apc/`` folder, agent definitions) is not, and it is never edited.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

SUFFIX = ".jsonl"
# Sessions a runtime keeps as one JSON document, or in a database: found by
# name, since a folder's other JSON files (settings, manifests) are no sessions.
_DOCUMENT_NAMES = ("api_conversation_history.json", "opencode.db")  # Cline, Roo Code, Kilo Code; OpenCode
_DOCUMENT_SUFFIX = ".messages.json"  # Cline CLI: sessions/<id>/<id>.messages.json
_GIT_PATHSPECS = (f"*{SUFFIX}", "*.json", "*opencode.db")
CONTRACT_FOLDER = ".apc"
# Files that define agents for runtimes; their names mark the contract.
_CONTRACT_NAMES = ("agents.md", "agent.md", "claude.md", "gemini.md")
_AGENT_FOLDERS = (("claude", "agents"), (".claude", "agents"), (".github", "agents"), (".codex", "agents"))
_APC = f"/{CONTRACT_FOLDER}/"
_AGENT_FOLDER_PATHS = tuple(f"/{'/'.join(folders)}/" for folders in _AGENT_FOLDERS)


def expand(paths: Iterable[str]) -> list[str]:
    """The inputs: files as given, directories replaced by the transcripts inside them."""
    return [found.path for found in discover(paths)]


class Found:
    """One input, and whether it was found by walking a folder (or named as it is)."""

    __slots__ = ("path", "walked")

    def __init__(self, path: str, walked: bool) -> None:
        self.path = path
        self.walked = walked

    def __repr__(self) -> str:
        return f"Found({self.path!r}, walked={self.walked})"


Rules = Callable[[str, bool], "tuple[Excluder, bool]"]


def discover(
    paths: Iterable[str],
    excluder: Excluder | None = None,
    force_exclude: bool = False,
    *,
    rules: Rules | None = None,
    stdin_name: str | None = None,
) -> list[Found]:
    """``expand`` that also says where each input came from, leaving out what ``excluder`` excludes.

    A file found in a folder is left out when it matches; a file named as it
    is, only with ``force_exclude`` (pre-commit passes every staged file by name).
    ``rules(path, is_folder)`` gives the excluder and force-exclude of each
    path's own configuration instead (a walked file is matched against its
    own, the folder walked against the walk's). ``stdin_name`` is the name
    standard input is matched by (--stdin-filename).
    """

    def rules_for(path: str, folder: bool) -> tuple[Excluder | None, bool]:
        return rules(path, folder) if rules is not None else (excluder, force_exclude)

    out: list[Found] = []
    seen: set[str] = set()
    for path in paths:
        if path == "-":
            found = [Found(path, False)]
            if stdin_name is not None:
                named, forced = rules_for(stdin_name, False)
                if named is not None and forced and named.excluded(stdin_name):
                    found = []
        elif os.path.isdir(path):
            walker, forced = rules_for(path, True)
            if walker is not None and forced and walker.excluded(path, folder_=True):
                continue
            found = [Found(item, True) for item in walk(path, walker)]
            if rules is not None:
                kept = []
                for item in found:
                    own, _ = rules(item.path, False)
                    if own is walker or own is None or not own.excluded(item.path, base=path):
                        kept.append(item)
                found = kept
        else:
            named, forced = rules_for(path, False)
            found = [] if named is not None and forced and named.excluded(path) else [Found(path, False)]
        for item in found:
            if item.path not in seen:
                seen.add(item.path)
                out.append(item)
    return out


def walk(folder: str, excluder: Excluder | None = None) -> list[str]:
    listed = _git_files(folder)
    if listed is None:
        listed = _plain_walk(folder, excluder)
    if excluder is not None:
        listed = [p for p in listed if not excluder.excluded(p, base=folder)]
    return sorted(listed)


def is_session_name(path: str) -> bool:
    """Whether a folder walk takes the file at ``path``: ``*.jsonl``, or a session
    document by its runtime's name for it (Gemini CLI: ``chats/session-*.json``)."""
    if path.endswith(SUFFIX):
        return True
    folder, name = os.path.split(path)
    if name in _DOCUMENT_NAMES or name.endswith(_DOCUMENT_SUFFIX):
        return True
    return name.startswith("session-") and name.endswith(".json") and os.path.basename(folder) == "chats"


def _git_files(folder: str) -> list[str] | None:
    """Every not-ignored session file under ``folder``, or None when git cannot tell."""
    try:
        done = subprocess.run(
            ["git", "-C", folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *_GIT_PATHSPECS],
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
    paths = (os.path.normpath(os.path.join(folder, n)) for n in names)
    return [p for p in paths if is_session_name(p) and os.path.isfile(p)]


def _plain_walk(folder: str, excluder: Excluder | None = None) -> list[str]:
    out: list[str] = []
    patterns: dict[str, list[str]] = {}
    for root, dirs, files in os.walk(folder):
        patterns[root] = patterns.get(os.path.dirname(root), []) + _read_gitignore(root)
        active = patterns[root]
        dirs[:] = [
            d
            for d in dirs
            if d != ".git"
            and not _ignored(d, active, folder_=True)
            and not (excluder is not None and excluder.excluded_name(d, folder_=True))
        ]
        found = (os.path.normpath(os.path.join(root, f)) for f in files if not _ignored(f, active))
        out.extend(p for p in found if is_session_name(p))
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


# --- exclude patterns ------------------------------------------------------

# Our own files beside a transcript: --salvage's sidecars and --backup's copies.
OWN_EXCLUDE = ("*.rejected.jsonl", "*.bak", "*.bak.[0-9]*")


def default_exclude(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """What folder runs leave out unless ``exclude`` says otherwise: our own files, and
    the JSONL the agent runtimes write in their homes that is no session."""
    from .homes import bookkeeping_patterns

    return OWN_EXCLUDE + bookkeeping_patterns(environ)


class Excluder:
    """Glob patterns matched as ruff's ``exclude`` and .gitignore match them.

    A pattern without a slash matches a file or folder name anywhere (below the
    folder a run walks). A pattern with one matches the path relative to
    ``root`` (the configuration's folder), or the absolute path when the file
    lies outside it: ``**/`` stands for any folders, ``*`` and ``?`` never
    match a slash, a trailing ``/`` matches only folders, and a pattern that
    matches a folder excludes everything in it.
    """

    def __init__(self, patterns: Iterable[str] | Callable[[], Iterable[str]], root: str | os.PathLike[str]) -> None:
        """``patterns`` may be a function that gives them: asked only once a file is matched
        (a run of named files without --force-exclude never is)."""
        self.root = os.path.abspath(root)
        self._patterns = patterns
        self._names: list[tuple[str, bool]] | None = None

    @property
    def names(self) -> list[tuple[str, bool]]:  # (pattern, folders only)
        if self._names is None:
            self._compile()
        return self._names  # type: ignore[return-value]  # _compile set it

    @property
    def paths(self) -> list[tuple[re.Pattern[str], bool]]:
        if self._names is None:
            self._compile()
        return self._paths

    def _compile(self) -> None:
        patterns = self._patterns() if callable(self._patterns) else self._patterns
        self._names, self._paths = [], []
        for raw in patterns:
            pattern = raw.strip()
            if os.sep != "/":
                pattern = pattern.replace(os.sep, "/")
            if not pattern:
                continue
            folders_only = pattern.endswith("/")
            pattern = pattern.rstrip("/")
            if "/" not in pattern:
                self._names.append((pattern, folders_only))
            else:
                self._paths.append((re.compile(_glob_regex(pattern.lstrip("/"))), folders_only))

    def excluded_name(self, name: str, folder_: bool = False) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p, only in self.names if folder_ or not only)

    def excluded(self, path: str, base: str | None = None, folder_: bool = False) -> bool:
        """Whether ``path`` (a folder, with ``folder_``) is left out; folder names count from ``base`` (default: the root) down."""
        absolute = os.path.abspath(path)
        below = _below(absolute, os.path.abspath(base) if base is not None else self.root)
        if below is not None:
            parts = below.split("/")
            if self.excluded_name(parts[-1], folder_) or any(self.excluded_name(p, folder_=True) for p in parts[:-1]):
                return True
        elif self.excluded_name(os.path.basename(absolute), folder_):
            return True
        if not self.paths:
            return False
        # Relative to the root when inside it, and always the absolute path (a
        # home's own files are excluded however the run reached them).
        subjects = [absolute.replace(os.sep, "/").lstrip("/")]
        relative = _below(absolute, self.root)
        if relative is not None:
            subjects.append(relative)
        for subject in subjects:
            parts = subject.split("/")
            prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
            for regex, folders_only in self.paths:
                candidates = prefixes[:-1] if folders_only and not folder_ else prefixes
                if any(regex.fullmatch(c) for c in candidates):
                    return True
        return False


def _below(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` with forward slashes, or None when it is not inside it."""
    try:
        relative = os.path.relpath(path, folder)
    except ValueError:  # another drive
        return None
    if relative == "." or relative.startswith(".."):
        return None
    return relative.replace(os.sep, "/")


def _glob_regex(pattern: str) -> str:
    out = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


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
