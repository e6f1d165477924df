"""The copilot-cli format: Copilot CLI events.jsonl files, checked and repaired in their own terms."""

from __future__ import annotations

import shutil
import uuid
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from apx_doctor import check_messages, repair_messages
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.copilot_cli import CopilotCliAdapter
from tests.conftest import corpus_samples

from ._cli import invoke as _invoke
from ._cli import lines as _lines
from ._cli import report as _report
from strategies.copilot_cli import SESSION, Chain

ORPHAN_AND_DANGLING = "copilot-cli/fixture_events.jsonl"
SUBDIR = "copilot-cli/fixture_events_subdir_v1.jsonl"
TRIMMED = "[trimmed for fixture]"

# What a correct doctor reports on each sample session (../shared/corpus/README.md):
# line 17 completes a call no request made; the request on line 32 never completes.
CORPUS_VERDICTS = {
    ORPHAN_AND_DANGLING: [("APX002", 17, TRIMMED), ("APX001", 32, TRIMMED)],
    SUBDIR: [],
}

# The fields of a completion in the Copilot SDK's session-event schema
# (github/copilot-sdk, generated session-events: ToolExecutionCompleteEvent).
_EVENT_KEYS = {"type", "data", "id", "timestamp", "parentId", "agentId", "ephemeral"}
_COMPLETE_KEYS = {
    "toolCallId", "success", "result", "error", "interactionId", "isUserRequested", "model",
    "parentToolCallId", "toolTelemetry", "turnId", "rte", "sandboxed", "toolDescription",
}  # fmt: skip


def _write(path: Path, events: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def _found(events: list) -> list[tuple]:
    return [(f.code, f.line, f.call_id) for f in check_messages(events, format="copilot-cli")]


def _jsonl_samples() -> list[Path]:
    return [p for p in corpus_samples() if p.suffix == ".jsonl"]


def _session() -> Chain:
    chain = Chain()
    chain.start()
    chain.user("Delete the build folder", interactionId="int-1")
    return chain


def _is_completion_as_copilot_writes_it(record: dict) -> bool:
    data = record["data"]
    return (
        set(record) <= _EVENT_KEYS
        and set(data) <= _COMPLETE_KEYS
        and record["type"] == "tool.execution_complete"
        and data["success"] is False
        and data["error"] == {"message": DEFAULT_MARKER}
        and "result" not in data
        and uuid.UUID(record["id"]).version == 5
    )


# detection


def test_every_copilot_sample_is_detected_as_copilot_cli(corpus: Path) -> None:
    for name in CORPUS_VERDICTS:
        samples = _lines(corpus / name)
        assert CopilotCliAdapter.detect(samples) == Detection.CERTAIN, name
        assert detect_format(samples) is CopilotCliAdapter, name


@pytest.mark.parametrize("sample", _jsonl_samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_copilot_claims_no_other_runtimes_sample_and_no_other_adapter_claims_copilot(sample: Path) -> None:
    lines = [orjson.loads(line) for line in sample.read_bytes().splitlines() if line.strip()]
    if sample.parent.name == "copilot-cli":
        others = [a.name for a in adapters() if a is not CopilotCliAdapter and a.detect(lines) >= Detection.CERTAIN]
        assert others == []
    else:
        assert CopilotCliAdapter.detect(lines) == Detection.NO, sample


def test_other_runtimes_lines_with_a_data_object_are_not_taken_for_copilot() -> None:
    # Claude Code's progress lines carry a ``data`` too, inside its uuid envelope.
    progress = {"parentUuid": None, "sessionId": "s", "type": "progress", "data": {"type": "hook_progress"}, "uuid": "u1"}
    assert CopilotCliAdapter.detect([progress]) == Detection.NO
    assert CopilotCliAdapter.detect([{"type": "thread.started", "thread_id": "t"}]) == Detection.NO
    assert CopilotCliAdapter.detect([{"type": "context.append_loop_event", "event": {"type": "step.begin"}}]) == Detection.NO
    # An event kind added later says nothing either way; a known one is Copilot's.
    assert CopilotCliAdapter.detect([{"type": "session.brand_new", "data": {}, "id": "e1"}]) == Detection.NO
    assert (
        CopilotCliAdapter.detect([{"type": "session.brand_new", "data": {}}, {"type": "abort", "data": {"reason": "x"}}])
        == Detection.CERTAIN
    )


# the sample sessions, through the CLI


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", str(corpus / name))
    assert report["format"] == "copilot-cli"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", "--isolated", str(corpus / name)).exit_code == (1 if CORPUS_VERDICTS[name] else 0)


def test_fix_appends_the_completion_copilot_would_write_and_keeps_every_line(corpus: Path, tmp_path: Path) -> None:
    target = shutil.copyfile(corpus / ORPHAN_AND_DANGLING, tmp_path / "events.jsonl")
    original = target.read_bytes().splitlines(keepends=True)
    assert _invoke("fix", "--isolated", "--in-place", str(target)).exit_code == 1
    repaired = target.read_bytes().splitlines(keepends=True)
    assert repaired[:32] == original and len(repaired) == 33
    record = orjson.loads(repaired[32])
    assert _is_completion_as_copilot_writes_it(record)
    # It copies what the request's event says of the call, and hangs off the last event.
    assert record["data"] == {
        "toolCallId": TRIMMED,
        "success": False,
        "error": {"message": DEFAULT_MARKER},
        "interactionId": TRIMMED,
        "turnId": TRIMMED,
        "model": "gpt-5-mini",
    }
    assert record["parentId"] == orjson.loads(original[31])["id"]
    # The orphan on line 17 is reported, and kept without --drop-orphans.
    assert _invoke("check", "--isolated", "--select", "APX001", str(target)).exit_code == 0
    again = target.read_bytes()
    assert _invoke("fix", "--isolated", "--in-place", str(target)).exit_code == 0  # only the orphan's warning is left
    assert target.read_bytes() == again


def test_a_second_run_on_a_copy_writes_the_same_bytes(corpus: Path, tmp_path: Path) -> None:
    outs = []
    for n in range(2):
        out = tmp_path / f"out{n}.jsonl"
        _invoke("fix", "--isolated", "--output", str(out), str(corpus / ORPHAN_AND_DANGLING))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# pairing as Copilot pairs


def test_a_started_call_that_never_completes_is_interrupted() -> None:
    chain = _session()
    chain.reply("msg-1", ["call_rm"])
    chain.started("call_rm")
    chain.user("wait, keep it")
    assert _found(chain.events) == [("APX001", 3, "call_rm")]


def test_one_reply_written_over_two_events_is_one_turn() -> None:
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.reply("msg-1", ["c2"])
    chain.complete("c2", "B")
    chain.complete("c1", "A")
    chain.reply("msg-2", [])
    assert _found(chain.events) == []
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.reply("msg-2", ["c2"])
    chain.complete("c1", "late")
    assert _found(chain.events) == [("APX001", 3, "c1"), ("APX001", 4, "c2"), ("APX004", 5, "c1")]


def test_steering_messages_close_nothing_and_plain_ones_close_the_turn() -> None:
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.user("also lint", delivery="steering")
    chain.complete("c1", "ok")
    assert _found(chain.events) == []
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.user("stop", delivery="idle")
    chain.complete("c1", "ok")
    assert _found(chain.events) == [("APX001", 3, "c1"), ("APX004", 5, "c1")]


def test_copilots_own_completion_after_a_resume_answers_the_open_call() -> None:
    # Copilot CLI 1.0.102, resuming a session killed mid-tool, writes a
    # completion of its own right after ``session.resume`` (seen in make e2e):
    # the call is answered, and nothing is late.
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.event("session.resume", {"resumeTime": "2026-03-26T18:00:00.000Z", "eventCount": 3})
    interrupted = {"message": "Tool execution was interrupted before a result was recorded."}
    chain.event("tool.execution_complete", {"toolCallId": "c1", "model": "resumed", "success": False, "error": interrupted})
    chain.user("Go on.")
    assert _found(chain.events) == []


def test_a_resume_that_wrote_no_completion_leaves_the_call_open_until_the_next_message() -> None:
    # The record goes where 1.0.102 writes its own: after the session.resume.
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.event("session.resume", {"resumeTime": "2026-03-26T18:00:00.000Z", "eventCount": 3})
    chain.user("Go on.")
    assert _found(chain.events) == [("APX001", 3, "c1")]
    repaired = repair_messages(chain.events, format="copilot-cli")
    (inserted,) = repaired.inserted
    assert inserted.index == 4 and repaired.messages[3]["type"] == "session.resume"
    assert repaired.messages[5]["type"] == "user.message"


@pytest.mark.parametrize("kind", ["abort", "session.compaction_complete", "session.context_cleared"])
def test_copilots_own_repair_points_close_pending_calls(kind: str) -> None:
    # At abort Copilot stands in a result for the calls still open (in
    # memory); a record placed there takes that stand-in's place.
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.event(kind, {"reason": "user initiated"})
    chain.user("again")
    repaired = repair_messages(chain.events, format="copilot-cli")
    (inserted,) = repaired.inserted
    assert inserted.index == 3 and repaired.messages[4]["type"] == kind


def test_turn_events_hooks_and_unknown_events_close_nothing() -> None:
    chain = _session()
    chain.reply("msg-1", ["c1"])
    for kind in (
        "assistant.turn_end",
        "hook.start",
        "session.info",
        "assistant.reasoning",
        "session.truncation",
        "session.future",
    ):
        chain.event(kind, {})
    chain.complete("c1", "ok")
    assert _found(chain.events) == []


def test_history_starts_at_the_first_user_message() -> None:
    chain = Chain()
    chain.start()
    chain.complete("before", "ignored")
    chain.user("go")
    chain.complete("ghost", "?")
    assert _found(chain.events) == [("APX002", 4, "ghost")]


def test_a_user_requested_tool_is_answered_by_its_completion() -> None:
    chain = _session()
    chain.event("tool.user_requested", {"toolCallId": "u1", "toolName": "bash", "arguments": {"command": "ls"}})
    chain.started("u1")
    chain.event(
        "tool.execution_complete", {"toolCallId": "u1", "success": True, "isUserRequested": True, "result": {"content": "a"}}
    )
    assert _found(chain.events) == []


def test_subagent_events_pair_within_their_own_thread() -> None:
    # Newer Copilot marks a sub-agent's events with ``agentId``; its replies do
    # not close the parent's ``task`` call, and the parent's do not close its calls.
    chain = _session()
    chain.reply("msg-1", ["call_task"])
    chain.event(
        "assistant.message",
        {"messageId": "s1", "content": "", "toolRequests": [{"toolCallId": "s_c1", "name": "grep"}]},
        agent="sub-1",
    )
    chain.event("assistant.message", {"messageId": "s2", "content": "", "toolRequests": []}, agent="sub-1")
    chain.event("tool.execution_complete", {"toolCallId": "s_c1", "success": True, "result": {"content": "late"}}, agent="sub-1")
    chain.complete("call_task", "done")
    assert _found(chain.events) == [("APX001", 4, "s_c1"), ("APX004", 6, "s_c1")]
    repaired = repair_messages(chain.events, format="copilot-cli")
    (inserted,) = repaired.inserted
    assert inserted.record["agentId"] == "sub-1" and inserted.index == 4


# the record


def test_a_record_mid_session_is_chained_in_and_the_next_event_points_at_it() -> None:
    chain = _session()
    chain.reply("msg-1", ["c1", "c2"], interactionId="int-1", turnId="0", model="gpt-5-mini")
    chain.started("c1")
    chain.user("wait")
    events = chain.events
    repaired = repair_messages(events, format="copilot-cli")
    first, second = (i.record for i in repaired.inserted)
    assert all(_is_completion_as_copilot_writes_it(r) for r in (first, second))
    assert [r["data"]["toolCallId"] for r in (first, second)] == ["c1", "c2"]
    assert first["data"]["model"] == "gpt-5-mini" and first["data"]["turnId"] == "0"
    # e04 -> first -> second -> the user message (re-pointed, otherwise as it was).
    assert first["parentId"] == "e04" and second["parentId"] == first["id"] and first["id"] != second["id"]
    user = repaired.messages[-1]
    assert user["parentId"] == second["id"] and {**user, "parentId": "e04"} == events[-1]
    assert [e.action for e in repaired.edits] == ["insert", "insert", "replace"]
    # The record's moment is the next event's: never before the one it follows.
    assert first["timestamp"] == events[-1]["timestamp"]
    assert check_messages(repaired.messages, format="copilot-cli") == []
    assert repair_messages(repaired.messages, format="copilot-cli").changed is False


def test_record_ids_are_derived_from_the_session_and_the_call() -> None:
    def record_id(session: str, call: str) -> str:
        chain = Chain()
        chain.event("session.start", {"sessionId": session, "producer": "copilot-agent"})
        chain.user("go")
        chain.reply("msg-1", [call])
        return repair_messages(chain.events, format="copilot-cli").inserted[0].record["id"]

    assert record_id(SESSION, "c1") == record_id(SESSION, "c1")
    assert len({record_id(SESSION, "c1"), record_id(SESSION, "c2"), record_id("other-session", "c1")}) == 3


def test_the_record_timestamp_is_never_earlier_than_the_call_or_the_event_before() -> None:
    chain = _session()
    chain.reply("msg-1", ["c1"])["timestamp"] = "2026-03-26T18:30:00.000Z"
    chain.event("hook.start", {})["timestamp"] = "2026-03-26T18:40:00.000Z"
    chain.user("next")["timestamp"] = "2026-03-26T18:10:00+00:00"  # a clock that ran behind
    (inserted,) = repair_messages(chain.events, format="copilot-cli").inserted
    assert inserted.record["timestamp"] == "2026-03-26T18:40:00.000Z"
    moment = datetime.fromisoformat(inserted.record["timestamp"])
    assert all(moment >= datetime.fromisoformat(e["timestamp"]) for e in chain.events[:4])


def test_drop_orphans_removes_the_completion_and_keeps_the_chain_whole(tmp_path: Path) -> None:
    chain = _session()
    chain.reply("msg-1", ["c1"])
    chain.complete("ghost", "?")
    chain.user("next")
    path = _write(tmp_path / "events.jsonl", chain.events)
    assert _invoke("fix", "--isolated", "--drop-orphans", "--in-place", str(path)).exit_code == 1
    repaired = _lines(path)
    assert [e["type"] for e in repaired] == [
        "session.start",
        "user.message",
        "assistant.message",
        "tool.execution_complete",
        "user.message",
    ]
    record = repaired[3]
    # The record hangs off the reply, not off the removed completion, and the
    # user message off the record.
    assert record["data"]["toolCallId"] == "c1" and record["parentId"] == "e03" and repaired[4]["parentId"] == record["id"]
    ids = [e["id"] for e in repaired]
    assert all(e["parentId"] == ids[n - 1] for n, e in enumerate(repaired) if n)


def test_odd_types_never_raise() -> None:
    chain = _session()
    odd = [
        {"type": "assistant.message", "data": {"messageId": ["m"], "toolRequests": {"toolCallId": "x"}}},
        {
            "type": "assistant.message",
            "data": {"messageId": "m2", "toolRequests": [None, 3, {"toolCallId": ["x"]}, {"toolCallId": "c1", "name": {}}]},
            "agentId": 5,
        },
        {"type": "tool.execution_complete", "data": {"toolCallId": {"a": 1}, "result": "ok", "error": [1]}},
        {
            "type": "tool.execution_complete",
            "data": {"toolCallId": "nope", "result": {"content": None}, "error": {"message": 4}},
            "agentId": ["a"],
        },
        {"type": "user.message", "data": [1]},
        {"type": "subagent.completed", "data": {"toolCallId": None}},
        {"type": None, "data": {}},
        [],
    ]
    assert _found(chain.events + odd) == [
        ("APX001", 4, "c1"),
        ("APX002", 5, None),
        ("APX002", 6, "nope"),
        ("APX104", 7, None),
        ("APX104", 9, None),
        ("APX104", 10, None),
    ]
    (inserted,) = repair_messages(chain.events + odd, format="copilot-cli").inserted
    assert inserted.record["data"] == {"toolCallId": "c1", "success": False, "error": {"message": DEFAULT_MARKER}}
    assert "agentId" not in inserted.record
