"""The streaming pass's hot loops say and write exactly what its general path does.

The first lines of a file (the ones auto-detection reads) go through
``_Pass.line``; every later line goes through a loop that inlines it (one for a
check, one for a repair). Golden cases and drawn histories are short, so they
mostly exercise the first path. Here each one runs twice with the same format:
once with every line through the general path, once with only the first line
there and the rest through the hot loops. Findings, edits, output bytes and the
errors that stop a run must be the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apx_doctor import stream
from apx_doctor.doctor import RepairOptions
from apx_doctor.errors import DoctorError

import strategies

CASES = Path(__file__).parent / "cases"


def _run(data: bytes, fmt: str, head: int, *, repair: bool, drop: bool, salvage: bool, marker: str | None):
    config = stream.StreamConfig(
        input_format=fmt,
        repair=RepairOptions(drop_orphans=drop),
        salvage=salvage,
        **({"marker": marker} if marker else {}),
    )
    sink = stream.MemorySink() if repair else None
    saved = stream.DETECT_LINES
    stream.DETECT_LINES = head
    try:
        result = stream.run(data.splitlines(keepends=True), config, sink)
    except DoctorError as exc:
        return ("stopped", type(exc).__name__, str(exc))
    finally:
        stream.DETECT_LINES = saved
    out = (sink.getvalue(), sink.rejected) if sink else None
    return (
        [f.to_dict() for f in result.findings],
        [e.to_dict() for e in result.edits],
        result.unparsed,
        result.lines,
        out,
    )


def _both_ways(data: bytes, fmt: str, **options) -> None:
    general = _run(data, fmt, 1 << 30, **options)
    hot = _run(data, fmt, 1, **options)
    assert hot == general


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/*/input.jsonl"))


def _format_of(case: Path, data: bytes) -> str:
    opts = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    fmt = opts.get("input_format", "auto")
    if fmt != "auto":
        return fmt
    return stream.run(data.splitlines(keepends=True)).format or "chat"


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c.parent.name}/{c.name}")
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("drop", [False, True], ids=["keep-orphans", "drop-orphans"])
def test_golden_cases_take_the_same_path_through_the_hot_loops(case: Path, repair: bool, drop: bool) -> None:
    data = (case / "input.jsonl").read_bytes()
    try:
        fmt = _format_of(case, data)
    except DoctorError:
        pytest.skip("the case is about a file whose format cannot be told")
    for salvage in (False, True):
        _both_ways(data, fmt, repair=repair, drop=drop, salvage=salvage, marker=None)


@pytest.mark.parametrize("module", list(strategies.by_format().values()), ids=lambda m: m.FORMAT)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    drop=st.booleans(),
    repair=st.booleans(),
    cut_last_ending=st.booleans(),
)
def test_drawn_histories_take_the_same_path_through_the_hot_loops(
    module, data, newline: bytes, drop: bool, repair: bool, cut_last_ending: bool
) -> None:
    lines = data.draw(module.histories())
    encoded = b"".join(orjson.dumps(line) + newline for line in lines)
    if cut_last_ending:
        encoded = encoded.removesuffix(newline)
    _both_ways(encoded, module.FORMAT, repair=repair, drop=drop, salvage=False, marker=None)


# The last line trips the adapter: once as orjson reads it, once as only the
# fallback parser does (a lone surrogate escape, valid JSON that orjson refuses).
_TRIPPING_LINES = {
    "parsed": (b'{"role": "user", "content": "trip"}\n', "trip"),
    "fallback": (b'{"role": "user", "content": "\\ud800"}\n', "\ud800"),
}


@pytest.mark.parametrize("kind", list(_TRIPPING_LINES))
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_an_adapter_that_trips_past_the_first_lines_is_reported_at_its_line(repair: bool, kind: str, monkeypatch) -> None:
    from apx_doctor.errors import InputError
    from apx_doctor.formats.chat import ChatAdapter

    raw, content = _TRIPPING_LINES[kind]
    classify = ChatAdapter.classify

    def tripping(self, obj):
        if obj.get("content") == content:
            raise TypeError("unhashable type: 'dict'")
        return classify(self, obj)

    monkeypatch.setattr(ChatAdapter, "classify", tripping)
    lines = [orjson.dumps({"role": "user", "content": f"hi {n}"}) + b"\n" for n in range(99)] + [raw]
    with pytest.raises(InputError, match=r"^line 100: the chat reader cannot handle this line \(TypeError"):
        stream.run(lines, stream.StreamConfig(), stream.MemorySink() if repair else None)
