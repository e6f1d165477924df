"""Fixtures for the end-to-end tests: a fence and a fresh runtime home per test.

These tests run real runtimes (``make e2e``). Where the runtimes are not
installed, or the fence cannot be made, a test fails and says why: it never
skips, and it never runs a runtime outside the fence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .fence import Fence, FenceError
from .runtimes import RUNTIME_CLASSES, Runtime, RuntimeMissing


@pytest.fixture
def fence() -> Iterator[Fence]:
    try:
        made = Fence()
    except FenceError as error:
        pytest.fail(f"no runtime runs unfenced: {error}", pytrace=False)
    with made:
        yield made


@pytest.fixture(params=sorted(RUNTIME_CLASSES))
def runtime(request: pytest.FixtureRequest, fence: Fence, tmp_path: Path) -> Iterator[Runtime]:
    """A runtime in a home of its own (a copied home is not independent: Codex
    keeps absolute rollout paths in its state, so resuming a copy appends to the original)."""
    yield from started(RUNTIME_CLASSES[request.param], fence, tmp_path)


def started(kind: type[Runtime], fence: Fence, tmp_path: Path) -> Iterator[Runtime]:
    """A runtime of ``kind`` in a home under ``tmp_path``, closed afterwards; a missing one fails the test."""
    try:
        made = kind(fence, tmp_path)
    except RuntimeMissing as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield made
    finally:
        made.close()
