"""pi's own session manager reads a repaired pi session and sends the record right after the call.

No model is asked: pi's code (from tests/runtimes, pinned by its lock file)
loads the golden cases' input and expected files and builds the messages it
would send, before and after the repair.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from apx_doctor.formats.base import DEFAULT_MARKER

from .runtimes import RUNTIMES

CASES = Path(__file__).resolve().parents[1] / "cases" / "pi"
NODE_MODULES = RUNTIMES / "node_modules"


_PROBE = """
const [root, file, dir] = process.argv.slice(2);
const sm = await import(root + "/@mariozechner/pi-coding-agent/dist/core/session-manager.js");
const msgs = await import(root + "/@mariozechner/pi-coding-agent/dist/core/messages.js");
const tm = await import(root + "/@mariozechner/pi-ai/dist/providers/transform-messages.js");
const manager = sm.SessionManager.open(file, dir);
const llm = msgs.convertToLlm(manager.buildSessionContext().messages);
const model = { id: "claude-sonnet-4-5", api: "anthropic-messages", provider: "anthropic", input: ["text", "image"] };
const sent = tm.transformMessages(llm, model);
console.log(JSON.stringify(sent.map((m) => m.role === "toolResult"
  ? { role: m.role, id: m.toolCallId, text: m.content[0].text, isError: m.isError }
  : { role: m.role })));
"""


def _sent_by_pi(tmp_path: Path, path: Path) -> list:
    """What pi's own code sends to the model for this session file (a copy: pi migrates old files in place)."""
    node = shutil.which("node")
    needed = [
        "pi-coding-agent/package.json",
        "pi-coding-agent/dist/core/session-manager.js",
        "pi-ai/dist/providers/transform-messages.js",
    ]
    if node is None or not all((NODE_MODULES / "@mariozechner" / name).is_file() for name in needed):
        pytest.fail("pi is not installed under tests/runtimes: run `make e2e` (npm ci there)", pytrace=False)
    probe = tmp_path / "probe.mjs"
    probe.write_text(_PROBE)
    copy = shutil.copyfile(path, tmp_path / f"copy-{path.parent.name}-{path.name}")
    done = subprocess.run(
        [node, str(probe), str(NODE_MODULES), str(copy), str(tmp_path / "sessions")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "case",
    [
        "call-closed-by-the-next-prompt-is-chained-in",
        "call-dangling-at-end-follows-the-last-line",
        "parallel-calls-one-result-missing-goes-after-the-arrived-ones",
        "compaction-closes-a-pending-call",
        "version-1-linear-session-gets-a-record-without-ids",
    ],
)
def test_pi_resumes_a_repaired_session_with_the_record_right_after_the_call(tmp_path: Path, case: str) -> None:
    before = _sent_by_pi(tmp_path, CASES / case / "input.jsonl")
    after = _sent_by_pi(tmp_path, CASES / case / "expected.jsonl")
    # Left alone, pi makes up an error result for the call and sends that, writing nothing down.
    assert {"role": "toolResult", "id": _missing(case), "text": "No result provided", "isError": True} in before
    record = {"role": "toolResult", "id": _missing(case), "text": DEFAULT_MARKER, "isError": False}
    assert record in after and not any(m.get("text") == "No result provided" for m in after)
    # The same request otherwise: pi's made-up result is where the record now is.
    assert [m if m.get("text") != "No result provided" else record for m in before] == after


def _missing(case: str) -> str:
    return "toolu_b" if case.startswith("parallel") else "toolu_01"
