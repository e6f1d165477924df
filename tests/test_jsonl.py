"""The line reader and writer: every RFC 8259 line is read, every written line is valid UTF-8 JSON."""

from __future__ import annotations

import json

import pytest

from apx_doctor import jsonl


@pytest.mark.parametrize(
    "raw",
    [
        b'{"n": 123456789012345678901234567890}\n',
        b'{"n": -9223372036854775809}\n',
        b'{"s": "\\ud800 lone"}\n',
        b'{"a": 1, "a": 2}\n',
        b"[" * 900 + b"]" * 900 + b"\n",
        b'  {"padded": true}  \r\n',
    ],
)
def test_valid_json_is_read(raw: bytes) -> None:
    assert not isinstance(jsonl.parse(raw), jsonl.Unparsed)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"\n", jsonl.BLANK),
        (b" \t\r\n", jsonl.BLANK),
        (b'{"a": NaN}\n', jsonl.INVALID),
        (b'{"a": 1\n', jsonl.INVALID),
        (b'{"a": "\xff"}\n', jsonl.INVALID),
        (b"[" * 10_000 + b"]" * 10_000 + b"\n", jsonl.INVALID),
    ],
)
def test_what_is_not_json_is_a_value_not_an_exception(raw: bytes, kind: str) -> None:
    value = jsonl.parse(raw)
    assert isinstance(value, jsonl.Unparsed) and value.kind == kind


def test_long_integers_are_read_exactly_for_rewriting() -> None:
    assert jsonl.parse_exact(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}


def test_written_lone_surrogates_are_escaped_valid_utf8() -> None:
    value = jsonl.parse(b'{"s": "a\\udc00b", "t": "\\ud83d\\ude00 \xc3\xa9"}')
    out = jsonl.dumps(value)
    out.decode("utf-8")  # raises if a raw surrogate was written
    assert json.loads(out) == value
    assert jsonl.parse(out) == value
