"""OpenCode's session store: a SQLite database, a message and a part a row.

The stores here are made with the tables OpenCode 1.18 creates (the columns
the doctor reads, as OpenCode declares them), filled with rows shaped as
OpenCode writes them; tests/e2e/test_opencode.py runs the real OpenCode.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apx_doctor import databases
from apx_doctor.errors import WriteError
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.runner import Mode, RunOptions

# As OpenCode 1.18.33 creates them (foreign keys and the other tables left out).
SCHEMA = """
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `slug` text NOT NULL,
  `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
"""

T0 = 1796173891010


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool(call_id: str, status: str, name: str = "bash") -> dict:
    state: dict = {"status": status, "input": {"command": "sleep 600"}}
    if status == "pending":
        state = {"status": "pending", "input": {}, "raw": ""}
    elif status == "running":
        state = {
            "metadata": {"output": "partial\n"},
            "status": "running",
            "input": {"command": "sleep 600"},
            "time": {"start": T0 + 5},
        }
    elif status == "completed":
        state.update(output="done\n", title="sleep 600", metadata={"exit": 0}, time={"start": T0 + 5, "end": T0 + 9})
    else:
        state.update(error="Tool execution aborted", metadata={"interrupted": True}, time={"start": T0 + 5, "end": T0 + 9})
    return {"type": "tool", "tool": name, "callID": call_id, "state": state}


def make_store(path: Path, sessions: list[list[tuple[str, list[dict]]]]) -> Path:
    """A store holding ``sessions``: each a list of (role, parts) messages."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    clock = T0
    for s, messages in enumerate(sessions):
        sid = f"ses_{s:04d}"
        db.execute("insert into session values (?, 'global', 'slug', '/w', 'title', '1.18.33', ?, ?)", (sid, clock, clock))
        for m, (role, parts) in enumerate(messages):
            clock += 10
            mid = f"msg_{s:04d}{m:04d}"
            info = {"role": role, "time": {"created": clock}, "agent": "build"}
            db.execute("insert into message values (?, ?, ?, ?, ?)", (mid, sid, clock, clock, dumps(info)))
            for p, part in enumerate(parts):
                db.execute(
                    "insert into part values (?, ?, ?, ?, ?, ?)",
                    (f"prt_{s:04d}{m:04d}{p:04d}", mid, sid, clock, clock, dumps(part)),
                )
    db.commit()
    db.close()
    return path


def prompt(text: str = "Run the build.") -> tuple[str, list[dict]]:
    return ("user", [{"type": "text", "text": text}])


def reply(*parts: dict) -> tuple[str, list[dict]]:
    return ("assistant", [{"type": "step-start"}, *parts])


def part_rows(path: Path) -> dict[str, str]:
    with closing(sqlite3.connect(path)) as db:
        return dict(db.execute("select id, data from part"))


def run(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "apx_doctor", *map(str, args), "--output-format", "json"], capture_output=True, text=True, env=env
    )
    # With --output -, standard output is the repaired file's and the report goes to standard error.
    text = done.stdout if done.stdout.strip() else done.stderr
    return done.returncode, json.loads(text)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(
        tmp_path / "opencode.db",
        [
            [
                prompt(),
                reply(tool("call_done", "completed"), tool("call_aborted", "error")),
                prompt("Again."),
                reply(tool("call_cut", "running")),
            ],
            [prompt(), reply(tool("call_waiting", "pending", "read"), {"type": "text", "text": "Reading."}), prompt("Stop.")],
        ],
    )


def test_check_finds_every_call_left_pending_or_running_in_every_session(store: Path) -> None:
    code, report = run("check", store)
    assert code == 1
    (checked,) = report["files"]
    assert checked["format"] == "opencode"
    found = [(f["code"], f["call_id"], f["line"]) for f in checked["findings"]]
    # Lines count messages through the store: the second session's reply is its 2nd message, the store's 6th.
    assert found == [("APX001", "call_cut", 4), ("APX001", "call_waiting", 6)]
    assert "session ses_0000, message msg_00000003" in checked["findings"][0]["message"]
    assert "session ses_0001, message msg_00010001" in checked["findings"][1]["message"]


def test_fix_in_place_answers_only_the_interrupted_parts_and_a_second_fix_changes_nothing(store: Path) -> None:
    before = part_rows(store)
    code, report = run("fix", "--in-place", store)
    assert code == 1 and report["files"][0]["written"]
    after = part_rows(store)
    changed = {pid for pid in before if after[pid] != before[pid]}
    assert changed == {"prt_000000030001", "prt_000100010001"}
    assert set(after) == set(before)

    cut = json.loads(after["prt_000000030001"])
    assert cut["state"] == {
        "metadata": {"output": "partial\n"},  # the partial output stays where it was, unsent
        "status": "error",
        "input": {"command": "sleep 600"},
        "time": {"start": T0 + 5, "end": T0 + 5},
        "error": DEFAULT_MARKER,
    }
    waiting = json.loads(after["prt_000100010001"])
    # Never started: its message's creation time stands for both ends.
    assert waiting["state"]["time"] == {"start": T0 + 60, "end": T0 + 60} and waiting["state"]["error"] == DEFAULT_MARKER
    assert [e["record"]["id"] for e in report["files"][0]["edits"]] == ["prt_000000030001", "prt_000100010001"]

    assert run("check", store)[0] == 0
    code, again = run("fix", "--in-place", store)
    assert code == 0 and not again["files"][0]["written"] and again["files"][0]["edits"] == []
    assert part_rows(store) == after


def test_a_dry_run_and_a_check_leave_the_store_as_it_was(store: Path) -> None:
    data = store.read_bytes()
    assert run("fix", store)[0] == 1
    assert run("check", store)[0] == 1
    assert store.read_bytes() == data


def test_fix_output_writes_a_repaired_copy_and_leaves_the_store(store: Path, tmp_path: Path) -> None:
    data = store.read_bytes()
    target = tmp_path / "copy.db"
    code, report = run("fix", "--output", target, store)
    assert code == 1 and report["files"][0]["written"]
    assert store.read_bytes() == data
    assert run("check", target)[0] == 0
    assert sorted(part_rows(target)) == sorted(part_rows(store))
    assert not list(tmp_path.glob(".copy.db*"))


def test_fix_backup_keeps_the_store_as_it_was(store: Path) -> None:
    before = part_rows(store)
    code, report = run("fix", "--in-place", "--backup", store)
    assert code == 1
    backup = Path(report["files"][0]["backup"])
    assert backup.name == "opencode.db.bak" and part_rows(backup) == before
    assert part_rows(store) != before


def test_a_store_cannot_go_to_standard_output_or_be_salvaged(store: Path) -> None:
    code, report = run("fix", "--output", "-", store)
    assert code == 2 and "standard output" in report["files"][0]["error"]
    code, report = run("fix", "--in-place", "--salvage", store)
    assert code == 2 and "--salvage" in report["files"][0]["error"]


def test_another_format_named_for_a_store_is_refused(store: Path) -> None:
    code, report = run("check", "--input-format", "chat", store)
    assert code == 2
    assert "holds no chat entries; it looks like opencode" in report["files"][0]["error"]


def test_a_database_that_is_not_an_opencode_store_is_no_transcript(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as db, db:
        db.execute("create table notes (id text, body text)")
    code, report = run("check", other)
    assert code == 2
    assert (
        "not an OpenCode session store" in report["files"][0]["error"]
        and "message, part, session" not in report["files"][0]["error"]
    )
    assert report["files"][0]["format"] is None


def test_a_row_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = make_store(tmp_path / "opencode.db", [[prompt(), reply(tool("call_cut", "running"))]])
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("update part set data = '{\"type\": \"tool\",' where id = 'prt_000000010001'")
    code, report = run("fix", "--in-place", path)
    assert code == 2
    assert "part prt_000000010001: its data is not valid JSON" in report["files"][0]["error"]


def test_a_part_changed_since_it_was_read_is_not_overwritten(store: Path) -> None:
    with closing(sqlite3.connect(store)) as db:
        sessions = databases._sessions(db)
    plan = databases._plan(sessions, databases._Options())
    finished = json.dumps(tool("call_cut", "completed"))
    with closing(sqlite3.connect(store)) as db, db:  # the runtime finished the call in the meantime
        db.execute("update part set data = ? where id = 'prt_000000030001'", (finished,))
    with pytest.raises(WriteError, match="prt_000000030001 changed while it was being repaired"):
        databases._write(str(store), plan.rows)
    rows = part_rows(store)
    assert rows["prt_000000030001"] == finished
    assert json.loads(rows["prt_000100010001"])["state"]["status"] == "pending"  # one transaction: nothing written


def test_a_store_busy_with_a_write_is_not_written(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(databases, "BUSY_SECONDS", 0.2)
    before = part_rows(store)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("begin immediate")  # a runtime in the middle of a write
    try:
        report = databases.run_path(str(store), RunOptions(mode=Mode.IN_PLACE, force=True))
    finally:
        holder.execute("rollback")
        holder.close()
    assert report.error is not None and "busy" in report.error and not report.written
    assert part_rows(store) == before


# --- properties -------------------------------------------------------------------

_STATUSES = st.sampled_from(["pending", "running", "completed", "error"])


@st.composite
def sessions(draw) -> list:
    drawn = []
    for _s in range(draw(st.integers(1, 3))):
        messages = []
        for turn in range(draw(st.integers(0, 3))):
            messages.append(prompt(f"turn {turn}"))
            for step in range(draw(st.integers(0, 2))):
                parts = [tool(f"call_{len(drawn)}_{turn}_{step}_{i}", draw(_STATUSES)) for i in range(draw(st.integers(0, 3)))]
                messages.append(reply(*parts))
        drawn.append(messages)
    return drawn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(drawn=sessions())
def test_repair_properties(tmp_path_factory: pytest.TempPathFactory, drawn: list) -> None:
    path = make_store(tmp_path_factory.mktemp("store") / "opencode.db", drawn)
    before = part_rows(path)
    first = databases.run_path(str(path), RunOptions(mode=Mode.IN_PLACE, force=True))
    assert first.error is None
    open_calls = [
        json.loads(d)["callID"] for d in before.values() if json.loads(d).get("state", {}).get("status") in ("pending", "running")
    ]
    assert sorted(f.call_id for f in first.findings if f.code == "APX001") == sorted(open_calls)
    assert len(first.edits) == len(open_calls)
    after = part_rows(path)
    # Every part that answered a call, or was none, is byte for byte as it was.
    for pid, data in before.items():
        if json.loads(data).get("state", {}).get("status") not in ("pending", "running"):
            assert after[pid] == data
    second = databases.run_path(str(path), RunOptions(mode=Mode.IN_PLACE, force=True))
    assert second.error is None and not second.findings and not second.edits and not second.written
    assert part_rows(path) == after


def test_the_store_is_found_in_opencodes_home(tmp_path: Path) -> None:
    import os

    home = tmp_path / "home"
    (home / ".local" / "share" / "opencode").mkdir(parents=True)
    store = make_store(home / ".local" / "share" / "opencode" / "opencode.db", [[prompt(), reply(tool("call_cut", "running"))]])
    env = {k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"} | {"HOME": str(home)}
    code, listed = run("sessions", "--runtime", "opencode", env=env)
    assert code == 1
    (row,) = listed["sessions"]
    assert (row["path"], row["call_ids"]) == (str(store), ["call_cut"])
    assert row["session_id"] is None and row["resume_command"] is None  # one store, many sessions
    # And a call id alone finds it, in the store XDG_DATA_HOME names.
    moved = tmp_path / "data"
    store.parent.rename(moved / "opencode" if moved.mkdir() is None else moved)
    code, report = run("fix", "--call-id", "call_cut", "--in-place", env=env | {"XDG_DATA_HOME": str(moved)})
    assert code == 1 and report["files"][0]["path"] == str(moved / "opencode" / "opencode.db")
    assert run("check", moved / "opencode" / "opencode.db")[0] == 0


def test_a_store_on_standard_input_or_in_show_is_refused_naming_what_reads_it(store: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "apx_doctor", "check", "-"], stdin=store.open("rb"), capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "SQLite database" in done.stderr and "name the file" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "apx_doctor", "show", str(store)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "check and fix read it" in done.stderr and "Traceback" not in done.stderr


def test_a_fifo_is_not_taken_for_a_store(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert databases.is_database(str(fifo)) is False  # and it did not wait for a writer
