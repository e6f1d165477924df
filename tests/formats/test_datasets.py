"""The datasets format: one whole conversation a line, each row checked as its own history."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import orjson
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.datasets import DatasetsAdapter

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
