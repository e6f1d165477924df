"""The pi format: pi (and OpenClaw) session files, checked and repaired in their own terms.

What users depend on: the published sessions check clean; a dangling call is
found and answered with the ``toolResult`` entry pi itself would append,
chained into the session tree so that pi resumes with it (pi, when its
runtime is installed under tests/runtimes, loads the repaired file and sends
the record right after the call); ids stay unique and a second fix writes the
same bytes; detection claims pi's files and nothing else.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats import pi as pi_module
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.pi import PiAdapter

from strategies.pi import SESSION, assistant, entry, header, histories, tool_call, tool_result, user

CASES = Path(__file__).resolve().parents[1] / "cases" / "pi"

# What a correct doctor reports on each sample session (../shared/corpus/README.md).
CORPUS_VERDICTS = {
    "pi/fixture_session_v3.jsonl": [],
    "openclaw/fixture_session.jsonl": [],
}
# Other runtimes' samples: pi must never claim them.
FOREIGN = [
    "factory-droid/fixture_session_store.jsonl",
    "factory-droid/fixture_stream_json.jsonl",
    "claude-code/fixture_representative.jsonl",
    "codex/fixture_clean_pairing.jsonl",
    "qwen-code/fixture_session.jsonl",
    "copilot-cli/fixture_events.jsonl",
    "grok-cli/fixture_chat_history.jsonl",
    "kimi/fixture_wire.jsonl",
]


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


def _session(*body: dict, session: str = SESSION) -> list:
    return [header(session), *body]


def _interrupted(session: str = SESSION) -> list:
    """A prompt, a call, and the next prompt: the call was cut off."""
    return _session(
        user("00000001", None, "Delete build/", n=1),
        assistant("00000002", "00000001", [tool_call("toolu_01")], n=5),
        user("00000003", "00000002", "wait, keep it", n=40),
        session=session,
    )


def _records(lines: list) -> list:
    return [
        line
        for line in lines
        if isinstance(line.get("message"), dict) and line["message"].get("content") == [{"type": "text", "text": DEFAULT_MARKER}]
    ]


# -- detection ---------------------------------------------------------------------


def test_pi_and_openclaw_samples_are_detected_as_pi(corpus: Path) -> None:
    for name in CORPUS_VERDICTS:
        samples = _lines(corpus / name)
        assert PiAdapter.detect(samples) == Detection.CERTAIN, name
        assert detect_format(samples) is PiAdapter, name


@pytest.mark.parametrize("name", FOREIGN)
def test_other_runtimes_samples_are_not_taken_for_pi(corpus: Path, name: str) -> None:
    assert PiAdapter.detect(_lines(corpus / name)) == Detection.NO


def test_only_what_defines_pi_claims_a_file() -> None:
    # A session excerpt without its header: pi's own message shapes settle it.
    assert PiAdapter.detect([tool_result("00000009", "00000008", "c1", "ok")]) == Detection.CERTAIN
    assert PiAdapter.detect([assistant("00000008", None, [tool_call("c1")])]) == Detection.CERTAIN
    # Entry types pi shares a name with nothing define it, and a line without a type contradicts it.
    assert PiAdapter.detect([entry("model_change", "00000001", None, 1, provider="p", modelId="m")]) == Detection.NO
    assert PiAdapter.detect([header(), {"role": "user", "content": "hi"}]) == Detection.NO
    # Anthropic blocks in the same envelope are another runtime's (Factory Droid's session store).
    droid = {
        "type": "message",
        "id": "m2",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
    }
    assert PiAdapter.detect([header(), droid]) == Detection.NO


# -- the published sessions --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORPUS_VERDICTS))
def test_corpus_verdicts_are_exact(corpus: Path, name: str) -> None:
    report = _report("check", "--isolated", str(corpus / name))
    assert report["format"] == "pi"
    assert [(f["code"], f["line"], f.get("call_id")) for f in report["findings"]] == CORPUS_VERDICTS[name]
    assert _invoke("check", "--isolated", str(corpus / name)).exit_code == 0


def test_an_openclaw_session_cut_after_its_call_is_repaired_at_the_end(corpus: Path, tmp_path: Path) -> None:
    lines = _lines(corpus / "openclaw" / "fixture_session.jsonl")[:-1]  # the result never came
    path = _write(tmp_path / "cut.jsonl", lines)
    report = _report("check", str(path))
    assert [(f["code"], f["line"], f["call_id"], f["tool"]) for f in report["findings"]] == [("APX001", 4, "tc1", "shell_exec")]
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    repaired = _lines(path)
    assert repaired[:4] == lines
    (record,) = repaired[4:]
    assert record["parentId"] == "m2" and record["message"]["toolCallId"] == "tc1"
    assert record["message"]["toolName"] == "shell_exec"
    assert _invoke("check", str(path)).exit_code == 0


# -- the record --------------------------------------------------------------------


def test_the_record_is_the_tool_result_entry_pi_appends(tmp_path: Path) -> None:
    lines = _interrupted()
    result = repair_messages(lines, format="pi")
    (inserted,) = result.inserted
    record = inserted.record
    assert list(record) == ["type", "id", "parentId", "timestamp", "message"]
    assert list(record["message"]) == ["role", "toolCallId", "toolName", "content", "isError", "timestamp"]
    assert record["type"] == "message" and re.fullmatch(r"[0-9a-f]{8}", record["id"])
    assert record["message"]["role"] == "toolResult"
    assert (record["message"]["toolCallId"], record["message"]["toolName"]) == ("toolu_01", "bash")
    assert record["message"]["content"] == [{"type": "text", "text": DEFAULT_MARKER}]
    # Not an error: nothing reported one; no result was received in that turn.
    assert record["message"]["isError"] is False
    # Hung off the call's entry, and the next prompt now hangs off the record.
    assert record["parentId"] == "00000002"
    assert result.messages[3] is record and result.messages[4]["parentId"] == record["id"]
    assert {k: v for k, v in result.messages[4].items() if k != "parentId"} == {
        k: v for k, v in lines[3].items() if k != "parentId"
    }


def test_the_record_is_never_earlier_than_the_line_before_it() -> None:
    lines = _interrupted()
    lines.insert(3, entry("thinking_level_change", "0000000a", "00000002", 30, thinkingLevel="high"))
    lines[4]["parentId"] = "0000000a"
    (inserted,) = repair_messages(lines, format="pi").inserted
    assert inserted.record["timestamp"] == lines[3]["timestamp"]
    moment = datetime.fromisoformat(inserted.record["timestamp"])
    assert inserted.record["message"]["timestamp"] == round(moment.timestamp() * 1000)
    # A clock that ran back after the call: the record keeps the call's moment.
    back = _interrupted()
    back[2]["timestamp"] = "2026-05-12T10:00:00.000Z"
    (inserted,) = repair_messages(back, format="pi").inserted
    assert inserted.record["timestamp"] == "2026-05-12T10:00:00.000Z"


def test_a_second_run_writes_the_same_bytes_and_another_session_another_id(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.jsonl", _interrupted())
    second = _write(tmp_path / "b.jsonl", _interrupted())
    other = _write(tmp_path / "c.jsonl", _interrupted(session="019e0000-0000-7000-8000-000000000001"))
    for path in (first, second, other):
        assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert first.read_bytes() == second.read_bytes()
    assert _records(_lines(first))[0]["id"] != _records(_lines(other))[0]["id"]
    before = first.read_bytes()
    assert _invoke("fix", "--in-place", str(first)).exit_code == 0
    assert first.read_bytes() == before


def _id_of_record(lines: list) -> str:
    return repair_messages(lines, format="pi").inserted[0].record["id"]


def test_an_id_the_file_already_uses_is_never_given_to_a_record() -> None:
    taken = _id_of_record(_interrupted())
    lines = _interrupted()
    # An entry written before the call already carries the id the record would get.
    lines.insert(1, entry("model_change", taken, None, 0, provider="anthropic", modelId="m"))
    lines[2]["parentId"] = taken
    result = repair_messages(lines, format="pi")
    ids = [line.get("id") for line in result.messages[1:]]
    assert result.inserted[0].record["id"] != taken
    assert len(ids) == len(set(ids))
    assert repair_messages(lines, format="pi").messages == result.messages


def test_past_the_exact_set_ids_are_kept_in_a_bitmap_with_the_same_guarantees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pi_module, "_EXACT_IDS", 2)
    taken = _id_of_record(_interrupted())
    lines = _interrupted()
    lines.insert(1, entry("model_change", taken, None, 0, provider="anthropic", modelId="m"))
    lines[2]["parentId"] = taken
    adapter = PiAdapter()
    for line in lines:
        adapter.classify(line)
    assert adapter._seen is None and adapter._bitmap is not None  # the bitmap is in use
    result = repair_messages(lines, format="pi")
    assert result.inserted[0].record["id"] != taken
    assert repair_messages(lines, format="pi").messages == result.messages


def test_parallel_calls_get_one_record_each_in_call_order_chained_one_below_the_other() -> None:
    lines = _session(
        user("00000001", None, "Check a, b and c", n=1),
        assistant("00000002", "00000001", [tool_call("ca"), tool_call("cb"), tool_call("cc")], n=2),
        tool_result("00000003", "00000002", "cb", "b: ok", n=3),
        user("00000004", "00000003", "and?", n=9),
    )
    result = repair_messages(lines, format="pi")
    records = [i.record for i in result.inserted]
    assert [r["message"]["toolCallId"] for r in records] == ["ca", "cc"]
    assert [r["parentId"] for r in records] == ["00000003", records[0]["id"]]
    assert result.messages[-1]["parentId"] == records[1]["id"]


def test_openclaw_synthetic_results_are_placeholders_however_worded() -> None:
    lines = _session(
        user("00000001", None, "go", n=1),
        assistant("00000002", "00000001", [tool_call("c1"), tool_call("c2")], n=2),
        tool_result(
            "00000003",
            "00000002",
            "c1",
            "[lossless-claw] missing tool result in session history; inserted synthetic error result for transcript repair.",
            n=3,
            error=True,
        ),
        tool_result("00000004", "00000003", "c2", "custom text", n=4, error=True),
    )
    lines[4]["message"]["details"] = {"openclawSyntheticMissingToolResult": True}
    assert [(f.code, f.call_id) for f in check_messages(lines, format="pi")] == [("APX006", "c1"), ("APX006", "c2")]
    # An error result of a real tool is an answer like any other.
    del lines[4]["message"]["details"]
    assert [(f.code, f.call_id) for f in check_messages(lines, format="pi")] == [("APX006", "c1")]


def test_drop_orphans_moves_a_compaction_that_kept_from_a_removed_result_to_its_parent() -> None:
    lines = _session(
        user("00000001", None, "go", n=1),
        assistant("00000002", "00000001", [tool_call("c1")], n=2),
        tool_result("00000003", "00000002", "c1", "ok", n=3),
        tool_result("00000004", "00000003", "ghost", "stale", n=4),
        entry("compaction", "00000005", "00000004", 5, summary="s", firstKeptEntryId="00000004", tokensBefore=9),
    )
    result = repair_messages(lines, format="pi", drop_orphans=True)
    assert [line.get("id") for line in result.messages[1:]] == ["00000001", "00000002", "00000003", "00000005"]
    assert result.messages[-1]["parentId"] == "00000003"
    assert result.messages[-1]["firstKeptEntryId"] == "00000003"


# -- the tree stays whole ------------------------------------------------------------


def _parents(lines: list) -> dict:
    return {line["id"]: line.get("parentId") for line in lines[1:] if "id" in line}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=histories())
def test_records_hang_below_their_call_and_ids_stay_unique(lines: list) -> None:
    result = repair_messages(lines, format="pi")
    out = result.messages
    ids = [line["id"] for line in out[1:] if "id" in line]
    assert len(ids) == len(set(ids))
    parents = _parents(out)
    # The call's entry for each call id, as written.
    call_line = {}
    for line in lines:
        message = line.get("message") if isinstance(line, dict) else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            for part in message.get("content", []):
                if isinstance(part, dict) and part.get("type") == "toolCall":
                    call_line.setdefault(part["id"], line.get("id"))
    for inserted in result.inserted:
        record = inserted.record
        if "id" not in record:
            assert not any("id" in line for line in lines[1:])  # a version 1 file: no tree
            continue
        # Walking up from the record reaches the entry that made the call.
        node, seen = record["parentId"], 0
        while node is not None and node != call_line[record["message"]["toolCallId"]] and seen < len(out):
            node, seen = parents.get(node), seen + 1
        assert node == call_line[record["message"]["toolCallId"]]
    # Every entry that is not a root hangs off an entry of the file.
    for line in out[1:]:
        parent = line.get("parentId")
        assert parent is None or parent in parents or not isinstance(parent, str)


def test_records_written_at_one_place_never_go_back_in_time() -> None:
    # OpenClaw commits a response's calls one fragment at a time; here the second
    # fragment's clock ran behind the first's.
    lines = _session(
        user("00000001", None, "Read a and b", n=1),
        assistant("00000002", "00000001", [tool_call("ca")], n=20, turnId="turn-1"),
        assistant("00000003", "00000002", [tool_call("cb")], n=10, turnId="turn-1"),
        user("00000004", "00000003", "well?", n=30),
    )
    records = [i.record for i in repair_messages(lines, format="pi").inserted]
    assert [r["message"]["toolCallId"] for r in records] == ["ca", "cb"]
    moments = [datetime.fromisoformat(r["timestamp"]) for r in records]
    assert moments[0] >= datetime.fromisoformat(lines[3]["timestamp"]) and moments[1] >= moments[0]
