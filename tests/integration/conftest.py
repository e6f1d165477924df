"""Fixtures for the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with no pyproject.toml above it that configures apx-doctor."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
