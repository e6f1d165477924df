"""The core properties, for every format that has a strategy in tests/strategies/.

For any transcript: the repaired file checks clean of fixable APX001, a second
repair changes nothing, every original line that no edit rewrites appears in
the output unchanged and in order, and one record is inserted per fixable
APX001 finding.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apx_doctor import stream
from apx_doctor.doctor import RepairOptions

import strategies

MODULES = list(strategies.by_format().values())


def _encode(lines: list, newline: bytes) -> bytes:
    return b"".join(orjson.dumps(line) + newline for line in lines)


def _repair(data: bytes, fmt: str, drop: bool = False) -> tuple[stream.StreamResult, bytes]:
    sink = stream.MemorySink()
    config = stream.StreamConfig(input_format=fmt, repair=RepairOptions(drop_orphans=drop))
    result = stream.run(data.splitlines(keepends=True), config, sink)
    return result, sink.getvalue()


def _is_subsequence(needles: list[bytes], haystack: list[bytes]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.FORMAT)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), newline=st.sampled_from([b"\n", b"\r\n"]), drop=st.booleans())
def test_repair_properties(module, data, newline: bytes, drop: bool) -> None:
    lines = data.draw(module.histories())
    original = _encode(lines, newline)
    first, repaired = _repair(original, module.FORMAT, drop)

    fixable = [f for f in first.findings if f.code == "APX001" and f.fixable is not False]
    inserts = [e for e in first.edits if e.action == "insert"]
    assert len(inserts) == len(fixable)

    touched = {e.line for e in first.edits if e.action in ("replace", "remove")}
    kept = [raw for n, raw in enumerate(original.splitlines(keepends=True), 1) if n not in touched]
    assert _is_subsequence(kept, repaired.splitlines(keepends=True))

    second, again = _repair(repaired, module.FORMAT, drop)
    assert again == repaired
    assert not [f for f in second.findings if f.code == "APX001" and f.fixable is not False]
    assert not second.edits
