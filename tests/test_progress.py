"""The progress bar: on a terminal's stderr for a file that takes a while, and nowhere else.

The CLI runs in a child process whose stderr is a pseudo-terminal (or a pipe),
so what a user's terminal would receive is what the test reads. The bar's delay
(about a second) is set to zero in the child, and its reading is slowed down,
so a file of a few tens of megabytes takes long enough for the bar to be drawn.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pty = pytest.importorskip("pty", reason="pseudo-terminals are a POSIX feature")

CHILD = """
import sys, time, types
import orjson
from apx_doctor import quiet, runner, stream
runner._ByteProgress.DELAY = 0.0
# A slow disk: every 2,000th line waits 20 ms, so the bar is redrawn with a rate.
count = 0
def loads(raw):
    global count
    count += 1
    if count % 2000 == 0:
        time.sleep(0.02)
    return orjson.loads(raw)
stream.orjson = types.SimpleNamespace(loads=loads, JSONDecodeError=orjson.JSONDecodeError)
# The same for the chat loop that reads a file in chunks (apx_doctor.quiet): 1 ms a chunk.
chunks = quiet._chunks
def slow_chunks(handle):
    for chunk in chunks(handle):
        time.sleep(0.001)
        yield chunk
quiet._chunks = slow_chunks
from apx_doctor.cli import main
sys.argv = ["apx-doctor", *sys.argv[1:]]
main()
"""
USER = b'{"role":"user","content":"check the deploy dashboard"}\n'
REPLY = b'{"role":"assistant","content":"' + b"all green " * 200 + b'"}\n'
CALL = b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"browser_text","arguments":"{}"}}]}\n'


@pytest.fixture(scope="module")
def slow_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 40 MB: long enough to be read while the bar refreshes, and one dangling call."""
    path = tmp_path_factory.mktemp("progress") / "long-session.jsonl"
    path.write_bytes((USER + REPLY) * 20_000 + CALL)
    return path


def _run(args: list[str], *, terminal: bool) -> tuple[str, bytes, int]:
    """The child's stdout (a pipe) and stderr (a terminal or a pipe), and its exit code."""
    command = [sys.executable, "-c", CHILD, *args]
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    env.pop("CI", None)
    env.pop("GITHUB_ACTIONS", None)
    if not terminal:
        done = subprocess.run(command, capture_output=True, env=env, timeout=300)
        return done.stdout.decode(), done.stderr, done.returncode
    master, slave = pty.openpty()
    received: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            received.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        out, _ = child.communicate(timeout=300)
    finally:
        reader.join(timeout=10)
        os.close(master)
    return out.decode(), b"".join(received), child.returncode


def test_a_file_that_takes_a_while_shows_bytes_rate_and_time_left_on_a_terminal(slow_file: Path) -> None:
    out, err, code = _run(["check", "--isolated", str(slow_file)], terminal=True)
    assert code == 1 and "APX001" in out
    shown = err.decode(errors="replace")
    assert slow_file.name in shown, "the bar names the file"
    assert "/41.8 MB" in shown, "the bar shows bytes read of the file's size"
    assert "MB/s" in shown, "the bar shows the rate"
    assert re.search(r"\d:\d\d:\d\d", shown), "the bar shows the time left"
    assert "APX001" not in shown and "\x1b" not in out, "findings and the bar keep to their own streams"


@pytest.mark.parametrize("args", [["check", "--isolated"], ["check", "--isolated", "--output-format", "json"]])
def test_no_bar_when_stderr_is_not_a_terminal(slow_file: Path, args: list[str]) -> None:
    out, err, code = _run([*args, str(slow_file)], terminal=False)
    assert code == 1 and "APX001" in out
    assert b"\x1b" not in err and b"/s" not in err, err[:300]


def test_quiet_draws_no_bar_even_on_a_terminal(slow_file: Path) -> None:
    out, err, code = _run(["check", "--isolated", "-q", str(slow_file)], terminal=True)
    assert code == 1 and "APX001" in out
    assert b"/s" not in err and slow_file.name.encode() not in err, err[:300]


def test_many_files_show_how_many_are_done_on_a_terminal(slow_file: Path, tmp_path: Path) -> None:
    copies = []
    for n in range(3):
        copy = tmp_path / f"session-{n}.jsonl"
        copy.symlink_to(slow_file)
        copies.append(str(copy))
    out, err, code = _run(["check", "--isolated", "--jobs", "1", *copies], terminal=True)
    assert code == 1 and out.count("APX001") == 3
    shown = err.decode(errors="replace")
    assert "checking" in shown and re.search(r"\d+%", shown), "a bar counts the files done"
