"""fix re-checks its own output before writing: a repair that would not check clean is never written."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from apx_doctor.cli import app
from apx_doctor.formats.base import Insertion
from apx_doctor.formats.chat import ChatAdapter

DATA = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}\n'
    b'{"role":"user","content":"next"}\n'
)


def _wrong_records(self, closed, before):
    return Insertion([{"role": "tool", "tool_call_id": "not-" + p.call.id, "content": self.marker} for p in closed])


def test_a_repair_that_does_not_check_clean_is_not_written(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ChatAdapter, "not_run_records", _wrong_records)
    path = tmp_path / "s.jsonl"
    path.write_bytes(DATA)
    result = CliRunner().invoke(app, ["fix", "--in-place", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.stderr
    assert path.read_bytes() == DATA
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_output_file_is_not_created_when_the_self_check_fails(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ChatAdapter, "not_run_records", _wrong_records)
    src, out = tmp_path / "s.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(DATA)
    result = CliRunner().invoke(app, ["fix", "--output", str(out), str(src)])
    assert result.exit_code == 2
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
