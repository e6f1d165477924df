"""A reader that goes away (`apx-doctor check ... | head`) is no internal error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_closed_pipe_ends_the_report_quietly(tmp_path: Path) -> None:
    call = '{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"bash","arguments":"{}"}}]}\n'
    lines = "".join('{"role":"user","content":"go"}\n' + call % i for i in range(3000))
    path = tmp_path / "many.jsonl"
    path.write_text(lines)
    process = subprocess.Popen(
        [sys.executable, "-m", "apx_doctor", "check", "--output-format", "concise", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # as head does after its line
    error = process.stderr.read().decode()
    assert process.wait() == 2
    assert first.startswith(str(path).encode()) and b"APX001" in first
    assert "internal error" not in error and "Traceback" not in error and "BrokenPipe" not in error
