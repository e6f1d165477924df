"""`make demo` installs the package and its runtime dependencies only; `make test` adds the test extra."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _plan(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -n prints what would run; -B as in a fresh clone, where no stamp exists yet.
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def _installs(plan: str) -> list[str]:
    return [line for line in plan.splitlines() if "pip install" in line and "--upgrade pip" not in line]


def test_demo_installs_no_test_dependency() -> None:
    installs = _installs(_plan("demo"))
    assert installs and all(line.rstrip().endswith("-e .") for line in installs), installs


def test_test_adds_the_test_extra_to_the_same_environment() -> None:
    installs = _installs(_plan("test"))
    assert any(line.rstrip().endswith("-e .") for line in installs)
    assert any("'.[test]'" in line for line in installs)
    assert all(".venv/bin/python" in line for line in installs)
