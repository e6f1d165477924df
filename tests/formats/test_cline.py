"""The cline format: api_conversation_history.json (one JSON array of Anthropic messages), and
Cline CLI 3.x's session file (``<sid>.messages.json``, an object holding them).

Cline writes the array with ``JSON.stringify(messages)`` (cline/cline src/core/storage/disk.ts,
saveApiConversationHistory); Roo Code and Kilo Code write the same file compactly
(src/utils/safeWriteJson.ts). Cline CLI 3.0.65 writes its session file with
``JSON.stringify(session, null, 2)`` and a final line ending. Each message is read as the
anthropic format reads a line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from apx_doctor import stream
from apx_doctor.cli import app
from apx_doctor.formats.base import Detection
from apx_doctor.formats.cline import ClineAdapter

from strategies.anthropic import histories

CASES = Path(__file__).resolve().parents[1] / "cases"
MARKER = "not run: the turn was interrupted"


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(path: Path, *flags: str) -> dict:
    result = _invoke("check", "--isolated", "--output-format", "json", *flags, str(path))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def _compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


CUT = [
    {"role": "user", "content": [{"type": "text", "text": "<task>\nFix it\n</task>"}], "ts": 1},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}],
        "ts": 2,
    },
    {"role": "user", "content": [{"type": "text", "text": "[TASK RESUMPTION]"}], "ts": 3},
]


def test_an_array_of_messages_is_cline_and_the_same_messages_as_lines_stay_anthropic(tmp_path: Path) -> None:
    as_lines = tmp_path / "messages.jsonl"
    as_lines.write_bytes(b"".join(_compact(m) + b"\n" for m in CUT))
    assert _report(as_lines)["format"] == "anthropic"
    for name, data in (("compact.json", _compact(CUT)), ("pretty.json", json.dumps(CUT, indent=2).encode())):
        path = tmp_path / name
        path.write_bytes(data)
        report = _report(path)
        assert report["format"] == "cline"
        assert [(f["code"], f["index"], f["call_id"]) for f in report["findings"]] == [("APX001", 1, "toolu_1")]


def test_lines_are_never_claimed() -> None:
    assert ClineAdapter.detect(CUT) == Detection.NO
    assert ClineAdapter.detect_document(CUT) == Detection.CERTAIN
    assert ClineAdapter.detect_document({"messages": CUT}) == Detection.NO


@pytest.mark.parametrize(
    "other",
    [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}],
        [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"functionCall": {"name": "f"}}]}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    ],
    ids=["openai-chat", "gemini-api-contents", "a-system-message"],
)
def test_an_array_of_another_apis_messages_is_not_read_as_cline(other: list, tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_bytes(json.dumps(other, indent=2).encode())
    result = _invoke("check", str(path))
    assert result.exit_code == 2 and "not one any format reads" in result.stderr


def test_the_not_run_record_is_inserted_and_every_other_message_kept(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_bytes(_compact(CUT))
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    record = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": MARKER}]}
    assert path.read_bytes() == _compact([*CUT[:2], record, CUT[2]])


def _plain_anthropic_cases() -> list[Path]:
    cases = []
    for case in sorted((CASES / "anthropic").glob("*/input.jsonl")):
        raw = case.read_bytes()
        if raw.startswith(b"\xef\xbb\xbf") or any(not line.strip() for line in raw.splitlines()):
            continue
        cases.append(case.parent)
    return cases


@pytest.mark.parametrize("case", _plain_anthropic_cases(), ids=lambda c: c.name)
def test_cline_reads_each_message_as_the_anthropic_format_reads_a_line(case: Path, tmp_path: Path) -> None:
    """Every anthropic golden case, written as a Cline history: the same findings (a line
    becomes a message index) and the same repaired messages."""
    options = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    flags = ["--drop-orphans"] if options.get("drop_orphans") else []
    flags += ["--marker", options["marker"]] if "marker" in options else []
    messages = [json.loads(line) for line in (case / "input.jsonl").read_bytes().splitlines()]
    path = tmp_path / "api_conversation_history.json"
    path.write_bytes(_compact(messages))
    report = _report(path, *[f for f in flags if f != "--drop-orphans"])
    assert report["format"] == "cline"
    expected = json.loads((case / "findings.json").read_text())
    assert [(f["code"], f["index"], f.get("call_id")) for f in report["findings"]] == [
        (f["code"], f["line"] - 1, f.get("call_id")) for f in expected
    ]
    if not (case / "expected.jsonl").exists():
        return
    out = tmp_path / "out.json"
    assert _invoke("fix", *flags, "--output", str(out), str(path)).exit_code in (0, 1)
    repaired = [json.loads(line) for line in (case / "expected.jsonl").read_bytes().splitlines()]
    assert out.read_bytes() == _compact(repaired)


def test_a_results_after_text_message_is_reordered_in_place(tmp_path: Path) -> None:
    late = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            "ts": 9,
        },
    ]
    path = tmp_path / "h.json"
    path.write_bytes(_compact(late))
    assert [(f["code"], f["index"]) for f in _report(path)["findings"]] == [("APX007", 2)]
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert json.loads(path.read_bytes())[2] == {**late[2], "content": [late[2]["content"][1], late[2]["content"][0]]}


def test_named_on_json_lines_every_line_is_unrecognised_and_nothing_changes() -> None:
    raws = [_compact(m) + b"\n" for m in CUT]
    sink = stream.MemorySink()
    result = stream.run(raws, stream.StreamConfig(input_format="cline"), sink)
    assert result.format == "cline" and [(f.code, f.line) for f in result.findings] == [
        ("APX104", 1),
        ("APX104", 2),
        ("APX104", 3),
    ]
    assert not result.edits and sink.getvalue() == b"".join(raws)


# --- Cline CLI 3.x: ~/.cline/data/sessions/<sid>/<sid>.messages.json ----------------------------
#
# An object written with JSON.stringify(session, null, 2) and a final line ending (the layout of
# every file the probe of cline 3.0.65 saw); its messages are the same Anthropic messages, and
# Cline's own tool results carry the tool's "name" (its loader refuses one without).

SID = "1796186131048_jqcon"


def _session(messages: list) -> dict:
    return {
        "version": 1,
        "updated_at": "2026-12-02T04:35:31.345Z",
        "agent": "lead",
        "sessionId": SID,
        "origin": {"source": "cli", "mode": "user", "sessionId": SID, "version": "3.0.65"},
        "messages": messages,
        "system_prompt": "You are Cline, an AI coding agent. «now»",
    }


def _cline_js(value) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode() + b"\n"


CLI_USE = {"type": "tool_use", "id": "call_1", "name": "run_commands", "input": {"commands": ["sleep 600"]}}
CLI_CUT = [
    {"id": "u1", "role": "user", "content": [{"type": "text", "text": '<user_input mode="act">go</user_input>'}], "ts": 1},
    {"id": "msg_a", "role": "assistant", "content": [CLI_USE], "ts": 2, "modelInfo": {"id": "m", "provider": "p"}},
    {"id": "u2", "role": "user", "content": [{"type": "text", "text": '<user_input mode="act">Go on.</user_input>'}], "ts": 3},
]
NAMED = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "name": "run_commands", "content": MARKER}]}


def test_the_cli_session_document_is_cline_and_its_findings_name_message_and_line(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.messages.json"
    path.write_bytes(_cline_js(_session(CLI_CUT)))
    report = _report(path)
    assert report["format"] == "cline"
    # Message 1 (the assistant's) opens on line 24 of the file.
    assert [(f["code"], f["index"], f["line"], f["call_id"]) for f in report["findings"]] == [("APX001", 1, 24, "call_1")]


def test_the_cli_record_names_its_tool_and_every_other_byte_is_kept(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.messages.json"
    path.write_bytes(_cline_js(_session(CLI_CUT)))
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == _cline_js(_session([*CLI_CUT[:2], NAMED, CLI_CUT[2]]))
    assert _report(path)["findings"] == []
    before = path.read_bytes()
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0
    assert path.read_bytes() == before


def test_the_record_carries_name_only_in_the_cli_form(tmp_path: Path) -> None:
    array = tmp_path / "api_conversation_history.json"
    array.write_bytes(_compact(CLI_CUT))
    assert _invoke("fix", "--in-place", str(array)).exit_code == 1
    record = json.loads(array.read_bytes())[2]
    assert record == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": MARKER}]}


def test_the_shown_edit_is_the_record_written(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.messages.json"
    path.write_bytes(_cline_js(_session(CLI_CUT)))
    result = _invoke("fix", "--output-format", "json", str(path))  # a dry run
    assert result.exit_code == 1, result.output
    (edit,) = json.loads(result.stdout)["files"][0]["edits"]
    assert edit["record"] == NAMED


def test_the_library_writes_the_named_record() -> None:
    from apx_doctor.documents import repair_document

    repaired = repair_document(_session(CLI_CUT))
    assert repaired.value["messages"][2] == NAMED
    assert list(repaired.value) == list(_session(CLI_CUT))


def test_only_the_cli_s_document_gets_the_named_record() -> None:
    # The extension's array is sent to the Anthropic API as it is: its record has
    # no name. Read from the CLI's session object, the record names the tool.
    from apx_doctor.documents import repair_document

    array = repair_document(CLI_CUT, format="cline")
    assert "name" not in array.value[2]["content"][0]
    whole = repair_document(_session(CLI_CUT), format="cline")
    assert whole.value["messages"][2]["content"][0]["name"] == "run_commands"


def test_several_calls_cut_at_once_each_get_their_own_name(tmp_path: Path) -> None:
    second = {"type": "tool_use", "id": "call_2", "name": "read_files", "input": {}}
    messages = [CLI_CUT[0], {**CLI_CUT[1], "content": [CLI_USE, second]}]
    path = tmp_path / "s.messages.json"
    path.write_bytes(_cline_js(_session(messages)))
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    records = json.loads(path.read_bytes())["messages"][2:]
    assert [r["content"][0]["name"] for r in records] == ["run_commands", "read_files"]


def test_a_result_cline_wrote_is_left_as_it_is(tmp_path: Path) -> None:
    own = {
        "id": "msg_r",
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "name": "run_commands",
                "content": [{"query": "sleep 600", "result": "", "success": True}],
            }
        ],
        "ts": 3,
    }
    path = tmp_path / "s.messages.json"
    data = _cline_js(_session([*CLI_CUT[:2], own]))
    path.write_bytes(data)
    assert _report(path)["findings"] == []
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("document", "level"),
    [
        (_session(CLI_CUT), Detection.CERTAIN),
        (_session([]), Detection.CERTAIN),
        # Without the CLI's version and agent: only read when named.
        ({"sessionId": SID, "messages": CLI_CUT}, Detection.COMPATIBLE),
        ({**_session(CLI_CUT), "version": "1"}, Detection.COMPATIBLE),
        # Messages of another API inside: not surely Cline's.
        (_session([{"role": "user", "parts": [{"text": "hi"}]}]), Detection.COMPATIBLE),
        # An Anthropic request body, an OpenCode export, a Gemini CLI session.
        ({"model": "claude", "messages": CLI_CUT}, Detection.NO),
        ({"info": {"id": "ses_1"}, "messages": [], "sessionId": SID}, Detection.NO),
        ({**_session(CLI_CUT), "projectHash": "abc"}, Detection.NO),
        ({**_session(CLI_CUT), "messages": {"0": CLI_CUT[0]}}, Detection.NO),
        ({**_session(CLI_CUT), "sessionId": 7}, Detection.NO),
    ],
    ids=[
        "cli-session",
        "empty-cli-session",
        "no-version-no-agent",
        "version-not-a-number",
        "foreign-messages",
        "anthropic-request",
        "opencode-export",
        "gemini-cli-session",
        "messages-not-a-list",
        "session-id-not-a-string",
    ],
)
def test_which_objects_are_a_cli_session(document: dict, level: int) -> None:
    assert ClineAdapter.detect_document(document) == level


def test_another_runtimes_session_document_is_not_taken(tmp_path: Path) -> None:
    gemini = {
        "sessionId": "37b7abef-713d-4522-85f0-8ff15a4e6d17",
        "projectHash": "9f2c",
        "startTime": "2026-03-14T09:00:00.000Z",
        "lastUpdated": "2026-03-14T09:00:01.000Z",
        "messages": [{"id": "m1", "timestamp": "2026-03-14T09:00:00.000Z", "type": "user", "content": "hi"}],
    }
    path = tmp_path / "session-x.json"
    path.write_bytes(json.dumps(gemini, indent=2).encode())
    assert _report(path)["format"] == "gemini-cli"
    other = tmp_path / "request.json"
    other.write_bytes(_cline_js({"model": "claude", "messages": CLI_CUT}))
    result = _invoke("check", str(other))
    assert result.exit_code == 2 and "not one any format reads" in result.stderr


def test_a_cli_session_named_with_input_format_is_read_when_only_compatible(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(_cline_js({"sessionId": SID, "messages": CLI_CUT}))
    assert _invoke("check", str(path)).exit_code == 2
    report = _report(path, "--input-format", "cline")
    assert [(f["code"], f["index"]) for f in report["findings"]] == [("APX001", 1)]


def _without_names(messages: list) -> list:
    """``messages`` with ``name`` taken out of every tool_result block."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            blocks = [{k: v for k, v in b.items() if k != "name"} if b.get("type") == "tool_result" else b for b in content]
            message = {**message, "content": blocks}
        out.append(message)
    return out


def _tool_names(messages: list) -> dict:
    return {
        b["id"]: b["name"]
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_a_cli_session_is_repaired_as_its_messages_are_and_each_new_record_names_its_tool(messages: list) -> None:
    """Any Anthropic history inside a CLI session file: the same findings and repair as the
    anthropic format gives its lines, each added result naming its call's tool, every other
    key and the layout kept, and a second pass that changes nothing."""
    from apx_doctor import check_messages, repair_messages

    data = _cline_js(_session(messages))
    sink = stream.MemorySink()
    result = stream.run(data.splitlines(keepends=True), stream.StreamConfig(), sink)
    assert result.format == "cline"
    expected = [(f.code, f.line - 1, f.call_id) for f in check_messages(messages, format="anthropic")]
    assert sorted((f.code, f.index, f.call_id) for f in result.findings) == sorted(expected)
    out = sink.getvalue() if result.edits else data
    repaired = json.loads(out)
    assert {k: v for k, v in repaired.items() if k != "messages"} == {k: v for k, v in _session([]).items() if k != "messages"}
    assert list(repaired) == list(_session([]))
    assert out == _cline_js(repaired)
    assert _without_names(repaired["messages"]) == repair_messages(messages, format="anthropic").messages
    names = _tool_names(messages)
    added = [b for m in repaired["messages"] if m not in messages for b in m["content"] if b.get("type") == "tool_result"]
    assert all(b["name"] == names[b["tool_use_id"]] for b in added if b["content"] == MARKER)
    again = stream.MemorySink()
    assert not stream.run(out.splitlines(keepends=True), stream.StreamConfig(), again).edits
