"""`apx-doctor show` on long sessions (issue 15): streamed, a default view of the interruptions, a pager only on a terminal."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest

from apx_doctor import show
from apx_doctor.show import ShowOptions, render_timeline

from ._cli import run_cli

CALL = {"role": "assistant", "content": None}


def _call(call_id: str) -> dict:
    function = {"name": "read_file", "arguments": "{}"}
    return {**CALL, "tool_calls": [{"id": call_id, "type": "function", "function": function}]}


def _session(turns: int, cut: int | None = None) -> bytes:
    """``turns`` turns of user, call, result, reply (4 lines each); turn ``cut`` loses its result."""
    lines: list[dict] = []
    for n in range(1, turns + 1):
        lines.append({"role": "user", "content": f"question {n}"})
        lines.append(_call(f"c{n}"))
        if n != cut:
            lines.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n}"})
        lines.append({"role": "assistant", "content": f"answer {n}"})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _numbers(out: str) -> list[int]:
    """The line numbers of the rows drawn (the header and summary, which may wrap, left out)."""
    rows = out.split("Entry\n", 1)[1] if "Entry\n" in out else ""
    return [int(line.split()[0]) for line in rows.splitlines() if line.split()[:1] and line.split()[0].isdigit()]


def test_the_default_view_shows_the_interrupted_call_with_context_and_not_the_far_rows(isolated_cwd: Path) -> None:
    # Turn 100 loses its result: its call is line 398, its record goes before the reply (line 399).
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))
    out = run_cli("show", "--color", "never", "a.jsonl").stdout
    assert out.count("✂ interrupted:") == 1 and "read_file (line 398, id=c100)" in " ".join(out.split())
    assert _numbers(out) == list(range(393, 405))
    assert "… 392 entries …" in out and "… 395 entries …" in out


def test_the_summary_counts_are_exact(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))
    out = " ".join(run_cli("show", "a.jsonl").stdout.split())
    assert "In all: 799 entries, 200 turns, 200 calls, 199 results; 1 interrupted call (line 398)" in out


def test_a_clean_long_session_shows_only_its_summary(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(100))
    out = run_cli("show", "a.jsonl").stdout
    assert "every call has a result" in out and "400 entries, 100 turns, 100 calls, 100 results" in " ".join(out.split())
    assert _numbers(out) == [] and "--all draws every entry" in " ".join(out.split())


def test_all_draws_every_row(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))
    out = run_cli("show", "--all", "a.jsonl").stdout
    assert _numbers(out) == list(range(1, 800)) and "…" not in out.replace("… ", "").split("In all")[0]
    assert out.count("✂ interrupted:") == 1


def test_around_draws_one_window_of_a_long_file(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))
    out = run_cli("show", "--around", "700", "-C", "3", "a.jsonl").stdout
    assert _numbers(out) == list(range(697, 704)) and "✂" not in out


def test_all_and_around_together_is_a_usage_error(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(2))
    assert run_cli("show", "--all", "--around", "3", "a.jsonl").exit_code == 2


def test_standard_input_is_read_twice_through_a_spool(isolated_cwd: Path) -> None:
    data = _session(200, cut=100)
    (isolated_cwd / "a.jsonl").write_bytes(data)
    piped = run_cli("show", "-", input=data).stdout
    named = run_cli("show", "a.jsonl").stdout
    assert piped.splitlines()[1:] == named.splitlines()[1:] and "read_file (line 398, id=c100)" in " ".join(piped.split())


def test_an_interruption_at_the_end_and_bad_lines_are_shown(isolated_cwd: Path) -> None:
    data = _session(100) + b"\n" + b"{not json\n" + _session(30) + json.dumps(_call("z")).encode() + b"\n"
    (isolated_cwd / "a.jsonl").write_bytes(data)
    out = " ".join(run_cli("show", "--color", "never", "a.jsonl").stdout.split())
    assert "401 ✗ blank line" in out and "402 ✗ not JSON" in out
    assert "✂ interrupted: read_file (line 523, id=z)" in out and "2 lines not JSON" in out


def test_show_draws_a_batch_at_a_time_never_the_whole_file(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(500))
    monkeypatch.setattr(show, "TABLE_ROWS", 50)
    largest = []
    flush = show._Sheet.flush

    def counted(self) -> None:
        largest.append(self.rows)
        flush(self)

    monkeypatch.setattr(show._Sheet, "flush", counted)
    out = io.StringIO()
    render_timeline(str(isolated_cwd / "a.jsonl"), ShowOptions(all=True), out, False)
    assert max(largest) <= 50 and len(largest) >= 2000 // 50 and _numbers(out.getvalue()) == list(range(1, 2001))


def test_memory_does_not_grow_with_the_file(isolated_cwd: Path) -> None:
    # About 12 MB of lines: the old show held them all, parsed (many times their size).
    path = isolated_cwd / "a.jsonl"
    filler = {"role": "user", "content": "x" * 3000}
    with path.open("wb") as handle:
        for _ in range(4000):
            handle.write(json.dumps(filler).encode() + b"\n")
        handle.write(_session(20, cut=10))
    tracemalloc.start()
    try:
        render_timeline(str(path), ShowOptions(), io.StringIO(), False)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20, peak


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_pages_long_output_through_pager(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))
    paged = isolated_cwd / "paged.txt"
    monkeypatch.setenv("PAGER", f"cat > {paged}")
    out = _Terminal()
    render_timeline(str(isolated_cwd / "a.jsonl"), ShowOptions(all=True), out, False)
    assert out.getvalue() == "" and _numbers(paged.read_text()) == list(range(1, 800))
    # --no-pager: straight to the terminal.
    render_timeline(str(isolated_cwd / "a.jsonl"), ShowOptions(all=True, pager=False), out, False)
    assert _numbers(out.getvalue()) == list(range(1, 800))


def test_piped_output_never_pages(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(200, cut=100))

    def refuse(*_args, **_kwargs):
        raise AssertionError("a pager was started for output that is no terminal")

    monkeypatch.setattr(show.subprocess, "Popen", refuse)
    monkeypatch.setenv("PAGER", "less")
    result = run_cli("show", "--all", "a.jsonl")
    assert result.exit_code == 0 and _numbers(result.stdout) == list(range(1, 800))


def test_a_reader_who_quits_the_pager_stops_the_drawing(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_session(2000))
    monkeypatch.setenv("PAGER", "head -c 10 > /dev/null")
    render_timeline(str(isolated_cwd / "a.jsonl"), ShowOptions(all=True), _Terminal(), False)  # returns, no BrokenPipeError
