"""Byte tables: what `fix` writes for every kind of line ending and final newline."""

from __future__ import annotations

import pytest

from apx_doctor import stream

U = b'{"role":"user","content":"go"}'
A = b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}'
T = b'{"role":"tool","tool_call_id":"c1","content":"ok"}'
R = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}'
N = b'{"role":"user","content":"next"}'

TABLE = [
    # (input, expected output)
    (U + b"\n" + A + b"\n", U + b"\n" + A + b"\n" + R + b"\n"),
    (U + b"\r\n" + A + b"\r\n", U + b"\r\n" + A + b"\r\n" + R + b"\r\n"),
    (U + b"\n" + A, U + b"\n" + A + b"\n" + R + b"\n"),
    (U + b"\r\n" + A, U + b"\r\n" + A + b"\r\n" + R + b"\r\n"),
    (U + b"\n" + A + b"\n" + N, U + b"\n" + A + b"\n" + R + b"\n" + N),
    (U + b"\n" + A + b"\r\n" + N + b"\n", U + b"\n" + A + b"\r\n" + R + b"\r\n" + N + b"\n"),
    (U + b"\r\n" + A + b"\n" + N + b"\r\n", U + b"\r\n" + A + b"\n" + R + b"\n" + N + b"\r\n"),
    (U + b"\n" + A + b"\n\n", U + b"\n" + A + b"\n\n" + R + b"\n"),
    (U + b"\n" + A + b"\n   \r\n" + N, U + b"\n" + A + b"\n   \r\n" + R + b"\r\n" + N),
    (U + b"\n" + A + b"\n" + T, U + b"\n" + A + b"\n" + T),
    (U + b"\r\n" + A + b"\r\n" + T + b"\r\n", U + b"\r\n" + A + b"\r\n" + T + b"\r\n"),
    (b"\xef\xbb\xbf" + U + b"\n" + A + b"\n", b"\xef\xbb\xbf" + U + b"\n" + A + b"\n" + R + b"\n"),
    (U + b"  \n" + A + b"\t\n", U + b"  \n" + A + b"\t\n" + R + b"\n"),
    (b"", b""),
    (b"\n", b"\n"),
]


@pytest.mark.parametrize(("given", "expected"), TABLE)
def test_fix_writes_exactly(given: bytes, expected: bytes) -> None:
    sink = stream.MemorySink()
    stream.run(given.splitlines(keepends=True), stream.StreamConfig(), sink)
    assert b"".join(sink.parts) == expected


@pytest.mark.parametrize(("given", "expected"), TABLE)
def test_fix_output_is_a_fixed_point(given: bytes, expected: bytes) -> None:
    sink = stream.MemorySink()
    result = stream.run(expected.splitlines(keepends=True), stream.StreamConfig(), sink)
    assert b"".join(sink.parts) == expected
    assert not result.edits
