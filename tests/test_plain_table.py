"""The findings table written without Rich is, byte for byte, the one Rich writes: Rich is the oracle."""

from __future__ import annotations

import dataclasses
import io

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from apx_doctor.model import FileReport, Finding
from apx_doctor.reporters import _plain_table
from apx_doctor.reporters import text as text_reporter
from apx_doctor.rules import RULES

# Words of every length, runs of spaces, and now and then one word far longer than any column.
_WORD = st.text(st.sampled_from("abcdefghij_-./:0123456789"), min_size=1, max_size=12) | st.text(
    st.sampled_from("xyz"), min_size=30, max_size=90
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


def _rich(report: FileReport, width: int) -> str:
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
    console.print(text_reporter._findings_table(report, text_reporter.FIRST_ROWS, width))
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
    plain = text_reporter._plain_findings(spec, width)
    # None hands the table to Rich (where a column is squeezed below its padding).
    assert plain is None or plain == _rich(report, width)


@given(report=_report(), width=st.integers(100, 260))
def test_a_table_of_ids_names_and_prose_is_written_without_rich(report: FileReport, width: int) -> None:
    # Ids and names as runtimes write them.
    findings = [dataclasses.replace(f, call_id="toolu_01ABCDEF", tool="read_file") for f in report.findings]
    report = dataclasses.replace(report, findings=findings)
    spec = text_reporter._findings_spec(report, text_reporter.FIRST_ROWS, width)
    assert text_reporter._plain_findings(spec, width) == _rich(report, width)


@given(st.lists(_WORD, max_size=30).map(" ".join), st.integers(20, 200))
def test_a_line_printed_alone_folds_as_rich_folds_it(line: str, width: int) -> None:
    out = io.StringIO()
    trimmed = text_reporter._Trimmed(out)
    Console(file=trimmed, width=width, no_color=True, force_terminal=False, soft_wrap=False).print(line, markup=False)  # type: ignore[arg-type]
    trimmed.flush()
    assert "\n".join(_plain_table.folded(line, width) or ["?"]) + "\n" == out.getvalue()


def test_text_it_cannot_vouch_for_is_left_to_rich() -> None:
    for odd in ("caf\u00e9", "\u6f22\u5b57", "a\tb"):
        columns = [_plain_table.Column("Line", right=True, wraps=False), _plain_table.Column("What happened")]
        assert _plain_table.table("a.jsonl", columns, [["1", odd]], 120) is None
