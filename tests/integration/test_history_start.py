"""A history with no real user entry at all is checked from its first entry.

The checked history starts at the first real user entry so that preambles
(system prompts, injected context) are passed over; it never ignores a whole
conversation. A cut copy that starts mid-turn holds calls and no user entry:
those calls are checked, whether the file is read from disk, from a pipe, or
passed to the library. Where a real user entry does come, the preamble before
it is still passed over (tests/cases/chat/history-starts-at-the-first-user-entry).
"""

from __future__ import annotations

import json
import subprocess
import sys

from apx_doctor import check_messages, repair_messages

CUT_COPY = (
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"rm","arguments":"{}"}}]}\n'
    b'{"role":"assistant","content":"Removing it."}\n'
)
RECORD = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'


def _doctor(*args: str, stdin: bytes) -> subprocess.CompletedProcess:
    # A real pipe: standard input cannot be read twice, so the lines are kept as they are read.
    return subprocess.run([sys.executable, "-m", "apx_doctor", *args], input=stdin, capture_output=True, timeout=60)


def test_a_piped_history_with_no_user_entry_is_repaired_from_its_first_line() -> None:
    done = _doctor("fix", "--isolated", "--output", "-", "-", stdin=CUT_COPY)
    assert done.returncode == 1, done.stderr
    first, second = CUT_COPY.splitlines(keepends=True)
    assert done.stdout == first + RECORD + second


def test_a_piped_check_reports_the_call() -> None:
    done = _doctor("check", "--isolated", "--output-format", "json", "-", stdin=CUT_COPY)
    assert done.returncode == 1
    findings = json.loads(done.stdout)["files"][0]["findings"]
    assert [(f["code"], f["line"], f["call_id"]) for f in findings] == [("APX001", 1, "c1")]


def test_the_library_checks_a_list_with_no_user_entry() -> None:
    messages = [json.loads(line) for line in CUT_COPY.splitlines()]
    assert [(f.code, f.line, f.call_id) for f in check_messages(messages, format="chat")] == [("APX001", 1, "c1")]
    repaired = repair_messages(messages, format="chat")
    assert repaired.messages[1] == json.loads(RECORD)
    assert check_messages(repaired.messages, format="chat") == []


def test_results_alone_before_any_user_entry_stay_unreported() -> None:
    # Orphans at the top of a cut copy answer calls cut away: no call, nothing to start over for.
    messages = [{"role": "tool", "tool_call_id": "gone", "content": "ok"}, {"role": "assistant", "content": "Done."}]
    assert check_messages(messages, format="chat") == []
