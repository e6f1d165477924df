"""The real runtimes, driven as a user drives them, against a stand-in API in a fence.

Each ``Runtime`` lives in a throw-away home under a temporary folder (its own
``HOME`` and config folder), so no test reads or writes the real user's files.
The binaries come from ``tests/runtimes/node_modules`` (``make e2e`` installs
them from the lock file); every package ships what it runs inside the package
or in an npm dependency of its own (Claude Code and Codex their native
binary; Gemini CLI, Qwen Code and pi their JavaScript bundle; OpenCode,
Copilot CLI and Factory Droid their compiled binary, in a platform package
npm picks).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fence import Fence
from .standin import TRIGGER, anthropic_merged, gemini_parts

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = ROOT / "tests" / "runtimes"
BIN = RUNTIMES / "node_modules" / ".bin"

# How long a runtime may take to reach the tool, or to finish a resumed turn.
START_TIMEOUT = 90.0
RESUME_TIMEOUT = 120.0


class RuntimeMissing(RuntimeError):
    pass


@dataclass
class Request:
    """One request the stand-in received."""

    path: str
    status: int
    error: str | None  # the refusal's text, where the stand-in refused it
    call: str | None  # the id of the tool call its answer made
    body: Any


class Standin:
    """A stand-in API running inside the fence; its log is every request received."""

    def __init__(self, fence: Fence, api: str, log: Path) -> None:
        self.log = log
        self._process = subprocess.Popen(
            fence.wrap([sys.executable, "-m", "tests.e2e.standin", "--api", api, "--log", str(log)]),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._process.stdout.readline() if self._process.stdout else ""
        if not line.startswith("port "):
            self.close()
            raise RuntimeError(f"the {api} stand-in did not start: {line!r}")
        self.port = int(line.split()[1])

    def requests(self) -> list[Request]:
        if not self.log.exists():
            return []
        with self.log.open(encoding="utf-8") as log:
            return [Request(**json.loads(line)) for line in log]

    def close(self) -> None:
        self._process.kill()
        self._process.wait()


# -- what a request sent for one call --------------------------------------------


@dataclass(frozen=True)
class Sent:
    """What one request held for a call: ``dropped`` (no call at all),
    ``unanswered`` (the call, not followed by its result) or ``answered``
    (the call, immediately followed by its result, whose text is ``text``)."""

    status: str
    text: str | None = None

    def describe(self) -> str:
        """The words of the runtime table in the README."""
        if self.status == "dropped":
            return "drops the call from the request: the model is never told it asked"
        if self.status == "unanswered":
            return "sends the call with no result (the API refuses it)"
        return f"sends the call, then the result `{self.text}`"


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


def anthropic_sent(body: dict, call_id: str) -> Sent:
    messages = anthropic_merged(body.get("messages") or [])
    for index, message in enumerate(messages):
        ids = [b.get("id") for b in message["content"] if message["role"] == "assistant" and b.get("type") == "tool_use"]
        if call_id not in ids:
            continue
        after = messages[index + 1]["content"] if index + 1 < len(messages) else []
        for block in after:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                return Sent("answered", _text(block.get("content")))
        return Sent("unanswered")
    return Sent("dropped")


def responses_sent(body: dict, call_id: str) -> Sent:
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    for index, item in enumerate(items):
        if item.get("type") == "function_call" and item.get("call_id") == call_id:
            after = items[index + 1] if index + 1 < len(items) else {}
            if after.get("type") == "function_call_output" and after.get("call_id") == call_id:
                return Sent("answered", _text(after.get("output")))
            return Sent("unanswered")
    return Sent("dropped")


def chat_sent(body: dict, call_id: str) -> Sent:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for index, message in enumerate(messages):
        ids = [c.get("id") for c in message.get("tool_calls") or [] if message.get("role") == "assistant" and isinstance(c, dict)]
        if call_id not in ids:
            continue
        # The tool messages right after it, in any order among themselves.
        for after in messages[index + 1 :]:
            if after.get("role") != "tool":
                break
            if after.get("tool_call_id") == call_id:
                return Sent("answered", _text(after.get("content")))
        return Sent("unanswered")
    return Sent("dropped")


def gemini_sent(body: dict, call_id: str) -> Sent:
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    for index, content in enumerate(contents):
        ids = [(p.get("functionCall") or {}).get("id") for p in gemini_parts(content)]
        if call_id not in ids:
            continue
        after = contents[index + 1] if index + 1 < len(contents) else {}
        for part in gemini_parts(after):
            response = part.get("functionResponse") or {}
            if response.get("id") == call_id:
                answer = response.get("response") or {}
                return Sent("answered", _text(answer.get("output", answer.get("error"))))
        return Sent("unanswered")
    return Sent("dropped")


class Runtime:
    """One runtime in a fresh home: start a prompt, kill it mid-tool, resume a session."""

    name: str
    package: str  # its npm package, pinned in tests/runtimes/package.json
    binary: str
    api: str  # the stand-in it talks to (tests/e2e/standin.py)
    format: str | None  # the apx-doctor format of its session file, if it writes one that has one

    @staticmethod
    def sent(body: dict, call_id: str) -> Sent:
        """What the request ``body`` held for the call ``call_id``."""
        raise NotImplementedError

    # Fields of the runtime's own result lines an inserted one may leave out.
    optional_fields: frozenset[str] = frozenset()

    @staticmethod
    def is_result_line(line: dict) -> bool:
        """Whether a line of a session file is a tool result."""
        raise NotImplementedError

    @classmethod
    def version(cls) -> str:
        """The installed version of the package (the lock file pins it)."""
        manifest = RUNTIMES / "node_modules" / cls.package / "package.json"
        return json.loads(manifest.read_text(encoding="utf-8"))["version"]

    def __init__(self, fence: Fence, root: Path, home: Path | None = None) -> None:
        """A runtime working under ``root``; ``home``: a HOME shared with other runtimes."""
        path = BIN / self.binary
        if not path.exists():
            raise RuntimeMissing(f"{path} is missing: run `make e2e` (it installs the pinned runtimes with npm ci)")
        self.executable = path
        self.fence = fence
        self.root = root
        self.home = home or root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True)
        self.standin = Standin(fence, self.api, root / "requests.jsonl")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TERM": "dumb",
            "NO_COLOR": "1",
            "LANG": "C.UTF-8",
            "TMPDIR": str(root / "tmp"),
        }
        (root / "tmp").mkdir()
        self.configure()

    # -- what each runtime says differently ------------------------------------

    def configure(self) -> None:
        raise NotImplementedError

    def start_command(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def resume_command(self, session: str, prompt: str) -> list[str]:
        raise NotImplementedError

    def session_file(self) -> Path:
        raise NotImplementedError

    def session_id(self) -> str:
        raise NotImplementedError

    def prompt_input(self, prompt: str) -> str | None:
        """What the runtime reads on standard input for ``prompt`` (most take it as an argument)."""
        return None

    # -- the scenario's steps ----------------------------------------------------

    def interrupt(self, resume: bool = False) -> Path:
        """Start a turn that runs a long shell command; SIGKILL the runtime while it runs.

        The turn starts a new session, or with ``resume`` continues this one.
        Returns the session file the runtime wrote. The tool records its pid
        first, so that it can be ended too: a runtime may start its tools in
        a process group of their own.
        """
        pid_file = self.work / "tool.pid"
        pid_file.unlink(missing_ok=True)
        prompt = f"{TRIGGER} echo $$ > {pid_file} && exec sleep 600"
        command = self.resume_command(self.session_id(), prompt) if resume else self.start_command(prompt)
        process = self._spawn("start", command, self.prompt_input(prompt))
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while not _read_pid(pid_file):
                if process.poll() is not None:
                    raise AssertionError(
                        f"{self.name} exited with {process.returncode} before its tool ran:\n{self.output('start')}"
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{self.name} did not run its tool within {START_TIMEOUT:.0f} s:\n{self.output('start')}"
                    )
                time.sleep(0.2)
            time.sleep(0.5)  # let the runtime write what it writes once the tool has started
        finally:
            _kill_group(process)
            tool = _read_pid(pid_file)
            if tool:
                _kill_pid(tool)
        return self.session_file()

    def complete_a_turn(self, command: str) -> int:
        """A new session whose one turn runs ``command`` to its end; the exit code."""
        prompt = f"{TRIGGER} {command}"
        process = self._spawn("complete", self.start_command(prompt), self.prompt_input(prompt))
        try:
            return process.wait(timeout=RESUME_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise AssertionError(f"{self.name} did not finish its turn in {RESUME_TIMEOUT:.0f} s:\n{self.output('complete')}")

    def resume(self, label: str, prompt: str = "Go on.") -> int:
        """Resume the session with one more prompt; its exit code (output: ``output(label)``)."""
        process = self._spawn(label, self.resume_command(self.session_id(), prompt), self.prompt_input(prompt))
        try:
            return process.wait(timeout=RESUME_TIMEOUT)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise AssertionError(f"{self.name} did not finish the resumed turn in {RESUME_TIMEOUT:.0f} s:\n{self.output(label)}")

    def output(self, label: str) -> str:
        """What the runtime printed on the run called ``label``."""
        return "".join((self.root / f"{label}.{stream}").read_text(errors="replace") for stream in ("out", "err"))

    def close(self) -> None:
        self.standin.close()

    def _spawn(self, label: str, command: list[str], stdin: str | None = None) -> subprocess.Popen:
        """Start ``command`` in the fence; ``stdin``, if given, is what it reads (else nothing)."""
        source = self.root / f"{label}.in"
        source.write_text(stdin or "", encoding="utf-8")
        with (
            open(source, "rb") as given,
            open(self.root / f"{label}.out", "wb") as out,
            open(self.root / f"{label}.err", "wb") as err,
        ):
            return subprocess.Popen(
                self.fence.wrap(command),
                cwd=self.work,
                env=self.env,
                stdin=given if stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: killed whole
            )


class ClaudeCode(Runtime):
    name = "Claude Code"
    package = "@anthropic-ai/claude-code"
    binary = "claude"
    api = "anthropic"
    format = "claude-code"
    sent = staticmethod(anthropic_sent)

    def configure(self) -> None:
        self.config = self.home / ".claude"
        self.env.update(
            ANTHROPIC_BASE_URL=f"http://127.0.0.1:{self.standin.port}",
            ANTHROPIC_API_KEY="sk-ant-standin",
            CLAUDE_CONFIG_DIR=str(self.config),
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
        )

    # Claude Code refuses --dangerously-skip-permissions as root; --allowedTools
    # takes several values, so only the ``=`` form keeps the prompt apart.
    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "-p", "--allowedTools=Bash", "--", prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "-p", "--allowedTools=Bash", "--resume", session, "--", prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        content = (line.get("message") or {}).get("content")
        return (
            line.get("type") == "user"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    def session_file(self) -> Path:
        return only_file(self.config / "projects", "*/*.jsonl")

    def session_id(self) -> str:
        return self.session_file().stem


class Codex(Runtime):
    name = "Codex CLI"
    package = "@openai/codex"
    binary = "codex"
    api = "responses"
    format = "codex"
    sent = staticmethod(responses_sent)

    def configure(self) -> None:
        self.config = self.home / ".codex"
        self.config.mkdir()
        # Update checks, analytics and feedback off; the fence is what keeps it on loopback.
        (self.config / "config.toml").write_text(
            f"""model = "gpt-standin"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.standin]
name = "stand-in"
base_url = "http://127.0.0.1:{self.standin.port}/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
""",
            encoding="utf-8",
        )
        self.env.update(CODEX_HOME=str(self.config), STANDIN_API_KEY="sk-standin")

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "exec", "--skip-git-repo-check", prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "exec", "--skip-git-repo-check", "resume", session, prompt]

    # ``metadata`` is Codex's history bookkeeping (``history_sequence`` and
    # such): it resumes a rollout without it on an inserted line and sends the
    # output as written, where a made-up sequence number could collide.
    optional_fields = frozenset({"metadata"})

    @staticmethod
    def is_result_line(line: dict) -> bool:
        payload = line.get("payload") or {}
        return line.get("type") == "response_item" and payload.get("type") == "function_call_output"

    def session_file(self) -> Path:
        return only_file(self.config / "sessions", "*/*/*/rollout-*.jsonl", "rollout")

    def session_id(self) -> str:
        with self.session_file().open(encoding="utf-8") as rollout:
            meta = json.loads(rollout.readline())
        assert meta["type"] == "session_meta", meta
        return meta["payload"]["id"]


class GeminiCli(Runtime):
    """Gemini CLI, headless (``-p``), on the Gemini API.

    It writes a call to its session only once the tool has finished
    (``recordCompletedToolCalls``), so a turn killed while the tool runs leaves
    no trace of the call in the file: there is nothing to repair.
    """

    name = "Gemini CLI"
    package = "@google/gemini-cli"
    binary = "gemini"
    api = "gemini"
    format = "gemini-cli"
    sent = staticmethod(gemini_sent)
    model = "gemini-2.5-flash"  # named, so that no routing request picks one

    def configure(self) -> None:
        self.config = self.home / ".gemini"
        self.config.mkdir()
        settings = {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        }
        (self.config / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        self.env.update(
            GEMINI_API_KEY="standin-key",
            GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{self.standin.port}",
            GEMINI_CLI_TRUST_WORKSPACE="true",
            GEMINI_TELEMETRY_ENABLED="false",
            # It starts itself again with a larger heap: on two cores, one start is enough.
            GEMINI_CLI_NO_RELAUNCH="true",
        )

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "--approval-mode=yolo", "-m", self.model, "-p", prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "--approval-mode=yolo", "-m", self.model, "--resume", session, "-p", prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        content = line.get("content")
        return (
            line.get("type") == "user"
            and isinstance(content, list)
            and any(isinstance(p, dict) and "functionResponse" in p for p in content)
        )

    def session_file(self) -> Path:
        return only_file(self.config / "tmp", "*/chats/session-*.jsonl")

    def session_id(self) -> str:
        with self.session_file().open(encoding="utf-8") as session:
            return json.loads(session.readline())["sessionId"]


class QwenCode(Runtime):
    """Qwen Code, one-shot (a positional prompt), on OpenAI Chat Completions."""

    name = "Qwen Code"
    package = "@qwen-code/qwen-code"
    binary = "qwen"
    api = "chat"
    format = "qwen-code"
    sent = staticmethod(chat_sent)
    model = "qwen3-coder-plus"

    def configure(self) -> None:
        self.config = self.home / ".qwen"
        self.config.mkdir()
        settings = {
            "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
            "model": {"name": self.model},
            # Its memory sub-agent runs after every turn: model requests of its own.
            "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
        }
        (self.config / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        self.env.update(
            OPENAI_API_KEY="sk-standin",
            OPENAI_BASE_URL=f"http://127.0.0.1:{self.standin.port}/v1",
            OPENAI_MODEL=self.model,
            QWEN_TELEMETRY_ENABLED="false",
            QWEN_USAGE_STATISTICS_ENABLED="false",
            QWEN_CODE_DISABLE_PRECONNECT="1",
            QWEN_CODE_NO_RELAUNCH="true",  # as Gemini CLI, which it comes from
        )

    # The prompt stands last, as a positional: ``--`` before it would end the
    # options but also make qwen read no prompt at all.
    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "--approval-mode=yolo", "--auth-type=openai", prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "--approval-mode=yolo", "--auth-type=openai", "--resume", session, prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        return line.get("type") == "tool_result"

    def session_file(self) -> Path:
        return only_file(self.config / "projects", "*/chats/*.jsonl", skip=".ledger.jsonl")

    def session_id(self) -> str:
        return self.session_file().stem


class Pi(Runtime):
    """pi, print mode (``-p``), on a custom OpenAI Chat Completions provider (models.json)."""

    name = "pi"
    package = "@mariozechner/pi-coding-agent"
    binary = "pi"
    api = "chat"
    format = "pi"
    sent = staticmethod(chat_sent)
    model = "standin-model"

    def configure(self) -> None:
        self.config = self.home / ".pi" / "agent"
        self.config.mkdir(parents=True)
        models = {
            "providers": {
                "standin": {
                    "baseUrl": f"http://127.0.0.1:{self.standin.port}/v1",
                    "api": "openai-completions",
                    "apiKey": "STANDIN_API_KEY",  # the name of the variable that holds it
                    "models": [{"id": self.model}],
                }
            }
        }
        (self.config / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
        # PI_OFFLINE: no start-up network operations (the update check among them).
        self.env.update(STANDIN_API_KEY="sk-standin", PI_OFFLINE="1", PI_TELEMETRY="0", PI_CODING_AGENT_DIR=str(self.config))

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "--provider", "standin", "--model", self.model, "-p", prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "--provider", "standin", "--model", self.model, "--session", session, "-p", prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        return line.get("type") == "message" and (line.get("message") or {}).get("role") == "toolResult"

    def session_file(self) -> Path:
        return only_file(self.config / "sessions", "*/*.jsonl")

    def session_id(self) -> str:
        with self.session_file().open(encoding="utf-8") as session:
            header = json.loads(session.readline())
        assert header["type"] == "session", header
        return header["id"]


class OpenCode(Runtime):
    """OpenCode, one-shot (``opencode run``), on an OpenAI-compatible provider (opencode.json).

    Its sessions live in one SQLite database in its data folder
    (``~/.local/share/opencode/opencode.db``), a message and a part a row.
    """

    name = "OpenCode"
    package = "opencode-ai"
    binary = "opencode"
    api = "chat"
    format = "opencode"
    sent = staticmethod(chat_sent)
    model = "standin-model"

    def configure(self) -> None:
        self.config = self.home / ".config" / "opencode"
        self.data = self.home / ".local" / "share" / "opencode"
        self.config.mkdir(parents=True)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow"},
            "provider": {
                "standin": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "stand-in",
                    "options": {"baseURL": f"http://127.0.0.1:{self.standin.port}/v1", "apiKey": "sk-standin"},
                    "models": {self.model: {"name": "stand-in model"}},
                }
            },
        }
        (self.config / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        self.env.update(
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_SHARE="1",
        )

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "run", "--model", f"standin/{self.model}", "--format", "json"]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "run", "--model", f"standin/{self.model}", "--format", "json", "--session", session]

    def prompt_input(self, prompt: str) -> str | None:
        return prompt

    @staticmethod
    def is_result_line(line: dict) -> bool:
        state = line.get("state") or {}
        return line.get("type") == "tool" and state.get("status") in ("completed", "error")

    def session_file(self) -> Path:
        return self.data / "opencode.db"

    def session_id(self) -> str:
        import sqlite3

        with sqlite3.connect(f"file:{self.session_file()}?mode=ro", uri=True) as db:
            rows = db.execute("select id from session").fetchall()
        assert len(rows) == 1, f"expected one session, found {rows}"
        return rows[0][0]


class CopilotCli(Runtime):
    """GitHub Copilot CLI, one-shot (``-p``), on an OpenAI-compatible provider.

    ``COPILOT_PROVIDER_BASE_URL`` with ``COPILOT_OFFLINE`` runs it on any
    Chat Completions API with no GitHub sign-in (bring your own key). Its
    session is ``~/.copilot/session-state/<id>/events.jsonl``.
    """

    name = "Copilot CLI"
    package = "@github/copilot"
    binary = "copilot"
    api = "chat"
    format = "copilot-cli"
    sent = staticmethod(chat_sent)
    model = "standin-model"

    def configure(self) -> None:
        self.config = self.home / ".copilot"
        self.env.update(
            COPILOT_PROVIDER_BASE_URL=f"http://127.0.0.1:{self.standin.port}/v1",
            COPILOT_PROVIDER_API_KEY="sk-standin",
            COPILOT_MODEL=self.model,
            COPILOT_OFFLINE="true",
        )

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "--allow-all-tools", "-p", prompt]

    # ``--resume`` takes its value optionally (alone, it opens a picker), so only
    # the ``=`` form names the session.
    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "--allow-all-tools", f"--resume={session}", "-p", prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        return line.get("type") == "tool.execution_complete"

    def session_file(self) -> Path:
        return only_file(self.config / "session-state", "*/events.jsonl")

    def session_id(self) -> str:
        return self.session_file().parent.name


class FactoryDroid(Runtime):
    """Factory Droid, headless (``droid exec``), on a custom Anthropic model (bring your own key).

    It needs no Factory account: a ``customModels`` entry in its settings names
    the stand-in, and ``-m custom:<displayName>-<index>`` picks it. Its own API
    (``FACTORY_API_BASE_URL``: settings, feature flags, session sync) points at
    the stand-in too, which answers those paths 404 or an empty list: a resume
    fetches the session from that API first and goes on only once it answers.
    """

    name = "Factory Droid"
    package = "droid"
    binary = "droid"
    api = "anthropic"
    format = "factory-droid"
    sent = staticmethod(anthropic_sent)
    model = "custom:Standin-0"

    def configure(self) -> None:
        self.config = self.home / ".factory"
        self.config.mkdir()
        base = f"http://127.0.0.1:{self.standin.port}"
        model = {
            "model": "claude-standin",
            "displayName": "Standin",
            "baseUrl": base,
            "apiKey": "sk-ant-standin",
            "provider": "anthropic",
            "maxOutputTokens": 4096,
        }
        (self.config / "settings.json").write_text(json.dumps({"customModels": [model]}, indent=2), encoding="utf-8")
        self.env.update(
            FACTORY_API_BASE_URL=base,
            FACTORY_TELEMETRY_INGEST_BASE_URL=base,
            FACTORY_OTEL_ENABLED="false",
            FACTORY_DROID_AUTO_UPDATE_ENABLED="false",
        )

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "exec", "--auto", "high", "-m", self.model, prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        return [str(self.executable), "exec", "--auto", "high", "-m", self.model, "-s", session, prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        message = line.get("message") or {}
        content = message.get("content")
        return (
            line.get("type") == "message"
            and message.get("role") == "user"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    def session_file(self) -> Path:
        return only_file(self.config / "sessions", "*/*.jsonl")

    def session_id(self) -> str:
        return self.session_file().stem


# The runtimes of the whole scenario: interrupted, checked, repaired, resumed.
RUNTIME_CLASSES: dict[str, type[Runtime]] = {
    "claude-code": ClaudeCode,
    "codex": Codex,
    "qwen-code": QwenCode,
    "pi": Pi,
    "copilot-cli": CopilotCli,
    "factory-droid": FactoryDroid,
}

# Runtimes driven against their stand-ins that no repair can serve: Gemini CLI
# writes a call to its session only once the tool has finished, so an
# interrupted call is never in the file.
UNREPAIRABLE: dict[str, type[Runtime]] = {"gemini-cli": GeminiCli}

# Runtimes whose sessions live in a database, repaired through SQLite rather
# than as lines of a file (tests/e2e/test_opencode.py).
STORES: dict[str, type[Runtime]] = {"opencode": OpenCode}


def only_file(folder: Path, pattern: str, what: str = "session file", skip: str | None = None) -> Path:
    """The one file under ``folder`` matching ``pattern`` (names ending in ``skip`` left out); fails otherwise."""
    files = [f for f in sorted(folder.glob(pattern)) if skip is None or not f.name.endswith(skip)]
    assert len(files) == 1, f"expected one {what}, found {files}"
    return files[0]


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _kill_pid(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
