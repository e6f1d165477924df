"""The findings and repairs tables written without Rich are, byte for byte, the ones Rich writes: Rich is the oracle."""

from __future__ import annotations

import dataclasses
import io

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from apx_doctor.model import Edit, FileReport, Finding
from apx_doctor.reporters import _plain_table
from apx_doctor.reporters import text as text_reporter
from apx_doctor.rules import RULES

# Words of every length (Latin, Greek and Cyrillic letters among ASCII), runs of spaces, and now
# and then one word far longer than any column.
_WORD = st.text(st.sampled_from("abcdefghij_-./:0123456789éüßøÆΩλжЁ°±"), min_size=1, max_size=12) | st.text(
    st.sampled_from("xyzé"), min_size=30, max_size=90
)
_PROSE = st.lists(st.tuples(_WORD, st.sampled_from([" ", " ", "  ", ""])), max_size=14).map(
    lambda pairs: "".join(word + gap for word, gap in pairs)
)
_NAME = st.none() | _PROSE.map(lambda text: text[:60])


@st.composite
def _finding(draw) -> Finding:
    code = draw(st.sampled_from(sorted(RULES)))
    return Finding(
        code,
        draw(st.none() | st.integers(1, 10**7)),
        draw(_PROSE),
        call_id=draw(_NAME),
        tool=draw(_NAME),
        index=draw(st.none() | st.integers(0, 999)),
        fixable=draw(st.sampled_from([None, False])),
        tool_kind=draw(st.sampled_from([None, "read-only", "side-effects", "unknown"])),
    )


@st.composite
def _report(draw) -> FileReport:
    path = draw(st.sampled_from(["a.jsonl", "sessions/2026/12/03/rollout-2026-12-03T17-45-35.jsonl"]) | _WORD)
    findings = draw(st.lists(_finding(), min_size=1, max_size=8))
    return FileReport(path, draw(st.sampled_from(["chat", "claude-code", "codex"])), findings)


@st.composite
def _edit(draw) -> Edit:
    call_id = draw(_NAME)
    arguments = draw(st.none() | st.dictionaries(_WORD, _PROSE, max_size=3) | _PROSE)
    record = {
        "role": "tool",
        "tool_call_id": call_id,
        "content": draw(st.sampled_from(["not run: the turn was interrupted", "é"])),
    }
    action = draw(st.sampled_from(["insert", "insert", "remove", "replace"]))
    return Edit(action, draw(st.integers(1, 10**7)), record, call_id, draw(_NAME), arguments)


@st.composite
def _repaired(draw) -> FileReport:
    report = draw(_report())
    report.edits = draw(st.lists(_edit(), min_size=1, max_size=6))
    return report


def _rich(report: FileReport, width: int, table=None) -> str:
    """What Rich writes for the table to a pipe of ``width`` columns (the reporter's own console settings)."""
    out = io.StringIO()
    trimmed = text_reporter._Trimmed(out)
    console = Console(
        file=trimmed,  # type: ignore[arg-type]
        width=width,
        markup=False,
        emoji=False,
        highlight=False,
        force_terminal=False,
        no_color=True,
        soft_wrap=False,
    )
    spec = text_reporter._findings_spec(report, text_reporter.FIRST_ROWS, width) if table is None else table
    console.print(text_reporter._rich_table(spec))
    trimmed.flush()
    return out.getvalue()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report=_report(), width=st.integers(20, 260))
@example(
    report=FileReport("a.jsonl", "chat", [Finding("APX001", 12, "no result", "call_1", "read_file", tool_kind="read-only")]),
    width=120,
)
def test_the_plain_table_is_what_rich_writes(report: FileReport, width: int) -> None:
    spec = text_reporter._findings_spec(report, text_reporter.FIRST_ROWS, width)
    plain = text_reporter._plain_drawn(spec, width)
    # None hands the table to Rich (where a column is squeezed below its padding).
    assert plain is None or plain == _rich(report, width)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report=_repaired(), width=st.integers(20, 260), mode=st.sampled_from(["dry-run", "output", "in-place"]))
@example(
    report=FileReport(
        "a.jsonl",
        "chat",
        [],
        edits=[Edit("insert", 5, {"role": "tool", "tool_call_id": "call_2"}, "call_2", "send", {"channel": "#ops"})],
    ),
    width=120,
    mode="dry-run",
)
def test_the_plain_repairs_table_is_what_rich_writes(report: FileReport, width: int, mode: str) -> None:
    spec = text_reporter._edits_spec(report, mode, text_reporter.FIRST_ROWS)
    plain = text_reporter._plain_drawn(spec, width)
    assert plain is None or plain == _rich(report, width, spec)
    if width >= 120 and all(e.call_id is None or len(e.call_id) < 30 for e in report.edits):
        # Ids and JSON as repairs show them: the plain table draws it (else every fix pays for Rich).
        assert plain is not None


@given(report=_report(), width=st.integers(100, 260))
def test_a_table_of_ids_names_and_prose_is_written_without_rich(report: FileReport, width: int) -> None:
    # Ids and names as runtimes write them.
    findings = [dataclasses.replace(f, call_id="toolu_01ABCDEF", tool="read_file") for f in report.findings]
    report = dataclasses.replace(report, findings=findings)
    spec = text_reporter._findings_spec(report, text_reporter.FIRST_ROWS, width)
    assert text_reporter._plain_drawn(spec, width) == _rich(report, width)


@given(st.lists(_WORD, max_size=30).map(" ".join), st.integers(20, 200))
def test_a_line_printed_alone_folds_as_rich_folds_it(line: str, width: int) -> None:
    out = io.StringIO()
    trimmed = text_reporter._Trimmed(out)
    Console(file=trimmed, width=width, no_color=True, force_terminal=False, soft_wrap=False).print(line, markup=False)  # type: ignore[arg-type]
    trimmed.flush()
    assert "\n".join(_plain_table.folded(line, width) or ["?"]) + "\n" == out.getvalue()


def test_text_it_cannot_vouch_for_is_left_to_rich() -> None:
    # Wide (CJK, emoji), combining, unprintable: their cells are not one a character.
    for odd in ("\u6f22\u5b57", "\U0001f600", "e\u0301", "\u2192", "a\tb", "soft\u00adhyphen"):
        columns = [_plain_table.Column("Line", right=True, wraps=False), _plain_table.Column("What happened")]
        assert _plain_table.table("a.jsonl", columns, [["1", odd]], 120) is None
