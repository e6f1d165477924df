"""The Dask example: a partitioned folder checked on a local distributed cluster gives the CLI's JSON report."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor.cli import app

pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed (pip install -e '.[dask]')")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dask_check.py"

CALL = (
    '{"role":"assistant","content":null,"tool_calls":[{"id":"%s","type":"function","function":{"name":"%s","arguments":"{}"}}]}\n'
)
RESULT = '{"role":"tool","tool_call_id":"%s","content":"ok"}\n'
USER = '{"role":"user","content":"go on"}\n'


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("dask_check", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["dask_check"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("dask_check", None)


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with Client(cluster) as client:
        yield client
    cluster.close()


def _partitioned(root: Path) -> None:
    """Three day partitions and a file at the root: sound, interrupted, orphaned and broken sessions."""
    n = 0
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        (root / day).mkdir(parents=True)
        for i in range(6):
            n += 1
            body = USER + CALL % (f"c{n}", "write_file" if i % 2 else "read_file")
            if i % 3 == 0:
                body += RESULT % f"c{n}"
            elif i % 3 == 1:
                body += USER  # interrupted
            else:
                body += RESULT % f"ghost{n}" + '{"role": broken\n'
            (root / day / f"session-{i}.jsonl").write_text(body, encoding="utf-8")
    (root / "loose.jsonl").write_text(USER + CALL % ("last", "bash"), encoding="utf-8")


def test_dask_report_equals_the_cli_json_report(tmp_path: Path, example, client) -> None:
    root = tmp_path / "transcripts"
    _partitioned(root)
    cli = CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", str(root)])
    expected = json.loads(cli.stdout)
    settings = example.load(None, isolated=True)
    got = example.check_folder(str(root), client, settings)
    assert got == expected
    assert json.loads(example.render(got)) == expected
    assert len(got["files"]) == 19
    assert got["summary"]["errors"] > 0
    # Partitions are the day folders, plus the loose file at the root.
    assert [len(p) for p in example.partitions([f["path"] for f in got["files"]])] == [6, 6, 6, 1]
