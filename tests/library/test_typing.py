"""The library is typed: ``py.typed`` ships, ``Format`` names the registry's formats, and a user's script passes ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import apx_doctor
from apx_doctor import Format, check_messages
from apx_doctor.formats import format_names

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_format_literal_names_exactly_the_registry_formats_and_auto() -> None:
    names = typing.get_args(Format)
    assert len(names) == len(set(names))
    assert set(names) == {"auto", *format_names()}


def test_every_name_format_takes_is_accepted() -> None:
    for name in typing.get_args(Format):
        assert check_messages([], format=name) == []


def test_the_package_is_marked_typed_and_ships_the_marker() -> None:
    assert (Path(apx_doctor.__file__).parent / "py.typed").is_file()
    # setuptools ships a package's py.typed (its default since 69; the build requires 77+).
    assert "setuptools>=77" in (ROOT / "pyproject.toml").read_text()


def test_a_user_script_using_every_public_name_passes_mypy_strict() -> None:
    script = HERE / "user_script.py"
    source = script.read_text()
    for name in apx_doctor.__all__:
        assert name in source, f"the script does not use {name}"
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_user_script_runs() -> None:
    run = subprocess.run([sys.executable, str(HERE / "user_script.py")], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1 and "APX001 a 2 1" in run.stdout, run.stdout + run.stderr
