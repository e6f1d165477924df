"""Helpers for the integration tests: run the CLI as a user would."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from apx_doctor.cli import app

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"

CLEAN = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}\n'
    b'{"role":"tool","tool_call_id":"c1","content":"ok"}\n'
)
# The result is missing and the user speaks again: one APX001 on line 2.
BROKEN = CLEAN.rsplit(b"\n", 2)[0] + b"\n" + b'{"role":"user","content":"and?"}\n'


def run_cli(*args: str, env: dict[str, str] | None = None, input: bytes | None = None):
    """The CLI with a clean environment: no CI, no colour hints unless given."""
    base = {"GITHUB_ACTIONS": None, "NO_COLOR": None, "FORCE_COLOR": None, "COLUMNS": None, "TTY_COMPATIBLE": None}
    base.update(env or {})
    return CliRunner().invoke(app, list(args), env=base, input=input)
