"""Where the agent runtimes on this machine keep their sessions: one row a runtime.

Each row says where a runtime's home is (an environment override, else a folder
under the user's home), which files under it are sessions, how to read a
session's id and project from its file, the command that resumes it, and which
JSONL files it writes there that are no session (excluded from folder runs by
default). Adding a runtime is one row, for a format the registry in
``apx_doctor/formats/`` reads.

Nothing here checks a session (the runner does) or writes anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class FromPath:
    """A value read from the file's path under the home: the regex group ``value``."""

    pattern: str


@dataclass(frozen=True, slots=True)
class FromLine:
    """A value read from the first of the file's first lines that has it.

    ``keys`` leads into the line (a JSON object); ``where`` are top-level
    key/value pairs the line must have.
    """

    keys: tuple[str, ...]
    where: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class FromFile:
    """A value read from the first line of a small file, relative to the session file's folder."""

    path: str


Probe = FromPath | FromLine | FromFile


@dataclass(frozen=True, slots=True)
class Runtime:
    name: str  # the --runtime name, and the "runtime" of a row
    title: str
    format: str  # the adapter that reads its sessions
    # Overrides of the home, the first set wins: "VAR" is the home itself,
    # "VAR/sub" a folder under it (a variable that stands in for the user's home).
    env: tuple[str, ...]
    default: str  # the home when none is set, under the user's home folder
    sessions: tuple[str, ...]  # globs of session files, relative to the home
    session_id: tuple[Probe, ...]  # tried in order
    project: tuple[Probe, ...]  # the working folder the session belongs to
    resume: tuple[str, ...]  # argv; {session_id} is replaced
    resume_in_project: bool  # the command must run in the project folder
    bookkeeping: tuple[str, ...]  # JSONL files under the home that are no session (globs)


RUNTIMES: tuple[Runtime, ...] = (
    Runtime(
        name="claude-code",
        title="Claude Code",
        format="claude-code",
        env=("CLAUDE_CONFIG_DIR",),
        default=".claude",
        sessions=("projects/*/*.jsonl", "projects/*/*/subagents/**/agent-*.jsonl"),
        # `claude --resume ID` opens projects/<project>/<ID>.jsonl: the file
        # stem first (a sub-agent file: its session's folder), then the lines
        # (older versions wrote sub-agents beside the sessions, as agent-*.jsonl).
        session_id=(FromPath(r"^projects/[^/]+/(?!agent-)(?P<value>[^/]+?)(?:\.jsonl$|/subagents/)"), FromLine(("sessionId",))),
        project=(FromLine(("cwd",)),),
        resume=("claude", "--resume", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(
            "history.jsonl",  # the prompts typed, every project
            "jobs/*/timeline.jsonl",  # background jobs' state
            "projects/*/*/subagents/workflows/*/journal.jsonl",  # workflow runs' journal
            "dump-prompts/*.jsonl",  # request dumps
        ),
    ),
    Runtime(
        name="codex",
        title="Codex CLI",
        format="codex",
        env=("CODEX_HOME",),
        default=".codex",
        sessions=("sessions/*/*/*/rollout-*.jsonl", "archived_sessions/**/rollout-*.jsonl"),
        session_id=(
            FromLine(("payload", "id"), (("type", "session_meta"),)),
            FromPath(r"rollout-[0-9T:-]+-(?P<value>[0-9a-fA-F-]{36})\.jsonl$"),
        ),
        project=(FromLine(("payload", "cwd"), (("type", "session_meta"),)),),
        resume=("codex", "resume", "{session_id}"),
        resume_in_project=False,
        bookkeeping=(
            "history.jsonl",  # the prompts typed, every session
            "session_index.jsonl",  # thread names
            "log/session-*.jsonl",  # the TUI's event log (CODEX_TUI_RECORD_SESSION)
        ),
    ),
    Runtime(
        name="qwen-code",
        title="Qwen Code",
        format="qwen-code",
        env=("QWEN_RUNTIME_DIR", "QWEN_HOME"),
        default=".qwen",
        sessions=(
            "projects/*/chats/*.jsonl",
            "projects/*/chats/archive/*.jsonl",
            "projects/*/subagents/*/agent-*.jsonl",
        ),
        session_id=(
            FromPath(r"^projects/[^/]+/(?:chats/(?:archive/)?(?P<value>[^/]+)\.jsonl$|subagents/(?P<parent>[^/]+)/)"),
            FromLine(("sessionId",)),
        ),
        project=(FromLine(("cwd",)),),
        resume=("qwen", "--resume", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(
            "projects/*/chats/*.ledger.jsonl",  # the prompt ledger beside a session
            "projects/*/chats/archive/*.ledger.jsonl",
            "channels/*/*.jsonl",  # channel audit logs
        ),
    ),
    Runtime(
        name="gemini-cli",
        title="Gemini CLI",
        format="gemini-cli",
        env=("GEMINI_CLI_HOME/.gemini",),  # GEMINI_CLI_HOME stands in for the user's home
        default=".gemini",
        sessions=("tmp/*/chats/session-*.jsonl", "tmp/*/chats/session-*.json"),
        session_id=(FromLine(("sessionId",)),),
        # The project folder a tmp/<project>/ belongs to is written in .project_root.
        project=(FromFile("../.project_root"),),
        resume=("gemini", "--resume", "{session_id}"),
        resume_in_project=True,
        bookkeeping=("tmp/*/logs/*.jsonl",),  # per-session activity logs
    ),
    Runtime(
        name="pi",
        title="pi",
        format="pi",
        env=("PI_CODING_AGENT_DIR",),
        default=".pi/agent",
        sessions=("sessions/*/*.jsonl",),
        session_id=(FromLine(("id",), (("type", "session"),)), FromPath(r"_(?P<value>[0-9a-fA-F-]{36})\.jsonl$")),
        project=(FromLine(("cwd",), (("type", "session"),)),),
        # --session takes an id and opens the session in its own folder.
        resume=("pi", "--session", "{session_id}"),
        resume_in_project=False,
        bookkeeping=(),
    ),
    Runtime(
        name="copilot-cli",
        title="Copilot CLI",
        format="copilot-cli",
        env=(),
        default=".copilot",
        sessions=("session-state/*/events.jsonl",),
        session_id=(
            FromLine(("data", "sessionId"), (("type", "session.start"),)),
            FromPath(r"^session-state/(?P<value>[^/]+)/events\.jsonl$"),
        ),
        project=(FromLine(("data", "context", "cwd"), (("type", "session.start"),)),),
        # Sessions resume in the folder they were saved from.
        resume=("copilot", "--resume", "{session_id}"),
        resume_in_project=False,
        bookkeeping=(),
    ),
    Runtime(
        name="factory-droid",
        title="Factory Droid",
        format="factory-droid",
        env=(),
        default=".factory",
        sessions=("sessions/*/*.jsonl",),
        # The store's header names the session; `droid --resume ID` opens it.
        session_id=(FromLine(("id",), (("type", "session_start"),)), FromPath(r"^sessions/[^/]+/(?P<value>[^/]+)\.jsonl$")),
        project=(FromLine(("cwd",), (("type", "session_start"),)),),
        resume=("droid", "--resume", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(),
    ),
    Runtime(
        name="grok-cli",
        title="Grok CLI",
        format="grok-cli",
        env=("GROK_HOME",),
        default=".grok",
        # A session is a folder; chat_history.jsonl is what the model is sent on
        # resume (updates.jsonl, the display log, and the rest are bookkeeping).
        sessions=("sessions/*/*/chat_history.jsonl",),
        session_id=(FromPath(r"^sessions/[^/]+/(?P<value>[^/]+)/chat_history\.jsonl$"),),
        project=(),
        resume=("grok", "--resume", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(
            "sessions/*/*/updates.jsonl",  # the display log grok --resume replays
            "sessions/*/*/events.jsonl",  # telemetry
            "sessions/*/*/rewind_points.jsonl",
        ),
    ),
    Runtime(
        name="kimi",
        title="Kimi Code",
        format="kimi",
        env=("KIMI_CODE_HOME",),
        default=".kimi-code",
        sessions=("sessions/*/*/agents/*/wire.jsonl",),
        session_id=(FromPath(r"^sessions/[^/]+/(?P<value>[^/]+)/agents/"),),
        project=(),
        # --session ID opens that session directly, from any folder.
        resume=("kimi", "--session", "{session_id}"),
        resume_in_project=False,
        bookkeeping=("session_index.jsonl",),
    ),
    Runtime(
        name="cline",
        title="Cline CLI",
        format="cline",
        # Cline 3.x finds its sessions at CLINE_SESSION_DATA_DIR, else
        # CLINE_DATA_DIR/sessions, else CLINE_DIR/data/sessions (~/.cline by default).
        env=("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR/sessions", "CLINE_DIR/data/sessions"),
        default=".cline/data/sessions",
        # <sid>/<sid>.json beside each is the session's metadata, not its messages.
        sessions=("*/*.messages.json",),
        session_id=(FromLine(("sessionId",)), FromPath(r"^(?P<value>[^/]+)/[^/]+\.messages\.json$")),
        project=(),
        resume=("cline", "--id", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(),
    ),
    Runtime(
        name="opencode",
        title="OpenCode",
        format="opencode",
        env=("XDG_DATA_HOME/opencode",),
        default=".local/share/opencode",
        # One SQLite store holds every session (apx_doctor/databases.py): the
        # file names no one session, so there is no one command to resume it.
        sessions=("opencode.db",),
        session_id=(),
        project=(),
        resume=("opencode", "--session", "{session_id}"),
        resume_in_project=True,
        bookkeeping=(),
    ),
)


def runtimes() -> tuple[Runtime, ...]:
    """The rows whose format an adapter of this installation reads."""
    from .formats import format_names

    known = set(format_names())
    return tuple(r for r in RUNTIMES if r.format in known)


def names() -> tuple[str, ...]:
    return tuple(r.name for r in RUNTIMES)


@dataclass(frozen=True, slots=True)
class Home:
    runtime: Runtime
    path: str
    # The variable the path came from (None: the default folder).
    source: str | None

    @property
    def exists(self) -> bool:
        return os.path.isdir(self.path)

    def to_dict(self) -> dict[str, Any]:
        return {"runtime": self.runtime.name, "path": self.path, "env": self.source, "exists": self.exists}


def home_of(runtime: Runtime, environ: Mapping[str, str] = os.environ) -> Home:
    for entry in runtime.env:
        name, _, sub = entry.partition("/")
        value = environ.get(name)
        if value:
            return Home(runtime, os.path.join(os.path.abspath(os.path.expanduser(value)), *filter(None, sub.split("/"))), name)
    return Home(runtime, os.path.join(_user_home(environ), *runtime.default.split("/")), None)


def _user_home(environ: Mapping[str, str]) -> str:
    # HOME (USERPROFILE on Windows) as the runtimes read it: Node's os.homedir(), Rust's home_dir().
    for name in ("HOME", "USERPROFILE"):
        if environ.get(name):
            return os.path.abspath(environ[name])
    return str(Path.home())


def homes(selected: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> list[Home]:
    """The homes of the runtimes this installation reads (only ``selected`` ones, when given)."""
    return [home_of(r, environ) for r in runtimes() if not selected or r.name in selected]


@dataclass(frozen=True, slots=True)
class SessionFile:
    home: Home
    path: str

    @property
    def runtime(self) -> Runtime:
        return self.home.runtime


def session_files(found: Iterable[Home]) -> list[SessionFile]:
    """Every session file under the homes that exist, in path order within each home."""
    out: list[SessionFile] = []
    for home in found:
        if not home.exists:
            continue
        root = Path(home.path)
        paths: set[str] = set()
        for pattern in home.runtime.sessions:
            for match in root.glob(pattern):
                if match.is_file():
                    paths.add(str(match))
        out.extend(SessionFile(home, path) for path in sorted(paths))
    return out


def bookkeeping_patterns(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Exclude patterns for the runtimes' own JSONL files that are no session.

    Anchored at each runtime's default folder name anywhere (a copied home is
    covered too) and, where an environment variable moves the home, at that path.
    """
    out: list[str] = []
    for runtime in RUNTIMES:
        bases = [f"**/{runtime.default}"]
        moved = home_of(runtime, environ)
        if moved.source is not None:
            bases.append(moved.path.replace(os.sep, "/").rstrip("/"))
        out.extend(f"{base}/{pattern}" for base in bases for pattern in runtime.bookkeeping)
    return tuple(dict.fromkeys(out))


# --- what a session file says about itself ----------------------------------

# How much of a file's head is read for its id and project.
HEAD_LINES = 200
HEAD_BYTES = 16 << 20


def describe(session: SessionFile) -> tuple[str | None, str | None]:
    """The session id and project of ``session``, as far as its path and first lines tell."""
    runtime = session.runtime
    relative = os.path.relpath(session.path, session.home.path).replace(os.sep, "/")
    wanted = {"session_id": runtime.session_id, "project": runtime.project}
    found: dict[str, str | None] = {key: None for key in wanted}
    pending: dict[str, tuple[Probe, ...]] = {}
    for key, probes in wanted.items():
        for i, probe in enumerate(probes):
            if isinstance(probe, (FromPath, FromFile)):
                value = _from_path(probe, relative) if isinstance(probe, FromPath) else _from_file(probe, session.path)
                if value is not None:
                    found[key] = value
                    break
            else:
                # Lines are read once for every key still open; later path probes wait.
                pending[key] = probes[i:]
                break
    if pending:
        _from_lines(session.path, pending, found, relative)
    return found["session_id"], found["project"]


def _from_path(probe: FromPath, relative: str) -> str | None:
    match = re.search(probe.pattern, relative)
    if match is None:
        return None
    values = [v for v in match.groupdict().values() if v]
    return values[0] if values else None


def _from_lines(path: str, pending: dict[str, tuple[Probe, ...]], found: dict[str, str | None], relative: str) -> None:
    from .files import head_objects

    lines = [p for probes in pending.values() for p in probes if isinstance(p, FromLine)]
    values: dict[FromLine, str] = {}
    probe: Probe
    for value in head_objects(path, HEAD_LINES, HEAD_BYTES):
        for probe in lines:
            if probe not in values:
                got = _from_line(probe, value)
                if got is not None:
                    values[probe] = got
        if len(values) == len(lines):
            break
    for key, probes in pending.items():
        for probe in probes:
            if isinstance(probe, FromLine):
                got = values.get(probe)
            elif isinstance(probe, FromPath):
                got = _from_path(probe, relative)
            else:
                got = _from_file(probe, path)
            if got is not None:
                found[key] = got
                break


def _from_file(probe: FromFile, session_path: str) -> str | None:
    from .files import first_line

    text = first_line(os.path.join(os.path.dirname(session_path), *probe.path.split("/")), 4096)
    return text or None


def _from_line(probe: FromLine, value: Any) -> str | None:
    if not isinstance(value, dict) or any(value.get(k) != v for k, v in probe.where):
        return None
    for key in probe.keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value if isinstance(value, str) and value else None


def resume_command(runtime: Runtime, session_id: str | None) -> list[str] | None:
    if not session_id:
        return None
    return [part.replace("{session_id}", session_id) for part in runtime.resume]


__all__ = [
    "RUNTIMES",
    "FromLine",
    "FromPath",
    "Home",
    "Runtime",
    "SessionFile",
    "bookkeeping_patterns",
    "describe",
    "home_of",
    "homes",
    "names",
    "resume_command",
    "runtimes",
    "session_files",
]
