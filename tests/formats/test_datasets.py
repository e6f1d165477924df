"""The datasets format: one whole conversation a line, each row checked as its own history."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import orjson
import pytest
from anthropic.types import MessageParam
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats._layout import Layout, dumps_like, layout_of
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.datasets import DatasetsAdapter

import strategies

SAMPLE = "datasets/openai_finetune_final_call_is_target.jsonl"
_CHAT = TypeAdapter(list[ChatCompletionMessageParam])
_ANTHROPIC = TypeAdapter(list[MessageParam])
TOOLS = [{"type": "function", "function": {"name": "takeoff_drone", "parameters": {"type": "object", "properties": {}}}}]


def _call(call_id: str, name: str = "takeoff_drone") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _calls(*ids: str) -> dict:
    return {"role": "assistant", "tool_calls": [_call(i) for i in ids]}


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def _tool(call_id: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


# A dataset in the cookbook's own style (", " and ": " separators): row 2 has a
# call that the next user message cuts off; rows 1 and 3 end on their targets.
ROWS = [
    {"messages": [_user("Take off"), _calls("call_id")], "tools": TOOLS},
    {"tools": TOOLS, "messages": [_user("Take off"), _calls("c1"), _user("Well?"), _calls("c2")], "parallel_tool_calls": False},
    {"messages": [_user("Land"), _calls("c9"), _tool("c9", "landed"), {"role": "assistant", "content": "Landed."}]},
]


def _dataset(path: Path, rows: list[dict] = ROWS) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(*args: str) -> dict:
    result = _invoke(*args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


# detection


def test_rows_with_a_messages_list_are_datasets_and_chat_files_stay_chat(corpus: Path) -> None:
    samples = [orjson.loads(line) for line in (corpus / SAMPLE).read_bytes().splitlines()]
    assert DatasetsAdapter.detect(samples) == Detection.CERTAIN
    assert detect_format(samples) is DatasetsAdapter
    chat = ROWS[1]["messages"]
    assert DatasetsAdapter.detect(chat) == Detection.NO
    assert detect_format(chat).name == "chat"
    assert DatasetsAdapter.detect([{"messages": "not a list"}]) == Detection.NO


# the sample, through the CLI


def test_the_cookbook_example_is_clean_its_final_call_is_the_target(corpus: Path) -> None:
    report = _report("check", str(corpus / SAMPLE))
    assert report["format"] == "datasets"
    assert report["findings"] == []
    assert _invoke("check", str(corpus / SAMPLE)).exit_code == 0
    assert _invoke("fix", str(corpus / SAMPLE)).exit_code == 0


# check and fix through the CLI


def test_check_names_the_line_and_the_message_index(tmp_path: Path) -> None:
    report = _report("check", str(_dataset(tmp_path / "d.jsonl")))
    assert [(f["code"], f["line"], f["index"], f["call_id"]) for f in report["findings"]] == [("APX001", 2, 1, "c1")]
    assert _invoke("check", str(tmp_path / "d.jsonl")).exit_code == 1


def test_dry_run_reports_edits_with_their_index_and_writes_nothing(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "d.jsonl")
    before = path.read_bytes()
    report = _report("fix", str(path))
    assert path.read_bytes() == before
    assert [(e["action"], e.get("index"), e.get("call_id")) for e in report["edits"]] == [
        ("replace", None, None),
        ("insert", 2, "c1"),
    ]
    assert all(e.get("line", e.get("before_line")) == 2 for e in report["edits"])
    assert report["changed"] is True and report["written"] is False


def test_fix_rewrites_only_the_broken_row_keeping_its_key_order(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "d.jsonl")
    original = path.read_bytes().splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    assert _invoke("fix", "--output", str(out), str(path)).exit_code == 1
    repaired = out.read_bytes().splitlines(keepends=True)
    assert len(repaired) == 3
    assert repaired[0] == original[0] and repaired[2] == original[2]
    row = json.loads(repaired[1])
    assert list(row) == ["tools", "messages", "parallel_tool_calls"]
    messages = ROWS[1]["messages"]
    assert row["messages"] == messages[:2] + [_tool("c1", DEFAULT_MARKER)] + messages[2:]
    assert {k: v for k, v in row.items() if k != "messages"} == {k: v for k, v in ROWS[1].items() if k != "messages"}


def test_fix_in_place_then_nothing_is_left(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "d.jsonl")
    out = tmp_path / "out.jsonl"
    _invoke("fix", "--output", str(out), str(_dataset(tmp_path / "copy.jsonl")))
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == out.read_bytes()
    assert _invoke("check", str(path)).exit_code == 0
    repaired = path.read_bytes()
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0
    assert path.read_bytes() == repaired


def test_repaired_chat_rows_are_valid_chat_completions_histories(tmp_path: Path, corpus: Path) -> None:
    source = shutil.copyfile(corpus / SAMPLE, tmp_path / "sample.jsonl")
    with source.open("a") as f:
        f.write("".join(json.dumps(row) + "\n" for row in ROWS))
    out = tmp_path / "out.jsonl"
    _invoke("fix", "--output", str(out), str(source))
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert len(rows) == 4
    for row in rows:
        _CHAT.validate_python(row["messages"])


def test_a_line_that_is_no_row_is_unrecognised_and_the_rest_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "hi", "completion": "hello"}\n' + json.dumps(ROWS[1]) + "\n")
    report = _report("check", str(path))
    assert [(f["code"], f["line"], f.get("index")) for f in report["findings"]] == [("APX104", 1, None), ("APX001", 2, 1)]


# the library: a list of rows in, a list of rows out


def test_library_takes_rows_and_names_row_and_index() -> None:
    findings = check_messages(ROWS, format="datasets")
    assert [(f.code, f.line, f.index, f.call_id) for f in findings] == [("APX001", 2, 1, "c1")]
    assert [(f.code, f.line, f.index) for f in check_messages(ROWS, format="auto")] == [("APX001", 2, 1)]


def test_library_repair_returns_rows_and_leaves_the_input_alone() -> None:
    rows = copy.deepcopy(ROWS)
    result = repair_messages(rows, format="datasets")
    assert rows == ROWS
    assert result.changed
    assert result.messages[0] is rows[0] and result.messages[2] is rows[2]
    assert list(result.messages[1]) == list(rows[1])
    assert result.messages[1]["messages"][2] == _tool("c1", DEFAULT_MARKER)
    inserts = [(e.line, e.index, e.call_id) for e in result.edits if e.action == "insert"]
    assert inserts == [(2, 2, "c1")]
    assert check_messages(result.messages, format="datasets") == []
    assert repair_messages(result.messages, format="datasets").changed is False


def test_a_call_cut_off_by_the_next_assistant_message_is_closed_but_the_last_is_the_target() -> None:
    rows = [{"messages": [_user("go"), _calls("a"), _calls("b")]}]
    result = repair_messages(rows, format="datasets")
    assert [(f.code, f.index, f.call_id) for f in result.findings] == [("APX001", 1, "a")]
    assert result.messages[0]["messages"] == [_user("go"), _calls("a"), _tool("a", DEFAULT_MARKER), _calls("b")]


def test_drop_orphans_removes_the_stray_result_inside_its_row() -> None:
    rows = [{"messages": [_user("hi"), _tool("ghost", "?"), {"role": "assistant", "content": "hello"}]}, ROWS[0]]
    result = repair_messages(rows, format="datasets", drop_orphans=True)
    assert [(f.code, f.line, f.index) for f in result.findings] == [("APX002", 1, 1)]
    assert [(e.action, e.line, e.index) for e in result.removed] == [("remove", 1, 1)]
    assert result.messages[0]["messages"] == [_user("hi"), {"role": "assistant", "content": "hello"}]
    assert result.messages[1] is rows[1]


def test_each_row_is_read_in_its_own_message_format() -> None:
    anthropic_row = {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}]},
            {"role": "user", "content": "Hello?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {}}]},
        ]
    }
    result = repair_messages([ROWS[2], anthropic_row], format="datasets")
    assert [(f.code, f.line, f.index, f.call_id) for f in result.findings] == [("APX001", 2, 1, "toolu_1")]
    repaired = result.messages[1]["messages"]
    _ANTHROPIC.validate_python(repaired)
    answers = [
        block
        for message in repaired
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [(b["tool_use_id"], b["content"]) for b in answers] == [("toolu_1", DEFAULT_MARKER)]
    # toolu_2 is the row's final call: its training target, left unanswered.
    assert repaired[-1] == anthropic_row["messages"][-1]


@pytest.mark.parametrize("messages", [[], [{"role": "user", "content": "hi"}], [42, "text"]])
def test_rows_that_hold_no_call_need_nothing(messages: list) -> None:
    findings = check_messages([{"messages": messages}], format="datasets")
    assert [f.code for f in findings] == (["APX104", "APX104"] if messages == [42, "text"] else [])


# LLaMA-Factory v1 rows: calls are content parts, results answer by position

V1_SAMPLE = "datasets/llamafactory_v1_reason_tool_use_demo_50.jsonl"
CONVERSATIONS_SAMPLE = "datasets/conversations_keyed_one_row.jsonl"


def _v1(role: str, *parts: tuple[str, str], **extra) -> dict:
    return {"role": role, "content": [{"type": kind, "value": value} for kind, value in parts], **extra}


def _v1_call(name: str, **arguments) -> tuple[str, str]:
    return "tool_call", json.dumps({"name": name, "arguments": arguments})


def _v1_tool(text: str, **extra) -> dict:
    return _v1("tool", ("text", text), **extra)


V1_MARKER = _v1_tool(DEFAULT_MARKER)


def _v1_turn(calls: int) -> dict:
    return _v1("assistant", ("reasoning", "Think."), *[_v1_call("circle_area", radius=k) for k in range(calls)])


def _rows(corpus: Path, name: str) -> list[dict]:
    return [orjson.loads(line) for line in (corpus / name).read_bytes().splitlines()]


def test_the_llamafactory_v1_sample_is_clean_and_drop_orphans_removes_nothing(corpus: Path, tmp_path: Path) -> None:
    report = _report("check", "--isolated", str(corpus / V1_SAMPLE))
    assert report["format"] == "datasets"
    assert report["findings"] == []
    out = tmp_path / "out.jsonl"
    result = _invoke("fix", "--isolated", "--drop-orphans", "--output", str(out), str(corpus / V1_SAMPLE))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == (corpus / V1_SAMPLE).read_bytes()
    assert repair_messages(_rows(corpus, V1_SAMPLE), format="datasets", drop_orphans=True).edits == []


def test_the_conversations_keyed_sample_is_clean_its_final_call_is_the_target(corpus: Path) -> None:
    report = _report("check", "--isolated", str(corpus / CONVERSATIONS_SAMPLE))
    assert report["format"] == "datasets"
    assert report["findings"] == []


def test_a_sample_row_whose_tool_message_is_lost_has_each_call_of_its_turn_closed(corpus: Path) -> None:
    # Row 3 of the sample: two calls answered by one tool message, then three by one.
    row = _rows(corpus, V1_SAMPLE)[2]
    messages = row["messages"]
    assert [m["role"] for m in messages[2:5]] == ["assistant", "tool", "assistant"]
    cut = {**row, "messages": messages[:3] + messages[4:]}
    result = repair_messages([cut], format="datasets")
    assert [(f.code, f.index, f.call_id, f.tool) for f in result.findings] == [
        ("APX001", 2, "#2.0", "circle_area"),
        ("APX001", 2, "#2.1", "circle_area"),
    ]
    assert result.messages[0]["messages"] == messages[:3] + [V1_MARKER, V1_MARKER] + messages[4:]
    assert check_messages(result.messages, format="datasets") == []


@pytest.mark.parametrize(
    ("calls", "results", "closed", "orphans"),
    [
        (1, 1, [], []),
        (2, 1, [], []),  # one tool message answers the whole turn, as LLaMA-Factory converts it
        (3, 3, [], []),
        (3, 2, ["#2.2"], []),  # call by call: the third is left without one
        (2, 0, ["#2.0", "#2.1"], []),
        (1, 2, [], ["#4"]),  # a surplus result answers nothing
        (2, 3, [], ["#5"]),
    ],
)
def test_v1_results_answer_the_calls_of_the_turn_before_them_by_position(calls, results, closed, orphans) -> None:
    messages = [_v1("user", ("text", "Areas?")), _v1("user", ("text", "Please.")), _v1_turn(calls)]
    messages += [_v1_tool(f"area {k}") for k in range(results)]
    messages += [_v1("user", ("text", "Well?")), _v1("assistant", ("text", "Done."))]
    findings = check_messages([{"messages": messages}], format="datasets")
    assert [f.call_id for f in findings if f.code == "APX001"] == closed
    assert [f.call_id for f in findings if f.code == "APX002"] == orphans
    assert all(f.index == 2 for f in findings if f.code == "APX001")


def test_a_v1_call_cut_off_by_the_next_user_turn_gets_a_tool_message_in_the_rows_style() -> None:
    plain = [_v1("user", ("text", "Area?")), _v1_turn(1), _v1("user", ("text", "Well?"))]
    weighted = [
        _v1("user", ("text", "Area?"), loss_weight=0.0),
        {**_v1_turn(1), "loss_weight": 1.0},
        _v1("user", ("text", "Well?"), loss_weight=0.0),
    ]
    result = repair_messages([{"messages": plain}, {"messages": weighted}], format="datasets")
    assert [(f.code, f.line, f.index, f.call_id) for f in result.findings] == [
        ("APX001", 1, 1, "#1.0"),
        ("APX001", 2, 1, "#1.0"),
    ]
    assert result.messages[0]["messages"][2] == V1_MARKER
    # LLaMA-Factory's converters weigh every message, a tool message 0.0.
    assert result.messages[1]["messages"][2] == _v1_tool(DEFAULT_MARKER, loss_weight=0.0)
    assert repair_messages(result.messages, format="datasets").changed is False


def test_a_v1_rows_final_calls_are_its_target() -> None:
    messages = [_v1("user", ("text", "Areas?")), _v1_turn(1), _v1_tool("3.14"), _v1_turn(2)]
    assert check_messages([{"messages": messages}], format="datasets") == []


def test_tool_responses_wrapped_in_a_user_message_answer_the_calls() -> None:
    # The v1 qwen3 template takes such a user message for tool responses, not for a prompt.
    wrapped = _v1("user", ("text", "<tool_response>\n3.14\n</tool_response>"))
    messages = [_v1("user", ("text", "Area?")), _v1_turn(1), wrapped, _v1("assistant", ("text", "3.14."))]
    assert check_messages([{"messages": messages}], format="datasets") == []


def test_a_v1_message_holding_calls_the_reader_cannot_see_is_reported() -> None:
    hidden = {"role": "assistant", "content": [{"type": "text", "value": "On it."}], "tool_calls": [_call("c1")]}
    messages = [_v1("user", ("text", "Go")), hidden, _v1("user", ("text", "Well?"))]
    assert [(f.code, f.index) for f in check_messages([{"messages": messages}], format="datasets")] == [("APX104", 1)]


def test_call_ids_are_derived_from_the_position_and_row_local() -> None:
    row = {"messages": [_v1("user", ("text", "Area?")), _v1_turn(2), _v1("user", ("text", "Well?"))]}
    findings = check_messages([row, copy.deepcopy(row)], format="datasets")
    assert [(f.line, f.call_id) for f in findings] == [(1, "#1.0"), (1, "#1.1"), (2, "#1.0"), (2, "#1.1")]
    assert check_messages([row], format="datasets") == findings[:2]


# ShareGPT rows: from/value turns, function_call answered by observation


def _turn(tag: str, value: str) -> dict:
    return {"from": tag, "value": value}


def _fc(*names: str) -> dict:
    calls = [{"name": name, "arguments": {"city": "Paris"}} for name in names]
    return _turn("function_call", json.dumps(calls[0] if len(calls) == 1 else calls))


H, G, O = (lambda v: _turn("human", v)), (lambda v: _turn("gpt", v)), (lambda v: _turn("observation", v))  # noqa: E741 (the roles' initials)
SG_MARKER = O(DEFAULT_MARKER)


def test_a_sharegpt_dataset_is_read_as_datasets(tmp_path: Path) -> None:
    rows = [{"conversations": [H("Hi"), G("Hello")], "tools": "[]"}, {"conversations": [H("Paris?"), _fc("weather")]}]
    assert detect_format(rows) is DatasetsAdapter
    path = tmp_path / "sharegpt.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = _report("check", "--isolated", str(path))
    assert report["format"] == "datasets" and report["findings"] == []


@pytest.mark.parametrize(
    "turns",
    [
        [H("Hi"), G("Hello")],
        [_turn("system", "Be brief."), H("Hi"), G("Hello"), H("Bye"), G("Bye")],
        [H("Paris?"), _fc("weather"), O("18C"), G("18C.")],
        [H("Paris and Rome?"), _fc("weather", "weather"), O("[18, 24]"), G("18C and 24C.")],
        [
            H("Paris?"),
            _turn("function_call", "<think>\nLook it up.\n</think>\n\n" + json.dumps({"name": "weather", "arguments": {}})),
            O("18C"),
            G("18C."),
        ],
        [H("Paris?"), _fc("weather")],
    ],
)
def test_sharegpt_rows_with_every_call_answered_or_none_are_clean(turns: list) -> None:
    assert check_messages([{"conversations": turns}], format="datasets") == []
    assert check_messages([{"messages": turns}], format="datasets") == []


def test_a_sharegpt_call_before_a_gpt_turn_gets_an_observation_that_keeps_turns_alternating() -> None:
    turns = [H("Paris?"), _fc("weather"), G("No answer."), H("Rome?"), _fc("weather"), _fc("weather"), O("24C"), G("24C.")]
    result = repair_messages([{"conversations": turns}], format="datasets")
    assert [(f.index, f.call_id, f.fixable) for f in result.findings] == [(1, "#1.0", True), (4, "#4.0", True)]
    repaired = result.messages[0]["conversations"]
    assert repaired == turns[:2] + [SG_MARKER] + turns[2:5] + [SG_MARKER] + turns[5:]
    # LLaMA-Factory's alternation: human/observation at even places, gpt/function_call at odd ones.
    assert all((t["from"] in ("human", "observation")) == (k % 2 == 0) for k, t in enumerate(repaired))
    assert check_messages(result.messages, format="datasets") == []


@pytest.mark.parametrize(
    ("turns", "why"),
    [
        ([H("Paris?"), _fc("weather"), H("Well?"), G("No answer.")], "right before a turn tagged 'human'"),
        ([H("Paris and Rome?"), _fc("weather", "weather"), G("No answer.")], "2 observation turns in a row"),
        (
            [H("Paris?"), _fc("weather", "weather", "weather"), O("18C"), O("24C"), G("..")],
            "right after a turn tagged 'observation'",
        ),
    ],
)
def test_a_sharegpt_call_whose_observation_would_break_the_alternation_is_reported_not_repaired(
    turns: list, why: str, tmp_path: Path
) -> None:
    result = repair_messages([{"conversations": turns}], format="datasets")
    assert result.findings and all(f.code == "APX001" and f.fixable is False for f in result.findings)
    assert all(why in f.message and "reported but not repaired" in f.message for f in result.findings)
    assert result.changed is False and result.messages[0]["conversations"] is turns
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"conversations": turns}) + "\n")
    before = path.read_bytes()
    assert _invoke("fix", "--isolated", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == before


def test_a_sharegpt_turn_of_an_unknown_tag_is_reported_and_the_rest_still_read() -> None:
    turns = [H("Paris?"), _turn("tool", "18C"), _fc("weather"), G("No answer.")]
    findings = check_messages([{"conversations": turns}], format="datasets")
    assert [(f.code, f.index) for f in findings] == [("APX104", 1), ("APX001", 2)]


def test_a_surplus_sharegpt_observation_is_an_orphan_that_drop_orphans_removes() -> None:
    turns = [H("Paris?"), _fc("weather"), O("18C"), O("18C again"), G("18C.")]
    result = repair_messages([{"conversations": turns}], format="datasets", drop_orphans=True)
    assert [(f.code, f.index) for f in result.findings] == [("APX002", 3)]
    assert result.messages[0]["conversations"] == turns[:3] + turns[4:]


# Transcripts are untrusted: any JSON type anywhere


ODD = [None, 0, 1.5, True, "x", [], {}, [None], {"a": []}]


@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_types_in_llamafactory_and_sharegpt_rows_never_raise(odd, tmp_path: Path) -> None:
    rows = [
        {
            "messages": [
                _v1("user", ("text", "go")),
                {"role": "assistant", "content": [{"type": "tool_call", "value": odd}]},
                _v1("user", ("text", "?")),
            ]
        },
        {
            "messages": [
                _v1("user", ("text", "go")),
                {"role": odd, "content": [{"type": "text", "value": odd}]},
                _v1_turn(1),
                {"role": "tool", "content": odd},
            ]
        },
        {
            "messages": [
                _v1("user", ("text", "go")),
                {"role": "assistant", "content": [odd, {"type": "tool_call", "value": "{"}]},
                _v1("user", ("text", "?")),
            ]
        },
        {"conversations": [H("go"), {"from": "function_call", "value": odd}, {"from": odd, "value": odd}, G("?")]},
        {
            "conversations": [
                H("go"),
                {"from": "function_call", "value": json.dumps([odd, odd])},
                {"from": "observation", "value": odd},
                G("?"),
            ]
        },
        {"conversations": [H("go"), odd, {"from": "human", "value": odd}]},
    ]
    result = repair_messages(rows, format="datasets")
    # Repaired, every fixable call is answered; what is left is what a repair must not touch.
    left = [(f.code, f.line, f.call_id) for f in result.findings if f.code != "APX001" or f.fixable is False]
    assert [(f.code, f.line, f.call_id) for f in check_messages(result.messages, format="datasets")] == left
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    assert _invoke("fix", "--isolated", "--input-format", "datasets", "--in-place", str(path)).exit_code in (0, 1)
    assert _invoke("check", "--isolated", "--input-format", "datasets", str(path)).exit_code in (0, 1)


def test_a_call_whose_value_is_no_json_is_still_a_call() -> None:
    # The part's type or the turn's tag makes it a call; only its name is unknown.
    v1 = [_v1("user", ("text", "go")), _v1("assistant", ("tool_call", "not json")), _v1("user", ("text", "?"))]
    sg = [H("go"), _turn("function_call", "not json"), G("?")]
    findings = check_messages([{"messages": v1}, {"conversations": sg}], format="datasets")
    assert [(f.code, f.line, f.call_id, f.tool) for f in findings] == [("APX001", 1, "#1.0", None), ("APX001", 2, "#1.0", None)]


# The layout of a rewritten row (for the core's rewrite of a replaced line)


@pytest.mark.parametrize(
    ("dumps", "layout"),
    [
        (lambda v: json.dumps(v), Layout(", ", ": ", True)),
        (lambda v: json.dumps(v, ensure_ascii=False), Layout(", ", ": ", False)),
        (lambda v: json.dumps(v, separators=(",", ":")), Layout(",", ":", True)),
        (lambda v: orjson.dumps(v).decode(), Layout(",", ":", False)),
    ],
    ids=["python-default", "python-utf8", "python-compact", "orjson"],
)
def test_a_repaired_row_is_written_in_the_layout_of_its_line(dumps, layout) -> None:
    row = {"messages": [_user("Vols à Zürich?"), _calls("c1"), _user("Well?")], "tools": TOOLS}
    raw = dumps(row).encode() + b"\n"
    assert layout_of(raw, row) == layout
    repaired = repair_messages([row], format="datasets").messages[0]
    assert dumps_like(raw, row, repaired) == dumps(repaired).encode()


@pytest.mark.parametrize(
    "raw",
    [b'{"messages" : []}\n', b'{"a": 1.0E5}\n', b'{"a": 1, "a": 2}\n', b' {"a": 1}\n', b'{"a":"\\/"}\n'],
)
def test_a_line_whose_layout_cannot_be_reproduced_has_none(raw: bytes) -> None:
    value = json.loads(raw)
    assert layout_of(raw, value) is None
    assert dumps_like(raw, value, {"messages": []}) is None


def test_a_lines_terminator_and_byte_order_mark_are_not_its_layout() -> None:
    row = {"messages": [_user("hi")]}
    for raw in (json.dumps(row).encode(), json.dumps(row).encode() + b"\r\n", b"\xef\xbb\xbf" + json.dumps(row).encode() + b"\n"):
        assert layout_of(raw, row) == Layout(", ", ": ", True)
        assert dumps_like(raw, row, {"x": "é"}) == b'{"x": "\\u00e9"}'


def test_every_row_of_the_llamafactory_sample_has_a_layout_a_rewrite_can_keep(corpus: Path) -> None:
    raws = (corpus / V1_SAMPLE).read_bytes().splitlines(keepends=True)
    layouts = [layout_of(raw, orjson.loads(raw)) for raw in raws]
    # Python's json.dumps wrote it: escaped where a row was all ASCII-safe, UTF-8 in 7 rows.
    assert set(layouts) == {Layout(", ", ": ", True), Layout(", ", ": ", False)}


def _checked_rows(data: bytes, *, repair: bool, drop: bool) -> tuple:
    from apx_doctor import stream
    from apx_doctor.doctor import RepairOptions

    config = stream.StreamConfig(input_format="datasets", repair=RepairOptions(drop_orphans=drop))
    sink = stream.MemorySink() if repair else None
    result = stream.run(data.splitlines(keepends=True), config, sink)
    return [f.to_dict() for f in result.findings], [e.to_dict() for e in result.edits], sink and sink.getvalue()


def _repeated_results(rows: list) -> list:
    """Each chat row again with its first result repeated at its end: a duplicate, told from an
    orphan only by what the row's quiet stretches settled."""
    again = []
    for row in rows:
        messages = row.get("messages") if isinstance(row, dict) else None
        results = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "tool"]
        if results:
            again.append({**row, "messages": [*messages, results[0]]})
    return again


@settings(max_examples=200, deadline=None)
@given(rows=strategies.by_format()["datasets"].histories(), repair=st.booleans(), drop=st.booleans())
def test_a_rows_quiet_stretches_are_judged_as_feeding_every_message_would(rows: list, repair: bool, drop: bool) -> None:
    """A chat row's stretches with nothing pending are proven by ``clean_run`` and not fed: the same findings and bytes."""
    from apx_doctor.formats.chat import ChatAdapter

    data = b"".join(orjson.dumps(row) + b"\n" for row in rows * 2 + _repeated_results(rows))
    fast = _checked_rows(data, repair=repair, drop=drop)
    saved = ChatAdapter.clean_run
    ChatAdapter.clean_run = None  # type: ignore[assignment,method-assign]
    try:
        fed = _checked_rows(data, repair=repair, drop=drop)
    finally:
        ChatAdapter.clean_run = saved  # type: ignore[method-assign]
    assert fast == fed
