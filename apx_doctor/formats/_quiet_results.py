"""Whether a result's text, as a JSON string, is certainly neither the marker nor a placeholder.

Shared by the quiet lines of the formats (``_chat_quiet``, ``_codex_quiet``),
imported only with them: a result taken by a quiet stretch must answer its call
as ``FormatAdapter.result_for`` says a plain result does. Most results are
proven so from their bytes alone; only a short one with no telling escape is
parsed and compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ..engine import ToolResult
from .base import PLACEHOLDER_TEXTS, FormatAdapter

# The short escapes of JSON, and the character each stands for.
_ESCAPES = {b"n": "\n", b"t": "\t", b"r": "\r", b'"': '"', b"\\": "\\", b"/": "/", b"b": "\b", b"f": "\f"}


def _telling_escapes(texts: set[str]) -> tuple[bytes, ...]:
    """Escapes whose presence proves a JSON string is none of ``texts``.

    In a valid JSON string (msgspec checked the line) a backslash byte starts
    an escape or is the second byte of ``\\\\``. So the two bytes ``\\n``
    mean its text holds a newline or a backslash: if none of ``texts`` holds
    either, the string is none of them. Tool output is full of such escapes,
    and this saves parsing a short result to compare it.
    """
    chars = set("".join(texts))
    if "\\" in chars:
        return ()
    return tuple(b"\\" + letter for letter, char in _ESCAPES.items() if char not in chars)


class PlainStrings:
    """Proves, from its bytes, that a JSON string is neither ``marker`` nor a placeholder."""

    __slots__ = ("plain_above", "special", "special_lengths", "telling")

    def __init__(self, marker: str) -> None:
        # surrogatepass: a marker with a lone surrogate (from the library) matches no line,
        # and its bytes, invalid UTF-8, are in no chunk that is typed.
        self.special = frozenset(text.encode("utf-8", "surrogatepass") for text in (*PLACEHOLDER_TEXTS, marker))
        # Their lengths: a string of another length is none of them, and is not hashed.
        self.special_lengths = frozenset(map(len, self.special))
        # A JSON string of n bytes holds at least (n - 2) / 12 characters (a
        # surrogate pair escaped is 12 bytes): longer, it is neither the marker
        # nor a placeholder.
        self.plain_above = 12 * max(map(len, (*PLACEHOLDER_TEXTS, marker))) + 2
        self.telling = _telling_escapes({*PLACEHOLDER_TEXTS, marker})

    def proven(self, view: memoryview) -> bool:
        """True when the JSON string ``view`` (its quotes included, in a line msgspec
        accepted, of a chunk checked as UTF-8) is certainly none of them.

        False proves nothing: the caller parses the string and compares its text.
        """
        if len(view) > self.plain_above:
            return True
        raw = view.tobytes()
        if b"\\" not in raw:
            # No escape: the bytes are the text (the chunk was checked as UTF-8).
            return len(raw) - 2 not in self.special_lengths or raw[1:-1] not in self.special
        for escape in self.telling:
            if escape in raw:
                return True
        return False


def read_plain(raw: bytes | memoryview, result_for: Callable[[Any, Any], ToolResult]) -> bool:
    """A result no proof from bytes settled, read whole: plain as the adapter's ``result_for`` judges it."""
    try:
        value: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:  # orjson refuses the whole line then: the general way says so
        return False
    result = result_for(None, value)
    return not (result.not_run or result.placeholder)


class PlainResults:
    """Whether a result, as raw JSON, is certainly neither the marker nor a placeholder.

    Proven from the bytes of a string where ``PlainStrings`` can; any other
    value, and a string it cannot settle, is read whole and judged by the
    adapter's own ``result_for``.
    """

    __slots__ = ("plain_above", "result_for", "strings")

    def __init__(self, adapter: FormatAdapter) -> None:
        self.strings = PlainStrings(adapter.marker)
        self.result_for = adapter.result_for
        # For a caller's own first test: a long string (the common result) then costs no call.
        self.plain_above = self.strings.plain_above

    def plain(self, raw: Any) -> bool:
        view = memoryview(raw)
        # A long string, the common result, is settled here without a call.
        if view[0] == 0x22 and (len(view) > self.plain_above or self.strings.proven(view)):
            return True
        return read_plain(view, self.result_for)
