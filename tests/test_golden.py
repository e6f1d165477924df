"""Golden cases: tests/cases/<format>/<case>/ holds input.jsonl, expected.jsonl and findings.json.

Each case runs through the CLI and the library, and a second pass over the
repaired output must change nothing. A format whose files are one JSON document
names them input.json and expected.json; a case whose options.json says
"fix_refused" must make fix exit 2 and write nothing.
"""

from __future__ import annotations

import dataclasses
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
    return sorted(p.parent for name in ("input.jsonl", "input.json") for p in CASES.glob(f"*/*/{name}"))


def _input(case: Path) -> Path:
    path = case / "input.jsonl"
    return path if path.exists() else case / "input.json"


def _expected(case: Path) -> Path:
    return case / ("expected" + _input(case).suffix)


def _refused(case: Path) -> bool:
    return bool(_options(case).get("fix_refused"))


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
    report = _report("check", *flags, str(_input(case)))
    file = report["files"][0]
    assert file["format"] == _options(case).get("input_format", case.parent.name)
    assert [_project(f) for f in file["findings"]] == _expected_findings(case)


def test_check_exit_code_follows_error_findings(case: Path) -> None:
    flags = [f for f in _flags(case) if f != "--drop-orphans"]
    result = _invoke("check", *flags, str(_input(case)))
    errors = [f for f in _expected_findings(case) if f["code"] in _error_codes()]
    assert result.exit_code == (1 if errors else 0), result.output


def test_fix_output_writes_the_expected_bytes(case: Path, tmp_path: Path) -> None:
    out = tmp_path / ("out" + _input(case).suffix)
    result = _invoke("fix", *_flags(case), "--output", str(out), str(_input(case)))
    expected = _expected(case)
    if not expected.exists():
        assert result.exit_code == (2 if _refused(case) else 1) and not out.exists(), result.output
        return
    assert result.exit_code in (0, 1), result.output
    assert out.read_bytes() == expected.read_bytes()


def test_fix_in_place_writes_the_same_bytes(case: Path, tmp_path: Path) -> None:
    target = tmp_path / ("session" + _input(case).suffix)
    shutil.copyfile(_input(case), target)
    result = _invoke("fix", *_flags(case), "--in-place", str(target))
    expected = _expected(case)
    want = expected.read_bytes() if expected.exists() else _input(case).read_bytes()
    assert target.read_bytes() == want
    changed = want != _input(case).read_bytes()
    if _refused(case):
        assert result.exit_code == 2, result.output
        return
    assert result.exit_code == (1 if changed or not expected.exists() else _unfixable_exit(case)), result.output


def test_second_fix_changes_nothing(case: Path, tmp_path: Path) -> None:
    expected = _expected(case)
    if not expected.exists():
        pytest.skip("this case must not be written")
    target = tmp_path / ("again" + expected.suffix)
    shutil.copyfile(expected, target)
    before = target.stat().st_mtime_ns
    _invoke("fix", *_flags(case), "--in-place", str(target))
    assert target.read_bytes() == expected.read_bytes()
    assert target.stat().st_mtime_ns == before
    report = _report("check", *[f for f in _flags(case) if f != "--drop-orphans"], str(target))
    fixable = [f for f in report["files"][0]["findings"] if f["code"] == "APX001" and f.get("fixable", True)]
    assert fixable == []


def test_library_agrees_with_the_cli(case: Path) -> None:
    if getattr(adapter_class(_options(case).get("input_format", case.parent.name)), "whole_file", False):
        pytest.skip("this format is read as a whole file (tests/formats/test_documents.py checks its library)")
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
    if not adapter_class(fmt).one_history_a_line:
        # The library also gives each finding its 0-based message index, the line less one.
        assert all(f.index == f.line - 1 for f in findings if f.line is not None)
        findings = [dataclasses.replace(f, index=None) for f in findings]
    assert [_project(f.to_dict()) for f in findings] == _expected_findings(case)
    kwargs = {k: opts[k] for k in ("drop_orphans", "marker") if k in opts}
    result = repair_messages(messages, format=fmt, **kwargs)
    assert orjson.dumps(messages) == original, "the input list was changed"
    expected = case / "expected.jsonl"
    if expected.exists():
        assert result.messages == [orjson.loads(line) for line in expected.read_bytes().splitlines()]
        if not adapter_class(fmt).one_history_a_line:  # rows are rewritten, not inserted into
            # One insert edit a call; one inserted message a record written. A
            # record may answer several calls, or go into the next message.
            replaced = {id(e.record) for e in result.edits if e.action == "replace"}
            written = {id(e.record) for e in result.edits if e.action == "insert" and id(e.record) not in replaced}
            assert len(result.inserted) == len(written)


def _error_codes() -> set[str]:
    from apx_doctor.rules import RULES, Severity

    return {code for code, rule in RULES.items() if rule.severity is Severity.ERROR}


def _unfixable_exit(case: Path) -> int:
    flags = [f for f in _flags(case) if f != "--drop-orphans"]
    findings = _report("check", *flags, str(_input(case)))["files"][0]["findings"]
    repairable = {"APX001", "APX007"}  # what `fix` repairs without a flag
    unfixable = [f for f in findings if f["severity"] == "error" and not (f["code"] in repairable and f.get("fixable", True))]
    return 1 if unfixable else 0
