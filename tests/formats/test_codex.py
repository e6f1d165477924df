"""The codex format: Codex CLI rollout files, checked and repaired in their own terms."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseCustomToolCallOutputParam, ResponseInputItemParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.codex import CodexAdapter

DANGLING = "codex/fixture_two_dangling_calls.jsonl"

# What a correct doctor reports on each sample session (../shared/corpus/README.md).
CORPUS_VERDICTS = {
    "codex/fixture_clean_pairing.jsonl": [],
    DANGLING: [("APX001", 11, "call_esc_002"), ("APX001", 19, "call_esc_004")],
    "codex/real_v0.135.0_no_tools_redacted.jsonl": [],
    "codex/fixture_compaction.jsonl": [],
    "codex/fixture_all_item_types.jsonl": [],
}


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(*args: str) -> dict:
    result = _invoke(*args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def _lines(path: Path) -> list:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _rec(second: int, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2025-12-05T11:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _user(second: int, text: str) -> dict:
    return _rec(second, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _call(second: int, call_id: str, name: str = "shell") -> dict:
    return _rec(second, "response_item", {"type": "function_call", "name": name, "arguments": "{}", "call_id": call_id})


def _output(second: int, call_id: str, output: str) -> dict:
    return _rec(second, "response_item", {"type": "function_call_output", "call_id": call_id, "output": output})


def _event(second: int, kind: str) -> dict:
    return _rec(second, "event_msg", {"type": kind})


def _found(records: list) -> list[tuple]:
    return [(f.code, f.line, f.call_id) for f in check_messages(records, format="codex")]


# detection


def test_every_codex_sample_is_detected_as_codex(corpus: Path) -> None:
    for name in CORPUS_VERDICTS:
        samples = _lines(corpus / name)
        assert CodexAdapter.detect(samples) == Detection.CERTAIN, name
        assert detect_format(samples) is CodexAdapter, name


def test_chat_and_dataset_lines_are_not_taken_for_codex() -> None:
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert CodexAdapter.detect(chat) == Detection.NO
    assert detect_format(chat).name == "chat"
    assert CodexAdapter.detect([{"messages": chat}]) == Detection.NO
    # A Claude Code line has a type, but no payload record around it.
    assert CodexAdapter.detect([{"type": "user", "message": {"role": "user", "content": "hi"}}]) == Detection.NO


# the sample sessions, through the CLI


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", str(corpus / name))
    assert report["format"] == "codex"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", str(corpus / name)).exit_code == (1 if CORPUS_VERDICTS[name] else 0)


def test_dry_run_shows_both_records_and_writes_nothing(corpus: Path, tmp_path: Path) -> None:
    target = shutil.copyfile(corpus / DANGLING, tmp_path / "rollout.jsonl")
    before = target.read_bytes()
    report = _report("fix", str(target))
    assert target.read_bytes() == before
    assert report["changed"] is True and report["written"] is False
    inserts = [(e["before_line"], e["call_id"], e["record"]["payload"]["type"]) for e in report["edits"]]
    # call_esc_002 goes right before the user message on line 12; call_esc_004 at the very end.
    assert inserts == [(12, "call_esc_002", "function_call_output"), (22, "call_esc_004", "function_call_output")]
    assert _invoke("fix", str(target)).exit_code == 1


def test_fix_in_place_inserts_two_outputs_and_keeps_every_line(corpus: Path, tmp_path: Path) -> None:
    target = shutil.copyfile(corpus / DANGLING, tmp_path / "rollout.jsonl")
    original = target.read_bytes().splitlines(keepends=True)
    assert _invoke("fix", "--in-place", str(target)).exit_code == 1
    repaired = target.read_bytes().splitlines(keepends=True)
    assert len(repaired) == len(original) + 2
    assert repaired[:11] == original[:11] and repaired[12:22] == original[11:21]
    first, second = orjson.loads(repaired[11]), orjson.loads(repaired[22])
    assert first["payload"] == {"type": "function_call_output", "call_id": "call_esc_002", "output": DEFAULT_MARKER}
    assert second["payload"]["call_id"] == "call_esc_004"
    assert _invoke("check", str(target)).exit_code == 0
    again = target.read_bytes()
    assert _invoke("fix", "--in-place", str(target)).exit_code == 0
    assert target.read_bytes() == again


def test_fix_output_writes_the_same_repair_and_leaves_the_input(corpus: Path, tmp_path: Path) -> None:
    source = shutil.copyfile(corpus / DANGLING, tmp_path / "rollout.jsonl")
    in_place = shutil.copyfile(corpus / DANGLING, tmp_path / "in-place.jsonl")
    out = tmp_path / "repaired.jsonl"
    assert _invoke("fix", "--output", str(out), str(source)).exit_code == 1
    _invoke("fix", "--in-place", str(in_place))
    assert source.read_bytes() == (corpus / DANGLING).read_bytes()
    assert out.read_bytes() == in_place.read_bytes()


# the library


def test_library_check_and_repair(corpus: Path) -> None:
    records = _lines(corpus / DANGLING)
    findings = check_messages(records, format="codex")
    assert [(f.code, f.line, f.call_id, f.tool) for f in findings] == [
        ("APX001", 11, "call_esc_002", "shell"),
        ("APX001", 19, "call_esc_004", "shell"),
    ]
    assert [(f.code, f.line) for f in check_messages(records, format="auto")] == [("APX001", 11), ("APX001", 19)]
    result = repair_messages(records, format="codex")
    assert [(i.index, i.call_id) for i in result.inserted] == [(11, "call_esc_002"), (22, "call_esc_004")]
    assert [m for m in result.messages if all(m is not i.record for i in result.inserted)] == records
    assert check_messages(result.messages, format="codex") == []
    assert repair_messages(result.messages, format="codex").changed is False


# the real client: the openai SDK's Responses input item types

_FUNCTION_OUTPUT = TypeAdapter(FunctionCallOutput)
_CUSTOM_OUTPUT = TypeAdapter(ResponseCustomToolCallOutputParam)
_INPUT_ITEMS = TypeAdapter(list[ResponseInputItemParam])
_CALL_TYPES = {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}


def _mixed_rollout(tmp_path: Path) -> Path:
    shell = {"type": "exec", "command": ["date"], "timeout_ms": None, "working_directory": None, "env": None, "user": None}
    return _write(
        tmp_path / "mixed.jsonl",
        [
            _user(1, "Patch it and show the date"),
            _call(2, "call_fn"),
            _rec(
                3,
                "response_item",
                {"type": "custom_tool_call", "call_id": "call_custom", "name": "apply_patch", "input": "*** Begin Patch"},
            ),
            _rec(
                4,
                "response_item",
                {"type": "local_shell_call", "call_id": "call_local", "status": "in_progress", "action": shell},
            ),
            _event(5, "turn_aborted"),
            _user(6, "stop"),
        ],
    )


def test_inserted_outputs_validate_as_responses_input_items(corpus: Path, tmp_path: Path) -> None:
    for path in (corpus / DANGLING, _mixed_rollout(tmp_path)):
        out = tmp_path / f"repaired-{path.name}"
        _invoke("fix", "--output", str(out), str(path))
        inserted = [r["payload"] for r in _lines(out) if r.get("payload", {}).get("output") == DEFAULT_MARKER]
        assert inserted
        for payload in inserted:
            adapter = _CUSTOM_OUTPUT if payload["type"] == "custom_tool_call_output" else _FUNCTION_OUTPUT
            # Equal after validation: no key the SDK type does not know was dropped.
            assert adapter.validate_python(payload) == payload
        items = [r["payload"] for r in _lines(out) if r["type"] == "response_item" and r["payload"]["type"] in _CALL_TYPES]
        _INPUT_ITEMS.validate_python(items)


def test_each_call_type_gets_the_output_type_codex_pairs_with_it(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    _invoke("fix", "--output", str(out), str(_mixed_rollout(tmp_path)))
    lines = _lines(out)
    # Three records right before the user message, in call order; a local shell call is
    # answered by a function_call_output, as Codex itself answers it.
    assert [r["payload"]["type"] for r in lines[5:8]] == [
        "function_call_output",
        "custom_tool_call_output",
        "function_call_output",
    ]
    assert [r["payload"]["call_id"] for r in lines[5:8]] == ["call_fn", "call_custom", "call_local"]
    assert lines[8] == _user(6, "stop")


# timestamps


def _stamp(record: dict) -> datetime:
    return datetime.fromisoformat(record["timestamp"])


def test_inserted_timestamp_is_the_next_lines_in_an_ordered_file(tmp_path: Path) -> None:
    records = [_user(1, "go"), _call(2, "c1"), _event(3, "agent_message"), _user(9, "next")]
    result = repair_messages(records, format="codex")
    (inserted,) = result.inserted
    assert inserted.index == 3 and inserted.record["timestamp"] == records[3]["timestamp"]


def test_inserted_timestamp_at_the_end_is_the_latest_seen() -> None:
    records = [_user(1, "go"), _call(2, "c1"), _event(5, "turn_aborted"), _event(7, "token_count")]
    (inserted,) = repair_messages(records, format="codex").inserted
    assert inserted.index == 4 and inserted.record["timestamp"] == records[3]["timestamp"]


def test_inserted_timestamp_is_never_earlier_than_the_call() -> None:
    # The next line's clock ran behind the call's: the record keeps the call's moment.
    records = [_user(1, "go"), _call(40, "c1"), _user(10, "next")]
    (inserted,) = repair_messages(records, format="codex").inserted
    assert _stamp(inserted.record) >= _stamp(records[1])
    assert inserted.record["timestamp"] == records[1]["timestamp"]


# no false findings


def test_events_reasoning_and_assistant_text_between_call_and_output_close_nothing() -> None:
    records = [
        _user(1, "list"),
        _call(2, "c1"),
        _rec(3, "response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": None}),
        _event(3, "exec_command_begin"),
        _rec(4, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "…"}]}),
        _rec(4, "turn_context", {"cwd": "/w"}),
        _rec(4, "response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search"}}),
        _output(5, "c1", "a.txt"),
    ]
    assert _found(records) == []


def test_codex_aborted_output_after_turn_aborted_is_a_placeholder_not_a_late_result() -> None:
    records = [_user(1, "run"), _call(2, "c1"), _event(3, "turn_aborted"), _output(3, "c1", "aborted"), _user(4, "again")]
    findings = check_messages(records, format="codex")
    assert [(f.code, f.line, f.call_id, str(f.severity)) for f in findings] == [("APX006", 4, "c1", "info")]


def test_compaction_without_pending_calls_is_clean_and_closes_pending_ones() -> None:
    compacted = _rec(9, "compacted", {"message": "summary", "replacement_history": []})
    assert _found([_user(1, "go"), _call(2, "c1"), _output(3, "c1", "ok"), compacted, _user(10, "on")]) == []
    assert _found([_user(1, "go"), _call(2, "c1"), compacted, _output(11, "c1", "ok")]) == [
        ("APX001", 2, "c1"),
        ("APX004", 4, "c1"),
    ]


def test_codex_context_messages_do_not_start_the_history() -> None:
    records = [
        _user(1, "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        _output(1, "before_the_excerpt", "ok"),
        _user(2, "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>"),
        _output(2, "also_before", "ok"),
        _user(3, "the real prompt"),
        _output(4, "ghost", "ok"),
    ]
    assert _found(records) == [("APX002", 6, "ghost")]


def test_unknown_record_types_pass_over_and_non_records_are_unrecognised() -> None:
    records = [
        _user(1, "go"),
        _call(2, "c1"),
        _rec(3, "brand_new_record", {"x": 1}),
        _output(4, "c1", "ok"),
        [1, 2],
        {"type": "x"},
    ]
    assert _found(records) == [("APX104", 5, None), ("APX104", 6, None)]


def test_a_client_tool_search_is_reported_but_never_answered(tmp_path: Path) -> None:
    search = {
        "type": "tool_search_call",
        "call_id": "ts1",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "x"},
    }
    path = _write(tmp_path / "s.jsonl", [_user(1, "find"), _rec(2, "response_item", search), _user(3, "never mind")])
    report = _report("check", str(path))
    assert [(f["code"], f["line"], f["fixable"]) for f in report["findings"]] == [("APX001", 2, False)]
    before = path.read_bytes()
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == before


def test_tool_names_from_the_transcript_are_printed_literally(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.jsonl", [_user(1, "go"), _call(2, "c1", name="[bold red]boom[/]"), _user(3, "next")])
    result = CliRunner().invoke(app, ["check", "--color", "never", str(path)], terminal_width=200)
    assert "[bold red]boom[/]" in result.stdout


def test_a_rollout_without_timestamps_gets_records_without_one() -> None:
    records = [{k: v for k, v in r.items() if k != "timestamp"} for r in (_user(1, "go"), _call(2, "c1"), _user(3, "next"))]
    (inserted,) = repair_messages(records, format="codex").inserted
    assert list(inserted.record) == ["type", "payload"]
    assert check_messages(repair_messages(records, format="codex").messages, format="codex") == []


def test_timestamps_are_compared_as_moments_not_as_text() -> None:
    # 12:00+02:00 is 10:00 UTC: earlier than the call's 11:00:02Z, though it sorts later as text.
    # A timestamp that is no time at all is passed over.
    unreadable = {**_event(3, "token_count"), "timestamp": "not a time"}
    records = [_user(1, "go"), _call(2, "c1"), unreadable, {**_user(3, "next"), "timestamp": "2025-12-05T12:00:00+02:00"}]
    (inserted,) = repair_messages(records, format="codex").inserted
    assert inserted.record["timestamp"] == records[1]["timestamp"]


# Texts a long rollout may hold: zoned moments (two texts for one instant),
# moments without a zone, and text that is no time at all.
_STAMP_POOL = [
    "2025-12-05T11:00:01.000Z",
    "2025-12-05T11:00:09.000Z",
    "2025-12-05T13:00:09+02:00",  # the same instant as 11:00:09Z
    "2025-12-05T11:30:00.000Z",
    "2025-12-05T12:00:00+02:00",  # 10:00 UTC: earlier, though later as text
    "2025-12-05T23:59:59",  # no zone: cannot be weighed against Codex's own
    "not a time",
    "2025-13-45T11:00:00.000Z",  # the shape of a time, but none
]


def _latest_zoned(stamps: list[str]) -> str | None:
    """The rule, one timestamp at a time: the first text of the latest zoned moment."""
    best: tuple[datetime, str] | None = None
    for stamp in stamps:
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if moment.tzinfo is not None and (best is None or moment > best[0]):
            best = (moment, stamp)
    return best[1] if best else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(st.tuples(st.sampled_from(_STAMP_POOL), st.integers(1, 300)), min_size=1, max_size=6),
    at=st.integers(0, 1800),
)
# One instant written two ways: the first text is kept.
@example(runs=[("2025-12-05T11:00:09.000Z", 3), ("2025-12-05T13:00:09+02:00", 3)], at=0)
@example(runs=[("2025-12-05T11:00:09.000Z", 300), ("2025-12-05T13:00:09+02:00", 300)], at=0)
def test_the_record_at_the_end_takes_the_latest_zoned_timestamp_of_a_long_rollout(runs: list[tuple[str, int]], at: int) -> None:
    # Runs of one text, long enough that timestamps are weighed in several
    # batches, some of one kind only, some mixed; the call anywhere.
    stamps = [stamp for stamp, length in runs for _ in range(length)]
    events = [{**_event(3, "token_count"), "timestamp": stamp} for stamp in stamps]
    at = min(at, len(events))
    call = {k: v for k, v in _call(2, "c1").items() if k != "timestamp"}
    records = [{k: v for k, v in _user(1, "go").items() if k != "timestamp"}, *events[:at], call, *events[at:]]
    (inserted,) = repair_messages(records, format="codex").inserted
    assert inserted.record.get("timestamp") == _latest_zoned(stamps)
