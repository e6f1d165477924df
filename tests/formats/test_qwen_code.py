"""The qwen-code format: Qwen Code session files (~/.qwen/projects/<project>/chats/<session>.jsonl).

What users depend on: the sample session checks clean and is read as Qwen Code,
never as Claude Code (nor a Claude Code session as Qwen Code); a dangling call
is found and answered with the tool_result record Qwen Code itself writes,
chained into the uuid tree so that the history Qwen Code rebuilds on resume
holds the call and its answer; a second fix changes nothing.

``_resumed_history`` follows what Qwen Code does when it resumes a session
(QwenLM/qwen-code, packages/core/src/services/sessionService.ts
``reconstructHistory`` and session-api-history.ts): walk up ``parentUuid``
from the file's last record, merge records that share a uuid, and push each
record's ``message`` in order, a compression replacing what came before.
"""

from __future__ import annotations

import json
import shutil
import uuid as uuid_module
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from apx_doctor import check_messages, jsonl, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import adapter_class, detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.claude_code import ClaudeCodeAdapter
from apx_doctor.formats.qwen_code import NAMESPACE_NAME, QwenCodeAdapter

from strategies.qwen_code import (
    ORPHAN_REPAIR,
    SESSION,
    assistant,
    function_call,
    histories,
    prompt,
    result,
    system,
    user_subtype,
)

SAMPLE = "qwen-code/fixture_session.jsonl"

# What a correct doctor reports on each sample session (../shared/corpus/README.md).
CORPUS_VERDICTS: dict[str, list[tuple]] = {SAMPLE: []}

CASES = Path(__file__).resolve().parents[1] / "cases"


# -- helpers ----------------------------------------------------------------------


def _lines(path: Path) -> list:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _write(path: Path, lines: list) -> Path:
    path.write_bytes(b"".join(jsonl.dumps(line) + b"\n" for line in lines))
    return path


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def _check(path: Path) -> dict:
    outcome = _cli("check", "--output-format", "json", str(path))
    assert outcome.exit_code in (0, 1), outcome.output
    return json.loads(outcome.stdout)["files"][0]


def _found(lines: list) -> list[tuple]:
    return [(f.code, f.line, f.call_id) for f in check_messages(lines, format="qwen-code")]


def _u(n: int) -> str:
    return f"6a1f{n:04d}-2b3c-4d5e-8f60-71829304a5b6"


def _resumed_history(lines: list) -> list[dict]:
    """The Content list Qwen Code sends after resuming the session these lines are."""
    records = [line for line in lines if isinstance(line, dict) and isinstance(line.get("uuid"), str)]
    if not records:
        return []
    by_uuid: dict[str, list[dict]] = {}
    for record in records:
        by_uuid.setdefault(record["uuid"], []).append(record)
    chain, seen, current = [], set(), records[-1]["uuid"]
    while current and current not in seen and current in by_uuid:
        seen.add(current)
        chain.append(current)
        current = by_uuid[current][0].get("parentUuid")
    history: list[dict] = []
    for uuid in reversed(chain):
        group = by_uuid[uuid]
        record = dict(group[0])
        for later in group[1:]:
            if "message" in later:
                if "message" not in record:
                    record["message"] = later["message"]
                else:
                    parts = record["message"].get("parts", []) + later["message"].get("parts", [])
                    record["message"] = {"role": record["message"].get("role"), "parts": parts}
        subtype = record.get("subtype")
        if record.get("type") == "system":
            if subtype == "chat_compression":
                history = [dict(c) for c in record.get("systemPayload", {}).get("compressedHistory", [])]
            continue
        message = record.get("message")
        if not isinstance(message, dict) or subtype in ("realtime_message", "code_mode_tool_result"):
            continue
        if subtype == "mid_turn_user_message" and history and history[-1].get("role") == "user":
            history[-1] = {**history[-1], "parts": history[-1].get("parts", []) + message.get("parts", [])}
            continue
        history.append(message)
    return history


def _unanswered(history: list[dict]) -> list[str]:
    """Ids of model calls that no user entry right after them answers (what Qwen Code would have to patch)."""
    missing = []
    for i, content in enumerate(history):
        if content.get("role") != "model":
            continue
        calls = [
            p["functionCall"]["id"] for p in content.get("parts", []) if isinstance(p.get("functionCall", {}).get("id"), str)
        ]
        answered = set()
        for later in history[i + 1 :]:
            if later.get("role") != "user":
                break
            answered |= {p["functionResponse"].get("id") for p in later.get("parts", []) if "functionResponse" in p}
        missing += [c for c in calls if c not in answered]
    return missing


def _session(*lines: dict) -> list[dict]:
    return list(lines)


# -- detection ----------------------------------------------------------------------


def test_the_sample_is_detected_as_qwen_code_and_not_as_claude_code(corpus: Path) -> None:
    samples = _lines(corpus / SAMPLE)
    assert QwenCodeAdapter.detect(samples) == Detection.CERTAIN
    assert ClaudeCodeAdapter.detect(samples) == Detection.NO
    assert detect_format(samples) is QwenCodeAdapter


def test_claude_code_sessions_are_never_taken_for_qwen_code(corpus: Path) -> None:
    paths = sorted((corpus / "claude-code").glob("*.jsonl")) + sorted((CASES / "claude-code").glob("*/input.jsonl"))
    assert len(paths) > 10
    for path in paths:
        lines = [jsonl.parse(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
        assert QwenCodeAdapter.detect(lines) == Detection.NO, path
        assert detect_format(lines) is ClaudeCodeAdapter, path


def test_other_gemini_shaped_and_tool_result_typed_lines_are_not_qwen_code(corpus: Path) -> None:
    # Gemini API contents have parts but no record around them; Grok and Droid
    # write a "tool_result" type without a uuid tree.
    for name in ("gemini-api", "gemini-cli", "grok-cli", "factory-droid"):
        for path in sorted((corpus / name).glob("*.jsonl")):
            lines = [jsonl.parse(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
            assert QwenCodeAdapter.detect(lines) == Detection.NO, path


def test_record_types_without_the_uuid_envelope_are_not_qwen_code() -> None:
    # Grok CLI's chat history uses the same four type names, with no uuid tree around them.
    grok = [
        {"type": "user", "content": [{"type": "text", "text": "read hello.py"}]},
        {"type": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{}"}]},
        {"type": "tool_result", "tool_call_id": "c1", "content": "print(1)"},
    ]
    assert QwenCodeAdapter.detect(grok) == Detection.NO


def test_a_damaged_line_does_not_hide_a_qwen_session() -> None:
    lines = [prompt(_u(1), None, "hi"), {**assistant(_u(2), _u(1), [function_call("c1")]), "type": None}]
    assert detect_format(lines) is QwenCodeAdapter


def test_a_session_that_starts_with_system_records_is_qwen_code() -> None:
    head = [system(_u(1), None, "session_source", {"sourceType": "cli"}), system(_u(2), _u(1), "ui_telemetry", {"uiEvent": {}})]
    # A systemPayload is Qwen Code's own key.
    assert QwenCodeAdapter.detect(head) == Detection.CERTAIN
    assert detect_format([*head, prompt(_u(3), _u(2), "hi")]) is QwenCodeAdapter


def test_a_line_of_another_shape_among_qwen_records_vetoes_the_claim() -> None:
    claude_line = {
        "type": "user",
        "uuid": "u9",
        "parentUuid": None,
        "sessionId": SESSION,
        "message": {"role": "user", "content": "hi"},
    }
    lines = [prompt(_u(1), None, "hi"), claude_line]
    assert QwenCodeAdapter.detect(lines) == Detection.NO
    assert QwenCodeAdapter.detect([prompt(_u(1), None, "hi"), {"type": "summary", "leafUuid": "x"}]) == Detection.NO


# -- the sample session -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _check(corpus / name)
    assert report["format"] == "qwen-code"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _cli("check", str(corpus / name)).exit_code == (1 if CORPUS_VERDICTS[name] else 0)
    assert _unanswered(_resumed_history(_lines(corpus / name))) == []


def test_the_sample_cut_after_its_call_is_answered_with_the_record_qwen_code_writes(corpus: Path, tmp_path: Path) -> None:
    sample = _lines(corpus / SAMPLE)
    real_result = sample[2]
    target = _write(tmp_path / "cut.jsonl", sample[:2])
    assert _unanswered(_resumed_history(sample[:2])) == ["synthetic-call-1"]
    report = _check(target)
    assert [(f["code"], f["line"], f["call_id"], f["tool"]) for f in report["findings"]] == [
        ("APX001", 2, "synthetic-call-1", "read_file")
    ]

    assert _cli("fix", "--in-place", str(target)).exit_code == 1
    repaired = _lines(target)
    assert repaired[:2] == sample[:2]
    record = repaired[2]
    # The envelope of a real result line, field for field and in its order.
    assert list(record) == list(real_result)
    assert {k: record[k] for k in ("sessionId", "type", "cwd", "version")} == {
        k: real_result[k] for k in ("sessionId", "type", "cwd", "version")
    }
    assert record["parentUuid"] == sample[1]["uuid"]
    assert record["timestamp"] == sample[1]["timestamp"]
    assert record["message"] == {
        "role": "user",
        "parts": [{"functionResponse": {"id": "synthetic-call-1", "name": "read_file", "response": {"output": DEFAULT_MARKER}}}],
    }
    # Answered, without a word of failure: no "error" in the response, and the
    # status Qwen Code gives a call an abort cut off.
    assert record["toolCallResult"] == {"callId": "synthetic-call-1", "status": "cancelled", "resultDisplay": DEFAULT_MARKER}
    assert set(record["toolCallResult"]) == set(real_result["toolCallResult"])

    assert _unanswered(_resumed_history(repaired)) == []
    assert _cli("check", str(target)).exit_code == 0
    again = target.read_bytes()
    assert _cli("fix", "--in-place", str(target)).exit_code == 0
    assert target.read_bytes() == again


def test_a_record_after_a_cold_notification_from_elsewhere_hangs_off_the_call(corpus: Path) -> None:
    # The sample's last line (a notification) hangs off a line the cut left out.
    sample = _lines(corpus / SAMPLE)
    cut = [sample[0], sample[1], sample[5]]
    outcome = repair_messages(cut, format="qwen-code")
    (inserted,) = outcome.inserted
    assert inserted.index == 3 and inserted.record["parentUuid"] == sample[1]["uuid"]
    assert outcome.messages[:3] == cut
    assert _unanswered(_resumed_history(outcome.messages)) == []


# -- placing the record in the tree ---------------------------------------------------------


def test_the_next_prompt_is_re_pointed_at_the_record() -> None:
    lines = _session(
        prompt(_u(1), None, "read it", n=1),
        assistant(_u(2), _u(1), [function_call("c1")], n=2),
        system(_u(3), _u(2), "ui_telemetry", {"uiEvent": {}}, n=3),
        prompt(_u(4), _u(3), "never mind", n=9),
    )
    assert _unanswered(_resumed_history(lines)) == ["c1"]
    outcome = repair_messages(lines, format="qwen-code")
    record, prompt_line = outcome.messages[3], outcome.messages[4]
    assert record["parentUuid"] == _u(3) and prompt_line["parentUuid"] == record["uuid"]
    assert {k: v for k, v in prompt_line.items() if k != "parentUuid"} == {k: v for k, v in lines[3].items() if k != "parentUuid"}
    # Never earlier than the line before it.
    assert record["timestamp"] == lines[2]["timestamp"]
    assert _unanswered(_resumed_history(outcome.messages)) == []


def test_several_records_chain_to_each_other_after_the_last_line() -> None:
    lines = _session(
        prompt(_u(1), None, "edit both", n=1),
        assistant(_u(2), _u(1), [function_call("c1", "edit"), function_call("c2", "edit")], n=2),
        system(_u(3), _u(2), "ui_telemetry", {"uiEvent": {}}, n=7),
    )
    outcome = repair_messages(lines, format="qwen-code")
    first, second = outcome.messages[3], outcome.messages[4]
    assert [first["parentUuid"], second["parentUuid"]] == [_u(3), first["uuid"]]
    assert [r["toolCallResult"]["callId"] for r in (first, second)] == ["c1", "c2"]
    assert first["timestamp"] == second["timestamp"] == lines[2]["timestamp"]
    assert _unanswered(_resumed_history(outcome.messages)) == []


def test_a_rewound_branch_keeps_its_record_and_the_resumed_branch_is_untouched() -> None:
    lines = _session(
        prompt(_u(1), None, "what is in build?", n=1),
        assistant(_u(2), _u(1), [{"text": "Old artefacts."}], n=2),
        prompt(_u(3), _u(2), "delete it", n=3),
        assistant(_u(4), _u(3), [function_call("rm1")], n=4),
        system(_u(5), _u(2), "rewind", {"truncatedCount": 2}, n=5),
        prompt(_u(6), _u(5), "keep it", n=6),
    )
    outcome = repair_messages(lines, format="qwen-code")
    assert [m.get("parentUuid") for m in outcome.messages[4:]] == [_u(4), _u(2), _u(5)]
    assert outcome.messages[5:] == lines[4:]
    assert _resumed_history(outcome.messages) == _resumed_history(lines)


def test_inserted_uuids_are_uuid5_of_session_call_line_and_call() -> None:
    lines = _session(prompt(_u(1), None, "go", n=1), assistant(_u(2), _u(1), [function_call("c1")], n=2))
    (inserted,) = repair_messages(lines, format="qwen-code").inserted
    namespace = uuid_module.uuid5(uuid_module.NAMESPACE_URL, NAMESPACE_NAME)
    assert inserted.record["uuid"] == str(uuid_module.uuid5(namespace, f"{SESSION}\x00{_u(2)}\x00c1"))
    assert repair_messages(lines, format="qwen-code").inserted[0].record == inserted.record


def test_a_response_written_twice_gets_two_distinct_records() -> None:
    # The same response record twice, each time left unanswered: two records, two uuids.
    call_line = assistant(_u(2), _u(1), [function_call("c1")], n=2)
    lines = _session(
        prompt(_u(1), None, "go", n=1), call_line, prompt(_u(3), _u(2), "again", n=3), {**call_line, "parentUuid": _u(3)}
    )
    outcome = repair_messages(lines, format="qwen-code")
    uuids = [i.record["uuid"] for i in outcome.inserted]
    assert len(uuids) == 2 and len(set(uuids)) == 2
    assert check_messages(outcome.messages, format="qwen-code") == []


# -- what closes a call, and what does not ------------------------------------------------


def test_injected_user_records_between_a_call_and_its_result_close_nothing() -> None:
    lines = _session(
        prompt(_u(1), None, "run it", n=1),
        assistant(_u(2), _u(1), [function_call("c1")], n=2),
        user_subtype(_u(3), _u(2), "notification", "<task-notification>\ndone\n</task-notification>", provenance="system", n=3),
        user_subtype(_u(4), _u(3), "cron", "every hour: check CI", n=4),
        user_subtype(_u(5), _u(4), "goal_runtime", "verify the goal", provenance="goal_runtime", n=5),
        result(_u(6), _u(5), "c1", "ok", n=6),
        user_subtype(_u(7), _u(6), "mid_turn_user_message", "also check b", n=6),
        assistant(_u(8), _u(7), [{"text": "Done."}], n=7),
    )
    assert _found(lines) == []


def test_a_delivered_notification_turn_starts_the_history_a_cold_one_does_not() -> None:
    # A real prompt comes later: whether the call before it is checked depends on
    # whether the notification turn started the history. (A session with no
    # real user entry at all is checked from its first line either way.)
    call_line = assistant(_u(2), _u(1), [function_call("c1")], n=2)
    later = prompt(_u(3), _u(2), "and now?", n=3)
    cold = user_subtype(_u(1), None, "notification", "shell done", provenance="system", n=1)
    delivered = {**cold, "deliveredTurn": True}
    assert _found([cold, call_line, later]) == []
    assert _found([delivered, call_line, later]) == [("APX001", 2, "c1")]


def test_qwen_codes_own_synthesized_response_answers_but_is_reported() -> None:
    lines = _session(
        prompt(_u(1), None, "build", n=1),
        assistant(_u(2), _u(1), [function_call("c1")], n=2),
        result(_u(3), _u(2), "c1", ORPHAN_REPAIR, error=True, n=3),
    )
    findings = check_messages(lines, format="qwen-code")
    assert [(f.code, f.line, f.call_id, str(f.severity)) for f in findings] == [("APX006", 3, "c1", "info")]


def test_a_sidechain_pairs_within_its_own_thread() -> None:
    agent = "explore-7f3c"
    lines = _session(
        prompt(_u(1), None, "explore", n=1),
        assistant(_u(2), _u(1), [function_call("main1", "agent")], n=2),
        prompt(_u(3), None, "look around", agent=agent, n=3),
        assistant(_u(4), _u(3), [function_call("side1")], agent=agent, n=4),
        assistant(_u(5), _u(4), [{"text": "nothing here"}], agent=agent, n=5),
        result(_u(6), _u(2), "main1", "explored", n=6),
    )
    assert _found(lines) == [("APX001", 4, "side1")]
    outcome = repair_messages(lines, format="qwen-code")
    (inserted,) = outcome.inserted
    record = inserted.record
    assert inserted.index == 4 and record["parentUuid"] == _u(4)
    assert (record["isSidechain"], record["agentId"], record["agentName"]) == (True, agent, "Explore")
    assert outcome.messages[5]["parentUuid"] == record["uuid"]
    assert check_messages(outcome.messages, format="qwen-code") == []


def test_the_history_starts_at_the_first_real_prompt() -> None:
    lines = _session(
        system(_u(1), None, "session_source", {"sourceType": "cli"}, n=0),
        assistant(_u(2), _u(1), [function_call("early")], n=1),
        result(_u(3), _u(2), "ghost_before", "?", n=1),
        prompt(_u(4), _u(3), "the real question", n=2),
        result(_u(5), _u(4), "ghost", "?", n=3),
    )
    assert _found(lines) == [("APX002", 5, "ghost")]


def test_drop_orphans_moves_the_children_of_a_removed_line_up() -> None:
    lines = _session(
        prompt(_u(1), None, "go", n=1),
        assistant(_u(2), _u(1), [function_call("c1")], n=2),
        result(_u(3), _u(2), "nobody", "?", n=3),
        result(_u(4), _u(3), "c1", "ok", n=4),
    )
    outcome = repair_messages(lines, format="qwen-code", drop_orphans=True)
    assert [m["uuid"] for m in outcome.messages] == [_u(1), _u(2), _u(4)]
    assert outcome.messages[2]["parentUuid"] == _u(2)
    assert _resumed_history(outcome.messages)[-1] == lines[3]["message"]


# -- any session ----------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=histories(sidechains=False, rewinds=False), drop=st.booleans())
def test_any_repaired_session_resumes_with_every_call_answered(lines: list, drop: bool) -> None:
    # Without rewinds: a rewind written later to the point right after an
    # interrupted call would need that later line re-pointed too, which a
    # repair does not do (the record sits on the branch the call was closed on).
    outcome = repair_messages(lines, format="qwen-code", drop_orphans=drop)
    assert _unanswered(_resumed_history(outcome.messages)) == []
    assert repair_messages(outcome.messages, format="qwen-code", drop_orphans=drop).changed is False


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_KEYS = ["uuid", "parentUuid", "type", "subtype", "message", "timestamp", "sessionId", "isSidechain", "agentId", "deliveredTurn"]


@st.composite
def _odd_line(draw) -> dict:
    line = dict(
        draw(
            st.sampled_from(
                [prompt(_u(1), None, "x"), assistant(_u(2), _u(1), [function_call("c1")]), result(_u(3), _u(2), "c1", "ok")]
            )
        )
    )
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=4)):
        line[key] = draw(_JSON)
    if draw(st.booleans()) and isinstance(line.get("message"), dict):
        line["message"] = {**line["message"], "parts": draw(st.lists(_JSON | st.just(function_call("c1")), max_size=3))}
    return line


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_odd_line() | _JSON, max_size=8))
def test_lines_of_any_shape_are_read_without_an_error(lines: list) -> None:
    check_messages(lines, format="qwen-code")
    outcome = repair_messages(lines, format="qwen-code", drop_orphans=True)
    assert not [f for f in check_messages(outcome.messages, format="qwen-code") if f.code == "APX001"]


# -- the README example -------------------------------------------------------------------------

README_BEFORE = [
    '{"uuid":"u1","parentUuid":null,"sessionId":"3f6b2c1a","timestamp":"2026-03-14T09:00:01.000Z","type":"user","cwd":"/home/dev/shop","version":"0.21.13","message":{"role":"user","parts":[{"text":"Delete build/"}]}}',
    '{"uuid":"a1","parentUuid":"u1","sessionId":"3f6b2c1a","timestamp":"2026-03-14T09:00:03.000Z","type":"assistant","cwd":"/home/dev/shop","version":"0.21.13","model":"qwen3-coder-plus","message":{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"run_shell_command","args":{"command":"rm -rf build"}}}]}}',
    '{"uuid":"u2","parentUuid":"a1","sessionId":"3f6b2c1a","timestamp":"2026-03-14T09:00:20.000Z","type":"user","cwd":"/home/dev/shop","version":"0.21.13","message":{"role":"user","parts":[{"text":"wait, keep it"}]}}',
]
README_INSERTED = '{"uuid":"0eebd7da-011d-5008-9059-c7b991624971","parentUuid":"a1","sessionId":"3f6b2c1a","timestamp":"2026-03-14T09:00:03.000Z","type":"tool_result","cwd":"/home/dev/shop","version":"0.21.13","message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"run_shell_command","response":{"output":"not run: the turn was interrupted"}}}]},"toolCallResult":{"callId":"call_1","status":"cancelled","resultDisplay":"not run: the turn was interrupted"}}'
README_REPOINTED = README_BEFORE[2].replace('"parentUuid":"a1"', '"parentUuid":"0eebd7da-011d-5008-9059-c7b991624971"')


def test_the_readme_example_is_what_fix_writes(tmp_path: Path) -> None:
    source = tmp_path / "session.jsonl"
    source.write_text("".join(line + "\n" for line in README_BEFORE))
    out = tmp_path / "fixed.jsonl"
    assert _cli("fix", "--output", str(out), str(source)).exit_code == 1
    assert out.read_text().splitlines() == [README_BEFORE[0], README_BEFORE[1], README_INSERTED, README_REPOINTED]


def test_a_session_file_is_repaired_in_place_byte_for_byte_elsewhere(tmp_path: Path) -> None:
    case = CASES / "qwen-code" / "call-closed-by-the-next-prompt-is-chained-in"
    target = shutil.copyfile(case / "input.jsonl", tmp_path / "s.jsonl")
    original = target.read_bytes().splitlines(keepends=True)
    assert _cli("fix", "--in-place", str(target)).exit_code == 1
    repaired = target.read_bytes().splitlines(keepends=True)
    assert repaired[:3] == original[:3] and repaired[5:] == original[4:]
    assert adapter_class("qwen-code") is QwenCodeAdapter
