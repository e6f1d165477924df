"""The grok-cli format: Grok CLI chat_history.jsonl, checked and repaired in its own terms."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from apx_doctor import check_messages, repair_messages
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.grok_cli import GrokCliAdapter
from tests.conftest import corpus_samples

from ._cli import invoke as _invoke
from ._cli import lines as _lines
from ._cli import report as _report
from strategies.grok_cli import assistant, backend_call, preamble, reasoning, result, system, user

SAMPLE = "grok-cli/fixture_chat_history.jsonl"

# What a correct doctor reports on each sample session (../shared/corpus/README.md).
CORPUS_VERDICTS = {SAMPLE: []}


def _write(path: Path, items: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
    return path


def _found(items: list) -> list[tuple]:
    return [(f.code, f.line, f.call_id) for f in check_messages(items, format="grok-cli")]


def _jsonl_samples() -> list[Path]:
    return [p for p in corpus_samples() if p.suffix == ".jsonl"]


# detection


def test_the_sample_is_detected_as_grok_cli(corpus: Path) -> None:
    samples = _lines(corpus / SAMPLE)
    assert GrokCliAdapter.detect(samples) == Detection.CERTAIN
    assert detect_format(samples) is GrokCliAdapter


@pytest.mark.parametrize("sample", _jsonl_samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_grok_claims_no_other_runtimes_sample_and_no_other_adapter_claims_grok(sample: Path) -> None:
    lines = [orjson.loads(line) for line in sample.read_bytes().splitlines() if line.strip()]
    if sample.parent.name == "grok-cli":
        others = [a.name for a in adapters() if a is not GrokCliAdapter and a.detect(lines) >= Detection.CERTAIN]
        assert others == []
    else:
        assert GrokCliAdapter.detect(lines) == Detection.NO, sample


def test_other_runtimes_lines_are_not_taken_for_grok() -> None:
    # Claude Code and Gemini CLI lines have a type "user" too, inside an envelope;
    # Factory Droid's stream has a tool_result keyed toolCallId; Chat Completions
    # calls carry a ``function``.
    assert GrokCliAdapter.detect([{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}]) == Detection.NO
    assert (
        GrokCliAdapter.detect([{"id": "g1", "timestamp": "2026-04-29T21:39:33Z", "type": "user", "content": [{"text": "hi"}]}])
        == Detection.NO
    )
    assert GrokCliAdapter.detect([{"type": "tool_result", "session_id": "s", "toolCallId": "c1", "value": {}}]) == Detection.NO
    assert GrokCliAdapter.detect([{"role": "user", "content": "hi"}]) == Detection.NO
    chat_calls = {"type": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f"}}]}
    assert GrokCliAdapter.detect([chat_calls]) == Detection.COMPATIBLE
    assert GrokCliAdapter.detect([{"type": "function_call", "call_id": "c1"}]) == Detection.NO


# the sample session, through the CLI


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", str(corpus / name))
    assert report["format"] == "grok-cli"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", "--isolated", str(corpus / name)).exit_code == 0


def test_the_sample_cut_after_its_first_call_gets_the_result_grok_would_write(corpus: Path, tmp_path: Path) -> None:
    # Lines 1-5 of the sample: the reply on line 5 calls read_file, and the file ends.
    raw = (corpus / SAMPLE).read_bytes().splitlines(keepends=True)
    cut = tmp_path / "chat_history.jsonl"
    cut.write_bytes(b"".join(raw[:5]))
    assert _invoke("check", "--isolated", str(cut)).exit_code == 1
    assert _invoke("fix", "--isolated", "--in-place", str(cut)).exit_code == 1
    repaired = cut.read_bytes().splitlines(keepends=True)
    assert repaired[:5] == raw[:5]
    assert repaired[5] == (
        b'{"type":"tool_result","tool_call_id":"call-00000000-0000-4000-8000-000000000002-0",'
        b'"content":"not run: the turn was interrupted"}\n'
    )
    assert _invoke("check", "--isolated", str(cut)).exit_code == 0
    again = cut.read_bytes()
    assert _invoke("fix", "--isolated", "--in-place", str(cut)).exit_code == 0
    assert cut.read_bytes() == again


# pairing as grok pairs


def _head() -> list[dict]:
    return [system(), preamble(), user("go", 0)]


def test_results_must_follow_their_reply_right_away() -> None:
    # grok's own repair (repair_dangling_tool_calls) counts only the run of
    # results right after the reply: a reasoning item or a server-side tool
    # between them belongs to the next response and closes the call.
    for between in (reasoning(1), backend_call(1)):
        items = [*_head(), assistant("", ["c1"]), between, result("c1", "ok")]
        assert _found(items) == [("APX001", 4, "c1"), ("APX004", 6, "c1")]
    assert _found([*_head(), backend_call(1), assistant("", ["c1"]), result("c1", "ok"), reasoning(2), assistant("done")]) == []


def test_record_stands_where_grok_splices_its_own_stand_in() -> None:
    items = [
        *_head(),
        assistant("", ["c1", "c2", "c3"]),
        result("c3", "C"),
        result("c1", "A"),
        reasoning(1),
        assistant("two of three"),
    ]
    repaired = repair_messages(items, format="grok-cli")
    (inserted,) = repaired.inserted
    # Right after the run of results, before the reasoning item.
    assert inserted.index == 6 and repaired.messages[7] is items[6]
    assert inserted.record == {"type": "tool_result", "tool_call_id": "c2", "content": DEFAULT_MARKER}
    assert list(inserted.record) == ["type", "tool_call_id", "content"]
    assert check_messages(repaired.messages, format="grok-cli") == []


def test_grok_cancellation_results_are_answers() -> None:
    cancelled = "Tool execution was cancelled by the user (tool `run_terminal_cmd` was not executed)."
    halted = "Tool execution was halted by the harness (internal_error); the tool `run_terminal_cmd` was not executed."
    items = [
        *_head(),
        assistant("", ["c1", "c2"]),
        result("c1", cancelled),
        result("c2", halted),
        user("again", 1, prior_turn_interrupt="mid_turn_abort"),
    ]
    assert _found(items) == []


def test_injected_user_items_close_a_turn_but_do_not_start_the_history() -> None:
    reminder = user("skills", synthetic_reason="system_reminder")
    assert _found([system(), preamble(), result("c0", "before"), reminder, result("c1", "before")]) == []
    items = [system(), preamble(), user("go", 0), assistant("", ["c1"]), reminder, result("c1", "late")]
    assert _found(items) == [("APX001", 4, "c1"), ("APX004", 6, "c1")]


def test_unknown_item_types_and_non_items_are_unrecognised() -> None:
    items = [*_head(), assistant("", ["c1"]), {"type": "future_item", "x": 1}, result("c1", "ok"), [1, 2], {"content": "no type"}]
    assert _found(items) == [("APX104", 5, None), ("APX104", 7, None), ("APX104", 8, None)]


def test_odd_types_never_raise() -> None:
    odd = [
        {"type": "assistant", "content": "", "tool_calls": {"id": "c1"}},
        {"type": "assistant", "content": "", "tool_calls": [None, 3, {"id": ["c1"]}, {"id": "c2", "name": {"x": 1}}]},
        {"type": "tool_result", "tool_call_id": ["c1"], "content": None},
        {"type": "tool_result", "tool_call_id": "c2", "content": [{"type": "text", "text": DEFAULT_MARKER}]},
        {"type": "user", "content": [None], "synthetic_reason": None},
        {"type": ["user"], "content": "x"},
    ]
    assert _found([*_head(), *odd]) == [("APX002", 6, None), ("APX104", 9, None)]
    assert GrokCliAdapter.detect(odd) == Detection.NO


def test_fix_output_leaves_the_input_and_matches_in_place(tmp_path: Path) -> None:
    items = [*_head(), assistant("", ["c1"]), user("stop", 1)]
    source = _write(tmp_path / "chat_history.jsonl", items)
    in_place = shutil.copyfile(source, tmp_path / "in-place.jsonl")
    before = source.read_bytes()
    out = tmp_path / "out.jsonl"
    assert _invoke("fix", "--isolated", "--output", str(out), str(source)).exit_code == 1
    _invoke("fix", "--isolated", "--in-place", str(in_place))
    assert source.read_bytes() == before
    assert out.read_bytes() == in_place.read_bytes()
    lines = out.read_bytes().splitlines(keepends=True)
    assert lines[:4] == before.splitlines(keepends=True)[:4] and lines[5:] == before.splitlines(keepends=True)[4:]
