"""Check a partitioned folder of transcripts on a Dask cluster, and gather one JSON report.

    pip install 'apx-doctor[dask]'
    python examples/dask_check.py transcripts/                       # a local cluster on this machine
    python examples/dask_check.py transcripts/ --scheduler tcp://scheduler:8786 > report.json

The report is the one `apx-doctor check --output-format json transcripts/`
prints for the same files, in the same order: the per-file check is a pure
function of the file's bytes and the options (``apx_doctor.runner.run_path``),
so where it runs changes nothing. Every sub-folder (a partition: a day, a
shard, a user) is one task; the files directly under the root form one more.
Every worker must see the files at the same paths (a shared or network file
system, or a mounted bucket).

Dask is an optional extra; the CLI never imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import groupby
from typing import Any

import orjson

from apx_doctor.advice import annotate
from apx_doctor.config import Config, load
from apx_doctor.discover import contract_reason, expand
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.model import FileReport, Finding
from apx_doctor.reporters.json import document
from apx_doctor.runner import Mode, RunOptions, run_path
from apx_doctor.safe import json_dumps, json_safe


def check_file(path: str, options: RunOptions, settings: Config) -> FileReport:
    """One file, as ``apx-doctor check`` reports it (contract note, configured codes, advice)."""
    report = run_path(path, options)
    reason = contract_reason(path)
    if reason is not None and report.error is None:
        report.findings.insert(
            0, Finding("APX201", None, f"a transcript in the portable project contract ({reason}); transcripts are runtime state")
        )
    report.findings = [f for f in report.findings if settings.enabled(f.code, path)]
    annotate(report, options.mode.value, settings.read_only_tools, settings.side_effect_tools)
    return report


def check_partition(paths: list[str], options: RunOptions, settings: Config) -> list[FileReport]:
    return [check_file(path, options, settings) for path in paths]


def partitions(paths: list[str]) -> list[list[str]]:
    """Consecutive paths of one folder form a partition; the order of ``paths`` is kept."""
    return [list(group) for _, group in groupby(paths, key=os.path.dirname)]


def check_folder(root: str, client: Any, settings: Config | None = None) -> dict:
    """The JSON report document for every transcript under ``root``, computed on ``client``'s workers."""
    settings = settings if settings is not None else load(None)
    options = RunOptions(mode=Mode.CHECK, marker=settings.marker or DEFAULT_MARKER)
    parts = partitions(expand([root]))
    if __name__ != "__main__":
        # Imported as a module: workers import it by name, so send them the file
        # (run as a script, Dask sends __main__'s functions by value itself).
        client.upload_file(__file__)
    futures = client.map(check_partition, parts, options=options, settings=settings, pure=False)
    reports = [report for part in client.gather(futures) for report in part]
    return document(reports)


def render(doc: dict) -> str:
    """The bytes the CLI's json reporter prints for ``doc``."""
    return json_safe(json_dumps(doc, option=orjson.OPT_INDENT_2)).decode() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a partitioned folder of transcripts with Dask.")
    parser.add_argument("root", help="the folder of transcripts (sub-folders are partitions)")
    parser.add_argument("--scheduler", help="address of a running Dask scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local cluster size")
    parser.add_argument("--config", help="read [tool.apx-doctor] from this file")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    args = parser.parse_args(argv)

    from dask.distributed import Client, LocalCluster

    settings = load(args.config, isolated=args.isolated)
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1))
    with client:
        doc = check_folder(args.root, client, settings)
    sys.stdout.write(render(doc))
    failed = any("error" in f for f in doc["files"])
    return 2 if failed else 1 if doc["summary"]["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
