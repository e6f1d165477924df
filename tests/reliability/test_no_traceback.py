"""No traceback, ever: every input gives exit 0, 1 or 2 and a message naming the file and line.

Random transcripts of every format, then random damage: cut at any byte,
flipped bytes, invalid UTF-8, lone surrogate escapes, a BOM in the middle, NUL
bytes, mixed line endings, nesting 10,000 deep, numbers beyond 64 bits,
duplicate keys, non-object lines. The 50 MB line is one example of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from ._support import FORMATS, damaged, json_report, run_cli, split_lines, transcripts

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
LINE_CODES = {"APX101", "APX102", "APX103", "APX104", "APX105"}


def assert_clean_exit(result, path: Path, data: bytes) -> dict:
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    report = json_report(result)
    lines = len(split_lines(data))
    for file in report["files"]:
        if "error" in file:
            assert str(path) in file["error"], f"the error does not name the file: {file['error']}"
        for finding in file["findings"]:
            if finding["code"] in LINE_CODES:
                assert isinstance(finding["line"], int) and 1 <= finding["line"] <= lines, finding
    stopped = any("error" in f for f in report["files"])
    assert (result.exit_code == 2) == stopped, "exit 2 is for runs that stopped, and only for them"
    return report


@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_transcripts_never_raise(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"

    @SETTINGS
    @given(damaged(transcripts(fmt)))
    def run(data: bytes) -> None:
        path.write_bytes(data)
        for args in (
            ["check", "--output-format", "json", str(path)],
            ["check", "--output-format", "json", "--input-format", fmt, str(path)],
            ["fix", "--output-format", "json", "--input-format", fmt, "--drop-orphans", str(path)],
            ["fix", "--output-format", "json", "--input-format", fmt, "--keep-open-tail", str(path)],
        ):
            report = assert_clean_exit(run_cli(*args), path, data)
            # A self-check failure would be a repair bug, not a property of the input.
            for file in report["files"]:
                assert "second repair" not in file.get("error", ""), file["error"]
                assert "still has calls" not in file.get("error", ""), file["error"]
        text = run_cli("check", "--color", "never", "--input-format", fmt, str(path))
        assert text.exit_code in (0, 1, 2) and "Traceback" not in text.output

    run()


def test_a_50_mb_line_is_read_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big = b'{"role":"user","content":"' + b"x" * (50 << 20) + b'"}\n'
    cut = b'{"role":"user","content":"' + b"y" * (50 << 20)
    path.write_bytes(b'{"role":"user","content":"hi"}\n' + big + cut)
    result = run_cli("check", "--output-format", "json", str(path))
    report = assert_clean_exit(result, path, path.read_bytes())
    assert result.exit_code == 1
    codes = [(f["code"], f["line"]) for f in report["files"][0]["findings"]]
    assert codes == [("APX102", 3)]
    # The message quotes none of the line.
    assert "yyyy" not in result.output


@pytest.mark.parametrize(
    "data, code",
    [
        (b"[" * 10_000 + b"]" * 10_000 + b"\n", "APX101"),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"\n", "APX101"),
        (b'{"role":"user","content":"\xff\xfe"}\n', "APX101"),
        (b'{"role":"user","content":"a"}\n\x00\n', "APX101"),
    ],
    ids=["deep-array", "deep-object", "invalid-utf8", "nul"],
)
def test_unreadable_lines_are_findings_with_a_line(tmp_path: Path, data: bytes, code: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = run_cli("check", "--output-format", "json", "--input-format", "chat", str(path))
    report = assert_clean_exit(result, path, data)
    findings = report["files"][0]["findings"]
    assert [f["code"] for f in findings if f["code"] == code] == [code]
    assert findings[-1]["line"] == len(split_lines(data))


def test_missing_path_is_exit_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such.jsonl"
    for command in ("check", "fix"):
        result = run_cli(command, str(missing))
        assert result.exit_code == 2
        assert str(missing) in result.output
        assert "Traceback" not in result.output
