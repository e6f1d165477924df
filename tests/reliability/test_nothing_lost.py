"""Nothing lost: the output of fix holds every input line, byte for byte and in order.

The only lines allowed to be missing are those the report lists: removed or
rewritten by --drop-orphans (or a format's relinking), or moved to the sidecar
by --salvage, where they are byte for byte. Checked for every format, on sound
transcripts and on damaged ones, through --output and --in-place alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._support import FORMATS, assert_nothing_lost, damaged, json_report, run_cli, transcripts

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
OPTION_SETS = [[], ["--drop-orphans"], ["--salvage"], ["--salvage", "--drop-orphans"]]


def _inputs(fmt: str):
    source = transcripts(fmt)
    return st.one_of(source, damaged(source))


def _fix(tmp: Path, fmt: str, data: bytes, options: list[str]) -> None:
    source, out, inplace = tmp / "in.jsonl", tmp / "out.jsonl", tmp / "inplace.jsonl"
    for path in (source, out, inplace, Path(f"{source}.rejected.jsonl"), Path(f"{inplace}.rejected.jsonl")):
        path.unlink(missing_ok=True)
    source.write_bytes(data)
    args = ["fix", "--output-format", "json", "--input-format", fmt, *options]
    result = run_cli(*args, "--output", str(out), str(source))
    assert result.exit_code in (0, 1, 2), result.output
    report = json_report(result)["files"][0]
    sidecar = Path(f"{source}.rejected.jsonl")
    if not report["written"]:
        assert not out.exists(), "a file the report says was not written exists"
        assert not sidecar.exists(), "lines were salvaged although nothing was written"
        return
    assert_nothing_lost(data, out.read_bytes(), report["edits"], sidecar.read_bytes() if sidecar.exists() else b"")
    assert source.read_bytes() == data, "--output changed the input"

    # In place: the same bytes as --output, or the input untouched.
    inplace.write_bytes(data)
    again = json_report(run_cli(*args, "--in-place", str(inplace)))["files"][0]
    expected = out.read_bytes() if again["changed"] else data
    assert inplace.read_bytes() == expected
    assert again["edits"] == report["edits"]
    moved = Path(f"{inplace}.rejected.jsonl")
    assert (moved.read_bytes() if moved.exists() else b"") == (sidecar.read_bytes() if sidecar.exists() else b"")


@pytest.mark.parametrize("fmt", FORMATS)
def test_fix_keeps_every_line_it_does_not_list(fmt: str, tmp_path: Path) -> None:
    @SETTINGS
    @given(_inputs(fmt), st.sampled_from(OPTION_SETS))
    def run(data: bytes, options: list[str]) -> None:
        _fix(tmp_path, fmt, data, options)

    run()


def test_the_check_catches_a_lost_line() -> None:
    """The checker itself: a dropped, reordered or altered line is noticed."""
    original = b'{"a":1}\n{"b":2}\n{"c":3}\n'
    for bad in (b'{"a":1}\n{"c":3}\n', b'{"b":2}\n{"a":1}\n{"c":3}\n', b'{"a":1}\n{"b": 2}\n{"c":3}\n'):
        with pytest.raises(AssertionError):
            assert_nothing_lost(original, bad, [])
    assert_nothing_lost(original, b'{"a":1}\n{"x":0}\n{"b":2}\n{"c":3}\n', [{"action": "insert", "before_line": 2}])
