"""A Claude Code check's quiet stretches say exactly what reading every line whole says.

Past the lines auto-detection reads, a claude-code check types a few fields of
each main-thread line while no call is pending
(``apx_doctor.formats._claude_code_quiet``), and reads a line whole only where
those fields do not prove it gives the engine nothing to do. Every file here is
checked (and fixed) twice: through the quiet loop, and with it turned off.
Findings, edits, line counts, the errors that stop a run and the repaired bytes
(whose inserted lines are chained into the uuid tree the taken lines built, and
carry the reply's prompt id) must be the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken, golden_cases, odd_line_findings, run_check, same_both_ways

from apx_doctor.formats import claude_code
from apx_doctor.formats._claude_code_quiet import ClaudeCodeQuietLines
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.formats.claude_code import ClaudeCodeAdapter
from apx_doctor.quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step

from strategies.claude_code import SESSION, assistant, histories, progress, prompt, result, tool_use


class _Session:
    """Lines of one session, each hung off the line before it (as Claude Code writes the main thread)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.count = 0
        self.tip: str | None = None
        self.prompt_id: str | None = None

    def _uuid(self) -> str:
        self.count += 1
        return f"{self.tag}-0000-4000-8000-{self.count:012d}"

    def _line(self, make, *args, **extra) -> bytes:
        uuid = self._uuid()
        line = make(uuid, self.tip, *args, n=self.count)
        line.update(extra)
        self.tip = uuid
        return orjson.dumps(line) + b"\n"

    def prompt(self, text: str = "go", **extra) -> bytes:
        self.prompt_id = f"p-{self.tag}-{self.count}"
        return self._line(prompt, text, promptId=self.prompt_id, **extra)

    def call(self, reply: str, call_id: str) -> bytes:
        return self._line(assistant, f"msg_{reply}", tool_use(call_id), requestId=f"req_{reply}")

    def text(self, reply: str, words: str = "done") -> bytes:
        return self._line(assistant, f"msg_{reply}", {"type": "text", "text": words})

    def result(self, call_id: str, text: str = "ok") -> bytes:
        # As Claude Code 2.1 writes them: with the prompt id of the turn.
        return self._line(result, call_id, text, promptId=self.prompt_id)

    def hook(self, call_id: str) -> bytes:
        return self._line(progress, call_id)


def _session(tag: str = "aaaaaaaa") -> tuple[bytes, bytes]:
    """A quiet history (40 clean steps, a call closed as interrupted) and its cut tail."""
    s = _Session(tag)
    head = orjson.dumps({"type": "queue-operation", "operation": "dequeue", "sessionId": SESSION}) + b"\n"
    head += s.prompt()
    for i in range(40):
        if i % 3:
            head += s.text(f"r{i}", "looking") + s.call(f"r{i}", f"h{i}") + s.hook(f"h{i}") + s.result(f"h{i}")
        else:
            head += s.call(f"r{i}", f"h{i}") + s.call(f"r{i}", f"g{i}") + s.result(f"g{i}") + s.hook(f"g{i}")
            head += s.result(f"h{i}", "x" * 300)
        if i % 7 == 0:
            head += s.text(f"t{i}")
            if i == 0:
                # A sub-agent's first line: its thread is known from here on.
                head += orjson.dumps(prompt(f"{tag}-0000-4000-8000-a00000000001", None, "look", agent="a1")) + b"\n"
            head += s.prompt(f"step {i}")
    head += s.call("lost", "lost") + s.prompt("next")
    cut = s.prompt("end") + s.call("z", "z") + s.hook("z") + s.prompt("cut").rstrip(b"\n")
    return head, cut


_HEAD, _CUT = _session()


def _session_of(tag: str) -> bytes:
    head, _cut = _session(tag)
    return head


_HEAD_TIP = orjson.loads(_HEAD.splitlines()[-1])["uuid"]


def _mid_step(odd: bytes) -> bytes:
    """Inside a step: calls c1 and c2 of one reply, a hook, the result for c2, the odd line, the result for c1."""
    s = _Session("bbbbbbbb")
    s.tip = _HEAD_TIP
    return s.call("mid", "c1") + s.hook("c1") + s.call("mid", "c2") + s.result("c2") + odd + s.result("c1")


def _raw(value: object) -> bytes:
    return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8", "surrogatepass") + b"\n"


_U = {"parentUuid": None, "isSidechain": False, "sessionId": SESSION, "uuid": "cccccccc-0000-4000-8000-000000000001"}


def _user(content: object, **extra: object) -> bytes:
    return _raw({**_U, "type": "user", "message": {"role": "user", "content": content}, **extra})


def _results(*blocks: tuple[object, object]) -> bytes:
    return _user([{"type": "tool_result", "tool_use_id": call_id, "content": content} for call_id, content in blocks])


def _reply(content: object, reply: object = "msg_mid", **extra: object) -> bytes:
    return _raw({**_U, "type": "assistant", "message": {"id": reply, "role": "assistant", "content": content}, **extra})


def _kind(kind: str, **fields: object) -> bytes:
    return _raw({**_U, "type": kind, **fields})


_LONG = "y" * 5000

# Odd and bad lines, each with what the general path reports on it (None:
# nothing of its own), placed in a quiet stretch and inside a step.
ODD_LINES: dict[str, tuple[bytes, object]] = {
    "invalid UTF-8 in a skipped value": (b'{"type":"progress","data":{"x":"\xff\xfe"}}\n', "APX101"),
    "invalid UTF-8 in a key": (b'{"type":"progress","\xff":1}\n', "APX101"),
    "invalid UTF-8 in a long result": (
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"'
        + b"x" * 3000
        + b'\xff"}]}}\n',
        "APX101",
    ),
    "an overlong encoding": (b'{"type":"progress","data":"\xc0\xaf"}\n', "APX101"),
    "an encoded surrogate": (b'{"type":"progress","data":"\xed\xa0\x80"}\n', "APX101"),
    "NaN": (b'{"type":"progress","data":NaN}\n', "APX101"),
    "trailing bytes": (b'{"type":"progress"} x\n', "APX101"),
    "two values on one line": (b'{"type":"progress"} {"type":"progress"}\n', "APX101"),
    "a lone surrogate escape": (b'{"type":"progress","data":"\\ud800"}\n', None),
    "a lone surrogate escape in a result": (_results(("c1", "\ud800")), {"quiet": "APX002", "mid-step": None}),
    "a control character in a string": (b'{"type":"progress","data":"a\x01b"}\n', "APX101"),
    "a big integer": (b'{"type":"progress","data":123456789012345678901234567890}\n', None),
    "1e400": (b'{"type":"progress","data":1e400}\n', None),
    "nested deeper than orjson reads": (_raw('{"type":"progress","data":' + "[" * 1100 + "]" * 1100 + "}"), "APX101"),
    "nested deep, but not too deep": (_raw('{"type":"progress","data":' + "[" * 1000 + "]" * 1000 + "}"), None),
    "nested too deep beside a long result": (
        _raw(
            '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"'
            + _LONG
            + '"}]},"toolUseResult":'
            + "[" * 1100
            + "]" * 1100
            + "}"
        ),
        "APX101",
    ),
    "a blank line": (b"\n", "APX105"),
    "a line that is an array": (b"[1,2]\n", "APX104"),
    "a type that is no string": (_kind(7), "APX104"),  # type: ignore[arg-type]
    "no type": (_raw({"uuid": "cccccccc-0000-4000-8000-000000000002", "message": {}}), "APX104"),
    "a byte-order mark": (b'\xef\xbb\xbf{"type":"progress"}\n', "APX101"),
    "a hook line": (_kind("progress", data={"type": "hook_progress"}, toolUseID="c1"), None),
    "a hook line with a prompt id": (_kind("progress", promptId="p-hook"), None),
    "an attachment": (_kind("attachment", attachment={"type": "todo"}), None),
    "a file history snapshot": (_raw({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}), None),
    "a summary": (_raw({"type": "summary", "summary": "s", "leafUuid": "u"}), None),
    "a queue operation": (_raw({"type": "queue-operation", "operation": "enqueue", "content": "later"}), None),
    "a line type Claude Code may add": (_kind("brand-new", message=[1, 2]), None),
    "a system line": (_kind("system", subtype="informational", content="hi"), None),
    "a compaction": (_kind("system", subtype="compact_boundary", logicalParentUuid="u"), None),
    "a subtype that is no string": (_kind("system", subtype=["compact_boundary"]), None),
    "a prompt": (_user("more please", promptId="p-new"), None),
    "a prompt of blocks": (_user([{"type": "text", "text": "more"}]), None),
    "a prompt of an image": (_user([{"type": "image", "source": {}}]), None),
    "a prompt whose text is no string": (_user([{"type": "text", "text": 7}, {"type": "text", "text": "x"}]), None),
    "a prompt whose first text is a notice": (
        _user([{"type": "text", "text": 7}, {"type": "text", "text": "  <task-notification>done"}]),
        None,
    ),
    "a prompt with an escaped text": (_user([{"type": "text", "text": "\n<task-notification>\u00e9"}]), None),
    "a command's output": (_user("<local-command-stdout>ok</local-command-stdout>"), None),
    "a task notice": (_user("<task-notification>done</task-notification>", promptId="p-notice"), None),
    "a task notice, indented": (_user(" \n<task-notification>done"), None),
    "a meta line": (_user("Caveat: ...", isMeta=True, promptId="p-meta"), None),
    "a meta line of results": (_user([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}], isMeta=True), None),
    "isMeta that is no bool": (_user("hi", isMeta="yes"), None),
    "a user line with no message": (_kind("user"), "APX104"),
    "a user line whose message is no object": (_kind("user", message="hi"), "APX104"),
    "a user line with no content": (_kind("user", message={"role": "user"}), "APX104"),
    "a user line whose content is null": (_user(None), "APX104"),
    "a user line whose content is a number": (_user(3), "APX104"),
    "a block that is no object": (_user(["hi"]), None),
    "a block with no type": (_user([{"text": "hi"}]), None),
    "a sub-agent prompt": (_user("look", isSidechain=True, agentId="a1"), None),
    "a result in a known sub-agent's thread": (
        _user([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}], isSidechain=True, agentId="a1"),
        "APX002",
    ),
    "a result below a known sub-agent's line": (
        _user(
            [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}],
            isSidechain=True,
            parentUuid="aaaaaaaa-0000-4000-8000-a00000000001",
        ),
        "APX002",
    ),
    "a sub-agent result": (
        _user([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}], isSidechain=True),
        None,
    ),  # its thread has not started
    "isSidechain that is no bool": (_user("hi", isSidechain="yes"), None),
    "a uuid that is no string": (_kind("progress", uuid=5), None),
    "a parent that is no string": (_kind("progress", parentUuid=5), None),
    "a parent the tree does not hold": (_kind("progress", parentUuid="dddddddd-0000-4000-8000-000000000001"), None),
    "a parent far up the tree": (_kind("progress", parentUuid="aaaaaaaa-0000-4000-8000-000000000003"), None),
    "a uuid written before": (_kind("progress", uuid="aaaaaaaa-0000-4000-8000-000000000004"), None),
    "a uuid like an inserted one": (_kind("progress", uuid="cccccccc-0000-5000-8000-000000000001"), None),
    "no uuid": (_raw({"type": "progress", "parentUuid": None}), None),
    "a session id that is no string": (_kind("progress", sessionId=1), None),
    "a prompt id that is no string": (_user("hi", promptId=1), None),
    "a prompt id that is null": (_user("hi", promptId=None), None),
    "an assistant line with no message": (_kind("assistant"), "APX104"),
    "an assistant message that is no object": (_kind("assistant", message=[1]), "APX104"),
    "an assistant line of text, the same reply": (_reply([{"type": "text", "text": "hm"}]), None),
    "an assistant line of text, a new reply": (_reply([{"type": "text", "text": "hm"}], "msg_new"), None),
    "an assistant line whose content is a string": (_reply("hm"), None),
    "an assistant line whose content is null": (_reply(None), None),
    "an assistant line whose content is an object": (_reply({"type": "text"}), None),
    "a reply with no id": (_reply([{"type": "text", "text": "hm"}], None), None),
    "a reply whose id is empty": (_reply([{"type": "text", "text": "hm"}], "", requestId="req_mid"), None),
    "a reply whose id is no string": (_reply([{"type": "text", "text": "hm"}], 7), None),
    "a request id that is no string": (_reply([{"type": "text", "text": "hm"}], None, requestId=7), None),
    "a call of the same reply": (_reply([tool_use("k")]), None),
    "a call of a new reply": (_reply([tool_use("k")], "msg_new"), None),
    "two calls of a new reply": (_reply([tool_use("k"), tool_use("k2")], "msg_new"), None),
    "a call id given twice in a line": (_reply([tool_use("k"), tool_use("k")], "msg_new"), None),
    "a call id already waiting": (_reply([tool_use("c1")]), None),
    "a call id answered before": (_reply([tool_use("h3")], "msg_new"), None),
    "a call without an id": (_reply([{"type": "tool_use", "name": "Bash"}]), None),
    "a call id that is no string": (_reply([{"type": "tool_use", "id": 7}]), None),
    "a server tool call": (_reply([{"type": "server_tool_use", "id": "srv"}]), None),
    "a result for a waiting call": (_results(("c1", "fine")), {"quiet": "APX002", "mid-step": None}),
    "a long result": (_results(("c1", _LONG)), {"quiet": "APX002", "mid-step": None}),
    "a result of blocks": (_results(("c1", [{"type": "text", "text": "fine"}])), {"quiet": "APX002", "mid-step": None}),
    "a result with no content": (_user([{"type": "tool_result", "tool_use_id": "c1"}]), {"quiet": "APX002", "mid-step": None}),
    "a result beside text": (
        _user([{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}, {"type": "text", "text": "reminder"}]),
        {"quiet": "APX002", "mid-step": None},
    ),
    "two results, one stray": (_results(("c1", "ok"), ("ghost", "?")), "APX002"),
    "two results for one call": (_results(("c1", "ok"), ("c1", "again")), {"quiet": "APX002", "mid-step": "APX003"}),
    "a result with no call id": (_user([{"type": "tool_result", "content": "x"}]), "APX002"),
    "a result whose call id is no string": (_user([{"type": "tool_result", "tool_use_id": 1, "content": "x"}]), "APX002"),
    "an orphan result": (_results(("ghost", "x")), "APX002"),
    "a duplicate result": (_results(("h3", "x")), "APX003"),
    "a late result": (_results(("lost", "x")), "APX004"),
    "the marker as a result": (_results(("c1", DEFAULT_MARKER)), {"quiet": "APX002", "mid-step": None}),
    "the marker, escaped": (
        _raw(
            '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"not run\\u003a the turn was interrupted"}]}}'
        ),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a placeholder result": (_results(("c1", "aborted")), {"quiet": "APX002", "mid-step": "APX006"}),
    "a placeholder in blocks": (
        _results(("c1", [{"type": "text", "text": "aborted"}])),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "a result with escapes that tell": (_results(("c1", "a\nb")), {"quiet": "APX002", "mid-step": None}),
    "a key given twice, the last a prompt": (
        _raw('{"type":"assistant","type":"user","message":{"content":"hi"},"uuid":"cccccccc-0000-4000-8000-000000000003"}'),
        None,
    ),
    "a message given twice": (
        _raw(
            '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"r"}]},"message":{"content":"hi"}}'
        ),
        None,
    ),
    "a line ending in CRLF": (b'{"type":"progress","data":"a\\nb"}\r\n', None),
}


def _placed(odd: bytes, where: str) -> bytes:
    return _HEAD + (odd if where == "quiet" else _mid_step(odd)) + _CUT


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", ["quiet", "mid-step"])
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_line_past_the_head_is_reported_as_reading_it_whole_does(name: str, where: str, repair: bool) -> None:
    odd, code = ODD_LINES[name]
    said = same_both_ways(_placed(odd, where), "claude-code", head=8, repair=repair)
    at = _HEAD.count(b"\n") + (1 if where == "quiet" else 5)
    odd_line_findings(said, at, code, where, repair)


def test_the_inserted_line_chains_into_the_tree_the_taken_lines_built() -> None:
    findings, _edits, _unparsed, _lines, out = same_both_ways(_HEAD + _CUT, "claude-code", head=2, repair=True)
    assert [(f["code"], f["call_id"]) for f in findings] == [("APX001", "lost"), ("APX001", "z")]
    lines = [orjson.loads(line) for line in out.splitlines()]
    records = [line for line in lines if line.get("toolUseResult") == DEFAULT_MARKER]
    by_uuid = {line.get("uuid"): line for line in lines}
    for record, call_id in zip(records, ("lost", "z"), strict=True):
        call = next(n for n, line in enumerate(lines) if line["type"] == "assistant" and call_id in str(line["message"]))
        # Hung below the call's line (or the hook after it), and the next prompt re-pointed at it.
        assert record["sourceToolAssistantUUID"] == lines[call]["uuid"]
        assert by_uuid[record["parentUuid"]]["type"] in ("assistant", "progress")
        assert [line["type"] for line in lines if line.get("parentUuid") == record["uuid"]] == ["user"]
        # The prompt id of the turn that made the call: a prompt line the quiet loop took set it.
        turn = next(line for line in reversed(lines[:call]) if isinstance(line.get("message", {}).get("content"), str))
        assert record["promptId"] == turn["promptId"]


@pytest.mark.parametrize("sub_agent", [False, True], ids=["main thread", "sub-agent file"])
@pytest.mark.parametrize("held", [False, True], ids=["between steps", "within a step"])
def test_the_record_takes_the_prompt_id_of_the_threads_last_user_line(held: bool, sub_agent: bool) -> None:
    """Claude Code writes ``promptId`` on user lines; one on another line, taken or held, is not the turn's."""
    s = _Session("bbbbbbbb")
    s.tip = _HEAD_TIP  # its results carry no prompt id, as before Claude Code 2.1
    hook = s._line(progress, "c1", promptId="p-hook")
    notice = s._line(prompt, "<task-notification>done", promptId="p-notice")
    if held:
        tail = s.call("one", "c1") + notice + hook + s.result("c1")
    else:
        tail = s.call("one", "c1") + s.result("c1") + notice + hook
    tail += s.call("two", "cut")
    data = _HEAD + tail
    findings, _edits, _unparsed, _lines, out = same_both_ways(
        _as_sub_agent(data) if sub_agent else data, "claude-code", head=2, repair=True
    )
    assert [f["call_id"] for f in findings] == ["lost", "cut"]
    record = orjson.loads(out.splitlines()[-1])
    assert record["toolUseResult"] == DEFAULT_MARKER and record["promptId"] == "p-notice"


@pytest.mark.parametrize("case", golden_cases("claude-code"), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_claude_code_cases_say_the_same_through_the_quiet_loop(case: Path, chunk: int, repair: bool) -> None:
    for drop in (False, True):
        same_both_ways((case / "input.jsonl").read_bytes(), "claude-code", chunk=chunk, repair=repair, drop=drop)


def _as_sub_agent(data: bytes, named: int | None = None) -> bytes:
    """The session as a sub-agent's file (``agent-*.jsonl``): every line of its one sidechain thread.

    Claude Code names the agent on every line; some writers name it on the first ``named`` lines only.
    """
    lines = []
    for raw in data.splitlines(keepends=True):
        line = orjson.loads(raw)
        if "uuid" in line:
            line["isSidechain"] = True
            if named is None or len(lines) < named:
                line["agentId"] = "a1b2c3d"
        lines.append(orjson.dumps(line) + (b"\n" if raw.endswith(b"\n") else b""))
    return b"".join(lines)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_sub_agent_file_is_typed_in_its_own_thread(repair: bool, monkeypatch) -> None:
    """A sub-agent's file is one sidechain thread: its quiet stretches are taken, as the main thread's are."""
    data = _as_sub_agent(_HEAD + _CUT)
    findings = same_both_ways(data, "claude-code", head=2, chunk=1 << 10, repair=repair)[0]
    assert [(f["code"], f["call_id"]) for f in findings] == [("APX001", "lost"), ("APX001", "z")]
    classified = []
    classify = ClaudeCodeAdapter.classify
    monkeypatch.setattr(ClaudeCodeAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    run_check(data, "claude-code", typed=True, head=2, chunk=1 << 16, repair=repair)
    if repair:
        # A repair follows the main thread only: every line is read whole.
        assert len(classified) > data.count(b"\n")
    else:
        # The head, the two cut calls with the lines around them: the rest was taken.
        assert len(classified) < 12 < data.count(b"\n")


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_sub_agent_named_on_its_first_lines_only_says_the_same(repair: bool) -> None:
    """Its later lines join the thread by their parents, which a repair's self-check has not all read."""
    data = _as_sub_agent(_HEAD + _CUT, named=3)
    findings = same_both_ways(data, "claude-code", head=2, chunk=1 << 10, repair=repair)[0]
    assert [(f["code"], f["call_id"]) for f in findings] == [("APX001", "lost"), ("APX001", "z")]


def test_interleaved_threads_are_typed_a_stretch_at_a_time() -> None:
    """Sub-agent lines between the main thread's (older session files): each thread's stretches say the same."""
    main = _HEAD.splitlines(keepends=True)
    agent = _as_sub_agent(_session_of("dddddddd")).splitlines(keepends=True)
    mixed = []
    for n, line in enumerate(main):
        mixed.append(line)
        if 40 <= n < 40 + len(agent):
            mixed.append(agent[n - 40])
    for repair in (False, True):
        same_both_ways(b"".join(mixed) + _CUT, "claude-code", head=2, chunk=1 << 10, repair=repair)


def _recordings() -> list[Path]:
    """Real Claude Code sessions: the shared corpus's (when it is beside the project) and a reliability sample."""
    from tests.conftest import corpus_samples, expected_format

    shared = [p for p in corpus_samples() if expected_format(p) == "claude-code"]
    return [*shared, Path(__file__).parent / "reliability" / "data" / "claude-code-repeated-sidechain-uuids.jsonl"]


@pytest.mark.parametrize("recording", _recordings(), ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_real_sessions_say_the_same_through_the_quiet_loop(recording: Path, repair: bool) -> None:
    data = recording.read_bytes()
    for head in (1, 3):
        for chunk in (16, 1 << 16):
            same_both_ways(data, "claude-code", head=head, chunk=chunk, repair=repair)


_ODD = st.sampled_from([odd for odd, _code in ODD_LINES.values()])


@st.composite
def _with_odd_lines(draw) -> bytes:
    """A drawn session (sub-agents, rewinds, compactions), with odd lines, long results and bytes broken."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = [orjson.dumps(line) + newline for line in draw(histories())]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_ODD))
    if lines and draw(st.booleans()):
        # A long result, longer than any marker: taken without being read.
        at = draw(st.integers(0, len(lines)))
        long = result("eeeeeeee-0000-4000-8000-000000000001", None, "toolu_00_0", "é" * draw(st.integers(100, 400)))
        lines.insert(at, orjson.dumps(long) + newline)
    return broken(draw, lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_with_odd_lines(),
    head=st.sampled_from([1, 2, 5]),
    chunk=st.sampled_from([1, 40, 300, 1 << 16]),
    generation=st.sampled_from([1, 3, claude_code._GENERATION]),
    repair=st.booleans(),
)
def test_drawn_sessions_say_the_same_through_the_quiet_loop(
    data: bytes, head: int, chunk: int, generation: int, repair: bool
) -> None:
    # A small generation lets the uuid tree go at almost every reply, taken lines' replies among them.
    saved, claude_code._GENERATION = claude_code._GENERATION, generation
    try:
        same_both_ways(data, "claude-code", head=head, chunk=chunk, piece=8, repair=repair)
    finally:
        claude_code._GENERATION = saved


def _state(adapter: ClaudeCodeAdapter) -> tuple:
    return (
        list(adapter._new.items()),
        list(adapter._old.items()),
        list(adapter._kept.items()),
        adapter._v5,
        adapter._last,
        adapter._reply,
        adapter._reply_start,
        adapter._prompt_ids,
        adapter._session,
        adapter._previous,
        adapter._clean,
        adapter._sidechains,
        adapter._agents,
        adapter._named,
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_line_taken_leaves_the_adapter_as_classify_does(data) -> None:
    """The tree, replies and prompt ids a taken line leaves are those ``classify`` leaves (the records read them).

    The quiet loop is followed as it runs: a deviation reads the held lines
    again, then the line, with the adapter the quiet lines share.
    """
    raws = [orjson.dumps(record) for record in data.draw(histories())]
    for _ in range(data.draw(st.integers(0, 4))):
        raws.insert(data.draw(st.integers(0, len(raws))), data.draw(_ODD).rstrip(b"\r\n"))
    typed, whole = ClaudeCodeAdapter(), ClaudeCodeAdapter()
    typed._generation = whole._generation = data.draw(st.sampled_from([1, 2, 10_000]))
    quiet_lines = ClaudeCodeQuietLines(typed)
    step, held = Step(quiet_lines.thread()), []
    for raw in raws:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None  # no line: ``classify`` never sees it
        try:
            said = DEVIATES if value is None else quiet_lines.take(quiet_lines.decode(raw), step)
        except msgspec.MsgspecError:
            said = DEVIATES
        if said == OPENS:
            held = [value]
        elif said == HELD:
            held.append(value)
        elif said in (QUIET, ENDS):
            held = []
        else:
            for kept in [*held, value]:
                if kept is not None:
                    typed.classify(kept)
            # A stretch follows the thread of the line read whole last.
            step, held = Step(quiet_lines.thread()), []
        if value is not None:
            whole.classify(value)
        if not held:
            assert _state(typed) == _state(whole)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_quiet_stretch_is_not_classified(repair: bool, monkeypatch) -> None:
    classified = []
    classify = ClaudeCodeAdapter.classify
    monkeypatch.setattr(ClaudeCodeAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    s = _Session("ffffffff")
    s.tip = _HEAD_TIP
    steps = b"".join(
        s.text(f"q{i}")
        + s.call(f"q{i}", f"q{i}")
        + s.hook(f"q{i}")
        + s.call(f"q{i}", f"r{i}")
        + s.result(f"r{i}")
        + s.result(f"q{i}")
        for i in range(1000)
    )
    data = _HEAD + steps + _CUT
    findings, _edits, _unparsed, lines, out = run_check(data, "claude-code", typed=True, head=2, chunk=1 << 16, repair=repair)
    assert lines == data.count(b"\n") + 1
    assert [(f["code"], f.get("call_id")) for f in findings] == [("APX001", "lost"), ("APX001", "z")]
    # The doctor reads the 2 head lines, the sub-agent's line and (a check's
    # stretch follows the thread read whole last; a repair's, the main thread
    # only) the main thread's line after it, the call cut by the prompt after
    # it, and the cut call, the hook after it and the prompt that cuts it; a
    # repair's self-check reads each of them again, and the records inserted.
    assert len(classified) == (2 + 2 + 2 + 3 if not repair else 2 * (2 + 1 + 2 + 3) + 2)
    if repair:
        # Every line as it came in (two re-pointed at a record), and a record for each call cut.
        kept = [line for line in out.splitlines(keepends=True) if DEFAULT_MARKER.encode() not in line]
        assert len(kept) == data.count(b"\n") + 1
        changed = [(a, b) for a, b in zip(kept, data.splitlines(keepends=True), strict=True) if a != b]
        assert len(changed) == 2 and all(orjson.loads(a)["type"] == "user" for a, _b in changed)


def test_the_utf8_check_of_a_session_runs_in_the_formats_small_pieces(monkeypatch) -> None:
    """Claude Code's uuid tree turns over as the file goes on; larger texts between its tables fragmented the heap."""
    from apx_doctor import quiet

    pieces = []
    utf8 = quiet._utf8
    monkeypatch.setattr(quiet, "_utf8", lambda data, piece=None: pieces.append(piece) or utf8(data, piece))
    s = _Session("cccccccc")
    data = _HEAD + b"".join(s.call(f"u{i}", f"u{i}") + s.result(f"u{i}", "é" * 3000) for i in range(40)) + _CUT
    run_check(data, "claude-code", typed=True, head=2, chunk=1 << 16, piece=1 << 14)
    assert pieces and set(pieces) == {ClaudeCodeQuietLines.utf8_piece} and ClaudeCodeQuietLines.utf8_piece < 1 << 14
