"""The real runtimes, interrupted for real and resumed for real (``make e2e``).

Each scenario starts a runtime on a prompt that makes the stand-in API ask
for a long shell command, SIGKILLs the runtime while the command runs, and
so has the runtime itself write a genuinely interrupted session. Then:
check finds exactly that call, fix closes it, and the runtime resumes the
repaired session and sends the call with the not-run record as its result,
which the stand-in (validating as the real API does) accepts.

The same interruption resumed without a repair is the baseline: what the
runtime does on its own. Both are the runtime table of the README.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apx_doctor.formats.base import DEFAULT_MARKER

from .cline_runtime import Cline
from .fence import Fence, FenceError
from .runtimes import ROOT, RUNTIME_CLASSES, RUNTIMES, STORES, UNREPAIRABLE, Runtime, Sent

# Runtimes that keep a session as one JSON document (tests/e2e/test_cline.py).
DOCUMENTS: dict[str, type[Runtime]] = {"cline": Cline}

# What each pinned runtime sends for an interrupted call when it resumes on its
# own. A new version that changes this fails here, and the README row with it.
BASELINES = {
    "claude-code": Sent("dropped"),
    "codex": Sent("answered", "aborted"),
    "qwen-code": Sent(
        "answered",
        "Tool execution result was not recorded \u2014 likely interrupted by network failure, abort, or "
        "process exit. Treat as failure and retry if needed.",
    ),
    "pi": Sent("answered", "No result provided"),
    "gemini-cli": Sent("dropped"),
    "opencode": Sent("answered", "[Tool execution was interrupted]"),
    "copilot-cli": Sent(
        "answered",
        "Tool execution was interrupted before a result was recorded. Its effects may be absent, partial, or "
        "already complete, and other tools may have completed successfully. Check the current state before "
        "retrying; do not assume success or replay this operation blindly.",
    ),
    "factory-droid": Sent("answered", "Error: Tool execution was cancelled"),
    # A JSON string of one text part, as the tool message's content.
    "cline": Sent(
        "answered", '[{"type":"text","text":"Tool execution was interrupted before a result was produced. Tool: run_commands."}]'
    ),
}
REPAIRED = Sent("answered", DEFAULT_MARKER)
# The README's last column, for a runtime whose session holds no interrupted call.
NOTHING_TO_REPAIR = "nothing to repair: the call is never written to the session"

# Where a runtime asks the model for a reply (token counts aside).
MODEL_PATHS = ("/messages", "/responses", "/chat/completions", ":generateContent", ":streamGenerateContent")


def doctor(*args: str | Path) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "apx_doctor", *map(str, args), "--output-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def problems(report: dict) -> list[dict]:
    """The findings at error or warning level, of the one file checked."""
    (checked,) = report["files"]
    return [f for f in checked["findings"] if f["severity"] in ("error", "warning")]


def the_call(runtime: Runtime) -> str:
    """The id of the one tool call the stand-in made in a new session's interrupted turn."""
    calls = [r.call for r in runtime.standin.requests() if r.call]
    assert len(calls) == 1, f"the stand-in made {len(calls)} calls: {calls}"
    return calls[0]


def model_requests(runtime: Runtime, since: int) -> list[Any]:
    """The requests for a model answer after the first ``since`` the stand-in received."""
    return [r for r in runtime.standin.requests()[since:] if r.path.split("?")[0].endswith(MODEL_PATHS)]


def only_insertions(before: bytes, after: bytes, replaced: set[int]) -> list[bytes]:
    """The lines ``after`` adds to ``before``; fails if any other line changed,
    except the (1-based) lines of ``before`` that the fix reported it rewrote."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    added = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed = set(range(i1 + 1, i2 + 1))
        assert tag in ("insert", "replace") and changed <= replaced, (tag, old[i1:i2], new[j1:j2])
        added.extend(new[j1 + (i2 - i1) : j2] if tag == "replace" else new[j1:j2])
    return added


def interrupt_and_check(runtime: Runtime) -> tuple[Path, str]:
    """The runtime's own interrupted session; check reports exactly its call."""
    session = runtime.interrupt()
    call_id = the_call(runtime)
    code, report = doctor("check", session)
    assert code == 1
    assert report["files"][0]["format"] == runtime.format, report
    found = [(f["code"], f["call_id"]) for f in problems(report)]
    assert found == [("APX001", call_id)], report
    return session, call_id


def sent_on_resume(runtime: Runtime, label: str, call_id: str) -> tuple[Sent, list[Any]]:
    """Resume; what the runtime sent for the call, and every model request it made."""
    seen = len(runtime.standin.requests())
    code = runtime.resume(label)
    assert code == 0, runtime.output(label)
    requests = model_requests(runtime, seen)
    assert requests, f"{runtime.name} resumed without asking the model anything"
    main = [r for r in requests if r.body.get("tools")]
    assert main, "no request offered the runtime's tools"
    return runtime.sent(main[0].body, call_id), requests


def test_repaired_session_resumes_with_the_not_run_record(runtime: Runtime) -> None:
    session, call_id = interrupt_and_check(runtime)
    before = session.read_bytes()

    code, report = doctor("fix", "--in-place", session)
    assert code == 1 and report["files"][0]["written"], report
    repaired = session.read_bytes()
    edits = report["files"][0]["edits"]
    replaced = {e["line"] for e in edits if e["action"] == "replace"}
    added = only_insertions(before, repaired, replaced)
    assert [json.loads(line) for line in added] == [e["record"] for e in edits if e["action"] == "insert"]
    assert problems(doctor("check", session)[1]) == []

    sent, requests = sent_on_resume(runtime, "resume", call_id)
    assert sent == REPAIRED, sent
    assert [r.error for r in requests if r.status != 200] == []

    # The runtime only appended to the repaired file, and what it wrote checks clean.
    resumed = session.read_bytes()
    assert resumed.startswith(repaired) and len(resumed) > len(repaired)
    assert problems(doctor("check", session)[1]) == []


# What check finds in the file after a resume without a repair: the runtimes
# that substitute a result only in the request leave the call open in the file
# (every later resume guesses again); Copilot CLI writes its stand-in down.
LEFT_OPEN_AFTER_BASELINE = {"codex": True, "qwen-code": True, "pi": True, "factory-droid": True, "copilot-cli": False}


def test_unrepaired_resume_is_the_baseline(runtime: Runtime, request: pytest.FixtureRequest) -> None:
    key = request.node.callspec.params["runtime"]
    session, call_id = interrupt_and_check(runtime)
    sent, requests = sent_on_resume(runtime, "baseline", call_id)
    assert sent == BASELINES[key], sent
    # What the runtime sent on its own, the stand-in accepted: the baseline is no refusal.
    assert [r.error for r in requests if r.status != 200] == []
    if key in LEFT_OPEN_AFTER_BASELINE:
        found = [(f["code"], f["call_id"]) for f in problems(doctor("check", session)[1])]
        assert (("APX001", call_id) in found) is LEFT_OPEN_AFTER_BASELINE[key], found


def test_an_inserted_record_has_the_fields_the_runtime_writes_on_its_own(runtime: Runtime) -> None:
    assert runtime.complete_a_turn("echo finished") == 0, runtime.output("complete")
    session = runtime.session_file()
    own = [json.loads(line) for line in session.read_bytes().splitlines()]
    own_results = [line for line in own if runtime.is_result_line(line)]
    assert own_results, "the runtime wrote no result line of its own"

    runtime.interrupt(resume=True)
    code, report = doctor("fix", "--in-place", session)
    assert code == 1, report
    (inserted,) = [e["record"] for e in report["files"][0]["edits"] if e["action"] == "insert"]
    assert runtime.is_result_line(inserted)
    assert set(own_results[-1]) - runtime.optional_fields <= set(inserted), (own_results[-1], inserted)


def test_codex_accepts_a_record_inserted_mid_rollout(fence: Fence, tmp_path: Path) -> None:
    """Resumed unrepaired, a rollout keeps the open call and goes on below it: the
    repair then goes mid-file, where it repeats the ordinal of the line before it."""
    runtime = RUNTIME_CLASSES["codex"](fence, tmp_path)
    try:
        session, call_id = interrupt_and_check(runtime)
        assert runtime.resume("baseline") == 0, runtime.output("baseline")
        before = session.read_bytes()
        code, report = doctor("fix", "--in-place", session)
        assert code == 1, report
        (added,) = only_insertions(before, session.read_bytes(), set())
        lines = session.read_bytes().splitlines()
        at = lines.index(added.rstrip(b"\r\n"))
        assert 0 < at < len(lines) - 1, "the record should stand mid-file"
        previous = json.loads(lines[at - 1])
        assert json.loads(added)["ordinal"] == previous["ordinal"]

        sent, requests = sent_on_resume(runtime, "resume", call_id)
        assert sent == REPAIRED, sent
        assert [r.error for r in requests if r.status != 200] == []
        assert problems(doctor("check", session)[1]) == []
    finally:
        runtime.close()


def test_copilot_cli_writes_its_own_stand_in_on_resume(fence: Fence, tmp_path: Path) -> None:
    """Left alone, Copilot CLI answers the open call in the file itself, right
    after its ``session.resume`` event: the session then checks clean, and the
    completion says what the model was sent."""
    runtime = RUNTIME_CLASSES["copilot-cli"](fence, tmp_path)
    try:
        session, call_id = interrupt_and_check(runtime)
        assert runtime.resume("baseline") == 0, runtime.output("baseline")
        events = [json.loads(line) for line in session.read_bytes().splitlines()]
        kinds = [e["type"] for e in events]
        resumed = kinds.index("session.resume")
        own = events[resumed + 1]
        assert own["type"] == "tool.execution_complete" and own["data"]["toolCallId"] == call_id, own
        assert own["data"]["success"] is False
        assert own["data"]["error"]["message"] == BASELINES["copilot-cli"].text
        assert problems(doctor("check", session)[1]) == []
    finally:
        runtime.close()


def test_gemini_cli_leaves_an_interrupted_call_out_of_its_session(fence: Fence, tmp_path: Path) -> None:
    """Gemini CLI writes a call to its session only once the tool has finished.
    Killed while the tool runs, the file holds no trace of the call, so there is
    nothing to repair; resumed, it sends the prompt without the call."""
    runtime = UNREPAIRABLE["gemini-cli"](fence, tmp_path)
    try:
        session = runtime.interrupt()
        call_id = the_call(runtime)
        written = session.read_bytes()
        assert call_id.encode() not in written, "Gemini CLI wrote the interrupted call after all"
        assert not any("toolCalls" in json.loads(line) for line in written.splitlines())
        code, report = doctor("check", session)
        assert code == 0 and report["files"][0]["format"] == runtime.format, report
        assert problems(report) == []

        sent, requests = sent_on_resume(runtime, "baseline", call_id)
        assert sent == BASELINES["gemini-cli"], sent
        assert [r.error for r in requests if r.status != 200] == []
    finally:
        runtime.close()


def test_the_fence_has_no_route_but_loopback(fence: Fence) -> None:
    # A UDP connect only picks a route; it sends nothing, so this probes no host.
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        "    s.connect(('192.0.2.1', 9))\n"
        "except OSError as e:\n"
        "    sys.exit(0)\n"
        "sys.exit('a route out of the fence exists')\n"
    )
    done = subprocess.run(fence.wrap([sys.executable, "-c", probe]), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_fence_that_cannot_be_made_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FenceError, match="unshare"):
        Fence()


def test_the_pinned_versions_are_installed() -> None:
    manifest = json.loads((RUNTIMES / "package.json").read_text(encoding="utf-8"))
    for runtime in [*RUNTIME_CLASSES.values(), *UNREPAIRABLE.values(), *STORES.values(), *DOCUMENTS.values()]:
        assert runtime.version() == manifest["dependencies"][runtime.package]


@pytest.mark.parametrize("key", sorted(BASELINES))
def test_the_readme_table_says_what_the_tests_observe(key: str) -> None:
    runtime = {**RUNTIME_CLASSES, **UNREPAIRABLE, **STORES, **DOCUMENTS}[key]
    repaired = NOTHING_TO_REPAIR if key in UNREPAIRABLE else REPAIRED.describe()
    row = f"| {runtime.name} | {runtime.version()} | {BASELINES[key].describe()} | {repaired} |"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert row in readme, f"README.md lacks the row:\n{row}"
    assert re.search(r"make e2e", readme)
