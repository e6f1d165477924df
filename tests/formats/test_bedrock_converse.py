"""The bedrock-converse format: detection, check and fix through the CLI and the library, records
in the shape the Converse API reference gives a toolResult, and the API's own rules (roles
alternate, every toolUse answered in the very next message) on every repaired history."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.anthropic import AnthropicAdapter
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.bedrock_converse import BedrockConverseAdapter
from apx_doctor.formats.chat import ChatAdapter
from apx_doctor.formats.gemini_api import GeminiApiAdapter
from apx_doctor.formats.responses import ResponsesAdapter

from strategies import bedrock_converse as strategy

FORMAT = "bedrock-converse"
CASES = Path(__file__).resolve().parents[1] / "cases" / FORMAT


def user(text):
    return {"role": "user", "content": [{"text": text}]}


def say(text):
    return {"role": "assistant", "content": [{"text": text}]}


def call(*ids, text=None):
    blocks = [{"text": text}] if text else []
    blocks += [{"toolUse": {"toolUseId": i, "name": "get_weather", "input": {"city": i}}} for i in ids]
    return {"role": "assistant", "content": blocks}


def result_block(call_id, text="20 C", **extra):
    return {"toolResult": {"toolUseId": call_id, "content": [{"text": text}], **extra}}


def results(*ids, text=None):
    blocks = [result_block(i, f"weather of {i}") for i in ids]
    if text:
        blocks.append({"text": text})
    return {"role": "user", "content": blocks}


def not_run_block(call_id):
    return {"toolResult": {"toolUseId": call_id, "content": [{"text": DEFAULT_MARKER}]}}


def codes(findings):
    return [(f.code, f.line, f.call_id) for f in findings]


# --- the Converse API's rules, as the service applies them -----------------------------------

# ContentBlock and ToolResultContentBlock are unions: exactly one member is set.
_BLOCKS = {"text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent",
           "cachePoint", "reasoningContent", "citationsContent", "searchResult"}  # fmt: skip
_RESULT_BLOCKS = {"text", "json", "image", "document", "video", "searchResult"}
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def shape_violations(message):
    """What the API reference forbids in one message (Message, ContentBlock, ToolResultBlock)."""
    problems = []
    if message.get("role") not in ("user", "assistant") or set(message) - {"role", "content"}:
        problems.append("a message is {role: user|assistant, content}")
    content = message.get("content")
    if not isinstance(content, list) or not content:
        return [*problems, "content is a non-empty list of blocks"]
    for block in content:
        if not isinstance(block, dict) or len(block) != 1 or next(iter(block)) not in _BLOCKS:
            problems.append(f"not a ContentBlock: {block!r}")
            continue
        result = block.get("toolResult")
        if result is None:
            continue
        if set(result) - {"toolUseId", "content", "status", "type"}:
            problems.append("unknown toolResult field")
        if not isinstance(result.get("toolUseId"), str) or not _TOOL_USE_ID.fullmatch(result["toolUseId"]):
            problems.append("toolUseId must match [a-zA-Z0-9_-]{1,64}")
        if result.get("status", "success") not in ("success", "error"):
            problems.append("status is success or error")
        parts = result.get("content")
        if not isinstance(parts, list) or not all(
            isinstance(p, dict) and len(p) == 1 and next(iter(p)) in _RESULT_BLOCKS for p in parts
        ):
            problems.append("toolResult content is a list of ToolResultContentBlock")
        elif any("text" in p and not isinstance(p["text"], str) for p in parts):
            problems.append("a text block holds a string")
    return problems


def api_violations(messages):
    """What the service refuses: roles alternate, and every client toolUse of an assistant message is
    answered, once, by the toolResult blocks of the very next message, which is a user message."""
    problems = []
    if messages and messages[0]["role"] != "user":
        problems.append("a conversation starts with a user message")
    previous = None
    expected = None
    for index, message in enumerate(messages):
        problems += [f"messages.{index}: {p}" for p in shape_violations(message)]
        role, content = message["role"], message["content"]
        if role == previous:
            problems.append(f"messages.{index}: a conversation must alternate between user and assistant roles")
        if role == "user":
            answered = [b["toolResult"]["toolUseId"] for b in content if "toolResult" in b]
            if sorted(answered) != sorted(expected or []):
                problems.append(f"messages.{index}: results {sorted(answered)} for calls {sorted(expected or [])}")
            expected = None
        else:
            if expected:
                problems.append(f"messages.{index}: expected toolResult blocks for {sorted(expected)}")
            expected = [
                b["toolUse"]["toolUseId"] for b in content if "toolUse" in b and b["toolUse"].get("type") != "server_tool_use"
            ]
        previous = role
    if expected:
        problems.append(f"calls {sorted(expected)} unanswered at the end")
    return problems


@pytest.mark.parametrize(
    "history, problem",
    [
        ([user("q"), call("t_a"), user("well?")], "results [] for calls ['t_a']"),
        ([user("q"), call("t_a", "t_b"), results("t_a"), results("t_b")], "alternate"),
        ([user("q"), call("t_a"), results("t_a"), user("next")], "alternate"),
        ([user("q"), call("t_a"), say("more")], "expected toolResult blocks"),
        ([user("q"), call("t_a")], "unanswered at the end"),
        ([user("q"), say("x"), results("t_ghost")], "results ['t_ghost'] for calls []"),
        (
            [user("q"), call("t_a"), {"role": "user", "content": [{"toolResult": {"toolUseId": "t a", "content": []}}]}],
            "toolUseId",
        ),
        ([user("q"), {"role": "assistant", "content": [{"type": "text", "text": "x"}]}], "not a ContentBlock"),
    ],
)
def test_the_validator_has_teeth(history, problem) -> None:
    assert any(problem in p for p in api_violations(history)), api_violations(history)


# --- detection -------------------------------------------------------------------------------


def test_the_corpus_sample_is_detected_and_clean(corpus: Path) -> None:
    path = corpus / FORMAT / "recorded_request_model_retry.jsonl"
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert BedrockConverseAdapter.detect(lines) == Detection.CERTAIN
    assert detect_format(lines) is BedrockConverseAdapter
    report = json.loads(CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", str(path)]).stdout)
    (file,) = report["files"]
    assert file["format"] == FORMAT
    # The toolUse on line 2 is answered on line 3, with status "error": a real (failed) result.
    assert file["findings"] == []
    assert check_messages(lines, format=FORMAT) == []
    assert api_violations(lines) == []
    # Cut before its result, the call is interrupted and the record ends the history.
    cut = repair_messages(lines[:2], format=FORMAT)
    assert codes(cut.findings) == [("APX001", 2, "tooluse_Ze_bgl9CSqu8aJv7XD-_Dw")]
    assert cut.messages[2] == {"role": "user", "content": [not_run_block("tooluse_Ze_bgl9CSqu8aJv7XD-_Dw")]}
    assert api_violations(cut.messages) == []


def test_no_other_adapter_claims_a_converse_line_and_it_claims_none_of_theirs() -> None:
    converse = [user("Weather?"), call("t_1", text="checking"), results("t_1", text="thanks")]
    for adapter in adapters():
        if adapter is not BedrockConverseAdapter:
            assert adapter.detect(converse) == Detection.NO, adapter.name
    others = [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}],
        [{"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        [{"role": "user", "parts": [{"text": "hi"}]}],
        [{"messages": [user("hi")]}],
        [{"type": "user", "message": {"role": "user", "content": [{"text": "hi"}]}, "uuid": "u1"}],
    ]
    for lines in others:
        assert BedrockConverseAdapter.detect(lines) == Detection.NO, lines


def test_plain_text_is_compatible_and_tool_blocks_are_certain() -> None:
    plain = [user("hi"), say("hello")]
    assert BedrockConverseAdapter.detect(plain) == Detection.COMPATIBLE
    # Nothing else reads text blocks without a type: the file is still told apart.
    assert detect_format(plain) is BedrockConverseAdapter
    for decisive in (
        call("t_1"),
        results("t_1"),
        {"role": "user", "content": [{"text": "x"}, {"cachePoint": {"type": "default"}}]},
    ):
        assert BedrockConverseAdapter.detect([user("hi"), decisive]) == Detection.CERTAIN


@pytest.mark.parametrize(
    "line",
    [
        {"role": "user", "content": [{"text": "hi", "type": "text"}]},
        {"role": "user", "content": [{"text": "hi", "image": {}}]},
        {"role": "user", "content": [{"toolResult": "not a block"}]},
        {"role": "user", "content": [{"text": 3}]},
        {"role": "user", "content": "a string"},
        {"role": "system", "content": [{"text": "be brief"}]},
        {"role": "user", "content": [{"text": "hi"}], "tool_calls": []},
        {"role": {"nested": True}, "content": [{"text": "hi"}]},
    ],
    ids=[
        "typed-block",
        "two-members",
        "result-not-a-dict",
        "text-not-a-string",
        "string-content",
        "system-role",
        "foreign-key",
        "dict-role",
    ],
)
def test_a_line_that_contradicts_the_format_vetoes_it(line) -> None:
    assert BedrockConverseAdapter.detect([user("hi"), call("t_1"), line]) == Detection.NO


# --- the pairing rules ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        [user("q"), call("t_a", "t_b"), results("t_b", "t_a"), say("done")],
        [user("q"), call("t_a"), results("t_a", text="and then?"), call("t_b"), results("t_b")],
        [user("q"), call("t_a"), {"role": "user", "content": [result_block("t_a", status="error")]}, say("it failed")],
        [
            user("q"),
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "t_srv", "name": "nova_code_interpreter", "input": {}, "type": "server_tool_use"}},
                    {
                        "toolResult": {
                            "toolUseId": "t_srv",
                            "content": [{"json": {"out": 1}}],
                            "type": "nova_code_interpreter_result",
                        }
                    },
                    {"text": "1"},
                ],
            },
            user("thanks"),
        ],
    ],
    ids=["parallel-out-of-order", "results-then-text", "error-status-is-a-result", "server-tool"],
)
def test_sound_histories_have_no_findings(history) -> None:
    assert check_messages(history, format=FORMAT) == []
    assert api_violations(history) == []


def test_a_call_closed_by_the_next_user_text_is_answered_inside_that_message() -> None:
    prompt = {
        "role": "user",
        "content": [{"text": "what did it find?"}, {"image": {"format": "png", "source": {"bytes": "iVBO"}}}],
    }
    history = [user("q"), call("t_a", text="looking"), prompt]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "t_a")]
    # One user turn: the record leads it, the user's blocks follow unchanged; nothing is inserted.
    assert result.messages == [*history[:2], {"role": "user", "content": [not_run_block("t_a"), *prompt["content"]]}]
    assert result.inserted == []
    assert [(e.action, e.line) for e in result.edits] == [
        ("insert", 3),
        ("replace", 3),
    ]  # the call answered, inside the rewritten line
    assert history[2] == prompt and api_violations(result.messages) == []


def test_a_partial_results_message_takes_the_missing_records_after_its_results() -> None:
    history = [user("q"), call("t_a", "t_b", "t_c"), results("t_b", text="a and c?"), say("b only")]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "t_a"), ("APX001", 2, "t_c")]
    merged = result.messages[2]["content"]
    assert merged == [history[2]["content"][0], not_run_block("t_a"), not_run_block("t_c"), {"text": "a and c?"}]
    assert result.messages[3] is history[3]
    assert api_violations(result.messages) == []


def test_calls_cut_before_another_assistant_message_get_one_user_turn_between() -> None:
    history = [user("q"), call("t_a", "t_b"), say("sorry, I was cut off")]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "t_a"), ("APX001", 2, "t_b")]
    assert result.messages == [
        *history[:2],
        {"role": "user", "content": [not_run_block("t_a"), not_run_block("t_b")]},
        history[2],
    ]
    # One inserted message answers both calls: listed once, at its place.
    assert [(i.index, i.call_id) for i in result.inserted] == [(2, "t_a")]
    assert api_violations(result.messages) == []


def test_a_result_after_the_turn_is_late_not_an_answer() -> None:
    history = [user("q"), call("t_a"), user("hurry"), say("..."), results("t_a")]
    assert codes(check_messages(history, format=FORMAT)) == [("APX001", 2, "t_a"), ("APX004", 5, "t_a")]


def test_results_before_the_first_user_entry_pass_through() -> None:
    history = [results("t_old"), user("q"), call("t_a"), results("t_a")]
    assert check_messages(history, format=FORMAT) == []


def test_placeholder_results_are_info() -> None:
    history = [user("q"), call("t_a"), {"role": "user", "content": [result_block("t_a", "aborted", status="error")]}]
    assert codes(check_messages(history, format=FORMAT)) == [("APX006", 3, "t_a")]


def test_drop_orphans_removes_only_the_stray_copies_and_keeps_every_other_key() -> None:
    message = {
        "role": "user",
        "content": [result_block("t_a", "1"), result_block("t_a", "2"), result_block("t_ghost"), {"text": "next"}],
    }
    history = [user("q"), call("t_a"), message]
    result = repair_messages(history, format=FORMAT, drop_orphans=True)
    assert codes(result.findings) == [("APX002", 3, "t_ghost"), ("APX003", 3, "t_a")]
    assert result.messages[2] == {"role": "user", "content": [result_block("t_a", "1"), {"text": "next"}]}
    assert api_violations(result.messages) == []


def test_stray_results_are_dropped_from_a_message_that_also_takes_records() -> None:
    history = [
        user("q"),
        call("t_a", "t_b"),
        {"role": "user", "content": [result_block("t_b"), result_block("t_ghost"), {"text": "and a?"}]},
    ]
    result = repair_messages(history, format=FORMAT, drop_orphans=True)
    assert result.messages[2]["content"] == [result_block("t_b"), not_run_block("t_a"), {"text": "and a?"}]
    assert api_violations(result.messages) == []


def test_a_tool_use_without_an_id_is_reported_and_never_answered() -> None:
    history = [
        user("q"),
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"name": "get_weather", "input": {}}},
                {"toolUse": {"toolUseId": 7, "name": "put", "input": {}}},
            ],
        },
        user("well?"),
    ]
    result = repair_messages(history, format=FORMAT)
    assert [(f.code, f.call_id, f.fixable) for f in result.findings] == [
        ("APX001", "get_weather#1", False),
        ("APX001", "put#2", False),
    ]
    assert result.messages == history and result.edits == []


def test_the_record_names_the_call_claims_no_failure_and_follows_the_marker() -> None:
    history = [user("q"), call("t_a"), user("well?")]
    block = repair_messages(history, format=FORMAT, marker="no result").messages[2]["content"][0]
    assert block == {"toolResult": {"toolUseId": "t_a", "content": [{"text": "no result"}]}}
    assert "status" not in block["toolResult"]  # "error" would say the tool failed
    repaired = repair_messages(history, format=FORMAT, marker="no result").messages
    assert check_messages(repaired, format=FORMAT, marker="no result") == []


def test_keep_open_tail_leaves_the_last_turn_open() -> None:
    history = [user("q"), call("t_a"), user("next"), call("t_b")]
    result = repair_messages(history, format=FORMAT, keep_open_tail=True)
    assert codes(result.findings) == [("APX001", 2, "t_a")]
    assert result.messages[3:] == history[3:]


def test_a_dataset_row_of_converse_messages_is_read_as_converse(tmp_path: Path) -> None:
    row = {"messages": [user("q"), call("t_a"), user("well?"), call("t_b")]}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    report = json.loads(CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", str(path)]).stdout)
    (file,) = report["files"]
    # The row's last call is its training target; the one cut mid-row is interrupted.
    assert file["format"] == "datasets"
    assert [(f["code"], f["line"], f.get("index"), f["call_id"]) for f in file["findings"]] == [("APX001", 1, 1, "t_a")]


# --- every repaired history, as the service would read it ----------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=strategy.histories(alternating=True))
def test_every_repaired_history_is_accepted_by_the_api_rules(history) -> None:
    result = repair_messages(history, format=FORMAT, drop_orphans=True)
    assert api_violations(result.messages) == []
    for inserted in result.inserted:
        assert shape_violations(inserted.record) == []
    again = repair_messages(result.messages, format=FORMAT, drop_orphans=True)
    assert again.messages == result.messages and again.edits == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=strategy.histories())
def test_every_call_reported_fixable_is_answered_by_the_repair(history) -> None:
    result = repair_messages(history, format=FORMAT)
    fixable = [f for f in result.findings if f.code == "APX001" and f.fixable]
    # One not-run result more for every call reported fixable, each naming its call.
    added = Counter(_not_run_results(result.messages)) - Counter(_not_run_results(history))
    assert sorted(added.elements()) == sorted(f.call_id for f in fixable)
    assert [f for f in check_messages(result.messages, format=FORMAT) if f.code == "APX001" and f.fixable] == []


def _not_run_results(messages) -> list[str]:
    return [
        block["toolResult"]["toolUseId"]
        for message in messages
        if message["role"] == "user"
        for block in message["content"]
        if "toolResult" in block and block["toolResult"]["content"] == [{"text": DEFAULT_MARKER}]
    ]


# --- the command line ------------------------------------------------------------------------


def _write(path: Path, lines) -> bytes:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    path.write_bytes(data)
    return data


def test_cli_check_dry_run_in_place_and_output(tmp_path: Path) -> None:
    lines = [user("q"), call("t_a", text="let me look"), user("well?"), say("I cannot tell.")]
    path = tmp_path / "session.jsonl"
    original = _write(path, lines)
    runner = CliRunner()

    check = runner.invoke(app, ["check", "--isolated", "--output-format", "json", str(path)])
    assert check.exit_code == 1
    file = json.loads(check.stdout)["files"][0]
    assert file["format"] == FORMAT
    assert [(f["code"], f["line"], f["call_id"]) for f in file["findings"]] == [("APX001", 2, "t_a")]

    dry = runner.invoke(app, ["fix", "--isolated", str(path)])
    assert dry.exit_code == 1 and path.read_bytes() == original

    out = tmp_path / "repaired.jsonl"
    assert runner.invoke(app, ["fix", "--isolated", "--output", str(out), str(path)]).exit_code == 1
    before, after = original.splitlines(), out.read_bytes().splitlines()
    # Only the user message that takes the record is rewritten; the rest is written back byte for byte.
    assert len(after) == len(before) and after[:2] == before[:2] and after[3] == before[3]
    assert orjson.loads(after[2]) == {"role": "user", "content": [not_run_block("t_a"), {"text": "well?"}]}

    assert runner.invoke(app, ["fix", "--isolated", "--in-place", str(path)]).exit_code == 1
    assert path.read_bytes() == out.read_bytes()
    assert runner.invoke(app, ["check", "--isolated", str(path)]).exit_code == 0
    assert runner.invoke(app, ["fix", "--isolated", "--in-place", str(path)]).exit_code == 0
    assert path.read_bytes() == out.read_bytes()


def test_a_call_that_cannot_be_answered_fails_check_and_fix_and_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    original = _write(
        path, [user("q"), {"role": "assistant", "content": [{"toolUse": {"name": "f", "input": {}}}]}, user("well?")]
    )
    runner = CliRunner()
    assert runner.invoke(app, ["check", "--isolated", str(path)]).exit_code == 1
    assert runner.invoke(app, ["fix", "--isolated", "--in-place", str(path)]).exit_code == 1
    assert path.read_bytes() == original


def test_library_leaves_its_input_alone() -> None:
    history = [user("q"), call("t_a"), user("well?")]
    before = orjson.dumps(history)
    result = repair_messages(history, format=FORMAT)
    assert orjson.dumps(history) == before
    assert result.messages[0] is history[0] and result.messages[1] is history[1]


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_golden_repairs_are_accepted_by_the_api_rules(case: str) -> None:
    repaired = [orjson.loads(line) for line in (CASES / case / "expected.jsonl").read_bytes().splitlines()]
    findings = json.loads((CASES / case / "findings.json").read_text())
    options = CASES / case / "options.json"
    dropped = options.exists() and json.loads(options.read_text()).get("drop_orphans", False)
    unfixable = any(f["code"] == "APX001" and "#" in f.get("call_id", "") for f in findings)
    strays = any(f["code"] in ("APX002", "APX003", "APX004") for f in findings) and not dropped
    # Stray results that are kept, and calls no record can answer, stay what the API refuses.
    if not unfixable and not strays:
        assert api_violations(repaired) == [], case
    for message in repaired:
        assert shape_violations(message) == [], (case, message)


def test_the_chat_and_anthropic_readers_see_nothing_of_theirs_here() -> None:
    lines = [user("q"), call("t_a"), user("well?")]
    for other in (ChatAdapter, AnthropicAdapter, ResponsesAdapter, GeminiApiAdapter):
        assert other.detect(lines) == Detection.NO
