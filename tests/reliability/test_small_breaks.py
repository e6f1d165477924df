"""The small breaks of issue 18, each mended: odd names, a cut sidecar line, an early Ctrl-C,
a deep configuration value, and the exit code of ``fix --output - -`` that printed nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import run_cli
from .test_crash_safe_writes import CALL, ROOT, USER

NOT_RUN = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
CUT = b'{"role":"user","content":"cut'


def test_sarif_names_a_file_whose_name_is_not_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = os.fsdecode(b"caf\xe9.jsonl")
    (tmp_path / name).write_bytes(USER + CALL + USER)
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", "--output-format", "sarif", name)
    assert result.exit_code == 1, result.output
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(result.stdout)["runs"][0]["results"]
    }
    assert uris == {"caf%E9.jsonl"}


@pytest.mark.parametrize("name", ["会" * 80 + ".jsonl", "n" * 237 + ".jsonl"], ids=["80 CJK characters", "243 bytes"])
def test_a_long_name_is_fixed_in_place_and_salvaged(tmp_path: Path, name: str) -> None:
    assert len(os.fsencode(name)) in (246, 243)
    path = tmp_path / name
    path.write_bytes(USER + CALL + USER + CUT)
    result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 1, result.output
    assert path.read_bytes() == USER + CALL + NOT_RUN + USER
    sidecars = [p for p in tmp_path.iterdir() if p.name.endswith(".rejected.jsonl")]
    assert len(sidecars) == 1 and sidecars[0].read_bytes() == CUT + b"\n"
    assert len(os.fsencode(sidecars[0].name)) <= 255
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, sidecars[0].name])


def test_a_cut_line_a_killed_run_left_in_the_sidecar_is_never_glued_to_the_next(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    sidecar = tmp_path / "s.jsonl.rejected.jsonl"
    # What a kill in the middle of an append leaves: a line without its ending.
    sidecar.write_bytes(b'{"earlier":"whole"}\n{"role":"assistant","content":"half a li')
    path.write_bytes(USER + CALL + USER + CUT)
    assert run_cli("fix", "--in-place", "--salvage", str(path)).exit_code == 1
    assert sidecar.read_bytes().splitlines() == [b'{"earlier":"whole"}', b'{"role":"assistant","content":"half a li', CUT]


def test_sigint_while_the_cli_is_still_importing_prints_no_traceback() -> None:
    code = (
        "import sys; sys.argv[0] = 'apx-doctor'; import apx_doctor, os, signal; "
        "os.kill(os.getpid(), signal.SIGINT); import apx_doctor.cli; print('not reached')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 128 + signal.SIGINT
    assert done.stdout == b"" and b"Traceback" not in done.stderr and b"KeyboardInterrupt" not in done.stderr


def test_a_library_caller_keeps_its_own_sigint_handling() -> None:
    code = "import apx_doctor, signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert done.stdout.strip() == b"True"


def test_a_deeply_nested_pyproject_value_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.apx-doctor]\nmarker = "x"\nx = ' + "[" * 5000 + "1" + "]" * 5000 + "\n")
    (tmp_path / "s.jsonl").write_bytes(USER)
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", "s.jsonl")
    assert result.exit_code == 2
    assert "pyproject.toml" in result.output and "nested too deeply" in result.output


def test_fix_to_stdout_exits_2_when_it_printed_nothing() -> None:
    printed = run_cli("fix", "--output", "-", "-", input=USER + CALL + USER)
    assert printed.exit_code == 1 and printed.stdout.encode().startswith(USER + CALL + NOT_RUN)
    nothing = run_cli("fix", "--output", "-", "-", input=USER + b"{not json\n" + CALL)
    assert nothing.exit_code == 2
    assert "nothing was printed" in nothing.output
