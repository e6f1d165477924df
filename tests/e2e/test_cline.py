"""Cline CLI, interrupted for real and resumed for real (``make e2e``).

Cline keeps a session as one JSON document (``<sid>.messages.json``), so the
scenario of tests/e2e/test_runtimes.py is told in messages, not lines: the
repair inserts one message and keeps every other byte, and Cline, resumed
through ACP, sends the call with the not-run record as its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cline_runtime import Cline
from .conftest import started
from .fence import Fence
from .runtimes import Runtime
from .test_runtimes import BASELINES, REPAIRED, doctor, interrupt_and_check, problems, sent_on_resume

# What Cline 3.0.65 sends for an interrupted call when it resumes on its own.
BASELINE = BASELINES["cline"]


@pytest.fixture
def cline(fence: Fence, tmp_path: Path) -> Iterator[Runtime]:
    yield from started(Cline, fence, tmp_path)


def messages(session: Path) -> list[dict]:
    return json.loads(session.read_bytes())["messages"]


def test_the_pinned_version_is_the_one_observed() -> None:
    assert Cline.version() == "3.0.65"


def test_a_repaired_session_resumes_with_the_not_run_record(cline: Runtime) -> None:
    session, call_id = interrupt_and_check(cline)
    before = session.read_bytes()

    code, report = doctor("fix", "--in-place", session)
    assert code == 1 and report["files"][0]["written"], report
    (edit,) = report["files"][0]["edits"]
    record = edit["record"]
    # One message more, right after the call's; everything else as Cline wrote it.
    old, new = json.loads(before), json.loads(session.read_bytes())
    assert {k: v for k, v in new.items() if k != "messages"} == {k: v for k, v in old.items() if k != "messages"}
    assert new["messages"] == [*old["messages"][:2], record, *old["messages"][2:]]
    assert session.read_bytes() == (json.dumps(new, indent=2, ensure_ascii=False) + "\n").encode()
    (block,) = record["content"]
    assert (block["tool_use_id"], block["name"], block["content"]) == (call_id, "run_commands", REPAIRED.text)
    assert problems(doctor("check", session)[1]) == []

    sent, requests = sent_on_resume(cline, "resume", call_id)
    assert sent == REPAIRED, sent
    assert [r.error for r in requests if r.status != 200] == []

    # Cline went on from the repaired messages (giving the record an id and ts of its own)
    # and what it wrote checks clean.
    resumed = messages(session)
    assert len(resumed) > len(new["messages"])
    assert resumed[:2] == new["messages"][:2]
    assert {k: v for k, v in resumed[2].items() if k not in ("id", "ts")} == record
    assert problems(doctor("check", session)[1]) == []


def test_an_unrepaired_resume_is_the_baseline(cline: Runtime) -> None:
    session, call_id = interrupt_and_check(cline)
    sent, requests = sent_on_resume(cline, "baseline", call_id)
    assert sent == BASELINE, sent
    assert [r.error for r in requests if r.status != 200] == []
    # Cline answers the call in the request only: the file keeps it open.
    assert not any(Cline.is_result_line(m) for m in messages(session))
    found = [(f["code"], f["call_id"]) for f in problems(doctor("check", session)[1])]
    assert found == [("APX001", call_id)], found


def test_the_not_run_record_has_the_fields_of_a_result_cline_writes(fence: Fence, tmp_path: Path) -> None:
    done = Cline(fence, tmp_path / "done")
    try:
        assert done.complete_a_turn("echo finished") == 0, done.output("complete")
        own = [m for m in messages(done.session_file()) if Cline.is_result_line(m)]
    finally:
        done.close()
    assert own, "Cline wrote no result of its own"
    cut = Cline(fence, tmp_path / "cut")
    try:
        session = cut.interrupt()
        code, report = doctor("fix", "--in-place", session)
    finally:
        cut.close()
    assert code == 1, report
    (edit,) = report["files"][0]["edits"]
    inserted = edit["record"]
    assert Cline.is_result_line(inserted)
    assert set(own[-1]) - Cline.optional_fields <= set(inserted), (own[-1], inserted)
    assert set(own[-1]["content"][0]) == set(inserted["content"][0]), (own[-1], inserted)
