"""Golden cases: tests/cases/<format>/<case>/ holds input.jsonl, expected.jsonl and findings.json.

Each case runs through the CLI and the library, and a second pass over the
repaired output must change nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import adapter_class
from apx_doctor.jsonl import BOM

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/*/input.jsonl"))


def _id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


pytestmark = pytest.mark.parametrize("case", _cases(), ids=_id)


def _options(case: Path) -> dict:
    path = case / "options.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _flags(case: Path) -> list[str]:
    opts = _options(case)
    flags = ["--input-format", opts.get("input_format", "auto")]
    if opts.get("drop_orphans"):
        flags.append("--drop-orphans")
    if "marker" in opts:
        flags += ["--marker", opts["marker"]]
    return flags


def _project(finding: dict) -> dict:
    out = {"code": finding["code"], "line": finding["line"]}
    for key in ("call_id", "index"):
        if finding.get(key) is not None:
            out[key] = finding[key]
    return out


def _expected_findings(case: Path) -> list[dict]:
    return json.loads((case / "findings.json").read_text())


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def _report(*args: str) -> dict:
    result = _invoke(*args, "--output-format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_check_reports_the_expected_findings(case: Path) -> None:
    flags = [f for f in _flags(case) if f != "--drop-orphans"]
    report = _report("check", *flags, str(case / "input.jsonl"))
    file = report["files"][0]
    assert file["format"] == _options(case).get("input_format", case.parent.name)
    assert [_project(f) for f in file["findings"]] == _expected_findings(case)


def test_check_exit_code_follows_error_findings(case: Path) -> None:
    flags = [f for f in _flags(case) if f != "--drop-orphans"]
    result = _invoke("check", *flags, str(case / "input.jsonl"))
    errors = [f for f in _expected_findings(case) if f["code"] in _error_codes()]
    assert result.exit_code == (1 if errors else 0), result.output


def test_fix_output_writes_the_expected_bytes(case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = _invoke("fix", *_flags(case), "--output", str(out), str(case / "input.jsonl"))
    expected = case / "expected.jsonl"
    if not expected.exists():
        assert result.exit_code == 1 and not out.exists(), result.output
        return
    assert result.exit_code in (0, 1), result.output
    assert out.read_bytes() == expected.read_bytes()


def test_fix_in_place_writes_the_same_bytes(case: Path, tmp_path: Path) -> None:
    target = tmp_path / "session.jsonl"
    shutil.copyfile(case / "input.jsonl", target)
    result = _invoke("fix", *_flags(case), "--in-place", str(target))
    expected = case / "expected.jsonl"
    want = expected.read_bytes() if expected.exists() else (case / "input.jsonl").read_bytes()
    assert target.read_bytes() == want
    changed = want != (case / "input.jsonl").read_bytes()
    assert result.exit_code == (1 if changed or not expected.exists() else _unfixable_exit(case)), result.output


def test_second_fix_changes_nothing(case: Path, tmp_path: Path) -> None:
    expected = case / "expected.jsonl"
    if not expected.exists():
        pytest.skip("this case must not be written")
    target = tmp_path / "again.jsonl"
    shutil.copyfile(expected, target)
    before = target.stat().st_mtime_ns
    _invoke("fix", *_flags(case), "--in-place", str(target))
    assert target.read_bytes() == expected.read_bytes()
    assert target.stat().st_mtime_ns == before
    report = _report("check", *[f for f in _flags(case) if f != "--drop-orphans"], str(target))
    fixable = [f for f in report["files"][0]["findings"] if f["code"] == "APX001" and f.get("fixable", True)]
    assert fixable == []


def test_library_agrees_with_the_cli(case: Path) -> None:
    raw = (case / "input.jsonl").read_bytes()
    lines = raw.splitlines()
    if raw.startswith(BOM) or any(not line.strip() for line in lines):
        pytest.skip("the library takes parsed messages; this case is about bytes")
    try:
        messages = [orjson.loads(line) for line in lines]
    except orjson.JSONDecodeError:
        pytest.skip("the library takes parsed messages; this case has an unparseable line")
    opts = _options(case)
    fmt = opts.get("input_format", case.parent.name)
    original = orjson.dumps(messages)
    findings = check_messages(messages, format=fmt, marker=opts.get("marker", "not run: the turn was interrupted"))
    assert [_project(f.to_dict()) for f in findings] == _expected_findings(case)
    kwargs = {k: opts[k] for k in ("drop_orphans", "marker") if k in opts}
    result = repair_messages(messages, format=fmt, **kwargs)
    assert orjson.dumps(messages) == original, "the input list was changed"
    expected = case / "expected.jsonl"
    if expected.exists():
        assert result.messages == [orjson.loads(line) for line in expected.read_bytes().splitlines()]
        if not adapter_class(fmt).one_history_a_line:  # rows are rewritten, not inserted into
            assert len(result.inserted) == sum(1 for e in result.edits if e.action == "insert")


def _error_codes() -> set[str]:
    from apx_doctor.rules import RULES, Severity

    return {code for code, rule in RULES.items() if rule.severity is Severity.ERROR}


def _unfixable_exit(case: Path) -> int:
    flags = [f for f in _flags(case) if f != "--drop-orphans"]
    findings = _report("check", *flags, str(case / "input.jsonl"))["files"][0]["findings"]
    repairable = {"APX001", "APX007"}  # what `fix` repairs without a flag
    unfixable = [
        f
        for f in findings
        if f["severity"] == "error" and not (f["code"] in repairable and f.get("fixable", True))
    ]
    return 1 if unfixable else 0
