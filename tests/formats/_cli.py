"""The CLI as the format tests drive it: one file checked, its JSON report read back."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from typer.testing import CliRunner

from apx_doctor.cli import app


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def report(command: str, *args: str) -> dict:
    """The JSON report of the one file ``command`` ran on (``--isolated``: no project settings)."""
    result = invoke(command, "--isolated", *args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def lines(path: Path) -> list:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]
