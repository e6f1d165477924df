"""Golden cases of the provider profiles: tests/targets/<target>/<case>/.

Each case holds input.jsonl, findings.json (code, line, severity, and call_id and
fixable where reported) and options.json (input_format, and drop_orphans or
drop_empty_blocks where the case is about them); expected.jsonl where fix changes
the file. Without expected.jsonl nothing can be repaired safely: fix writes the
input unchanged and exits 1 for the errors that remain.

Every case runs through the CLI with --target <target>: check finds the codes
with the target's severities, fix writes the expected bytes (every line it does
not edit byte for byte as it was), the repaired file checks clean of what the
repair resolves, and a second repair changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apx_doctor.rules import RULES, FixSafety

from ._cli import run_cli

TARGETS = Path(__file__).resolve().parents[1] / "targets"
CASES = sorted(p.parent for p in TARGETS.glob("*/*/input.jsonl"))

pytestmark = pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}/{c.name}")


def _options(case: Path) -> dict:
    return json.loads((case / "options.json").read_text())


def _check_flags(case: Path) -> list[str]:
    return ["--target", case.parent.name, "--input-format", _options(case)["input_format"]]


def _fix_flags(case: Path) -> list[str]:
    flags = _check_flags(case)
    opts = _options(case)
    if opts.get("drop_orphans"):
        flags.append("--drop-orphans")
    if opts.get("drop_empty_blocks"):
        flags.append("--drop-empty-blocks")
    return flags


def _project(finding: dict) -> dict:
    out = {"code": finding["code"], "line": finding["line"], "severity": finding["severity"]}
    for key in ("call_id", "fixable"):
        if finding.get(key) is not None:
            out[key] = finding[key]
    return out


def _report(*args: str) -> tuple[int, dict]:
    result = run_cli(*args, "--output-format", "json", "--isolated")
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _want(case: Path) -> bytes:
    expected = case / "expected.jsonl"
    return (expected if expected.exists() else case / "input.jsonl").read_bytes()


def _resolved(finding: dict, opts: dict) -> bool:
    """Whether the repair with the case's options resolves this finding."""
    rule = RULES[finding["code"]]
    if finding.get("fixable") is False:
        return False
    if rule.fix_safety is FixSafety.SAFE:
        return True
    return rule.fix_safety is FixSafety.OPT_IN and finding.get("fixable") is True


def test_check_reports_the_codes_with_the_targets_severities(case: Path) -> None:
    code, report = _report("check", *_check_flags(case), str(case / "input.jsonl"))
    findings = [_project(f) for f in report["files"][0]["findings"]]
    # A check repairs nothing: an opt-in fix the case's repair applies is not "fixable" here.
    want = [
        {k: v for k, v in f.items() if not (k == "fixable" and v is True and RULES[f["code"]].fix_safety is FixSafety.OPT_IN)}
        for f in json.loads((case / "findings.json").read_text())
    ]
    assert findings == want
    assert code == (1 if any(f["severity"] == "error" for f in findings) else 0)


def test_fix_writes_the_expected_bytes(case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli("fix", *_fix_flags(case), "--isolated", "--output", str(out), str(case / "input.jsonl"))
    assert out.read_bytes() == _want(case), result.output
    changed = (case / "expected.jsonl").exists()
    findings = json.loads((case / "findings.json").read_text())
    unresolved = [f for f in findings if f["severity"] == "error" and not _resolved(f, _options(case))]
    assert result.exit_code == (1 if changed or unresolved else 0), result.output
    if not changed:
        # Nothing was written: no error is counted as repaired, every one is left for a person.
        assert unresolved == [f for f in findings if f["severity"] == "error"]


def test_lines_the_repair_does_not_edit_stay_byte_for_byte(case: Path) -> None:
    _, report = _report("fix", *_fix_flags(case), str(case / "input.jsonl"))
    edited = {e["line"] for e in report["files"][0]["edits"] if e["action"] in ("replace", "remove")}
    lines = (case / "input.jsonl").read_bytes().splitlines(keepends=True)
    untouched = [raw for number, raw in enumerate(lines, 1) if number not in edited]
    out = iter(_want(case).splitlines(keepends=True))
    # Every untouched line is in the output, in order (records only come between them).
    assert all(any(raw == written for written in out) for raw in untouched)


def test_repaired_file_checks_clean_and_a_second_fix_changes_nothing(case: Path, tmp_path: Path) -> None:
    target = tmp_path / "again.jsonl"
    target.write_bytes(_want(case))
    before = target.stat().st_mtime_ns
    run_cli("fix", *_fix_flags(case), "--isolated", "--in-place", str(target))
    assert target.read_bytes() == _want(case)
    assert target.stat().st_mtime_ns == before
    _, report = _report("check", *_check_flags(case), str(target))
    opts = _options(case)
    # What the first repair resolved is gone; what it could not resolve is still reported.
    first = json.loads((case / "findings.json").read_text())
    resolved_codes = {f["code"] for f in first if _resolved(f, opts)}
    again = report["files"][0]["findings"]
    assert not [f for f in again if f["code"] in resolved_codes and f.get("fixable") is not False]
    assert {f["code"] for f in first if not _resolved(f, opts)} <= {f["code"] for f in again}
