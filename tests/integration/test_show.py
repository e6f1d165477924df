"""`apx-doctor show`: the session as a timeline a person can read."""

from __future__ import annotations

import json
from pathlib import Path

from ._cli import BROKEN, CLEAN, run_cli


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_show_marks_the_interruption_and_what_a_repair_inserts(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    result = run_cli("show", "--color", "never", "a.jsonl")
    assert result.exit_code == 0
    out = _flat(result.stdout)
    assert "1 interrupted call" in out
    assert "→ calls read_file" in out
    assert "✂ interrupted: read_file (line 2, id=c1) got no result" in out
    assert 'a repair inserts: {"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}' in out
    assert "next: read-only tool: safe to re-run" in out
    # The interruption stands before the user's next turn (line 3), after the call (line 2).
    lines = result.stdout.splitlines()
    cut = next(i for i, line in enumerate(lines) if "✂ interrupted" in line)
    user3 = next(i for i, line in enumerate(lines) if line.strip().startswith("3 "))
    call2 = next(i for i, line in enumerate(lines) if line.strip().startswith("2 "))
    assert call2 < cut < user3
    assert (isolated_cwd / "a.jsonl").read_bytes() == BROKEN  # show writes nothing


def test_show_a_sound_session(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(CLEAN)
    out = _flat(run_cli("show", "a.jsonl").stdout)
    assert "every call has a result" in out and "← result for c1" in out and "✂" not in out


def _long_session(turns: int) -> bytes:
    lines = []
    for n in range(1, turns + 1):
        lines.append({"role": "user", "content": f"question {n} " + "x" * 500})
        lines.append({"role": "assistant", "content": f"answer {n}"})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_around_shows_only_the_neighbourhood(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_long_session(50))
    out = run_cli("show", "--around", "40", "--context", "2", "a.jsonl").stdout
    numbers = [int(line.split()[0]) for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert numbers == [38, 39, 40, 41, 42]


def test_long_content_is_folded(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_long_session(1))
    out = _flat(run_cli("show", "--width", "60", "a.jsonl").stdout)
    assert "x" * 100 not in out.replace(" ", "") and "…" in out


def test_hostile_text_is_shown_escaped(isolated_cwd: Path) -> None:
    line = {"role": "user", "content": "\x1b]0;pwned\x07 [bold]not markup[/bold] \u202e"}
    (isolated_cwd / "a.jsonl").write_text(json.dumps(line) + "\n")
    result = run_cli("show", "--color", "always", "a.jsonl")
    assert "\x1b]0;" not in result.stdout and "\u202e" not in result.stdout
    assert "\\x1b]0;pwned\\x07" in result.stdout and "[bold]not markup[/bold]" in result.stdout


def test_show_on_a_missing_file_is_exit_2(isolated_cwd: Path) -> None:
    result = run_cli("show", "nope.jsonl")
    assert result.exit_code == 2 and "nope.jsonl" in result.stderr


def test_show_draws_every_corpus_recording_with_the_interruptions_check_finds() -> None:
    import pytest

    from tests.conftest import corpus_samples, expected_format

    samples = corpus_samples()
    if not samples:
        pytest.skip("the shared corpus is not beside the project")
    for path in samples:
        shown = run_cli("show", "--width", "40", str(path))
        if expected_format(path) is None:
            # No adapter reads it: refused with the file named, as check does.
            assert shown.exit_code == 2 and str(path) in shown.stderr, (path, shown.stdout)
            continue
        assert shown.exit_code == 0, (path, shown.stderr)
        report = json.loads(run_cli("check", "--isolated", "--output-format", "json", str(path)).stdout)
        fixable = [f for f in report["files"][0]["findings"] if f["code"] == "APX001" and f.get("fixable", True)]
        assert shown.stdout.count("✂ interrupted:") == len(fixable), path


def test_tabs_are_drawn_as_spaces_to_the_next_stop(isolated_cwd: Path) -> None:
    lines = [{"role": "user", "content": "a\tb\tc"}, {"role": "assistant", "content": "ab\tc"}]
    (isolated_cwd / "a.jsonl").write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    for color in ("never", "always"):
        out = run_cli("show", "--color", color, "a.jsonl").stdout
        assert "\t" not in out
    out = run_cli("show", "--color", "never", "a.jsonl").stdout
    # Stops every 4 cells, counted from the start of the entry's text ("user: ", "reply: ").
    assert "user: a b   c" in out and "reply: ab   c" in out
