"""The cline format: api_conversation_history.json, one JSON array of Anthropic messages.

Cline writes it with ``JSON.stringify(messages)`` (cline/cline src/core/storage/disk.ts,
saveApiConversationHistory); Roo Code and Kilo Code write the same file compactly
(src/utils/safeWriteJson.ts). Each message is read as the anthropic format reads a line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor import stream
from apx_doctor.cli import app
from apx_doctor.formats.base import Detection
from apx_doctor.formats.cline import ClineAdapter

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
