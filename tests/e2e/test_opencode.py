"""OpenCode, interrupted for real and resumed for real (``make e2e``).

OpenCode keeps its sessions in a SQLite database, a message and a part a
row, so the scenario of tests/e2e/test_runtimes.py is told in rows, not in
lines: the repair changes only the part of the interrupted call, and OpenCode,
resuming, sends that call with the not-run record as its result.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import started
from .fence import Fence
from .runtimes import STORES, Runtime
from .test_runtimes import BASELINES, REPAIRED, doctor, interrupt_and_check, problems, sent_on_resume


@pytest.fixture
def opencode(fence: Fence, tmp_path: Path) -> Iterator[Runtime]:
    yield from started(STORES["opencode"], fence, tmp_path)


def rows(store: Path) -> dict[str, dict[str, str]]:
    """Every message and part row's data, by table and id, read as OpenCode's own rows."""
    import json

    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return {
            table: {row_id: json.loads(data) for row_id, data in db.execute(f"select id, data from {table}")}
            for table in ("message", "part")
        }


def test_a_repaired_store_resumes_with_the_not_run_record(opencode: Runtime) -> None:
    store, call_id = interrupt_and_check(opencode)
    before = rows(store)

    code, report = doctor("fix", "--in-place", store)
    assert code == 1 and report["files"][0]["written"], report
    after = rows(store)
    # Only the interrupted call's part changed, and it holds what the report says.
    changed = [pid for pid in before["part"] if after["part"][pid] != before["part"][pid]]
    (edit,) = report["files"][0]["edits"]
    assert changed == [edit["record"]["id"]]
    assert after["message"] == before["message"] and set(after["part"]) == set(before["part"])
    record = {k: v for k, v in edit["record"].items() if k != "id"}
    assert after["part"][changed[0]] == record
    state = record["state"]
    assert state["status"] == "error" and state["error"] == REPAIRED.text
    # Whatever else the part held (the input, the partial output in metadata) is kept.
    running = before["part"][changed[0]]["state"]
    assert {k: v for k, v in state.items() if k not in ("status", "error", "time")} == {
        k: v for k, v in running.items() if k not in ("status", "time")
    }
    assert state["time"] == {"start": running["time"]["start"], "end": running["time"]["start"]}
    assert problems(doctor("check", store)[1]) == []

    sent, requests = sent_on_resume(opencode, "resume", call_id)
    assert sent == REPAIRED, sent
    assert [r.error for r in requests if r.status != 200] == []

    # OpenCode went on from the repaired rows: it kept them, added its own, and the store checks clean.
    resumed = rows(store)
    assert all(resumed["part"][pid] == after["part"][pid] for pid in after["part"])
    assert len(resumed["part"]) > len(after["part"])
    assert problems(doctor("check", store)[1]) == []


def test_an_unrepaired_resume_is_the_baseline(opencode: Runtime) -> None:
    store, call_id = interrupt_and_check(opencode)
    before = rows(store)
    sent, requests = sent_on_resume(opencode, "baseline", call_id)
    assert sent == BASELINES["opencode"], sent
    assert [r.error for r in requests if r.status != 200] == []
    # OpenCode answers the call in the request only: the part stays as it was, unanswered.
    assert rows(store)["part"] | before["part"] == rows(store)["part"]
    _code, report = doctor("check", store)
    assert [(f["code"], f["call_id"]) for f in problems(report)] == [("APX001", call_id)], report


def test_a_repaired_part_keeps_the_fields_of_a_part_opencode_wrote(opencode: Runtime) -> None:
    assert opencode.complete_a_turn("echo finished") == 0, opencode.output("complete")
    store = opencode.session_file()
    own = [p for p in rows(store)["part"].values() if p.get("type") == "tool"]
    assert [p["state"]["status"] for p in own] == ["completed"], own

    opencode.interrupt(resume=True)
    code, report = doctor("fix", "--in-place", store)
    assert code == 1, report
    (edit,) = report["files"][0]["edits"]
    inserted = edit["record"]
    # The part's own keys, and a state with the keys of OpenCode's finished
    # states (its output is the error text of a call that did not finish).
    assert set(own[0]) - {"id"} <= set(inserted)
    assert set(own[0]["state"]) - {"output", "title"} | {"error"} == set(inserted["state"])
    assert set(inserted["state"]["time"]) == {"start", "end"}
