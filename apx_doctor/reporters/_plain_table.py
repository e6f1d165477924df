"""A findings table laid out as Rich lays it out, for output that takes no colour: no Rich, no layout engine.

A check's text report is a table of up to 50 rows. Rich measures, wraps and
pads each cell through its general layout (about a millisecond a row, and 50
ms to import), most of the run on a transcript of a few megabytes. Where the
output takes no colour and every cell is plain ASCII, this module follows the
same rules, written here from Rich's documented behaviour for this one table
shape (``box.SIMPLE_HEAD``, padding ``(0, 1)``, ``expand=False``):

* a column is as wide as its widest cell (padding included), within its
  ``max_width``; a cell's narrowest is its longest word;
* a table wider than the console first narrows its wrapping columns, the
  widest first, down towards the next widest; then every column evenly;
* a wrapping cell breaks between words, a word wider than its column is cut
  with an ellipsis, as is a cell that does not wrap; the title folds.

Cells hold ASCII and the letters and signs of Latin, Greek and Cyrillic
(``_NARROW``), one cell each in Rich's table. Anything else (colour, wide or
combining characters, odd widths) returns None, and the
caller draws with Rich. ``tests/test_plain_table.py`` holds every table this
writes to what Rich writes for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

ELLIPSIS = "…"
# A word and the spaces after it, as Rich's wrapping reads words.
_WORD = re.compile(r"\s*\S+\s*")
# Characters beyond ASCII that every Rich version measures one cell wide: Latin-1's signs
# and letters (not the soft hyphen), Latin Extended, Greek and Cyrillic up to the
# combining marks that follow them (U+0300-U+036F, U+0483-U+0489), which take no cell.
_NARROW = re.compile("[\u00a1-\u00ac\u00ae-\u02ff\u0370-\u0482]+")


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    right: bool = False  # justified right (else left)
    wraps: bool = True  # breaks between words (else one line, cut with an ellipsis)
    max_width: int | None = None  # of the content, padding left out
    # Rich's share of the room a table expands into; ours never expand, so only Rich reads it.
    ratio: int | None = None


def table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> str | None:
    """The lines Rich writes for this table at ``width`` without colour, trailing spaces trimmed; None if unsure."""
    cells = [[column.header for column in columns], *rows]
    if width < 20 or not all(_plain(text) for row in cells for text in row) or not _plain(title):
        return None
    extra = 2 + len(columns) - 1  # the two edges and a separator between columns
    widths = _widths(columns, cells, width - extra)
    if widths is None:
        return None
    total = sum(widths) + extra
    out = [line.rstrip(" ") for line in _fold(title, total)]
    out.append("")  # the top edge: spaces only
    for i, row in enumerate(cells):
        out.extend(_row(columns, widths, row, header=i == 0))
        if i == 0:
            out.append(" " + "─" * (total - 2))
    out.append("")  # the bottom edge
    return "\n".join(out) + "\n"


def folded(text: str, width: int) -> list[str] | None:
    """``text`` as Rich prints it alone at ``width`` (words folded), trailing spaces trimmed; None if unsure."""
    if width < 20 or not _plain(text):
        return None
    return [line.rstrip(" ") for line in _fold(text, width)]


def _plain(text: str) -> bool:
    """Printable lines of one cell a character: ASCII, ``_NARROW`` (and the ellipsis ``printable`` cuts with)."""
    if not text.isascii() and not _NARROW.sub("", text.replace(ELLIPSIS, "")).isascii():
        return False
    return all(line.isprintable() for line in text.split("\n"))


def _widths(columns: Sequence[Column], cells: Sequence[Sequence[str]], room: int) -> list[int] | None:
    """Each column's width, padding included, as Rich's table computes it for ``room`` cells."""
    widths = [_measure(column, [row[i] for row in cells], room)[1] or 1 for i, column in enumerate(columns)]
    if sum(widths) > room:
        widths = _collapse(widths, [column.wraps for column in columns], room)
        if sum(widths) > room:
            widths = _reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [_measure(column, [row[i] for row in cells], w)[1] for i, (column, w) in enumerate(zip(columns, widths))]
    # Narrower than a cell's padding: Rich's corner cases, not this table's.
    return widths if all(w >= 3 for w in widths) else None


def _measure(column: Column, texts: list[str], room: int) -> tuple[int, int]:
    """The narrowest and widest a column can be within ``room``, padding included."""
    if room < 1:
        return 0, 0
    ranges = [_cell(text, room) for text in texts]
    low = max((lo for lo, _hi in ranges), default=1)
    high = max((hi for _lo, hi in ranges), default=room)
    low, high = min(low, room), min(high, room)
    if column.max_width is not None:
        cap = column.max_width + 2
        low, high = min(low, cap), min(high, cap)
    return low, high


def _cell(text: str, room: int) -> tuple[int, int]:
    """A padded cell's range within ``room``: its longest word and its longest line, plus the padding."""
    if room - 2 < 1:
        low, high = room, room
    else:
        lines = text.splitlines()
        high = max(map(len, lines), default=0)
        words = text.split()
        low = max(map(len, words)) if words else high
        low, high = _normal(low, high, room)
        if high < 1:
            low, high = 0, 0
        low, high = min(low + 2, room), min(high + 2, room)
    low, high = _normal(low, high, room)
    return (0, 0) if high < 1 else (min(low, high), high)


def _normal(low: int, high: int, room: int) -> tuple[int, int]:
    """A range made sound (its low within 0 and its high) and capped at ``room``."""
    low = min(max(0, low), high)
    return min(max(0, low), room), min(max(0, low, high), room)


def _collapse(widths: list[int], wraps: list[bool], room: int) -> list[int]:
    """The wrapping columns narrowed, the widest first, towards the next widest, until the table fits."""
    excess = sum(widths) - room
    if not any(wraps):
        return widths
    while sum(widths) and excess > 0:
        widest = max(w for w, wrap in zip(widths, wraps) if wrap)
        next_widest = max((w if wrap and w != widest else 0) for w, wrap in zip(widths, wraps))
        shares = [1 if wrap and w == widest else 0 for w, wrap in zip(widths, wraps)]
        if not any(shares) or widest == next_widest:
            break
        widths = _reduce(excess, shares, [min(excess, widest - next_widest)] * len(widths), widths)
        excess = sum(widths) - room
    return widths


def _reduce(total: int, shares: list[int], caps: list[int], values: list[int]) -> list[int]:
    """``values`` less ``total`` in all, taken in proportion to ``shares``, at most ``caps`` from each."""
    shares = [share if cap else 0 for share, cap in zip(shares, caps)]
    left_shares, left = sum(shares), total
    out = []
    for share, cap, value in zip(shares, caps, values):
        if share and left_shares > 0:
            taken = min(cap, round(share * left / left_shares))
            out.append(value - taken)
            left -= taken
            left_shares -= share
        else:
            out.append(value)
    return out


def _row(columns: Sequence[Column], widths: list[int], row: Sequence[str], *, header: bool) -> list[str]:
    """A table row's lines: each cell padded to its column, side by side (the header's at the bottom)."""
    blocks = [_wrapped(text, column, w - 2) for text, column, w in zip(row, columns, widths)]
    height = max(map(len, blocks))
    if header:
        blocks = [[" " * (w - 2)] * (height - len(block)) + block for block, w in zip(blocks, widths)]
    lines = []
    for n in range(height):
        parts = [block[n] if n < len(block) else " " * (w - 2) for block, w in zip(blocks, widths)]
        # The edge and a cell's left padding, then between cells: right padding, separator, left padding.
        lines.append(("  " + "   ".join(parts)).rstrip(" "))
    return lines


def _wrapped(text: str, column: Column, width: int) -> list[str]:
    """A cell's lines at ``width``, each exactly ``width`` wide."""
    out = []
    for line in text.split("\n"):
        pieces = [line] if not column.wraps else _divide(line, width, fold=False)
        for piece in pieces:
            if len(piece) > width and column.wraps:
                # Spaces past the width are let go first.
                piece = piece[: len(piece) - min(len(piece) - len(piece.rstrip()), len(piece) - width)]
            if column.right:
                piece = piece.rstrip()
            if len(piece) > width:
                piece = piece[: width - 1] + ELLIPSIS
            out.append(piece.rjust(width) if column.right else piece.ljust(width))
    return out


def _fold(text: str, width: int) -> list[str]:
    """Text printed alone (a title): broken between words, a word wider than ``width`` folded."""
    out = []
    for line in text.split("\n"):
        for piece in _divide(line, width, fold=True):
            if len(piece) > width:
                piece = piece[: len(piece) - min(len(piece) - len(piece.rstrip()), len(piece) - width)]
            out.append(piece[:width])
    return out


def _divide(line: str, width: int, *, fold: bool) -> list[str]:
    """``line`` broken where Rich breaks it for ``width`` cells (each piece keeps its trailing spaces)."""
    breaks: list[int] = []
    used = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - used >= length:
            used += len(word)
        elif length > width:
            if fold:
                for at in range(0, len(word), width):
                    if start + at:
                        breaks.append(start + at)
                used = len(word) - (len(word) - 1) // width * width
            else:
                if start:
                    breaks.append(start)
                used = len(word)
        elif used and start:
            breaks.append(start)
            used = len(word)
    edges = [0, *breaks, len(line)]
    return [line[a:b] for a, b in pairwise(edges)] or [""]
