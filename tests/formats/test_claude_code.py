"""The claude-code format: Claude Code session files and sub-agent files.

What users depend on: a real session checks clean; a dangling call is found
and answered with a result line Claude Code itself would write; the repaired
file still loads in claude-code-log with its uuid tree whole (every parent
exists, the same roots); a second fix changes nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from apx_doctor import check_messages, jsonl, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import detect_format
from apx_doctor.formats.base import DEFAULT_MARKER

from strategies.claude_code import SESSION, assistant, histories, progress, prompt, result, system, tool_use

claude_code_log = pytest.importorskip("claude_code_log")
from claude_code_log.converter import load_transcript  # noqa: E402
from claude_code_log.dag import build_dag_from_entries  # noqa: E402
from claude_code_log.factories.transcript_factory import create_transcript_entry  # noqa: E402
from claude_code_log.models import UserTranscriptEntry  # noqa: E402

SIDE = "a1b2c3d4e5f6a7b8c"


# -- helpers ----------------------------------------------------------------------


def _encode(lines: list) -> bytes:
    return b"".join(jsonl.dumps(line) + b"\n" for line in lines)


def _decode(data: bytes) -> list:
    return [jsonl.parse(line) for line in data.splitlines()]


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def _check(path: Path) -> dict:
    result_ = _cli("check", "--output-format", "json", str(path))
    assert result_.exit_code in (0, 1), result_.output
    return json.loads(result_.stdout)["files"][0]


def _fix(path: Path, *flags: str) -> bytes:
    out = path.with_name(path.stem + ".fixed.jsonl")
    result_ = _cli("fix", *flags, "--output", str(out), str(path))
    assert result_.exit_code in (0, 1), result_.output
    return out.read_bytes()


def _tree(lines: list) -> tuple[set, set, set]:
    """(uuids, roots, parents naming no line) of a session's lines."""
    uuids = {line["uuid"] for line in lines if isinstance(line, dict) and isinstance(line.get("uuid"), str)}
    roots, missing = set(), set()
    for line in lines:
        if not isinstance(line, dict) or "uuid" not in line:
            continue
        parent = line.get("parentUuid")
        if parent is None:
            roots.add(line["uuid"])
        elif parent not in uuids:
            missing.add(parent)
    return uuids, roots, missing


def assert_tree_kept(before: list, after: list) -> None:
    """Every parent still names a line (or one the input already lacked), and no new roots."""
    _, roots_before, missing_before = _tree(before)
    uuids_after, roots_after, missing_after = _tree(after)
    assert roots_after == roots_before
    assert missing_after <= missing_before
    assert len(uuids_after) == sum(1 for line in after if isinstance(line, dict) and "uuid" in line), "a uuid repeats"


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def assert_loads_in_claude_code_log(data: bytes, folder: Path) -> list:
    """claude-code-log reads every line, prints no error and finds no orphan in the tree."""
    path = folder / f"{SESSION}.jsonl"
    path.write_bytes(data)
    for line in _decode(data):
        if line.get("type") in ("user", "assistant", "system", "summary", "queue-operation"):
            create_transcript_entry(line)  # raises on a line it cannot read
    handler = _Warnings()
    logger = logging.getLogger("claude_code_log")
    logger.addHandler(handler)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            entries = load_transcript(path, silent=True)
            build_dag_from_entries(entries)
    finally:
        logger.removeHandler(handler)
    assert "Line " not in printed.getvalue(), printed.getvalue()
    assert not [m for m in handler.messages if "rphan" in m or "unexpected" in m], handler.messages
    return entries


def _readable(line: dict) -> bool:
    try:
        create_transcript_entry(line)
    except ValueError:
        return False
    return True


def _inserted(before: list, after: list) -> list:
    kept = {jsonl.dumps(line) for line in before}
    uuids = {line.get("uuid") for line in before}
    return [line for line in after if jsonl.dumps(line) not in kept and line.get("uuid") not in uuids]


def _session(*lines: dict) -> list:
    return [
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-01-23T17:00:00.000Z", "sessionId": SESSION},
        *lines,
    ]


def _dangling_then_prompt() -> list:
    return _session(
        prompt("u1", None, "list the files", n=1),
        assistant("a1", "u1", "msg_A", {"type": "text", "text": "Listing."}, n=2),
        assistant("a2", "a1", "msg_A", tool_use("toolu_A"), n=3),
        prompt("u2", "a2", "stop, what day is it?", n=4),
        assistant("a3", "u2", "msg_B", {"type": "text", "text": "Monday."}, n=5),
    )


def _dangling_at_end() -> list:
    return _session(
        prompt("u1", None, "run the tests", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2),
        assistant("a2", "a1", "msg_A", tool_use("toolu_B"), n=3),
        progress("p1", "a2", "toolu_B", n=4),
    )


# -- detection ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        {"type": "summary", "summary": "Refactor", "leafUuid": "7b15aefe-5ea3-4def-93a8-607a42a5ec67"},
        {
            "type": "file-history-snapshot",
            "messageId": "m",
            "snapshot": {"messageId": "m", "trackedFileBackups": {}},
            "isSnapshotUpdate": False,
        },
    ],
    ids=["summary", "file-history-snapshot"],
)
def test_a_file_starting_with_metadata_lines_is_claude_code(first: dict, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_encode([first, first, *_dangling_then_prompt()]))
    file = _check(path)
    assert file["format"] == "claude-code"
    assert [f["code"] for f in file["findings"]] == ["APX001"]


def test_a_file_of_metadata_only_is_claude_code_and_clean(tmp_path: Path) -> None:
    lines = [
        {"type": "summary", "summary": "Refactor", "leafUuid": "x"},
        {"type": "permission-mode", "permissionMode": "acceptEdits", "sessionId": SESSION},
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(_encode(lines))
    file = _check(path)
    assert (file["format"], file["findings"]) == ("claude-code", [])


def test_other_formats_are_not_taken_for_claude_code() -> None:
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": []}]
    codex = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}]
    assert detect_format(chat).name != "claude-code"
    assert detect_format(_dangling_at_end()).name == "claude-code"
    with contextlib.suppress(ValueError):  # another format may claim it, or none
        assert detect_format(codex).name != "claude-code"


def test_lines_of_any_shape_are_classified_without_an_error() -> None:
    """Transcripts are untrusted: a `type` or id that is an object or list is no Claude Code line."""
    from apx_doctor.formats.claude_code import ClaudeCodeAdapter

    odd = [{"type": {"a": 1}}, {"type": ["user"], "uuid": "u"}, {"type": "user", "message": {"content": [{"type": {}}]}}]
    assert ClaudeCodeAdapter.detect(odd) == 0
    findings = check_messages(
        [
            *odd,
            {
                "type": "assistant",
                "uuid": [],
                "isSidechain": True,
                "agentId": {},
                "message": {"id": {}, "content": [tool_use("t")]},
            },
        ],
        format="claude-code",
    )
    assert [f.code for f in findings] == ["APX104", "APX104"]


# -- the corpus: real sessions ------------------------------------------------------------


def _corpus_files(corpus: Path) -> list[Path]:
    files = sorted((corpus / "claude-code").glob("*.jsonl"))
    if not files:
        pytest.skip(f"no claude-code sessions in {corpus}")
    return files


def test_every_real_session_checks_clean_with_the_cli(corpus: Path) -> None:
    for path in _corpus_files(corpus):
        result_ = _cli("check", "--output-format", "json", str(path))
        file = json.loads(result_.stdout)["files"][0]
        assert (result_.exit_code, file["format"], file["findings"]) == (0, "claude-code", []), path.name


def test_real_sessions_cut_after_a_call_are_repaired_into_whole_trees(corpus: Path, tmp_path: Path) -> None:
    """Cut a real session right after each line that makes a call: that call dangles at the end."""
    cuts = 0
    for path in _corpus_files(corpus):
        lines = _decode(path.read_bytes())
        for end, line in enumerate(lines, 1):
            content = (line.get("message") or {}).get("content") if line.get("type") == "assistant" else None
            ids = [b["id"] for b in content or () if isinstance(b, dict) and b.get("type") == "tool_use"]
            if not ids:
                continue
            head = lines[:end]
            findings = check_messages(head, format="claude-code")
            if not any(f.code == "APX001" for f in findings):
                continue  # the history has not started yet (an excerpt that opens mid-turn)
            cuts += 1
            assert ids[-1] in {f.call_id for f in findings if f.code == "APX001"}
            fixed = repair_messages(head, format="claude-code").messages
            assert_tree_kept(head, fixed)
            by_uuid = {line.get("uuid"): line for line in head}
            for record in _inserted(head, fixed):
                if _readable(by_uuid[record["sourceToolAssistantUUID"]]):
                    # Where claude-code-log reads the call's line, it reads the result's.
                    assert isinstance(create_transcript_entry(record), UserTranscriptEntry)
            again = repair_messages(fixed, format="claude-code")
            assert not again.changed
    assert cuts >= 5


# -- dangling calls: found, fixed, loadable ------------------------------------------------


@pytest.mark.parametrize("make", [_dangling_then_prompt, _dangling_at_end], ids=["then-a-prompt", "at-the-end"])
def test_a_dangling_call_is_found_fixed_and_loads_in_claude_code_log(make, tmp_path: Path) -> None:
    lines = make()
    path = tmp_path / "session.jsonl"
    path.write_bytes(_encode(lines))
    file = _check(path)
    pending = [f["call_id"] for f in file["findings"] if f["code"] == "APX001"]
    assert pending and all(f["code"] == "APX001" for f in file["findings"])
    fixed = _fix(path)
    after = _decode(fixed)
    assert_tree_kept(lines, after)
    records = _inserted(lines, after)
    assert [r["message"]["content"][0]["tool_use_id"] for r in records] == pending
    entries = assert_loads_in_claude_code_log(fixed, tmp_path)
    assert {r["uuid"] for r in records} <= {getattr(e, "uuid", None) for e in entries}
    again = tmp_path / "again.jsonl"
    again.write_bytes(fixed)
    assert _fix(again) == fixed
    assert _check(again)["findings"] == []


def test_the_record_is_the_line_claude_code_writes_for_a_result(tmp_path: Path) -> None:
    lines = _dangling_then_prompt()
    fixed = repair_messages(lines, format="claude-code").messages
    (record,) = _inserted(lines, fixed)
    call_line = lines[3]
    assert record["type"] == "user"
    assert record["message"] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": DEFAULT_MARKER}],
    }
    assert record["toolUseResult"] == DEFAULT_MARKER
    assert record["sourceToolAssistantUUID"] == "a2"
    assert record["isSidechain"] is False
    for key in ("sessionId", "cwd", "version", "gitBranch", "userType"):
        assert record[key] == call_line[key]
    assert record["timestamp"] >= call_line["timestamp"]
    # It stands between the call and the next prompt, which now hangs off it.
    index = fixed.index(record)
    assert (record["parentUuid"], fixed[index + 1]["uuid"], fixed[index + 1]["parentUuid"]) == ("a2", "u2", record["uuid"])
    assert isinstance(create_transcript_entry(record), UserTranscriptEntry)


def test_inserted_uuids_are_fixed_by_session_and_call() -> None:
    lines = _dangling_at_end()
    first = _inserted(lines, repair_messages(lines, format="claude-code").messages)
    second = _inserted(lines, repair_messages(lines, format="claude-code").messages)
    assert orjson.dumps(first) == orjson.dumps(second)
    assert len({r["uuid"] for r in first}) == 2
    other = [{**line, "sessionId": "another-session"} if "sessionId" in line else line for line in lines]
    moved = _inserted(other, repair_messages(other, format="claude-code").messages)
    assert {r["uuid"] for r in moved}.isdisjoint({r["uuid"] for r in first})


def test_several_records_chain_to_each_other_after_the_last_line() -> None:
    lines = _dangling_at_end()
    fixed = repair_messages(lines, format="claude-code").messages
    first, second = _inserted(lines, fixed)
    assert (first["parentUuid"], second["parentUuid"]) == ("p1", first["uuid"])
    assert (first["sourceToolAssistantUUID"], second["sourceToolAssistantUUID"]) == ("a1", "a2")


# -- no false findings on sound sessions --------------------------------------------------------


def test_parallel_results_out_of_order_with_hooks_between_are_clean() -> None:
    lines = _session(
        prompt("u1", None, "read both", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2),
        progress("p1", "a1", "toolu_A", n=3),
        assistant("a2", "p1", "msg_A", tool_use("toolu_B"), n=4),
        assistant("a2c", "a2", "msg_A", tool_use("toolu_C"), n=4),
        result("r2", "a2c", "toolu_B", "b", source="a2", n=5),  # B before A and C
        system("s1", "r2", "informational", n=6),
        {
            **result("r3", "s1", "toolu_C", "c", source="a2c", n=6),
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_C", "content": "c"},
                    {"type": "text", "text": "<system-reminder>The file was modified.</system-reminder>"},
                ],
            },
        },
        {**prompt("m1", "r3", "Base directory for this skill: /x", n=7), "isMeta": True},
        result("r1", "m1", "toolu_A", "a", source="a1", n=8),
        assistant("a3", "r1", "msg_B", {"type": "text", "text": "Both."}, n=9),
    )
    assert check_messages(lines, format="claude-code") == []


def test_a_sidechain_pairs_within_its_own_thread() -> None:
    """The sub-agent's dangling call is found; the main thread's pending Task call is not closed by it."""
    lines = _session(
        prompt("u1", None, "research", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_T", "Task"), n=2),
        prompt("s1", None, "look around", agent=SIDE, n=3),
        assistant("s2", "s1", "msg_S1", tool_use("toolu_S", "Grep"), agent=SIDE, n=4),
        assistant("s3", "s2", "msg_S2", {"type": "text", "text": "Nothing."}, agent=SIDE, n=5),
        result("r1", "a1", "toolu_T", "Nothing.", source="a1", n=6),
        assistant("a2", "r1", "msg_B", {"type": "text", "text": "Done."}, n=7),
    )
    findings = check_messages(lines, format="claude-code")
    assert [(f.code, f.line, f.call_id) for f in findings] == [("APX001", 5, "toolu_S")]
    fixed = repair_messages(lines, format="claude-code").messages
    (record,) = _inserted(lines, fixed)
    assert (record["isSidechain"], record["agentId"], record["parentUuid"]) == (True, SIDE, "s2")
    assert fixed[fixed.index(record) + 1]["parentUuid"] == record["uuid"]
    assert_tree_kept(lines, fixed)


def test_a_result_in_another_thread_answers_nothing_there() -> None:
    lines = _session(
        prompt("u1", None, "go", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_X"), n=2),
        prompt("s1", None, "sub", agent=SIDE, n=3),
        result("s2", "s1", "toolu_X", "wrong thread", agent=SIDE, n=4),
        result("r1", "a1", "toolu_X", "right thread", source="a1", n=5),
    )
    assert [(f.code, f.line) for f in check_messages(lines, format="claude-code")] == [("APX002", 5)]


def test_old_sidechains_without_agent_ids_are_told_apart_by_their_trees() -> None:
    """Two sub-agents in the session file, interleaved: each tree is its own thread."""
    side = {"isSidechain": True}
    lines = _session(
        {**prompt("x1", None, "first", n=1), **side},
        {**prompt("y1", None, "second", n=2), **side},
        {**assistant("x2", "x1", "msg_X", tool_use("toolu_X"), n=3), **side},
        {**assistant("y2", "y1", "msg_Y", tool_use("toolu_Y"), n=4), **side},
        {**result("x3", "x2", "toolu_X", "x", n=5), **side},
        {**result("y3", "y2", "toolu_Y", "y", n=6), **side},
    )
    assert check_messages(lines, format="claude-code") == []


def test_a_sidechain_line_joins_its_parents_thread_whatever_agent_id_it_carries() -> None:
    """Some writers put agentId on a sub-agent's result lines only: the tree still says whose they are."""
    side = {"isSidechain": True}
    lines = _session(
        {**prompt("s1", None, "sub", n=1), **side},
        {**assistant("s2", "s1", "msg_S", tool_use("toolu_S"), n=2), **side},
        result("s3", "s2", "toolu_S", "found", agent=SIDE, n=3),
    )
    assert check_messages(lines, format="claude-code") == []


def test_a_compaction_in_a_sub_agent_file_closes_that_agents_calls() -> None:
    lines = _session(
        prompt("s1", None, "sub", agent=SIDE, n=1),
        assistant("s2", "s1", "msg_S", tool_use("toolu_S"), agent=SIDE, n=2),
        {**system("c1", None, "compact_boundary", n=3, logicalParentUuid="s2"), "isSidechain": True, "agentId": SIDE},
        prompt("s3", "c1", "This session is being continued.", agent=SIDE, n=4),
        result("s4", "s3", "toolu_S", "late", agent=SIDE, n=5),
    )
    assert [(f.code, f.line) for f in check_messages(lines, format="claude-code")] == [("APX001", 3), ("APX004", 6)]


def test_the_history_starts_at_the_first_real_prompt() -> None:
    """An excerpt opening mid-turn, and command output, start nothing; meta lines close nothing."""
    lines = _session(
        result("r0", "outside", "toolu_OLD", "answer to a call before the excerpt", n=1),
        {**prompt("c1", "r0", "<local-command-stdout>Set model to opus</local-command-stdout>", n=2)},
        result("r1", "c1", "toolu_OLDER", "another early answer", n=3),
        prompt("u1", "r1", "now the real question", n=4),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=5),
        {**prompt("m1", "a1", "<local-command-caveat>Caveat: ...</local-command-caveat>", n=6), "isMeta": True},
        result("r2", "m1", "toolu_A", "ok", source="a1", n=7),
    )
    assert check_messages(lines, format="claude-code") == []


def test_claude_codes_own_interruption_results_are_answers_and_its_placeholder_is_info() -> None:
    lines = _session(
        prompt("u1", None, "go", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2),
        assistant("a2", "a1", "msg_A", tool_use("toolu_B"), n=3),
        result("r1", "a2", "toolu_A", "[Request interrupted by user for tool use]", source="a1", n=4),
        result("r2", "r1", "toolu_B", "[Tool result missing due to internal error]", source="a2", n=5),
        prompt("u2", "r2", "[Request interrupted by user for tool use]", n=6),
    )
    assert [(f.code, f.call_id) for f in check_messages(lines, format="claude-code")] == [("APX006", "toolu_B")]


def test_a_compact_boundary_closes_the_pending_call_and_stays_a_root(tmp_path: Path) -> None:
    lines = _session(
        prompt("u1", None, "go", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2),
        system("c1", None, "compact_boundary", n=3, logicalParentUuid="a1", compactMetadata={"trigger": "auto"}),
        prompt("u2", "c1", "This session is being continued from a previous conversation.", n=4),
    )
    assert [(f.code, f.line) for f in check_messages(lines, format="claude-code")] == [("APX001", 3)]
    fixed = repair_messages(lines, format="claude-code").messages
    (record,) = _inserted(lines, fixed)
    assert fixed.index(record) == 3 and record["parentUuid"] == "a1"
    assert fixed[4]["parentUuid"] is None
    assert_tree_kept(lines, fixed)
    assert_loads_in_claude_code_log(_encode(fixed), tmp_path)


# -- --drop-orphans keeps the tree whole ------------------------------------------------------------


def test_drop_orphans_removes_the_line_and_moves_its_children_up(tmp_path: Path) -> None:
    lines = _session(
        prompt("u1", None, "go", n=1),
        assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2),
        result("r1", "a1", "toolu_A", "ok", source="a1", n=3),
        result("r2", "r1", "toolu_GHOST", "stray", n=4),
        result("r3", "r2", "toolu_GHOST2", "stray", n=5),
        assistant("a2", "r3", "msg_B", {"type": "text", "text": "Done."}, n=6),
        system("s1", "a2", "turn_duration", n=7, durationMs=5),
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(_encode(lines))
    fixed = _fix(path, "--drop-orphans")
    after = _decode(fixed)
    assert [line.get("uuid") for line in after] == [None, "u1", "a1", "r1", "a2", "s1"]
    assert after[4]["parentUuid"] == "r1"
    assert_tree_kept(lines, after)
    assert_loads_in_claude_code_log(fixed, tmp_path)
    again = tmp_path / "again.jsonl"
    again.write_bytes(fixed)
    assert _fix(again, "--drop-orphans") == fixed


def test_drop_orphans_keeps_the_answer_and_drops_only_the_duplicate_in_one_line() -> None:
    line = result("r1", "a1", "toolu_A", "ok", source="a1", n=3)
    line["message"]["content"].append({"tool_use_id": "toolu_A", "type": "tool_result", "content": "again"})
    lines = _session(prompt("u1", None, "go", n=1), assistant("a1", "u1", "msg_A", tool_use("toolu_A"), n=2), line)
    fixed = repair_messages(lines, format="claude-code", drop_orphans=True).messages
    assert [b["content"] for b in fixed[3]["message"]["content"]] == ["ok"]
    assert repair_messages(fixed, format="claude-code").changed is False


# -- random sessions ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lines=histories(), drop=st.booleans())
def test_any_repaired_session_keeps_its_tree_and_loads_in_claude_code_log(lines: list, drop: bool, tmp_path_factory) -> None:
    fixed = repair_messages(lines, format="claude-code", drop_orphans=drop).messages
    assert_tree_kept(lines, fixed)
    assert_loads_in_claude_code_log(_encode(fixed), tmp_path_factory.mktemp("ccl"))
    assert not repair_messages(fixed, format="claude-code", drop_orphans=drop).changed


def test_the_readme_example_is_what_fix_writes(tmp_path: Path) -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text().split("### claude-code\n", 1)[1].split("\n### ", 1)[0]
    before, after = [block.split("```")[0] for block in section.split("```jsonl\n")[1:3]]
    path = tmp_path / "example.jsonl"
    path.write_text(before)
    fixed = _fix(path).decode()
    lines = before.splitlines(keepends=True)
    assert fixed == "".join(lines[:2]) + after


def test_ids_with_lone_surrogates_still_get_a_record() -> None:
    """JSON allows lone surrogates in strings; the derived uuid must not choke on them."""
    lines = _session(
        prompt("u1\ud800", None, "go", n=1),
        assistant("a1\udfff", "u1\ud800", "msg_A", tool_use("toolu_\ud800"), n=2),
    )
    fixed = repair_messages(lines, format="claude-code").messages
    (record,) = _inserted(lines, fixed)
    assert (record["parentUuid"], record["message"]["content"][0]["tool_use_id"]) == ("a1\udfff", "toolu_\ud800")
    assert record["uuid"] == _inserted(lines, repair_messages(lines, format="claude-code").messages)[0]["uuid"]


def test_repeated_lines_with_other_agent_ids_still_repair_cleanly() -> None:
    """Duplicated uuids (a resumed or concatenated file) must not make two records collide or miss their thread."""
    sub = prompt("s1", None, "look around", agent="agent-one", n=1)
    call = assistant("s2", "s1", "msg_S", tool_use("toolu_S"), agent="agent-two", n=2)
    lines = _session(sub, call, {**sub, "agentId": "agent-two"}, call)
    fixed = repair_messages(lines, format="claude-code").messages
    records = _inserted(lines, fixed)
    assert len({r["uuid"] for r in records}) == len(records) >= 1
    assert repair_messages(fixed, format="claude-code").changed is False
    assert not [f for f in check_messages(fixed, format="claude-code") if f.code == "APX001"]


def test_inserted_uuids_are_uuid5_in_the_documented_namespace() -> None:
    # The namespace is written out as bytes so that a check imports no uuid
    # module; it must stay the uuid5 the docstring names, or every repaired
    # file would get other uuids than before.
    import uuid

    from apx_doctor.formats import claude_code

    namespace = uuid.uuid5(uuid.NAMESPACE_URL, claude_code.NAMESPACE_NAME)
    assert claude_code._NAMESPACE == namespace.bytes
    assert claude_code._uuid5("s\x00u\x00call_1") == str(uuid.uuid5(namespace, "s\x00u\x00call_1"))
