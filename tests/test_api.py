"""The library, as a runtime uses it right before it sends a history to a model."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor import DEFAULT_MARKER, check_messages, repair_messages
from apx_doctor.cli import app


def _call(call_id: str, name: str = "browser_text") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


HISTORY = [
    {"role": "user", "content": "check the dashboard"},
    {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b", "write_file")]},
    {"role": "tool", "tool_call_id": "b", "content": "written"},
    {"role": "user", "content": "what did it find?"},
]


def test_check_messages_lines_are_1_based_indexes() -> None:
    (finding,) = check_messages(HISTORY)
    assert (finding.code, finding.name, str(finding.severity)) == ("APX001", "interrupted-tool-call", "error")
    assert (finding.line, finding.call_id, finding.tool) == (2, "a", "browser_text")


def test_repair_messages_inserts_before_the_next_non_tool_entry_and_keeps_the_input() -> None:
    before = copy.deepcopy(HISTORY)
    result = repair_messages(HISTORY)
    assert HISTORY == before
    assert result.messages == [
        *HISTORY[:3],
        {"role": "tool", "tool_call_id": "a", "content": DEFAULT_MARKER},
        HISTORY[3],
    ]
    (inserted,) = result.inserted
    assert (inserted.index, inserted.call_id, inserted.tool) == (3, "a", "browser_text")
    assert result.messages[inserted.index] is inserted.record
    assert result.changed


def test_repaired_history_checks_clean_and_repairs_to_itself() -> None:
    repaired = repair_messages(HISTORY).messages
    assert check_messages(repaired) == []
    again = repair_messages(repaired)
    assert again.messages == repaired and not again.changed


def test_untouched_messages_are_the_same_objects() -> None:
    result = repair_messages(HISTORY)
    assert all(any(m is r for r in result.messages) for m in HISTORY)


def test_marker_and_drop_orphans() -> None:
    history = [*HISTORY, {"role": "tool", "tool_call_id": "ghost", "content": "?"}]
    result = repair_messages(history, marker="no result", drop_orphans=True)
    assert {"role": "tool", "tool_call_id": "a", "content": "no result"} in result.messages
    assert all(m.get("tool_call_id") != "ghost" for m in result.messages)
    assert [(e.action, e.call_id, e.line) for e in result.removed] == [("remove", "ghost", 5)]


def test_keep_open_tail_leaves_the_last_turn_alone() -> None:
    live = HISTORY[:3]
    assert repair_messages(live, keep_open_tail=True).messages == live
    assert len(repair_messages(live).messages) == 4


def test_library_and_cli_agree(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in HISTORY))
    report = json.loads(CliRunner().invoke(app, ["check", "--output-format", "json", str(path)]).stdout)
    from_cli = [(f["code"], f["line"], f.get("call_id"), f.get("tool")) for f in report["files"][0]["findings"]]
    from_library = [(f.code, f.line, f.call_id, f.tool) for f in check_messages(HISTORY)]
    assert from_library == from_cli


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        check_messages(HISTORY, format="yaml")


def test_a_stray_result_is_duplicate_or_late_within_the_remembered_calls_and_an_orphan_beyond() -> None:
    from apx_doctor.engine import SETTLED_MEMORY

    def turn(call_id: str, answered: bool) -> list[dict]:
        answer = [{"role": "tool", "tool_call_id": call_id, "content": "ok"}] if answered else []
        return [
            {"role": "assistant", "content": None, "tool_calls": [_call(call_id)]},
            *answer,
            {"role": "user", "content": "go on"},
        ]

    history = [{"role": "user", "content": "start"}, *turn("answered", True), *turn("lost", False)]
    strays = [
        {"role": "tool", "tool_call_id": "answered", "content": "again"},
        {"role": "tool", "tool_call_id": "lost", "content": "late"},
    ]
    codes = [f.code for f in check_messages(history + strays) if f.code != "APX001"]
    assert codes == ["APX003", "APX004"]
    # Twice the remembered number of calls later, both are forgotten: the
    # strays answer nothing an API would pair them with.
    for n in range(2 * SETTLED_MEMORY):
        history += turn(f"c{n}", True)
    codes = [f.code for f in check_messages(history + strays) if f.code != "APX001"]
    assert codes == ["APX002", "APX002"]
