"""The factory-droid format: Droid's session store and its ``droid exec`` stream-json log.

What users depend on: both published samples are read as Droid's and check
clean of calls without results; a call left open in the session store is
answered with the result entry Droid writes (a user message with one
``tool_result`` block the Messages API accepts), in file order where Droid
reads it back, chained into the ``parentId`` tree, the same bytes on a second
run; a call left open in a stream-json log is reported and never faked; pi's
files and Droid's are never taken for each other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import anthropic.types as at
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import TypeAdapter
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.factory_droid import FactoryDroidAdapter
from apx_doctor.formats.pi import PiAdapter

from strategies.factory_droid import SESSION, event, histories, message, session_start, text, tool_result, tool_use

STORE = "factory-droid/fixture_session_store.jsonl"
STREAM = "factory-droid/fixture_stream_json.jsonl"
# What a correct doctor reports on each sample (../shared/corpus/README.md): both
# are clean; each file ends with an empty line, as published, which is reported
# as the blank line it is (a warning: the check still exits 0).
CORPUS_VERDICTS = {
    STORE: [("APX105", 5, None)],
    STREAM: [("APX105", 5, None)],
}
FOREIGN = [
    "pi/fixture_session_v3.jsonl",
    "openclaw/fixture_session.jsonl",
    "claude-code/fixture_representative.jsonl",
    "codex/fixture_clean_pairing.jsonl",
    "grok-cli/fixture_chat_history.jsonl",
    "copilot-cli/fixture_events.jsonl",
    "kimi/fixture_wire.jsonl",
    "anthropic/weather_round_trip.jsonl",
]

# Module-level: pydantic checks the SDK's ``Iterable`` content lazily, with iterators
# that need their adapter alive; ``_valid`` walks them.
_MESSAGE_PARAM = TypeAdapter(at.MessageParam)


def _walked(value):
    if isinstance(value, dict):
        return {k: _walked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [_walked(v) for v in value]
    return value


def _valid(message: dict) -> dict:
    """``message`` as the Anthropic SDK's ``MessageParam`` validates it, every block checked."""
    return _walked(_MESSAGE_PARAM.validate_python(message))


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(*args: str) -> dict:
    result = _invoke(*args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def _lines(path: Path) -> list:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write(path: Path, lines: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _interrupted() -> list:
    return [
        session_start(),
        message("m1", SESSION, "user", [text("Delete the build folder")], 1),
        message("m2", "m1", "assistant", [text("Removing it."), tool_use("toolu_01")], 2),
        message("m3", "m2", "user", [text("wait, keep it")], 40),
    ]


# -- detection ---------------------------------------------------------------------


def test_both_droid_shapes_are_detected_as_factory_droid(corpus: Path) -> None:
    for name in CORPUS_VERDICTS:
        samples = _lines(corpus / name)
        assert FactoryDroidAdapter.detect(samples) == Detection.CERTAIN, name
        assert detect_format(samples) is FactoryDroidAdapter, name
        assert PiAdapter.detect(samples) == Detection.NO, name


@pytest.mark.parametrize("name", FOREIGN)
def test_other_runtimes_samples_are_not_taken_for_droid(corpus: Path, name: str) -> None:
    assert FactoryDroidAdapter.detect(_lines(corpus / name)) == Detection.NO


def test_what_settles_droid_and_what_contradicts_it() -> None:
    # The stream as droid exec writes it (ids under "id", camelCase session id, millisecond stamps).
    run = [
        {
            "type": "system",
            "subtype": "init",
            "sessionId": "s",
            "timestamp": 1,
            "model": "m",
            "cwd": "/t",
            "tools": [],
            "id": "sys1",
        },
        {
            "type": "tool_call",
            "sessionId": "s",
            "timestamp": 2,
            "id": "call_1",
            "messageId": "m1",
            "toolId": "Execute",
            "toolName": "Execute",
            "parameters": {},
        },
    ]
    assert FactoryDroidAdapter.detect(run) == Detection.CERTAIN
    # A store excerpt without its header fits, but only the header claims the file.
    body = [message("m2", "m1", "assistant", [tool_use("t1")])]
    assert FactoryDroidAdapter.detect(body) == Detection.COMPATIBLE
    assert FactoryDroidAdapter.detect([session_start(), *body]) == Detection.CERTAIN
    # Another runtime's result line, pi's header or pi's parts contradict it.
    assert FactoryDroidAdapter.detect([*run, {"type": "tool_result", "tool_call_id": "call_1", "content": "x"}]) == Detection.NO
    assert FactoryDroidAdapter.detect([{"type": "session", "id": "s", "cwd": "/"}, *body]) == Detection.NO
    pi_parts = message("m3", "m2", "assistant", [{"type": "toolCall", "id": "c", "name": "x", "arguments": {}}])
    assert FactoryDroidAdapter.detect([session_start(), pi_parts]) == Detection.NO


# -- the published samples ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", "--isolated", str(corpus / name))
    assert report["format"] == "factory-droid"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", "--isolated", str(corpus / name)).exit_code == 0


def test_a_store_session_cut_after_its_call_is_repaired_at_the_end(corpus: Path, tmp_path: Path) -> None:
    lines = _lines(corpus / STORE)[:-1]  # the result never came
    path = _write(tmp_path / "cut.jsonl", lines)
    report = _report("check", str(path))
    assert [(f["code"], f["line"], f["call_id"], f["tool"]) for f in report["findings"]] == [("APX001", 3, "tu1", "Execute")]
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    repaired = _lines(path)
    assert repaired[:3] == lines
    (record,) = repaired[3:]
    assert record["parentId"] == "m2" and record["timestamp"] == lines[2]["timestamp"]
    assert record["message"] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": DEFAULT_MARKER}],
    }
    assert _invoke("check", str(path)).exit_code == 0


def test_a_stream_cut_after_its_call_is_reported_and_never_written_to(corpus: Path, tmp_path: Path) -> None:
    lines = _lines(corpus / STREAM)
    path = _write(tmp_path / "run.jsonl", [lines[0], lines[1], lines[3]])  # the result never came
    before = path.read_bytes()
    report = _report("check", str(path))
    assert [(f["code"], f["line"], f["call_id"], f["fixable"]) for f in report["findings"]] == [("APX001", 2, "c1", False)]
    assert _invoke("check", str(path)).exit_code == 1
    # A log of a run Droid never reads back: nothing honest to add, so nothing is written.
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == before


# -- the record --------------------------------------------------------------------


def test_the_record_is_the_result_entry_droid_writes() -> None:
    result = repair_messages(_interrupted(), format="factory-droid")
    (inserted,) = result.inserted
    record = inserted.record
    assert list(record) == ["type", "id", "parentId", "timestamp", "message"]
    assert record["type"] == "message"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", record["id"])
    assert record["parentId"] == "m2" and record["timestamp"] == _interrupted()[2]["timestamp"]
    # Right after the call in file order (Droid reads messages back in file order), and the
    # prompt now hangs off the record.
    assert result.messages[3] is record and result.messages[4]["parentId"] == record["id"]
    # What Droid sends: a user message the Messages API accepts as it stands.
    assert _valid(record["message"]) == record["message"]


def test_merged_with_the_prompt_after_it_the_results_still_lead_the_user_turn() -> None:
    lines = [
        session_start(),
        message("m1", SESSION, "user", [text("Read a and b")], 1),
        message("m2", "m1", "assistant", [tool_use("ta", "Read"), tool_use("tb", "Read")], 2),
        message("m3", "m2", "user", [tool_result("ta", "alpha"), text("<system-reminder>x</system-reminder>")], 3),
    ]
    result = repair_messages(lines, format="factory-droid")
    (inserted,) = result.inserted
    assert inserted.index == 3
    # The API merges consecutive user messages: the missing result comes first, then the one that arrived.
    merged = [*result.messages[3]["message"]["content"], *result.messages[4]["message"]["content"]]
    assert [b.get("tool_use_id") for b in merged] == ["tb", "ta", None]


def test_a_second_run_writes_the_same_bytes(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.jsonl", _interrupted())
    second = _write(tmp_path / "b.jsonl", _interrupted())
    for path in (first, second):
        assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert first.read_bytes() == second.read_bytes()
    before = first.read_bytes()
    assert _invoke("fix", "--in-place", str(first)).exit_code == 0
    assert first.read_bytes() == before


def test_an_entry_without_parent_id_gets_a_record_without_one() -> None:
    lines = [{k: v for k, v in line.items() if k != "parentId"} for line in _interrupted()]
    (inserted,) = repair_messages(lines, format="factory-droid").inserted
    assert "parentId" not in inserted.record
    assert repair_messages(lines, format="factory-droid").messages[4] is lines[3]


def test_stream_results_pair_by_either_id_key() -> None:
    lines = [
        event("system", 0, subtype="init", cwd="/t", tools=[], model="m"),
        event("message", 1, role="user", text="go", id="u1"),
        event("tool_call", 2, toolCallId="c1", toolName="Shell", parameters={}),
        event("tool_call", 2, id="c2", messageId="u1", toolId="Read", toolName="Read", parameters={}),
        event("tool_result", 3, toolCallId="c1", value="ok"),
        event(
            "tool_result", 3, id="c2", messageId="u1", toolId="Read", isError=True, error={"type": "tool_error", "message": "no"}
        ),
        event("completion", 4, finalText="done"),
    ]
    assert check_messages(lines, format="factory-droid") == []
    del lines[4]
    assert [(f.code, f.call_id, f.fixable) for f in check_messages(lines, format="factory-droid")] == [("APX001", "c1", False)]


# -- the tree stays whole ------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=histories())
def test_store_records_hang_below_their_call_and_every_result_message_validates(lines: list) -> None:
    result = repair_messages(lines, format="factory-droid")
    out = result.messages
    ids = [line["id"] for line in out if line.get("type") == "message" and "id" in line]
    assert len(ids) == len(set(ids))
    parents = {line["id"]: line.get("parentId") for line in out if "id" in line}
    made_by = {}
    for line in lines:
        content = line.get("message", {}).get("content") if line.get("type") == "message" else None
        for block in content or []:
            if block.get("type") == "tool_use":
                made_by.setdefault(block["id"], line["id"])
    for inserted in result.inserted:
        record = inserted.record
        assert _valid(record["message"]) == record["message"]
        call_id = record["message"]["content"][0]["tool_use_id"]
        node, steps = record["parentId"], 0
        while node is not None and node != made_by[call_id] and steps < len(out):
            node, steps = parents.get(node), steps + 1
        assert node == made_by[call_id]
    # Stream-json logs are never written to.
    if lines and lines[0].get("type") == "system":
        assert result.inserted == [] and result.messages == lines
