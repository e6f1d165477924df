"""The claude-code adapter's uuid tree: let go as the file goes on, same repairs as the whole tree.

The adapter keeps two generations of main-thread lines and lets the older go
(memory stays flat); lines that could ever lead back into what it still holds
are kept for good. What users depend on: the inserted lines go where the whole
tree would put them, and get the uuids it would give them, whatever order the
lines come in. Here a reference keeps every uuid and its parent in one dict and
walks that, and the adapter under test lets a generation go at almost every
reply.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from apx_doctor import repair_messages
from apx_doctor.doctor import HistoryDoctor, RepairOptions
from apx_doctor.formats import claude_code
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.formats.claude_code import ClaudeCodeAdapter

from strategies.claude_code import SESSION, assistant, histories, progress, prompt, result, tool_use

_NOWHERE = object()


class _Tiny(ClaudeCodeAdapter):
    """Lets the older generation go at every new reply of the main thread that allows it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._generation = 1


class _WholeTree(ClaudeCodeAdapter):
    """The reference: every uuid and its parent in one dict, walked as it is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.whole: dict[str, str | None] = {}
        self.written: dict[str, str | None] = {}  # as the file's own lines have it
        # A uuid written twice with two parents (or a line's uuid that an
        # earlier record already has): the module's documented limit, where the
        # held tree may place a record otherwise.
        self.ambiguous = False

    def classify(self, obj: Any) -> Any:
        entry = super().classify(obj)
        if type(obj) is dict and isinstance(obj.get("type"), str) and isinstance(obj.get("uuid"), str):
            uuid, parent = obj["uuid"], obj.get("parentUuid")
            parent = parent if isinstance(parent, str) else None
            if uuid in self.whole and self.written.get(uuid, _NOWHERE) != parent:
                self.ambiguous = True
            self.whole[uuid] = self.written[uuid] = parent
        return entry

    def _link(self, uuid: str, parent: str | None, thread: Any) -> None:
        super()._link(uuid, parent, thread)
        self.whole[uuid] = parent

    def _follows(self, node: str | None, ancestor: str | None) -> bool:
        if node is None or ancestor is None:
            return False
        for _ in range(claude_code._ANCESTRY_LIMIT):
            if node == ancestor:
                return True
            node = self.whole.get(node)
            if node is None:
                return False
        return False

    def _taken(self, uuid: str) -> bool:
        return uuid in self.whole


def _repair(adapter: ClaudeCodeAdapter, lines: list, drop: bool) -> tuple[list, list]:
    doctor = HistoryDoctor(adapter, RepairOptions(drop_orphans=drop))
    for number, line in enumerate(lines, 1):
        doctor.entry(number, line)
    doctor.end(len(lines) + 1)
    return doctor.findings, doctor.edits


def _same_repair(lines: list, drop: bool, *, drawn: bool = False) -> list:
    reference = _WholeTree()
    expected = _repair(reference, lines, drop)
    if drawn:
        assume(not reference.ambiguous)
    else:
        assert not reference.ambiguous, "a hand-made example should stay clear of the documented limit"
    assert _repair(_Tiny(), lines, drop) == expected
    _findings, edits = expected
    return edits


def _records(edits: list) -> list:
    return [e.record for e in edits if e.action == "insert"]


def _uuid_for(line: dict) -> str | None:
    """The uuid the first call of ``line`` would get as a record, or None if it makes none."""
    blocks = line.get("message", {}).get("content")
    calls = [b["id"] for b in blocks if b.get("type") == "tool_use"] if isinstance(blocks, list) else []
    return claude_code._uuid5("\x00".join((SESSION, line["uuid"], calls[0]))) if calls else None


@st.composite
def shuffled_histories(draw) -> list:
    """Drawn sessions with lines moved before their parents, parents far back, after, or in no line,
    and uuids that a record would be given, taken by lines before it."""
    lines = [dict(line) for line in draw(histories())]
    with_uuid = [i for i, line in enumerate(lines) if "uuid" in line]
    if not with_uuid:
        return lines
    uuids = [lines[i]["uuid"] for i in with_uuid]
    for _ in range(draw(st.integers(0, 5))):
        i = draw(st.sampled_from(with_uuid))
        kind = draw(st.sampled_from(["move", "parent", "missing", "taken"]))
        if kind == "move":
            lines.insert(draw(st.integers(0, i)), lines.pop(i))
            with_uuid = [j for j, line in enumerate(lines) if "uuid" in line]
        elif kind == "parent":
            lines[i]["parentUuid"] = draw(st.sampled_from(uuids))
        elif kind == "missing":
            lines[i]["parentUuid"] = "00000000-0000-4000-8000-ffffffffffff"
        else:
            taken = [u for u in map(_uuid_for, lines) if u is not None and u not in uuids]
            if taken:
                # The line keeps its children: they name the uuid it now has.
                old, new = lines[i]["uuid"], draw(st.sampled_from(taken))
                lines = [{**line, "parentUuid": new} if line.get("parentUuid") == old else line for line in lines]
                lines[i] = {**lines[i], "uuid": new}
                uuids = [new if u == old else u for u in uuids]
    return lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=shuffled_histories(), drop=st.booleans())
def test_records_go_where_the_whole_tree_puts_them_whatever_the_order_of_lines(lines: list, drop: bool) -> None:
    _same_repair(lines, drop, drawn=True)


def _long_session(turns: int) -> list:
    """A main thread of ``turns`` turns: a prompt, a call, its result, a reply; every 7th call never answered."""
    lines: list = []
    for turn in range(turns):
        call = f"toolu_{turn}"
        n = len(lines)
        lines.append(prompt(f"p-{turn}", lines[-1]["uuid"] if lines else None, "go on", n=n))
        lines.append(assistant(f"a-{turn}", f"p-{turn}", f"msg_{turn}", tool_use(call), n=n + 1))
        if turn % 7:
            lines.append(result(f"r-{turn}", f"a-{turn}", call, "done", source=f"a-{turn}", n=n + 2))
        lines.append(assistant(f"t-{turn}", lines[-1]["uuid"], f"msg_{turn}_end", {"type": "text", "text": "ok"}, n=n + 3))
    return lines


def test_a_long_session_is_repaired_as_by_the_whole_tree_with_the_tree_let_go() -> None:
    # About 38,000 lines: the real adapter lets generations go, and holds no more than two.
    lines = _long_session(10_000)
    adapter = ClaudeCodeAdapter()
    findings, edits = _repair(adapter, lines, False)
    assert (findings, edits) == _repair(_WholeTree(), lines, False)
    assert len([f for f in findings if f.code == "APX001"]) == len(range(0, 10_000, 7))
    held = len(adapter._new) + len(adapter._old) + len(adapter._kept)
    assert held <= 2 * claude_code._GENERATION + 4 < len(lines)


def test_a_uuid_let_go_long_ago_still_keeps_an_inserted_uuid_from_taking_it() -> None:
    # The call of the last turn is never answered: its record's uuid would be
    # uuid5(session, call line, call id). A line near the start already has
    # it, and that line is let go long before the record is made.
    lines = _long_session(8)
    site = lines[-2]
    call_id = site["message"]["content"][0]["id"]
    name = "\x00".join((SESSION, site["uuid"], call_id))
    taken = claude_code._uuid5(name)
    lines[1] = {**lines[1], "uuid": taken}
    lines[2] = {**lines[2], "parentUuid": taken}
    adapter = _Tiny()
    edits = _same_repair(lines, False)
    _repair(adapter, lines, False)
    assert taken not in adapter._new and taken not in adapter._old and taken not in adapter._kept, "not let go"
    uuids = [r["uuid"] for r in _records(edits)]
    assert len(set(uuids)) == len(uuids) == 2
    assert uuids[-1] == claude_code._uuid5(name + "\x00" + "1")


def test_a_parent_written_after_its_child_still_anchors_the_records() -> None:
    # ``c`` names a parent written turns later, below the reply that makes the
    # call; the next reply hangs off ``c``, so it follows the call: the record
    # goes between, as the whole tree has it, though the turns between let go
    # every line of the tree that came before the call.
    lines = [prompt("u0", None, "go", n=0), progress("c", "p", "toolu_x", n=1)]
    for turn in range(4):
        lines.append(prompt(f"q{turn}", lines[-1]["uuid"], "more", n=2 + 2 * turn))
        lines.append(assistant(f"x{turn}", f"q{turn}", f"msg_x{turn}", {"type": "text", "text": "ok"}, n=3 + 2 * turn))
    lines.append(assistant("r", "x3", "msg_r", tool_use("toolu_r"), n=20))
    lines.append(progress("p", "r", "toolu_r", n=21))
    lines.append(assistant("b", "c", "msg_b", {"type": "text", "text": "next"}, n=22))
    adapter = _Tiny()
    edits = _same_repair(lines, False)
    _repair(adapter, lines, False)
    assert "q0" not in adapter._new and "q0" not in adapter._old, "the turns between let nothing go"
    (record,) = _records(edits)
    (replaced,) = [e.record for e in edits if e.action == "replace"]
    assert (record["parentUuid"], replaced["uuid"], replaced["parentUuid"]) == ("c", "b", record["uuid"])


@st.composite
def repeated_histories(draw) -> list:
    """A drawn session with a run of its own lines written again after it (a resumed or concatenated file)."""
    lines = draw(histories())
    start = draw(st.integers(0, len(lines)))
    end = draw(st.integers(start, len(lines)))
    return lines + [dict(line) for line in lines[start:end]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=repeated_histories())
def test_repeated_uuids_still_get_unique_records_and_a_second_repair_changes_nothing(lines: list) -> None:
    given_ = {line["uuid"] for line in lines if "uuid" in line}
    with patch.object(claude_code, "_GENERATION", 1):
        fixed = repair_messages(lines, format="claude-code").messages
        assert not repair_messages(fixed, format="claude-code").changed
    uuids = [line["uuid"] for line in fixed if line.get("toolUseResult") == DEFAULT_MARKER]
    assert len(set(uuids)) == len(uuids)
    assert not given_ & set(uuids)
