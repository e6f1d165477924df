"""The kimi format: Kimi Code wire.jsonl files, checked and repaired in their own terms."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from apx_doctor import check_messages, repair_messages
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.kimi import KimiAdapter
from tests.conftest import corpus_samples

from ._cli import invoke as _invoke
from ._cli import lines as _lines
from ._cli import report as _report
from strategies.kimi import Wire

SAMPLE = "kimi/fixture_wire.jsonl"

# What a correct doctor reports on each sample session (../shared/corpus/README.md).
CORPUS_VERDICTS = {SAMPLE: []}


def _found(records: list) -> list[tuple]:
    return [(f.code, f.line, f.call_id) for f in check_messages(records, format="kimi")]


def _jsonl_samples() -> list[Path]:
    return [p for p in corpus_samples() if p.suffix == ".jsonl"]


def _turn() -> Wire:
    wire = Wire()
    wire.prompt("list the files")
    wire.begin()
    return wire


# detection


def test_the_sample_is_detected_as_kimi(corpus: Path) -> None:
    samples = _lines(corpus / SAMPLE)
    assert KimiAdapter.detect(samples) == Detection.CERTAIN
    assert detect_format(samples) is KimiAdapter


@pytest.mark.parametrize("sample", _jsonl_samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kimi_claims_no_other_runtimes_sample_and_no_other_adapter_claims_kimi(sample: Path) -> None:
    lines = [orjson.loads(line) for line in sample.read_bytes().splitlines() if line.strip()]
    if sample.parent.name == "kimi":
        others = [a.name for a in adapters() if a is not KimiAdapter and a.detect(lines) >= Detection.CERTAIN]
        assert others == []
    else:
        assert KimiAdapter.detect(lines) < Detection.CERTAIN, sample


def test_python_kimi_cli_wire_files_are_refused(tmp_path: Path) -> None:
    # MoonshotAI/kimi-cli (Python) writes the same header, then
    # {timestamp, message: {type, payload}} records: a UI event log, not the
    # history kimi-cli resumes from (its context.jsonl). It is no kimi-code wire.
    legacy = [
        {"type": "metadata", "protocol_version": "1.3"},
        {"timestamp": 1760000000.5, "message": {"type": "TurnBegin", "payload": {"user_input": "hi"}}},
        {
            "timestamp": 1760000001.5,
            "message": {"type": "ToolCall", "payload": {"type": "function", "id": "c1", "function": {"name": "Shell"}}},
        },
    ]
    assert KimiAdapter.detect(legacy) == Detection.NO
    path = tmp_path / "wire.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in legacy))
    assert _invoke("check", "--isolated", str(path)).exit_code == 2


def test_other_dotted_event_streams_are_not_taken_for_kimi() -> None:
    # Copilot CLI events carry a ``data`` object; `codex exec --json` streams use
    # dotted types kimi-code never writes.
    assert KimiAdapter.detect([{"type": "session.start", "data": {"sessionId": "s"}, "id": "e1"}]) == Detection.NO
    assert KimiAdapter.detect([{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"}]) == Detection.NO
    assert KimiAdapter.detect([{"type": "metadata", "protocol_version": "1.4", "created_at": 1}]) == Detection.COMPATIBLE


# the sample session, through the CLI


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", str(corpus / name))
    assert report["format"] == "kimi"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", "--isolated", str(corpus / name)).exit_code == 0


def test_the_sample_without_its_last_result_gets_the_record_kimi_code_would_fold(corpus: Path, tmp_path: Path) -> None:
    # Line 15 of the sample is the result of the Skill call on line 14.
    raw = (corpus / SAMPLE).read_bytes().splitlines(keepends=True)
    cut = tmp_path / "wire.jsonl"
    cut.write_bytes(b"".join(raw[:14] + raw[15:]))
    report = _report("check", str(cut))
    assert [(f["code"], f["line"], f["call_id"]) for f in report["findings"]] == [("APX001", 14, "tool_skill_001")]
    out = tmp_path / "out.jsonl"
    assert _invoke("fix", "--isolated", "--output", str(out), str(cut)).exit_code == 1
    repaired = out.read_bytes().splitlines(keepends=True)
    # Right before the step's step.end, every other line as it was.
    assert repaired[:14] == raw[:14] and repaired[15:] == raw[15:]
    assert orjson.loads(repaired[14]) == {
        "type": "context.append_loop_event",
        "event": {
            "type": "tool.result",
            "parentUuid": "call-skill-001",
            "toolCallId": "tool_skill_001",
            "result": {"output": DEFAULT_MARKER},
        },
        "time": 1781368649430,
    }
    assert _invoke("check", "--isolated", str(out)).exit_code == 0


# pairing as kimi-code folds


def test_step_end_and_the_next_step_begin_close_a_step_and_a_result_after_it_is_late() -> None:
    wire = _turn()
    wire.call("Bash_0")
    wire.end()
    wire.result("Bash_0", "late")
    wire.begin()
    wire.call("Bash_1")
    wire.begin()  # a retried or aborted step: no step.end
    assert _found(wire.records) == [("APX001", 5, "Bash_0"), ("APX004", 7, "Bash_0"), ("APX001", 9, "Bash_1")]


def test_messages_appended_while_tools_run_close_nothing() -> None:
    # kimi-code defers them until the exchange is closed.
    wire = _turn()
    wire.call("Bash_0")
    wire.add({"type": "turn.steer", "input": [{"type": "text", "text": "then lint"}], "origin": {"kind": "user"}})
    wire.message("then lint")
    wire.message("<notification>task done</notification>", kind="injection")
    wire.result("Bash_0", "ok")
    wire.end()
    assert _found(wire.records) == []


def test_the_next_prompt_closes_a_cancelled_turn() -> None:
    wire = _turn()
    wire.call("Bash_0")
    wire.add({"type": "turn.cancel"})
    wire.prompt("never mind")
    repaired = repair_messages(wire.records, format="kimi")
    (inserted,) = repaired.inserted
    assert inserted.index == 6 and repaired.messages[7]["type"] == "turn.prompt"


@pytest.mark.parametrize("kind", ["context.clear", "context.apply_compaction", "context.undo"])
def test_context_resets_close_pending_calls(kind: str) -> None:
    wire = _turn()
    wire.call("Bash_0")
    wire.add({"type": kind, "summary": "s", "compactedCount": 1, "count": 1})
    wire.result("Bash_0", "late")
    assert _found(wire.records) == [("APX001", 5, "Bash_0"), ("APX004", 7, "Bash_0")]


def test_the_history_starts_at_the_first_prompt_whatever_its_origin() -> None:
    # A sub-agent's wire starts with the prompt its parent gave it.
    wire = Wire()
    wire.result("before", "ignored")
    wire.prompt("count the swift files", kind="system_trigger")
    wire.begin()
    wire.result("ghost", "?")
    assert _found(wire.records) == [("APX002", 6, "ghost")]


def test_parallel_results_in_any_order_and_as_content_parts() -> None:
    wire = _turn()
    for call_id in ("Read_0", "Read_1", "Read_2"):
        wire.call(call_id, "Read")
    wire.result("Read_2", [{"type": "text", "text": "C"}])
    wire.result("Read_0", "A", error=True)
    wire.result("Read_1", "B")
    wire.end()
    assert _found(wire.records) == []


# the record


def test_the_record_claims_no_error_and_copies_the_call_it_answers() -> None:
    wire = _turn()
    call = wire.call("Bash_0")
    call["agentId"] = "main"
    wire.end()
    (inserted,) = repair_messages(wire.records, format="kimi").inserted
    # No ``isError``: kimi-code renders an error result to the model as
    # "<system>ERROR: Tool execution failed.</system>", a claim the marker does not make.
    assert inserted.record == {
        "type": "context.append_loop_event",
        "agentId": "main",
        "event": {"type": "tool.result", "parentUuid": "Bash_0", "toolCallId": "Bash_0", "result": {"output": DEFAULT_MARKER}},
        "time": wire.records[-1]["time"],
    }


def test_the_record_time_is_never_earlier_than_its_call_or_the_line_before() -> None:
    wire = _turn()
    wire.call("Bash_0")["time"] = 1785613900000
    wire.add({"type": "usage.record", "usage": {}})["time"] = 1785613950000
    wire.end()["time"] = 1785613000000  # a clock that ran behind
    (inserted,) = repair_messages(wire.records, format="kimi").inserted
    assert inserted.record["time"] == 1785613950000
    untimed = [{k: v for k, v in r.items() if k != "time"} for r in _turn().records]
    untimed.append({"type": "context.append_loop_event", "event": {"type": "tool.call", "toolCallId": "c1", "name": "Bash"}})
    (inserted,) = repair_messages(untimed, format="kimi").inserted
    assert "time" not in inserted.record and "parentUuid" not in inserted.record["event"]


def test_odd_types_never_raise() -> None:
    wire = _turn()
    odd = [
        {"type": "context.append_loop_event", "event": ["tool.call"]},
        {"type": "context.append_loop_event", "event": {"type": "tool.call", "toolCallId": ["x"], "name": 3}},
        {
            "type": "context.append_loop_event",
            "event": {"type": "tool.call", "toolCallId": "c1", "name": 3, "uuid": {"a": 1}},
            "time": "soon",
            "agentId": 7,
        },
        {"type": "context.append_loop_event", "event": {"type": "tool.result", "toolCallId": {"c": 1}, "result": "ok"}},
        {"type": "context.append_message", "message": "hi"},
        {"type": 4, "time": 1},
        "a string",
    ]
    records = wire.records + odd
    assert _found(records) == [
        ("APX104", 5, None),
        ("APX001", 7, "c1"),
        ("APX002", 8, None),
        ("APX104", 10, None),
        ("APX104", 11, None),
    ]
    (inserted,) = repair_messages(records, format="kimi").inserted
    # Only what is a string or a number is copied.
    assert inserted.record == {
        "type": "context.append_loop_event",
        "event": {"type": "tool.result", "toolCallId": "c1", "result": {"output": DEFAULT_MARKER}},
    }
    assert KimiAdapter.detect(odd) == Detection.NO
