"""The shortcuts `show` takes to lay out text are the slow definitions, exactly."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from apx_doctor import safe, show

# Spaces often, so that folds find them; runs of them; long words too.
_ASCII = st.text(st.sampled_from("ab cd  e\tfgh"), max_size=400)
_ANY = st.text(st.sampled_from(["a", " ", "\x1b", "\n", "\u202e", "\u6f22", "\ud800", "é", "\x9b"]), max_size=300)


@given(_ASCII, st.integers(min_value=1, max_value=90))
def test_an_ascii_fold_cuts_where_the_character_loop_cuts(plain: str, width: int) -> None:
    assert show._breaks(plain, width) == show._breaks_by_cells(plain, width, None)


@given(_ANY, st.integers(min_value=20, max_value=90))
def test_a_wide_character_fold_never_passes_the_width(plain: str, width: int) -> None:
    from rich.cells import cell_len

    breaks = show._breaks(plain, width)
    assert breaks == sorted(set(breaks)) and all(0 < b < len(plain) for b in breaks)
    offsets = [0, *breaks, len(plain)]
    assert all(cell_len(plain[lo:hi]) <= width for lo, hi in pairwise(offsets))


@given(_ANY, st.integers(min_value=0, max_value=60))
def test_text_cut_before_it_is_escaped_reads_as_the_whole_text_escaped_then_cut(value: str, limit: int) -> None:
    whole = safe._UNSAFE.sub(safe._escape, value)
    expected = whole if len(whole) <= limit else whole[: max(limit - 1, 0)] + "…"
    assert safe.printable(value, limit) == expected


@given(st.text(st.sampled_from(["a", "é", "\u6f22", "\u0301", "\u200d", "\ufe0f", "\u2764", "\x1b", "\U0001f600"]), max_size=60))
def test_cells_are_counted_as_rich_counts_them(plain: str) -> None:
    from rich.cells import cell_len

    assert show._cells(plain) == cell_len(plain)
