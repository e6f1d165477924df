"""Cline CLI 3.x (npm ``cline``), driven headless against the chat stand-in in the fence.

A task runs with ``cline --json -P openai-compatible -m MODEL PROMPT`` (tools
are approved by default). Its session is one JSON document,
``~/.cline/data/sessions/<sid>/<sid>.messages.json``. ``cline --id SID`` resumes
a session only on a terminal, so the resume goes through the Agent Client
Protocol instead (``cline --acp``: JSON-RPC, one message a line, on stdin and
stdout): ``initialize``, ``session/load``, ``session/prompt``.

``CLINE_SESSION_BACKEND_MODE=local`` keeps every run in one process: otherwise
Cline starts a detached hub daemon that a kill of the process group misses.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from .runtimes import RESUME_TIMEOUT, Runtime, _kill_group, chat_sent, only_file

MODEL = "standin-model"
PROVIDER = "openai-compatible"
API_KEY = "sk-standin"


class Cline(Runtime):
    name = "Cline"
    package = "cline"
    binary = "cline"
    api = "chat"
    format = "cline"
    sent = staticmethod(chat_sent)
    # Cline gives a message without them its own when it next saves the session.
    optional_fields = frozenset({"id", "ts"})

    def configure(self) -> None:
        self.config = self.home / ".cline"
        settings = self.config / "data" / "settings"
        settings.mkdir(parents=True)
        # What `cline auth -p openai-compatible -k KEY -m MODEL -b URL` writes.
        provider = {
            "settings": {
                "provider": PROVIDER,
                "apiKey": API_KEY,
                "model": MODEL,
                "baseUrl": f"http://127.0.0.1:{self.standin.port}/v1",
            },
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "tokenSource": "manual",
        }
        document = {"version": 1, "lastUsedProvider": PROVIDER, "modes": {}, "providers": {PROVIDER: provider}}
        (settings / "providers.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        self.env.update(CLINE_SESSION_BACKEND_MODE="local", CLINE_NO_AUTO_UPDATE="1")

    def start_command(self, prompt: str) -> list[str]:
        return [str(self.executable), "--json", "-P", PROVIDER, "-m", MODEL, prompt]

    def resume_command(self, session: str, prompt: str) -> list[str]:
        # What a user types; it needs a terminal, so ``resume`` speaks ACP instead.
        return [str(self.executable), "--id", session, prompt]

    @staticmethod
    def is_result_line(line: dict) -> bool:
        content = line.get("content")
        return (
            line.get("role") == "user"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    def session_file(self) -> Path:
        return only_file(self.config / "data" / "sessions", "*/*.messages.json")

    def session_id(self) -> str:
        return json.loads(self.session_file().read_bytes())["sessionId"]

    def resume(self, label: str, prompt: str = "Go on.") -> int:
        """Resume through ACP; 0 once the prompt's turn ended (output: ``output(label)``)."""
        env = {**self.env, "CLINE_API_KEY": API_KEY, "CLINE_PROVIDER": PROVIDER, "CLINE_MODEL": MODEL}
        with open(self.root / f"{label}.err", "wb") as err:
            process = subprocess.Popen(
                self.fence.wrap([str(self.executable), "--acp"]),
                cwd=self.work,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,  # its own process group: killed whole
            )
        try:
            with open(self.root / f"{label}.out", "w", encoding="utf-8") as out:
                return _Acp(process, out).resume(self.session_id(), str(self.work), prompt)
        finally:
            _kill_group(process)


class _Acp:
    """A JSON-RPC client over a process's stdin and stdout that approves whatever it is asked."""

    def __init__(self, process: subprocess.Popen, transcript: IO[str]) -> None:
        self.process = process
        self.transcript = transcript
        self.replies: queue.Queue[dict] = queue.Queue()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def resume(self, session: str, cwd: str, prompt: str) -> int:
        capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        self.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}, 60)
        self.call(2, "session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []}, 60)
        text = [{"type": "text", "text": prompt}]
        reply = self.call(3, "session/prompt", {"sessionId": session, "prompt": text}, RESUME_TIMEOUT)
        return 0 if reply.get("stopReason") == "end_turn" else 1

    def call(self, number: int, method: str, params: dict, timeout: float) -> dict:
        """The result of request ``number``; fails on an error, an exit or ``timeout`` seconds."""
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.replies.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None:
                    raise AssertionError(f"cline --acp exited with {self.process.returncode} during {method}") from None
                if time.monotonic() > deadline:
                    raise AssertionError(f"cline --acp did not answer {method} within {timeout:.0f} s") from None
                continue
            if message.get("id") == number:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result") or {}

    def send(self, message: dict) -> None:
        with self.lock:
            assert self.process.stdin is not None
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode("utf-8", "replace")
            self.transcript.write(line)
            self.transcript.flush()
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a line of its own log
            if isinstance(message, dict) and "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)})
            elif isinstance(message, dict) and "id" in message:
                self.replies.put(message)


def _answer(request: dict) -> dict[str, Any]:
    """What the client says to a request from Cline: yes to a permission, nothing to the rest."""
    if request.get("method") != "session/request_permission":
        return {}
    options = (request.get("params") or {}).get("options") or []
    allow = [o for o in options if "allow" in str(o.get("kind", ""))] or options
    return (
        {"outcome": {"outcome": "selected", "optionId": allow[0]["optionId"]}} if allow else {"outcome": {"outcome": "cancelled"}}
    )
