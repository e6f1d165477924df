"""Untrusted transcript text made safe to show.

Anything read from a transcript can hold terminal control sequences (CSI, OSC),
C1 controls or bidi overrides. Human output shows them escaped, never raw.
Rich markup is never involved: text reaches Rich as ``Text`` objects.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# C0 (but tab), DEL, C1, and the Unicode bidi controls and line separators.
# Lone surrogates (valid JSON escapes, but no text a stream can encode) too.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The same characters (but C0, which orjson escapes) as UTF-8 bytes.
_UNSAFE_UTF8 = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code == 0x0A:
        return "\\n"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: Any, limit: int | None = None) -> str:
    """``value`` as one safe line of text, cut to ``limit`` characters."""
    if value is None:
        return ""
    if not isinstance(value, str):
        try:
            value = orjson.dumps(value).decode()
        except TypeError:
            value = repr(value)
    if limit is not None and len(value) > limit:
        # Escaping only lengthens: the first ``limit`` + 1 characters decide the
        # cut text, and a 40 KB tool result is not escaped whole to show 200.
        value = value[: limit + 1]
    text = _UNSAFE.sub(_escape, value)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def json_safe(data: bytes) -> bytes:
    """Escape, inside JSON text, the raw characters a terminal would act on.

    orjson escapes C0 already; DEL, C1 and bidi controls pass through as UTF-8.
    They can only stand inside JSON strings, so a \\u escape keeps the JSON equal.
    """
    return _UNSAFE_UTF8.sub(lambda m: f"\\u{ord(m.group().decode()):04x}".encode(), data)


def json_dumps(obj: Any, option: int = 0, default: Any = str) -> bytes:
    """``orjson.dumps`` that also takes the lone surrogates a transcript may hold.

    They can only stand inside JSON strings, so a \\u escape keeps the JSON equal.
    """
    try:
        return orjson.dumps(obj, option=option, default=default)
    except orjson.JSONEncodeError:
        import json

        indent = 2 if option & orjson.OPT_INDENT_2 else None
        separators = (",", ": ") if indent else (",", ":")
        text = json.dumps(obj, ensure_ascii=False, indent=indent, separators=separators, default=default)
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()
