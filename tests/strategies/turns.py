"""A turn's calls as the library's fast-path tests draw them, whatever objects the turn is made of."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import strategies as st


def call_turn(draw: st.DrawFn, fresh: Iterator[int], pool: list[str], *, sound: bool) -> tuple[list[str], list[str]]:
    """A turn's call ids, and the ids of the results that follow it, in the order they come.

    Ids come from a counter (so long clean runs happen) or from a small pool
    (so reused ids, duplicates, late results and orphans happen). A sound turn
    has distinct ids, each answered once in any order; a broken one is answered
    short, and may answer an id twice or one it never called.
    """
    count = draw(st.integers(1, 4))
    ids = [str(next(fresh)) if draw(st.booleans()) else draw(st.sampled_from(pool)) for _ in range(count)]
    if sound:
        ids = list(dict.fromkeys(ids))
    order = draw(st.permutations(ids))
    if not sound:
        extra = draw(st.lists(st.sampled_from([*ids, "ghost"]), max_size=2))
        order = order[: draw(st.integers(0, len(order)))] + extra
    return ids, order
