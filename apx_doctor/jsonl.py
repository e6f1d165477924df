"""Reading JSON Lines: one raw line in, one parsed value or a reason out.

orjson does the work; the standard library is the fallback for the lines that
are valid JSON (RFC 8259) but that orjson refuses, such as lone surrogate
escapes. Expected failures are values, not exceptions.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # pragma: no cover
    from decimal import Decimal

BOM = b"\xef\xbb\xbf"

# A line whose parse failed carries one of these as its ``kind``.
BLANK = "blank"
INVALID = "invalid"

# Integers longer than this may be rounded by orjson (it reads integers beyond
# 64 bits as floats). Such a line is never re-serialised from orjson's value.
_LONG_INTEGER = re.compile(rb"[0-9]{19,}")


class Unparsed:
    """A line that is not a JSON value: blank, or invalid with a reason."""

    __slots__ = ("kind", "reason")

    def __init__(self, kind: str, reason: str = "") -> None:
        self.kind = kind
        self.reason = reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _exact_int(text: str) -> int | Decimal:
    try:
        return int(text)
    except ValueError:  # beyond the interpreter's digit limit
        from decimal import Decimal

        return Decimal(text)


def parse(raw: bytes) -> Any:
    """Parse one line (terminator included). Returns the value or an ``Unparsed``."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _parse_slow(raw)


def parse_exact(raw: bytes) -> Any:
    """Like ``parse``, but never rounds an integer: for lines that will be rewritten."""
    if _LONG_INTEGER.search(raw):
        return _parse_slow(raw)
    return parse(raw)


def _parse_slow(raw: bytes) -> Any:
    if not raw.strip():
        return Unparsed(BLANK)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Unparsed(INVALID, f"not UTF-8 (byte {exc.start + 1})")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_exact_int)
    except RecursionError:
        return Unparsed(INVALID, "nested too deeply to read")
    except ValueError as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        col = getattr(exc, "colno", None)
        return Unparsed(INVALID, f"{msg} (column {col})" if col else msg)


def dumps(obj: Any) -> bytes:
    """Serialise a record: compact, key order kept, UTF-8 as is."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        # Values only the standard library produced (Decimal, lone surrogates).
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_decimal)
        # A lone surrogate can only stand inside a JSON string, where its \u
        # escape is the same value and, unlike its raw code, valid UTF-8.
        return _LONE_SURROGATE.sub(_escape_surrogate, text).encode("utf-8")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _decimal(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def terminator(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return b"\r\n"
    if raw.endswith(b"\n"):
        return b"\n"
    return b""
