"""Reading JSON Lines: one raw line in, one parsed value or a reason out.

orjson does the work; the standard library is the fallback for the lines that
are valid JSON (RFC 8259) but that orjson refuses, such as lone surrogate
escapes. Expected failures are values, not exceptions.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # pragma: no cover
    from decimal import Decimal

BOM = b"\xef\xbb\xbf"

# orjson reads values nested up to 1024 levels; a line nested deeper is APX101
# (nested too deeply), whichever parser is asked. The code that walks a value
# (format detection, the adapters, the reporters, ``show``) recurses a few
# frames a level: the interpreter's limit must be well above that depth.
MAX_DEPTH = 1024
# Four frames a level: enough for any value orjson returns, while the standard
# library still refuses (RecursionError) documents nested several thousand deep.
if sys.getrecursionlimit() < 4 * MAX_DEPTH:
    sys.setrecursionlimit(4 * MAX_DEPTH)

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


class _Inexact(Exception):
    """A value in a line that a parse and a rewrite would not give back as it was written."""


def _exact_int_token(text: str) -> int:
    # orjson writes integers of 64 bits; beyond, a value read would come back another.
    digits = text.lstrip("-")
    if len(digits) > 20 or not -(1 << 63) <= int(text) < (1 << 64):
        raise _Inexact(f"an integer beyond 64 bits ({_shown(text)})")
    return int(text)


def _exact_float_token(text: str) -> float:
    import math
    from decimal import Decimal

    value = float(text)
    if not math.isfinite(value):
        raise _Inexact(f"a number beyond the range of a double ({_shown(text)})")
    if Decimal(text) != Decimal(repr(value)):
        raise _Inexact(f"a number a double cannot hold exactly ({_shown(text)})")
    return value


def _no_repeated_keys(pairs: list[Any]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Inexact("a key repeated in one object")
    return out


def _shown(token: str) -> str:
    return token if len(token) <= 24 else f"{token[:10]}…{token[-6:]}, {len(token)} characters"


def inexact(raw: bytes) -> str | None:
    """Why the value of ``raw`` (a line, a leading BOM allowed) cannot be rewritten from its parse, or None.

    A rewrite serialises the parsed value again: every number must come back
    with the value it was written with (no integer beyond 64 bits, no float out
    of range or rounded), and no object may repeat a key (a parse keeps only
    the last). One mechanism for every format: the line's own tokens are
    compared, so no adapter needs to know.
    """
    try:
        json.loads(
            raw.removeprefix(BOM).decode("utf-8", "surrogatepass"),
            parse_int=_exact_int_token,
            parse_float=_exact_float_token,
            parse_constant=_reject_constant,
            object_pairs_hook=_no_repeated_keys,
        )
    except _Inexact as exc:
        return str(exc)
    except RecursionError:
        return "values nested too deeply to rewrite"
    except (ValueError, UnicodeDecodeError) as exc:  # not JSON the standard library reads exactly
        inner = exc.__context__ if isinstance(exc.__context__, _Inexact) else None
        return str(inner) if inner is not None else "JSON the rewrite cannot reproduce"
    return None


def reads_back(data: bytes, value: Any) -> bool:
    """Whether the serialised ``data`` is strict JSON (no NaN, no Infinity) whose value is ``value``."""
    back = parse(data)
    if type(back) is Unparsed:
        return False
    try:
        return _same(back, value)
    except RecursionError:
        return False


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same JSON types all the way down (an integer read back as a float is a changed value)."""
    if type(a) is not type(b):
        from decimal import Decimal

        # The standard library's exact reading of an integer beyond the interpreter's digit limit.
        return isinstance(b, Decimal) and isinstance(a, (int, Decimal)) and a == b
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    same: bool = a == b
    return same


def _parse_slow(raw: bytes) -> Any:
    if not raw.strip():
        return Unparsed(BLANK)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Unparsed(INVALID, f"not UTF-8 (byte {exc.start + 1})")
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(raw) > MAX_DEPTH:
        return Unparsed(INVALID, f"nested too deeply to read (more than {MAX_DEPTH} levels)")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_exact_int)
    except RecursionError:
        return Unparsed(INVALID, "nested too deeply to read")
    except ValueError as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        col = getattr(exc, "colno", None)
        return Unparsed(INVALID, f"{msg} (column {col})" if col else msg)


_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _depth(raw: bytes) -> int:
    """How deep the arrays and objects of ``raw`` nest (strings skipped): only for lines that may be deep."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


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
