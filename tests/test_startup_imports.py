"""What the CLI does not load at start-up.

Start-up time is measured by bench/run.py, never here. These tests guard the
choices that keep it low: ``--version`` needs no format adapter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apx_doctor.cli import FORMAT_NAMES
from apx_doctor.formats import format_names

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


def test_version_loads_no_adapter(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "--version")
    assert not {m for m in loaded if m.startswith("apx_doctor.formats")}
