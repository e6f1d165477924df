"""Shared pieces of the reliability suite: transcripts for every format, and damage.

Every format the registry knows gets transcripts: from its hypothesis strategy
in tests/strategies/<module>.py when one exists, otherwise from the lines of its
golden cases and of the shared corpus (shuffled, cut and repeated at random).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import orjson
import pytest
from hypothesis import strategies as st
from typer.testing import CliRunner

from apx_doctor.cli import app
from apx_doctor.formats import format_names

TESTS = Path(__file__).resolve().parents[1]
CASES = TESTS / "cases"
CORPUS = TESTS.parent / ".." / "shared" / "corpus"


def strategy_modules() -> dict[str, ModuleType]:
    import strategies

    return strategies.by_format()


def sample_lines(fmt: str) -> list[bytes]:
    """Real lines of ``fmt``: golden case inputs and corpus files, terminators kept."""
    lines: list[bytes] = []
    sources = sorted((CASES / fmt).glob("*/input.jsonl")) if (CASES / fmt).is_dir() else []
    if (CORPUS / fmt).is_dir():
        sources += sorted((CORPUS / fmt).glob("*.jsonl"))
    for path in sources:
        for raw in path.read_bytes().splitlines(keepends=True):
            if raw.strip() and isinstance(_loads(raw), dict):
                lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
    return lines


def _loads(raw: bytes):
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def transcripts(fmt: str) -> st.SearchStrategy[bytes]:
    """Sound or broken (but parseable) transcripts of ``fmt`` as bytes."""
    module = strategy_modules().get(fmt)
    if module is not None:
        return module.histories().map(lambda lines: b"".join(orjson.dumps(x) + b"\n" for x in lines))
    pool = sample_lines(fmt)
    if not pool:
        pytest.skip(f"no strategy, golden case or corpus file for format {fmt!r} yet")
    return st.lists(st.sampled_from(pool), max_size=30).map(b"".join)


# --- damage ---------------------------------------------------------------

_DEEP = b"[" * 10_000 + b"]" * 10_000 + b"\n"
_DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"\n"
_ODD_LINES = [
    b"[]\n",
    b"1\n",
    b'"text"\n',
    b"null\n",
    b"true\n",
    b"{}\n",
    b'{"role":"user","content":"x","n":123456789012345678901234567890123}\n',
    b'{"role":"user","content":"x","n":-1e999}\n',
    b'{"role":"user","content":"\\ud800 lone"}\n',
    b'{"role":"tool","tool_call_id":"\\udfff","content":"x"}\n',
    b"NaN\n",
    b'{"role":"user","role":"assistant","content":"dup"}\n',
    _DEEP,
    _DEEP_OBJECT,
    b"[" * 10_000 + b"\n",
    b"\x00\x00\n",
    b"\xef\xbb\xbf{}\n",
]


def _at(data: bytes, pos: int) -> int:
    return pos % (len(data) + 1)


@st.composite
def damaged(draw, source: st.SearchStrategy[bytes]) -> bytes:
    """A transcript from ``source`` with one to four kinds of damage."""
    data = draw(source)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(_KINDS))
        data = kind(draw, data)
    return data


def _cut(draw, data: bytes) -> bytes:
    return data[: _at(data, draw(st.integers(0, 1 << 20)))]


def _flip(draw, data: bytes) -> bytes:
    if not data:
        return data
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
    return bytes(buf)


def _insert(draw, data: bytes, piece: bytes) -> bytes:
    pos = _at(data, draw(st.integers(0, 1 << 20)))
    return data[:pos] + piece + data[pos:]


def _invalid_utf8(draw, data: bytes) -> bytes:
    return _insert(draw, data, draw(st.sampled_from([b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])))


def _surrogate(draw, data: bytes) -> bytes:
    # A lone surrogate escape inside a JSON string keeps the line valid JSON.
    marks = [i for i in range(len(data) - 2) if data[i : i + 3] == b'":"']
    if not marks:
        return data + b'{"role":"user","content":"\\udc80"}\n'
    pos = draw(st.sampled_from(marks)) + 3
    return data[:pos] + draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\ud83d"])) + data[pos:]


def _bom(draw, data: bytes) -> bytes:
    return _insert(draw, data, b"\xef\xbb\xbf")


def _nul(draw, data: bytes) -> bytes:
    return _insert(draw, data, b"\x00" * draw(st.integers(1, 3)))


def _line_endings(draw, data: bytes) -> bytes:
    parts = data.split(b"\n")
    ends = [draw(st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n"])) for _ in parts[:-1]]
    return b"".join(p + e for p, e in zip(parts, ends)) + parts[-1]


def _odd_line(draw, data: bytes) -> bytes:
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    pos = draw(st.sampled_from(starts))
    return data[:pos] + draw(st.sampled_from(_ODD_LINES)) + data[pos:]


def _duplicate_key(draw, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    objects = [i for i, raw in enumerate(lines) if isinstance(_loads(raw), dict) and _loads(raw)]
    if not objects:
        return data
    i = draw(st.sampled_from(objects))
    key = next(iter(_loads(lines[i])))
    value = draw(st.sampled_from([b"null", b'"other"', b"[]", b"7"]))
    start = lines[i].index(b"{") + 1
    lines[i] = lines[i][:start] + json.dumps(key).encode() + b":" + value + b"," + lines[i][start:]
    return b"".join(lines)


def _repeat_line(draw, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    i = draw(st.integers(0, len(lines) - 1))
    return b"".join(lines[: i + 1] + [lines[i]] + lines[i + 1 :])


_ODD_VALUES = [{}, [], 0, -1, 1.5, None, True, "", "x", {"a": 1}, [{"type": "text"}], [[]], 2**70]


def _paths(value, prefix=(), depth=0):
    """Every (path) to a value inside dicts and lists, to a small depth."""
    if depth > 4:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield (*prefix, key)
        yield from _paths(inner, (*prefix, key), depth + 1)


def _retype(draw, data: bytes) -> bytes:
    """A value of the wrong type where a format expects another: a dict for a string, ..."""
    lines = data.splitlines(keepends=True)
    objects = [i for i, raw in enumerate(lines) if isinstance(_loads(raw), dict) and _loads(raw)]
    if not objects:
        return data
    i = draw(st.sampled_from(objects))
    obj = _loads(lines[i])
    path = draw(st.sampled_from(list(_paths(obj))))
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = draw(st.sampled_from(_ODD_VALUES))
    lines[i] = json.dumps(obj).encode() + b"\n"
    return b"".join(lines)


_KINDS = [
    _retype,
    _retype,
    _cut,
    _flip,
    _invalid_utf8,
    _surrogate,
    _bom,
    _nul,
    _line_endings,
    _odd_line,
    _duplicate_key,
    _repeat_line,
]


# --- running the CLI ------------------------------------------------------


def run_cli(*args: str, input: bytes | None = None):
    """The CLI in-process; an exception escaping it fails the test with its traceback."""
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


def json_report(result) -> dict:
    return json.loads(result.stdout)


FORMATS = format_names()


# --- nothing lost ---------------------------------------------------------


def split_lines(data: bytes) -> list[bytes]:
    """Lines as the doctor reads them: split after each LF only, terminators kept."""
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _same_line(original: bytes, out: bytes, last: bool) -> bool:
    if out == original:
        return True
    # A last line without a line ending gets one when records are appended after it.
    return last and not original.endswith(b"\n") and out in (original + b"\n", original + b"\r\n")


def assert_nothing_lost(original: bytes, output: bytes, edits: list[dict], rejected: bytes = b"") -> None:
    """Every input line that no listed edit touches is in ``output``, byte for byte and in order.

    Lines listed as salvaged are in ``rejected`` (the sidecar), byte for byte and
    in order; every other output line is a listed insert or rewrite.
    """
    lines = split_lines(original)
    touched = {e["line"] for e in edits if e["action"] in ("remove", "replace")}
    salvaged = [e["line"] for e in edits if e["action"] == "salvage"]
    # An insert with an index goes inside a one-conversation-a-line row (rewritten).
    # One record may answer several calls (an edit each), or go into the line it
    # stands before (that line's replace edit holds it): count the lines added.
    rewritten = {(e["line"], json.dumps(e.get("record"), sort_keys=True), None) for e in edits if e["action"] == "replace"}
    added = {
        (e["before_line"], json.dumps(e.get("record"), sort_keys=True), e.get("call_id") if e.get("record") is None else None)
        for e in edits
        if e["action"] == "insert" and "index" not in e
    }
    inserts = len(added - rewritten)
    out = split_lines(output)
    pos = 0
    for number, raw in enumerate(lines, 1):
        if number in touched or number in salvaged:
            continue
        last = number == len(lines)
        while pos < len(out) and not _same_line(raw, out[pos], last):
            pos += 1
        assert pos < len(out), f"input line {number} is missing from the output (or out of order): {raw[:80]!r}"
        pos += 1
    kept = len(lines) - len(touched) - len(salvaged)
    extra = len(out) - kept
    assert inserts <= extra <= inserts + len(touched), (
        f"{extra} output lines are not input lines, but the report lists {inserts} inserts "
        f"and {len(touched)} rewritten or removed lines"
    )
    expected_rejected = b"".join(lines[n - 1] if lines[n - 1].endswith(b"\n") else lines[n - 1] + b"\n" for n in salvaged)
    assert rejected == expected_rejected, "the sidecar does not hold exactly the salvaged lines"
