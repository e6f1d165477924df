"""The gemini-cli format: Gemini CLI sessions, as one JSON document or as the JSONL log.

Facts from google-gemini/gemini-cli (packages/core/src/services/chatRecordingService.ts and
chatRecordingTypes.ts, core/geminiChat.ts, scheduler/types.ts, utils/sessionUtils.ts): a call
is recorded on its reply's ``toolCalls[]`` once it completed, with ``result`` (the
functionResponse parts) and ``status`` (``success``, ``error`` or ``cancelled``); the log
appends a message again each time it changes, the last record of an id winning while the
message keeps its place, ``$set`` merges into the header (its ``messages``, when not empty,
replace the records') and ``$rewindTo`` removes that message and every later one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from apx_doctor import check_messages, documents, repair_messages, stream
from apx_doctor.cli import app
from apx_doctor.doctor import RepairOptions
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.base import Detection
from apx_doctor.formats.gemini_cli import FINAL_STATUSES, Fold, GeminiCliAdapter
from apx_doctor.jsonl import parse

MARKER = "not run: the turn was interrupted"
SAMPLES = ("gemini-cli/session_file_ops_37b7abef.json", "gemini-cli/fixture_jsonl_v040.jsonl")


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(path: Path) -> dict:
    result = _invoke("check", "--isolated", "--output-format", "json", str(path))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def _interrupted(path: Path) -> list[tuple]:
    return [(f["line"], f["index"], f["call_id"]) for f in _report(path)["findings"] if f["code"] == "APX001"]


def _call(call_id: str, status: str | None = None, result=None, **more) -> dict:
    record = {"id": call_id, "name": "run_shell_command", "args": {"command": "ls"}}
    if result is not None:
        record["result"] = result
    if status is not None:
        record["status"] = status
    record["timestamp"] = "2026-01-16T11:01:30.000Z"
    record.update(more)
    return record


def _ok(call_id: str) -> list:
    return [{"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": "a.txt"}}}]


def _user(message_id: str, text: str = "go") -> dict:
    return {"id": message_id, "timestamp": "2026-01-16T11:01:22.281Z", "type": "user", "content": text}


def _reply(message_id: str, *calls: dict, **more) -> dict:
    return {
        "id": message_id,
        "timestamp": "2026-01-16T11:01:30.000Z",
        "type": "gemini",
        "content": "",
        "toolCalls": list(calls),
        **more,
    }


def _session(*messages: dict) -> dict:
    return {"sessionId": "s1", "projectHash": "ab" * 32, "startTime": "2026-01-16T11:01:22.281Z",
            "lastUpdated": "2026-01-16T11:05:00.000Z", "messages": list(messages)}  # fmt: skip


def _document(path: Path, *messages: dict) -> Path:
    # What Gemini CLI writes: JSON.stringify(conversation, null, 2), no final line ending.
    path.write_text(json.dumps(_session(*messages), indent=2, ensure_ascii=False))
    return path


HEADER = {
    "sessionId": "s1",
    "projectHash": "ab" * 32,
    "startTime": "2026-04-29T21:39:22.319Z",
    "lastUpdated": "2026-04-29T21:39:22.319Z",
}


def _log(path: Path, *records: dict) -> Path:
    # What Gemini CLI writes: JSON.stringify(record) + "\n", appended.
    path.write_text("".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in records))
    return path


# --- the corpus ---------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_corpus_samples_are_read_as_gemini_cli_and_are_clean(corpus: Path, sample: str) -> None:
    report = _report(corpus / sample)
    assert report["format"] == "gemini-cli" and report["findings"] == []
    assert _invoke("fix", "--isolated", str(corpus / sample)).exit_code == 0


def test_the_session_document_is_clean_because_its_fourteen_calls_are_answered(corpus: Path) -> None:
    # Clean because every call is seen and answered, not because none is seen.
    messages = json.loads((corpus / SAMPLES[0]).read_text())["messages"]
    adapter = GeminiCliAdapter()
    shown = [adapter.describe(m) for m in messages]
    assert sum(len(e.calls) for e in shown) == 14 and sum(len(e.results) for e in shown) == 14
    assert not any(adapter.classify(m).calls for m in messages)


def test_only_gemini_cli_claims_its_samples_and_it_claims_no_other_folders(corpus: Path) -> None:
    log = [parse(line) for line in (corpus / SAMPLES[1]).read_bytes().splitlines()]
    assert detect_format(log) is GeminiCliAdapter
    document = json.loads((corpus / SAMPLES[0]).read_bytes())
    assert [a for a in documents.document_formats() if a.detect_document(document) >= Detection.CERTAIN] == [GeminiCliAdapter]
    for sample in sorted(corpus.glob("*/*.jsonl")):
        if sample.parent.name == "gemini-cli":
            continue
        lines = [parse(line) for line in sample.read_bytes().splitlines()[:64]]
        assert GeminiCliAdapter.detect(lines) == Detection.NO, sample


# --- which calls are open -----------------------------------------------------


@pytest.mark.parametrize("status", sorted(FINAL_STATUSES))
def test_a_final_status_answers_a_call_even_without_a_result(status: str, tmp_path: Path) -> None:
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", _call("c1", status)), _user("u2"))
    assert _interrupted(path) == []


@pytest.mark.parametrize("status", ["validating", "scheduled", "awaiting_approval", "executing", "some_future_status", None])
def test_a_call_without_a_result_and_a_final_status_is_interrupted(status, tmp_path: Path) -> None:
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", _call("c1", status)), _user("u2"))
    assert [(index, call_id) for _line, index, call_id in _interrupted(path)] == [(1, "c1")]


@pytest.mark.parametrize("result", [None, [], ""], ids=["null", "empty-list", "empty-string"])
def test_an_empty_result_is_no_result(result, tmp_path: Path) -> None:
    record = _call("c1", "executing")
    record["result"] = result
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", record))
    assert len(_interrupted(path)) == 1


def test_a_result_answers_a_call_whatever_its_status(tmp_path: Path) -> None:
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", _call("c1", "executing", _ok("c1"))), _user("u2"))
    assert _interrupted(path) == []


def test_the_clis_notes_close_nothing_and_the_next_reply_or_prompt_does(tmp_path: Path) -> None:
    note = {"id": "i1", "timestamp": "2026-01-16T11:01:31.000Z", "type": "info", "content": "Request cancelled."}
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", _call("c1", "executing")), note)
    # Only a note follows: the call is closed at the end, and --keep-open-tail leaves it alone.
    assert [index for _line, index, _c in _interrupted(path)] == [1]
    kept = _invoke("check", "--isolated", "--keep-open-tail", "--output-format", "json", str(path))
    assert json.loads(kept.stdout)["files"][0]["findings"] == []
    path = _document(tmp_path / "t.json", _user("u1"), _reply("g1", _call("c1", "executing")), note, _reply("g2"))
    result = _invoke("check", "--isolated", "--keep-open-tail", "--output-format", "json", str(path))
    assert [f["call_id"] for f in json.loads(result.stdout)["files"][0]["findings"]] == ["c1"]


def test_a_reply_before_the_first_prompt_is_not_checked(tmp_path: Path) -> None:
    path = _document(tmp_path / "s.json", _reply("g0", _call("c0", "executing")), _user("u1"))
    assert _interrupted(path) == []


# --- the repair ---------------------------------------------------------------


def test_the_answer_is_written_into_the_calls_own_record(tmp_path: Path) -> None:
    done = _call("c1", "success", _ok("c1"), displayName="Shell")
    cut = _call("c2", "awaiting_approval", displayName="Shell", description="rm -rf build")
    messages = (_user("u1", "Tidy up — «vite»"), _reply("g1", done, cut, model="gemini-3-pro"), _user("u2", "wait"))
    path = _document(tmp_path / "s.json", *messages)
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    repaired = json.loads(path.read_text())
    record = repaired["messages"][1]["toolCalls"][1]
    # Its keys keep their order; status is set where it stands and the result added after them.
    assert list(record) == ["id", "name", "args", "status", "timestamp", "displayName", "description", "result"]
    assert record["status"] == "cancelled"
    assert record["result"] == [{"functionResponse": {"id": "c2", "name": "run_shell_command", "response": {"output": MARKER}}}]
    # Nothing else changed: no new message, the answered call and every other message as they were.
    expected = _session(*messages)
    expected["messages"][1]["toolCalls"][1] = record
    assert repaired == expected
    assert path.read_text() == json.dumps(expected, indent=2, ensure_ascii=False)


def test_a_marker_answer_already_there_is_an_answer(tmp_path: Path) -> None:
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", _call("c1", "executing")), _user("u2"))
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert _interrupted(path) == []
    custom = _document(tmp_path / "t.json", _user("u1"), _reply("g1", _call("c1", "executing")), _user("u2"))
    assert _invoke("fix", "--in-place", "--marker", "INTERRUPTED", str(custom)).exit_code == 1
    answer = json.loads(custom.read_text())["messages"][1]["toolCalls"][0]["result"][0]["functionResponse"]
    assert answer["response"] == {"output": "INTERRUPTED"}


def test_a_call_without_a_name_is_reported_but_not_answered(tmp_path: Path) -> None:
    record = _call("c1", "executing")
    del record["name"]
    path = _document(tmp_path / "s.json", _user("u1"), _reply("g1", record), _user("u2"))
    (finding,) = [f for f in _report(path)["findings"] if f["code"] == "APX001"]
    assert finding["fixable"] is False
    before = path.read_bytes()
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1  # an unfixable error remains
    assert path.read_bytes() == before


# --- the log ------------------------------------------------------------------


def test_the_last_record_of_a_message_wins(tmp_path: Path) -> None:
    started, finished = _reply("g1", _call("c1", "executing")), _reply("g1", _call("c1", "success", _ok("c1")))
    assert _interrupted(_log(tmp_path / "a.jsonl", HEADER, _user("u1"), started, finished, _user("u2"))) == []
    # The other way round the call is open, reported on the line of the record that counts.
    assert _interrupted(_log(tmp_path / "b.jsonl", HEADER, _user("u1"), finished, started, _user("u2"))) == [(4, 1, "c1")]


def test_a_rewind_removes_the_message_and_every_later_one(tmp_path: Path) -> None:
    cut = _reply("g2", _call("c2", "executing"))
    path = _log(tmp_path / "a.jsonl", HEADER, _user("u1"), _reply("g1"), _user("u2"), cut, {"$rewindTo": "u2"}, _user("u3"))
    assert _interrupted(path) == []
    # Rewound past, then written again: the message is back, at the end.
    path = _log(tmp_path / "b.jsonl", HEADER, _user("u1"), cut, {"$rewindTo": "g2"}, _user("u3"), cut)
    assert _interrupted(path) == [(6, 2, "c2")]


def test_a_rewind_to_an_unknown_message_removes_them_all(tmp_path: Path) -> None:
    path = _log(tmp_path / "a.jsonl", HEADER, _user("u1"), _reply("g1", _call("c1", "executing")), {"$rewindTo": "nope"})
    assert _interrupted(path) == []


def test_parallel_calls_cut_in_one_reply_are_answered_by_one_appended_record(tmp_path: Path) -> None:
    records = (
        HEADER,
        _user("u1"),
        _reply("g1", _call("c1", "executing"), _call("c2", "scheduled")),
        _user("u2"),
        {"$set": {"lastUpdated": "x"}},
    )
    path = _log(tmp_path / "a.jsonl", *records)
    original = path.read_bytes()
    report = _report(path)
    assert [(e["action"], e["before_line"], e["call_id"]) for e in report["edits"]] == [("insert", 6, "c1"), ("insert", 6, "c2")]
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    out = path.read_bytes()
    assert out.startswith(original)  # every line as it was; the records come after them
    (appended,) = [json.loads(line) for line in out[len(original) :].splitlines()]
    assert [c["status"] for c in appended["toolCalls"]] == ["cancelled", "cancelled"]
    assert [e["record"] for e in report["edits"]] == [appended, appended]
    # Read back as Gemini CLI reads it, the reply is still second, with both calls answered.
    fold = Fold()
    for number, line in enumerate(out.splitlines(), 1):
        fold.add(number, json.loads(line))
    messages, _lines = fold.conversation()
    assert [m["id"] for m in messages] == ["u1", "g1", "u2"]
    assert all(c["result"][0]["functionResponse"]["response"] == {"output": MARKER} for c in messages[1]["toolCalls"])
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0


def test_a_log_whose_last_line_was_cut_mid_write(tmp_path: Path) -> None:
    path = _log(tmp_path / "a.jsonl", HEADER, _user("u1"), _reply("g1", _call("c1", "executing")))
    path.write_bytes(path.read_bytes() + b'{"id":"u2","timestamp":"2026')
    before = path.read_bytes()
    report = _report(path)
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("APX001", 3), ("APX102", 4)]
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == before  # a line that is no JSON stops the write
    assert _invoke("fix", "--in-place", "--salvage", str(path)).exit_code == 1
    assert Path(str(path) + ".rejected.jsonl").read_bytes() == b'{"id":"u2","timestamp":"2026\n'
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[:3]) == before[: before.index(b'{"id":"u2"')] and len(lines) == 4
    assert json.loads(lines[3])["toolCalls"][0]["status"] == "cancelled"


def test_a_log_without_a_final_line_ending_gets_one_before_the_record(tmp_path: Path) -> None:
    path = _log(tmp_path / "a.jsonl", HEADER, _user("u1"), _reply("g1", _call("c1", "executing")))
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    before = path.read_bytes()
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes().startswith(before + b"\n") and path.read_bytes().endswith(b"\n")


# --- the library --------------------------------------------------------------


def test_the_library_answers_a_call_in_its_own_record_as_the_document_library_does() -> None:
    messages = [_user("u1"), _reply("g1", _call("c1", "executing")), _user("u2")]
    (finding,) = check_messages(messages, format="gemini-cli")
    assert (finding.code, finding.line, finding.index, finding.call_id, finding.fixable) == ("APX001", 2, 1, "c1", True)
    result = repair_messages(messages, format="gemini-cli")
    # Never a made-up message: the call's own message is replaced by its answered copy.
    assert len(result.messages) == len(messages) and result.messages[1]["toolCalls"][0]["status"] == "cancelled"
    repaired = documents.repair_document(_session(*messages))
    assert result.messages == repaired.value["messages"]
    assert [(f.code, f.index) for f in repaired.findings] == [("APX001", 1)]


def test_detection_never_trips_on_any_type() -> None:
    odd = [None, 1, "x", [], {"sessionId": 1, "projectHash": []}, {"messages": {}}, {"$set": "x"}, {"$rewindTo": 5}]
    for adapter in adapters():
        adapter.detect(odd)
    assert GeminiCliAdapter.detect(odd) == Detection.NO
    assert all(GeminiCliAdapter.detect_document(v) == Detection.NO for v in odd)


# --- any type anywhere in a session document ------------------------------------

_KEYS = ("type", "id", "toolCalls", "name", "args", "status", "result", "content", "functionCall", "timestamp", "messages")
_ANY = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from(["gemini", "user", "info", "c1", "success", "executing", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _damaged_sessions(draw) -> dict:
    messages = [_user("u1"), _reply("g1", _call("c1", "executing"), _call("c2", "success", _ok("c2"))), _user("u2"),
                _reply("g2", _call("c3", "scheduled")), {"id": "g3", "type": "gemini", "content": [{"functionCall": {"id": "p1", "name": "glob"}}]}]  # fmt: skip
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(messages))
        if draw(st.booleans()) and isinstance(target.get("toolCalls"), list) and target["toolCalls"]:
            target = draw(st.sampled_from(target["toolCalls"]))
        if isinstance(target, dict):
            target[draw(st.sampled_from(_KEYS))] = draw(_ANY)
    if draw(st.integers(0, 5)) == 0:
        messages[draw(st.integers(0, len(messages) - 1))] = draw(_ANY)
    return _session(*messages)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=_damaged_sessions(), tail=st.booleans())
def test_a_session_document_with_any_type_anywhere_is_read_and_repaired_soundly(session: dict, tail: bool) -> None:
    data = json.dumps(session, indent=2, ensure_ascii=False).encode()
    config = stream.StreamConfig(repair=RepairOptions(keep_open_tail=tail))
    checked = stream.run(data.splitlines(keepends=True), config)  # never raises
    assert checked.format == "gemini-cli"
    sink = stream.MemorySink()
    repaired = stream.run(data.splitlines(keepends=True), config, sink)
    out = sink.getvalue()
    fixable = [f for f in repaired.findings if f.code == "APX001" and f.fixable is not False]
    assert len([e for e in repaired.edits if e.action == "insert"]) == len(fixable)
    if not repaired.edits:
        assert out == data
        return
    # Only the cut calls' records changed, and a second pass finds nothing to do.
    after = json.loads(out)
    assert len(after["messages"]) == len(session["messages"])
    changed = [i for i, (a, b) in enumerate(zip(session["messages"], after["messages"])) if a != b]
    assert set(changed) == {f.index for f in fixable}
    again = stream.run(out.splitlines(keepends=True), config, stream.MemorySink())
    assert not again.edits and not [f for f in again.findings if f.code == "APX001" and f.fixable is not False]
