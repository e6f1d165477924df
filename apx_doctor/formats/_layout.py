"""A rewritten line in the layout its original was written in.

A dataset written by Python's ``json.dumps`` has ``", "`` and ``": "`` between
its items and ``\\uXXXX`` escapes for every character beyond ASCII; orjson and
most other writers put nothing between items and write UTF-8 as is. A repair
that rewrites one row should leave it looking like its neighbours. The layout
is found by trying the standard library's settings on the original value: one
that gives back the original bytes exactly is the line's layout, and the
replacement is written with it. When none does (a float written another way,
keys repeated, odd spacing), there is no layout to keep, and the caller writes
the replacement as it always has.

Pure functions, no state: ``dumps_like(raw, original, replacement)``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

_BOM = b"\xef\xbb\xbf"


class Layout(NamedTuple):
    item_separator: str
    key_separator: str
    ensure_ascii: bool

    def dumps(self, value: Any) -> bytes | None:
        """``value`` in this layout; None where the standard library cannot write it so."""
        try:
            text = json.dumps(
                value,
                ensure_ascii=self.ensure_ascii,
                separators=(self.item_separator, self.key_separator),
                allow_nan=False,
            )
            # A lone surrogate written raw is no UTF-8: that layout cannot hold this value.
            return text.encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            return None


# In the order they are tried; the first that reproduces a line wins. An
# ASCII-only line fits both settings of ``ensure_ascii``: it gets the one its
# separators' usual writer uses (Python's defaults spaced, orjson's compact).
LAYOUTS = (
    Layout(", ", ": ", True),
    Layout(",", ":", False),
    Layout(",", ":", True),
    Layout(", ", ": ", False),
)


def layout_of(raw: bytes, value: Any) -> Layout | None:
    """The layout that writes ``value`` as exactly the bytes of ``raw`` (a line, its
    terminator and a leading byte-order mark allowed), or None."""
    body = _body(raw)
    for layout in LAYOUTS:
        if layout.dumps(value) == body:
            return layout
    return None


def dumps_like(raw: bytes, original: Any, replacement: Any) -> bytes | None:
    """``replacement`` in the layout of ``raw``, the line ``original`` was read from
    (no terminator), or None when that line has no layout this can reproduce."""
    layout = layout_of(raw, original)
    return None if layout is None else layout.dumps(replacement)


def _body(raw: bytes) -> bytes:
    raw = raw.removeprefix(_BOM)
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    if raw.endswith(b"\n"):
        return raw[:-1]
    return raw
