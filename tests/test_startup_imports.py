"""What a check of a clean file does not load.

Start-up time is measured by bench/run.py, never here. These tests guard the
choices that keep it low: a clean check draws no table, so it imports no Rich;
advice, the TOML parser and the temp-file machinery wait until they are needed;
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

# Runs the CLI as the console script does, then prints the modules it loaded.
_PROBE = """
import json, sys
from apx_doctor.cli import main
sys.argv = ["apx-doctor", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(cwd: Path, *args: str) -> set[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_input_format_choices_are_the_registry(tmp_path: Path) -> None:
    # Written out in the CLI so it starts without the adapters; a new adapter must be added there.
    assert FORMAT_NAMES == tuple(format_names())


def test_a_clean_check_loads_no_rich_no_advice_no_toml(tmp_path: Path) -> None:
    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    loaded = _loaded(tmp_path, "check", "--isolated", "one.jsonl")
    assert "apx_doctor.stream" in loaded  # the probe did run a check
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}
    assert not loaded & {"apx_doctor.advice", "apx_doctor.safe", "tomllib", "socket", "tempfile"}


def test_a_pyproject_that_never_names_us_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'sessions'\n")
    (tmp_path / "one.jsonl").write_bytes(CLEAN)
    assert "tomllib" not in _loaded(tmp_path, "check", "one.jsonl")


def test_findings_still_bring_rich_and_advice(tmp_path: Path) -> None:
    broken = CLEAN + b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}\n'
    (tmp_path / "a.jsonl").write_bytes(broken + CLEAN)
    loaded = _loaded(tmp_path, "check", "--isolated", "a.jsonl")
    assert {"rich.table", "apx_doctor.advice"} <= loaded


def test_version_loads_no_adapter(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "--version")
    assert not {m for m in loaded if m.startswith("apx_doctor.formats")}


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
