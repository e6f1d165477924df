"""Running one file through a check twice: with a format's quiet loop, and with every line read whole.

Shared by the quiet-line tests of each format (``tests/test_quiet_lines*.py``).
Chunks and UTF-8 pieces are made small, so that their edges fall everywhere,
between lines and inside characters.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import strategies as st

from apx_doctor import quiet, stream
from apx_doctor.doctor import RepairOptions
from apx_doctor.errors import DoctorError
from apx_doctor.formats import adapter_class
from apx_doctor.formats.base import FormatAdapter


def run_check(
    data: bytes,
    input_format: str,
    *,
    typed: bool,
    head: int = 1,
    marker: str | None = None,
    chunk: int = 256,
    piece: int = 64,
    repair: bool = False,
    drop: bool = False,
):
    """What a check (or with ``repair``, a fix) of ``data`` reports, through the quiet loop or not (``typed``)."""
    adapter = adapter_class(input_format)
    config = stream.StreamConfig(
        input_format=input_format, repair=RepairOptions(drop_orphans=drop), **({"marker": marker} if marker else {})
    )
    sink = stream.MemorySink() if repair else None
    saved = stream.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE, adapter.__dict__.get("quiet_lines")
    stream.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE = head, chunk, piece
    if not typed:
        adapter.quiet_lines = FormatAdapter.quiet_lines  # type: ignore[method-assign]
    try:
        result = stream.run(io.BytesIO(data), config, sink)
    except DoctorError as exc:
        return ("stopped", type(exc).__name__, str(exc))
    finally:
        stream.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE, own = saved
        if own is not None:
            adapter.quiet_lines = own  # type: ignore[method-assign]
        elif "quiet_lines" in adapter.__dict__:
            del adapter.quiet_lines  # shadowed here: the inherited one is back
    out = sink.getvalue() if sink else None
    return [f.to_dict() for f in result.findings], [e.to_dict() for e in result.edits], result.unparsed, result.lines, out


def golden_cases(input_format: str) -> list[Path]:
    """The golden case folders of ``input_format`` that are read as that format (``options.json`` may say another)."""
    cases = []
    for case in sorted(p.parent for p in (Path(__file__).parent / "cases" / input_format).glob("*/input.jsonl")):
        options = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
        if options.get("input_format", input_format) == input_format:
            cases.append(case)
    return cases


def same_both_ways(data: bytes, input_format: str, **options) -> list:
    """The report of ``data``, asserted equal through the quiet loop and line by line."""
    typed = run_check(data, input_format, typed=True, **options)
    assert typed == run_check(data, input_format, typed=False, **options)
    return typed


# Bytes a drawn file is broken with: invalid UTF-8 (a stray byte, a lead byte, a continuation
# byte), a line end, a quote and brackets, each where it cuts a value.
BREAKING_BYTES = (0xFF, 0xC3, 0x80, 0x0A, 0x22, 0x7B, 0x5B)


def broken(draw, lines: list[bytes]) -> bytes:
    """The lines joined, with up to two bytes overwritten, and the last line end cut off half the time."""
    data = bytearray(b"".join(lines))
    for _ in range(draw(st.integers(0, 2))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from(BREAKING_BYTES))
    if draw(st.booleans()):
        data = data.rstrip(b"\r\n")
    return bytes(data)


def odd_line_findings(said, at: int, code, where: str, repair: bool) -> list | None:
    """The findings of a file with one odd line at ``at``, asserted as an odd-line table row wants them.

    ``code`` is the code expected on that line (None: any, or none), or one a
    placement (``where``). The history's last call, ``z``, cut at the end, is
    found whatever came before. None when the run stopped: only a repair may,
    refusing to write a line it cannot read, or any run, on input it cannot.
    """
    if said[0] == "stopped":
        assert repair and said[1] == "SelfCheckError" or said[1] == "InputError"
        return None
    findings = said[0]
    code = code.get(where) if isinstance(code, dict) else code
    if code is not None:
        assert code in {f["code"] for f in findings if f["line"] == at}
    assert findings[-1]["code"] == "APX001" and findings[-1]["call_id"] == "z"
    return findings
