"""The anthropic format: detection, check and fix through the CLI and the library, records the
official SDK accepts, and the Messages API's own pairing rules on every repaired history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic.types as at
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats.anthropic import AnthropicAdapter
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.chat import ChatAdapter

from strategies import anthropic as strategy

# Module-level: pydantic validates the SDK's `Iterable[...]` fields lazily, with iterators
# that need their adapter alive.
_HISTORY = TypeAdapter(list[at.MessageParam])
_MESSAGE = TypeAdapter(at.MessageParam)
_TOOL_RESULT = TypeAdapter(at.ToolResultBlockParam)


def _drain(value):
    """Walk a validated value, so lazily validated iterables (message content) are checked too."""
    if isinstance(value, dict):
        return {k: _drain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [_drain(v) for v in value]
    return value


class _Strict:
    def __init__(self, adapter: TypeAdapter) -> None:
        self.adapter = adapter

    def validate_python(self, value):
        return _drain(self.adapter.validate_python(value))


HISTORY, MESSAGE, TOOL_RESULT = _Strict(_HISTORY), _Strict(_MESSAGE), _Strict(_TOOL_RESULT)


def user(text):
    return {"role": "user", "content": text}


def call(*ids, text=None):
    blocks = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": i, "name": "get_weather", "input": {"city": i}} for i in ids]
    return {"role": "assistant", "content": blocks}


def results(*ids, text=None):
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": f"weather of {i}"} for i in ids]
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def codes(findings):
    return [(f.code, f.line, f.call_id) for f in findings]


def not_run(call_id):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": DEFAULT_MARKER}]}


# --- the Messages API's rules, as the server applies them --------------------------------


def merged(messages):
    """Consecutive messages of one role, merged into one turn, as the API does."""
    turns: list[tuple[str, list]] = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if turns and turns[-1][0] == message["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((message["role"], blocks))
    return turns


def api_violations(messages):
    """What the API would refuse: every tool_use answered at the very start of the next user turn."""
    problems = []
    expected: set[str] = set()
    for role, blocks in merged(messages):
        if role == "user":
            lead = []
            for block in blocks:
                if block.get("type") != "tool_result":
                    break
                lead.append(block["tool_use_id"])
            placed = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            if placed != lead:
                problems.append("tool_result after other content")
            if sorted(lead) != sorted(expected):
                problems.append(f"results {sorted(lead)} for calls {sorted(expected)}")
            expected = set()
        else:
            if expected:
                problems.append(f"calls {sorted(expected)} not answered by the next user turn")
            expected = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    if expected:
        problems.append(f"calls {sorted(expected)} unanswered at the end")
    return problems


# --- detection -----------------------------------------------------------------------------


def test_corpus_files_are_detected_and_get_their_known_verdicts(corpus: Path) -> None:
    verdicts = {
        "weather_round_trip.jsonl": [],
        "programmatic_server_tool_use.jsonl": [],
        "orphan_tool_result_refused_400.jsonl": [("APX002", 2, "toolu_01GHndag5wQmbzNihYmV2UBj")],
    }
    for name, want in verdicts.items():
        path = corpus / "anthropic" / name
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        assert detect_format(lines) is AnthropicAdapter, name
        report = json.loads(CliRunner().invoke(app, ["check", "--output-format", "json", str(path)]).stdout)
        file = report["files"][0]
        assert file["format"] == "anthropic"
        assert [(f["code"], f["line"], f.get("call_id")) for f in file["findings"]] == want, name
        assert codes(check_messages(lines, format="anthropic")) == want


def test_the_programmatic_call_is_answered_and_the_server_tool_is_not_a_call(corpus: Path) -> None:
    lines = [orjson.loads(x) for x in (corpus / "anthropic" / "programmatic_server_tool_use.jsonl").read_bytes().splitlines()]
    # Without its result, the client tool_use called from code execution is interrupted; the
    # server_tool_use beside it never is.
    findings = check_messages(lines[:2], format="anthropic")
    assert codes(findings) == [("APX001", 2, "toolu_011MDRpaZRMRRjtFkJizD6nS")]
    HISTORY.validate_python(repair_messages(lines[:2], format="anthropic").messages)


def test_plain_text_stays_chat_and_tool_blocks_are_certain() -> None:
    plain = [user("hi"), {"role": "assistant", "content": "hello"}]
    assert AnthropicAdapter.detect(plain) == Detection.COMPATIBLE
    assert detect_format(plain) is ChatAdapter
    with_tools = [user("hi"), call("toolu_1"), results("toolu_1")]
    assert AnthropicAdapter.detect(with_tools) == Detection.CERTAIN
    assert ChatAdapter.detect(with_tools) == Detection.NO
    assert detect_format(with_tools) is AnthropicAdapter
    thinking = [user("hi"), {"role": "assistant", "content": [{"type": "thinking", "thinking": "..", "signature": "s"}]}]
    assert detect_format(thinking) is AnthropicAdapter


@pytest.mark.parametrize(
    "line",
    [
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"},
        {"messages": [{"role": "user", "content": "hi"}]},
    ],
    ids=["chat-tool", "chat-tool-calls", "responses-item", "responses-part", "claude-code", "dataset"],
)
def test_lines_of_other_formats_are_no(line) -> None:
    assert AnthropicAdapter.detect([user("hi"), call("toolu_1"), line]) == Detection.NO


# --- the pairing rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        [user("q"), call("toolu_a", "toolu_b"), results("toolu_b", "toolu_a"), {"role": "assistant", "content": "done"}],
        [user("q"), call("toolu_a", "toolu_b"), results("toolu_a"), results("toolu_b"), user("next")],
        [user("q"), call("toolu_a"), results("toolu_a", text="and then?"), call("toolu_b"), results("toolu_b")],
        [user("q"), call("toolu_a"), {"role": "assistant", "content": "(continued)"}, results("toolu_a")],
        [
            user("q"),
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                    {"type": "text", "text": "found it"},
                ],
            },
            user("thanks"),
        ],
    ],
    ids=["parallel-out-of-order", "split-over-merged-user-messages", "results-then-text", "continued-reply", "server-tool"],
)
def test_sound_histories_have_no_findings(history) -> None:
    assert check_messages(history, format="anthropic") == []
    assert api_violations(history) == []
    HISTORY.validate_python(history)


def test_a_call_is_closed_by_the_next_user_text_and_the_record_merges_before_it() -> None:
    history = [user("q"), call("toolu_a", "toolu_b"), results("toolu_b", text="what about a?")]
    result = repair_messages(history, format="anthropic")
    assert codes(result.findings) == [("APX001", 2, "toolu_a")]
    assert result.messages == [*history[:2], not_run("toolu_a"), history[2]]
    assert api_violations(result.messages) == []


def test_a_results_only_message_leaves_the_window_open_until_the_next_reply() -> None:
    history = [user("q"), call("toolu_a", "toolu_b"), results("toolu_b"), {"role": "assistant", "content": "b only"}]
    result = repair_messages(history, format="anthropic")
    assert codes(result.findings) == [("APX001", 2, "toolu_a")]
    assert result.messages == [*history[:3], not_run("toolu_a"), history[3]]
    assert [i.index for i in result.inserted] == [3]


def test_a_result_arriving_after_the_window_is_late_not_an_answer() -> None:
    history = [user("q"), call("toolu_a"), user("hurry"), results("toolu_a")]
    assert codes(check_messages(history, format="anthropic")) == [("APX001", 2, "toolu_a"), ("APX004", 4, "toolu_a")]


def test_placeholder_results_are_info() -> None:
    history = [
        user("q"),
        call("toolu_a"),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "aborted"}]},
    ]
    assert codes(check_messages(history, format="anthropic")) == [("APX006", 3, "toolu_a")]


def test_drop_orphans_removes_only_the_stray_copies() -> None:
    history = [user("q"), call("toolu_a"), results("toolu_a", "toolu_a", "toolu_ghost", text="next")]
    result = repair_messages(history, format="anthropic", drop_orphans=True)
    assert codes(result.findings) == [("APX002", 3, "toolu_ghost"), ("APX003", 3, "toolu_a")]
    assert result.messages[2] == results("toolu_a", text="next")
    assert api_violations(result.messages) == []


def test_a_toolset_member_result_names_its_toolset() -> None:
    tool_use = {"type": "tool_use", "id": "toolu_t", "name": "read", "input": {}, "toolset_name": "files"}
    result = repair_messages([user("q"), {"role": "assistant", "content": [tool_use]}], format="anthropic")
    block = result.inserted[0].record["content"][0]
    assert block["toolset_name"] == "files"
    TOOL_RESULT.validate_python(block)


# --- tool_result blocks come first in their user message (APX007) ---------------------------


def text(value):
    return {"type": "text", "text": value}


def result_block(call_id, content="20 C"):
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


@pytest.mark.parametrize(
    "content, repaired, late",
    [
        (
            [text("here"), result_block("toolu_a"), result_block("toolu_b")],
            [result_block("toolu_a"), result_block("toolu_b"), text("here")],
            "toolu_a",
        ),
        (
            [result_block("toolu_b"), text("and"), result_block("toolu_a")],
            [result_block("toolu_b"), result_block("toolu_a"), text("and")],
            "toolu_a",
        ),
        (
            [IMAGE, result_block("toolu_b", [text("x")]), text("then"), result_block("toolu_a")],
            [result_block("toolu_b", [text("x")]), result_block("toolu_a"), IMAGE, text("then")],
            "toolu_b",
        ),
    ],
    ids=["text-first", "text-between-results", "image-and-text-around-results"],
)
def test_results_after_other_content_are_reported_and_moved_to_the_front(content, repaired, late) -> None:
    message = {"role": "user", "content": content, "metadata": {"kept": True}}
    history = [user("q"), call("toolu_a", "toolu_b"), message, {"role": "assistant", "content": "done"}]
    assert "tool_result after other content" in api_violations(history)
    result = repair_messages(history, format="anthropic")
    # The finding names the first result that stands after other content.
    assert codes(result.findings) == [("APX007", 3, late)]
    # The results still answer their calls: nothing is inserted, only the line's order changes.
    assert result.inserted == []
    assert [(e.action, e.line) for e in result.edits] == [("replace", 3)]
    assert result.messages == [*history[:2], {**message, "content": repaired}, history[3]]
    assert list(result.messages[2]) == ["role", "content", "metadata"]
    assert api_violations(result.messages) == []
    HISTORY.validate_python(result.messages)
    assert repair_messages(result.messages, format="anthropic").findings == []


def test_results_first_then_text_is_sound_and_left_alone() -> None:
    history = [user("q"), call("toolu_a"), {"role": "user", "content": [result_block("toolu_a"), text("next"), IMAGE]}]
    result = repair_messages(history, format="anthropic")
    assert result.findings == [] and result.edits == [] and result.messages[2] is history[2]


def test_only_the_message_with_text_first_is_rewritten_when_results_are_split() -> None:
    # Merged by the API into [a, text, b]: the second message is the one out of order.
    history = [
        user("q"),
        call("toolu_a", "toolu_b"),
        results("toolu_a"),
        {"role": "user", "content": [text("and"), result_block("toolu_b")]},
    ]
    assert "tool_result after other content" in api_violations(history)
    result = repair_messages(history, format="anthropic")
    assert codes(result.findings) == [("APX007", 4, "toolu_b")]
    assert result.messages[:3] == history[:3] and result.messages[2] is history[2]
    assert result.messages[3] == {"role": "user", "content": [result_block("toolu_b"), text("and")]}
    assert api_violations(result.messages) == []


def test_an_unanswered_call_gets_its_record_before_the_rewritten_message() -> None:
    history = [user("q"), call("toolu_a", "toolu_b"), {"role": "user", "content": [text("only a:"), result_block("toolu_a")]}]
    result = repair_messages(history, format="anthropic")
    assert codes(result.findings) == [("APX001", 2, "toolu_b"), ("APX007", 3, "toolu_a")]
    assert result.messages == [
        *history[:2],
        not_run("toolu_b"),
        {"role": "user", "content": [result_block("toolu_a"), text("only a:")]},
    ]
    assert api_violations(result.messages) == []


def test_a_stray_result_out_of_order_is_moved_and_only_dropped_on_request() -> None:
    history = [
        user("q"),
        call("toolu_a"),
        {"role": "user", "content": [result_block("toolu_a"), text("see"), result_block("toolu_ghost")]},
    ]
    assert codes(check_messages(history, format="anthropic")) == [("APX002", 3, "toolu_ghost"), ("APX007", 3, "toolu_ghost")]
    kept = repair_messages(history, format="anthropic").messages[2]["content"]
    assert kept == [result_block("toolu_a"), result_block("toolu_ghost"), text("see")]
    dropped = repair_messages(history, format="anthropic", drop_orphans=True).messages[2]["content"]
    assert dropped == [result_block("toolu_a"), text("see")]


def test_the_cli_rewrites_only_that_line_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    lines = [user("q"), call("toolu_a"), {"role": "user", "content": [text("here"), result_block("toolu_a")]}, user("thanks")]
    path = tmp_path / "session.jsonl"
    original = _write(path, lines)
    runner = CliRunner()
    check = runner.invoke(app, ["check", "--output-format", "json", str(path)])
    assert check.exit_code == 1
    (finding,) = json.loads(check.stdout)["files"][0]["findings"]
    assert (finding["code"], finding["name"], finding["severity"], finding["line"]) == (
        "APX007",
        "tool-result-after-content",
        "error",
        3,
    )
    fixed = runner.invoke(app, ["fix", "--in-place", str(path)])
    assert fixed.exit_code == 1
    before, after = original.splitlines(), path.read_bytes().splitlines()
    assert after[:2] == before[:2] and after[3] == before[3]
    assert orjson.loads(after[2]) == {"role": "user", "content": [result_block("toolu_a"), text("here")]}
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    assert runner.invoke(app, ["fix", "--in-place", str(path)]).exit_code == 0
    assert path.read_bytes().splitlines() == after


@st.composite
def _shuffled_histories(draw) -> list:
    """The drawn histories, with the blocks of some user messages put in any order."""
    history = draw(strategy.histories())
    for message in history:
        if message["role"] == "user" and isinstance(message["content"], list) and draw(st.booleans()):
            message["content"] = draw(st.permutations(message["content"]))
    return history


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=_shuffled_histories())
def test_every_repaired_history_with_blocks_in_any_order_is_accepted(history) -> None:
    result = repair_messages(history, format="anthropic", drop_orphans=True)
    assert api_violations(result.messages) == []
    HISTORY.validate_python(result.messages)
    moved = {f.line for f in result.findings if f.code == "APX007"}
    for line, message in enumerate(history, 1):
        blocks = message["content"] if message["role"] == "user" and isinstance(message["content"], list) else []
        kinds = [b["type"] == "tool_result" for b in blocks]
        assert (line in moved) == (kinds != sorted(kinds, reverse=True))
    assert repair_messages(result.messages, format="anthropic").messages == result.messages


# --- what the official SDK accepts ---------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "user", "content": [{"type": "tool_result", "content": "x"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}]}]},
        {"role": "tool", "content": "x"},
    ],
)
def test_the_validator_has_teeth(bad) -> None:
    with pytest.raises(ValidationError):
        MESSAGE.validate_python(bad)


def test_every_inserted_record_is_a_message_param_with_a_tool_result_block() -> None:
    history = [user("q"), call("toolu_a", "toolu_b", text="checking"), user("well?"), call("toolu_c")]
    result = repair_messages(history, format="anthropic")
    assert [i.call_id for i in result.inserted] == ["toolu_a", "toolu_b", "toolu_c"]
    for inserted in result.inserted:
        MESSAGE.validate_python(inserted.record)
        (block,) = inserted.record["content"]
        TOOL_RESULT.validate_python(block)
        assert block == {"type": "tool_result", "tool_use_id": inserted.call_id, "content": DEFAULT_MARKER}
        assert "is_error" not in block  # no claim of failure beyond the text
    HISTORY.validate_python(result.messages)
    assert api_violations(result.messages) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=strategy.histories())
def test_every_repaired_history_is_accepted_by_the_sdk_and_the_api_rules(history) -> None:
    result = repair_messages(history, format="anthropic", drop_orphans=True)
    HISTORY.validate_python(result.messages)
    for inserted in result.inserted:
        MESSAGE.validate_python(inserted.record)
    assert api_violations(result.messages) == []
    assert repair_messages(result.messages, format="anthropic").messages == result.messages


# --- the command line --------------------------------------------------------------------------


def _write(path: Path, lines) -> bytes:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    path.write_bytes(data)
    return data


def test_cli_check_dry_run_in_place_and_output(tmp_path: Path) -> None:
    lines = [user("q"), call("toolu_a", text="let me look"), user("well?")]
    path = tmp_path / "session.jsonl"
    original = _write(path, lines)
    runner = CliRunner()

    check = runner.invoke(app, ["check", "--output-format", "json", str(path)])
    assert check.exit_code == 1
    file = json.loads(check.stdout)["files"][0]
    assert file["format"] == "anthropic"
    assert [(f["code"], f["line"], f["call_id"]) for f in file["findings"]] == [("APX001", 2, "toolu_a")]

    dry = runner.invoke(app, ["fix", str(path)])
    assert dry.exit_code == 1
    assert path.read_bytes() == original

    out = tmp_path / "repaired.jsonl"
    written = runner.invoke(app, ["fix", "--output", str(out), str(path)])
    assert written.exit_code == 1
    repaired = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert repaired == [*lines[:2], not_run("toolu_a"), lines[2]]
    # The lines no edit touches are written back byte for byte.
    assert out.read_bytes().splitlines()[:2] == original.splitlines()[:2]
    HISTORY.validate_python(repaired)

    in_place = runner.invoke(app, ["fix", "--in-place", "--input-format", "anthropic", str(path)])
    assert in_place.exit_code == 1
    assert path.read_bytes() == out.read_bytes()
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    assert runner.invoke(app, ["fix", "--in-place", str(path)]).exit_code == 0
    assert path.read_bytes() == out.read_bytes()


def test_library_leaves_its_input_alone() -> None:
    history = [user("q"), call("toolu_a")]
    before = orjson.dumps(history)
    result = repair_messages(history, format="anthropic")
    assert orjson.dumps(history) == before
    assert result.messages[:2] == history and result.messages[0] is history[0]
    assert result.messages[2] == not_run("toolu_a")


CASES = Path(__file__).resolve().parents[1] / "cases" / "anthropic"


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_golden_repairs_are_accepted_by_the_sdk(case: str) -> None:
    expected = CASES / case / "expected.jsonl"
    repaired = [orjson.loads(line) for line in expected.read_bytes().splitlines()]
    HISTORY.validate_python(repaired)


def test_recorded_response_messages_are_read_as_messages() -> None:
    # Runtimes often write the API's reply object itself: it carries id, type, model, usage...
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    history = [user("q"), reply, user("well?")]
    assert detect_format(history) is AnthropicAdapter
    assert codes(check_messages(history, format="anthropic")) == [("APX001", 2, "toolu_1")]
