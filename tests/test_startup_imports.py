"""What a check of a clean file does not load.

Start-up time is measured by bench/run.py, never here. These tests guard the
choices that keep it low: a clean check draws no table, so it imports no Rich;
advice, the TOML parser, the temp-file machinery and msgspec wait until they are needed;
``--version`` needs no format adapter; a pyproject.toml is parsed once, and only
when it can configure us.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apx_doctor.cli import FORMAT_NAMES
from apx_doctor.formats import format_names

CLEAN = b'{"role":"user","content":"hi"}\n'

# Runs the CLI as the console script does, then prints the modules it loaded
# and how many objects the garbage collector was told to leave alone.
_PROBE = """
import gc, json, sys
from apx_doctor.cli import main
sys.argv = ["apx-doctor", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps({"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}))
"""


def _probe(cwd: Path, *args: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _loaded(cwd: Path, *args: str) -> set[str]:
    return set(_probe(cwd, *args)["modules"])


def test_input_format_choices_are_the_registry(tmp_path: Path) -> None:
    # Written out in the CLI so it starts without the adapters; a new adapter must be added there.
    assert FORMAT_NAMES == tuple(format_names())


def test_a_clean_check_loads_no_rich_no_advice_no_toml(tmp_path: Path) -> None:
    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    loaded = _loaded(tmp_path, "check", "--isolated", "one.jsonl")
    assert "apx_doctor.stream" in loaded  # the probe did run a check
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}
    assert not loaded & {"apx_doctor.advice", "apx_doctor.safe", "tomllib", "socket", "tempfile"}
    # The quiet loop's typed decoder waits for a file longer than the lines detection reads.
    assert "msgspec" not in loaded


def test_a_pyproject_that_never_names_us_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'sessions'\n")
    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    assert "tomllib" not in _loaded(tmp_path, "check", "one.jsonl")


def test_findings_bring_advice_and_rich_only_for_colour(tmp_path: Path) -> None:
    broken = (
        CLEAN
        + b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}\n'
    )
    (tmp_path / "a.jsonl").write_bytes(broken + CLEAN)
    # To a pipe the table is laid out without Rich (reporters/_plain_table.py), in colour by Rich.
    piped = _loaded(tmp_path, "check", "--isolated", "a.jsonl")
    assert "apx_doctor.advice" in piped and not {m for m in piped if m.startswith("rich")}
    coloured = _loaded(tmp_path, "check", "--isolated", "--color", "always", "a.jsonl")
    assert {"rich.table", "apx_doctor.advice"} <= coloured


def test_a_repair_draws_its_tables_without_rich_to_a_pipe(tmp_path: Path) -> None:
    broken = (
        CLEAN
        + b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\\"q\\": \\"caf\xc3\xa9\\"}"}}]}\n'
    )
    (tmp_path / "a.jsonl").write_bytes(broken + CLEAN)
    for args in (["fix", "a.jsonl"], ["fix", "--output", "out.jsonl", "a.jsonl"], ["fix", "--in-place", "--backup", "a.jsonl"]):
        loaded = _loaded(tmp_path, args[0], "--isolated", *args[1:])
        assert "apx_doctor.stream" in loaded, args
        assert not {m for m in loaded if m.startswith("rich")}, args
    assert (tmp_path / "a.jsonl.bak").exists()  # the probe did repair in place


def test_version_loads_no_adapter(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "--version")
    assert not {m for m in loaded if m.startswith("apx_doctor.formats")}


def test_the_cli_process_freezes_what_start_up_built(tmp_path: Path) -> None:
    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    assert _probe(tmp_path, "check", "--isolated", "one.jsonl")["frozen"] > 0


def test_a_program_that_runs_the_cli_keeps_its_collector(tmp_path: Path) -> None:
    import gc

    from typer.testing import CliRunner

    from apx_doctor.cli import app

    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(app, ["check", "--isolated", str(tmp_path / "one.jsonl")])
    assert result.exit_code == 0
    assert gc.get_freeze_count() == frozen


# The configuration is parsed only from a pyproject.toml that can configure us; these are the ones that can.


def test_a_table_named_with_escapes_is_still_found(tmp_path: Path) -> None:
    from apx_doctor.config import load

    (tmp_path / "pyproject.toml").write_text('[tool."apx\\u002Ddoctor"]\nselect = ["APX001"]\n')
    assert load(cwd=tmp_path).select == ("APX001",)


def test_a_configuring_pyproject_that_is_not_utf8_is_still_an_error(tmp_path: Path) -> None:
    from apx_doctor.config import load
    from apx_doctor.errors import UsageError

    (tmp_path / "pyproject.toml").write_bytes(b'# caf\xe9\n[tool.apx-doctor]\nselect = ["APX001"]\n')
    with pytest.raises(UsageError, match="cannot read the configuration"):
        load(cwd=tmp_path)


def test_the_found_pyproject_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    from apx_doctor.config import load

    parsed = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or real(text))
    (tmp_path / "pyproject.toml").write_text('[tool.apx-doctor]\nignore = ["APX105"]\nmarker = "stopped"\n')
    config = load(cwd=tmp_path)
    assert (config.ignore, config.marker, config.source) == (("APX105",), "stopped", tmp_path / "pyproject.toml")
    assert len(parsed) == 1
