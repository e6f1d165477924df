"""Every output format against a golden file, and hostile transcript text in each.

Regenerate the golden files after an intended change with
``UPDATE_GOLDEN=1 pytest tests/integration/test_output_formats.py`` and read the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from apx_doctor import __version__
from apx_doctor.reporters.github import escape_data, escape_property
from apx_doctor.rules import RULES

from ._cli import DATA, GOLDEN, run_cli

FORMATS = ["text", "json", "json-lines", "github", "sarif"]


def _golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(actual)
    assert actual == path.read_text(), f"{name} differs from the golden file"


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_output_matches_golden(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    result = run_cli("check", "--isolated", "--color", "never", "--output-format", fmt, "session.jsonl")
    assert result.exit_code == 1
    stdout = result.stdout.replace(__version__, "VERSION")
    if fmt == "sarif":
        # The rule list follows the registry (tested below); the golden pins the rest.
        doc = json.loads(stdout)
        assert [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]] == list(RULES)
        doc["runs"][0]["tool"]["driver"]["rules"] = "RULES"
        stdout = json.dumps(doc, indent=2) + "\n"
    _golden(f"check.{fmt}", stdout)


def test_fix_dry_run_text_matches_golden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    result = run_cli("fix", "--isolated", "--color", "never", "session.jsonl")
    assert result.exit_code == 1
    _golden("fix-dry-run.text", result.stdout)
    assert result.stderr == "1 file checked, 2 errors, 1 warning, 2 not-run records would be inserted\n"


def test_json_carries_advice_for_every_interrupted_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    result = run_cli("check", "--isolated", "--output-format", "json", "session.jsonl")
    findings = json.loads(result.stdout)["files"][0]["findings"]
    advice = {f["tool"]: f["advice"] for f in findings if f["code"] == "APX001"}
    assert set(advice) == {"send_message", "frobnicate"}
    assert "check the current state first, or retry with an idempotency key" in advice["send_message"]
    assert '{"channel":"#ops"}' in advice["send_message"]
    assert "unknown tool kind" in advice["frobnicate"]
    assert all("advice" not in f for f in findings if f["code"] != "APX001")


def test_github_is_chosen_under_github_actions_unless_text_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    auto = run_cli("check", "--isolated", "session.jsonl", env={"GITHUB_ACTIONS": "true"})
    assert auto.stdout.startswith("::error file=session.jsonl,line=3,title=APX001::")
    explicit = run_cli("check", "--isolated", "--output-format", "text", "session.jsonl", env={"GITHUB_ACTIONS": "true"})
    assert "::error" not in explicit.stdout and "APX001" in explicit.stdout
    local = run_cli("check", "--isolated", "session.jsonl")
    assert "::error" not in local.stdout


def test_sarif_has_one_rule_per_code_and_stable_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    first = json.loads(run_cli("check", "--isolated", "--output-format", "sarif", "session.jsonl").stdout)
    run = first["runs"][0]
    assert first["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(RULES)
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    prints = [r["partialFingerprints"] for r in run["results"]]
    assert len({json.dumps(p) for p in prints}) == len(prints)
    # The same finding keeps its fingerprint when the message text changes (a fixed, reworded rule).
    from apx_doctor.model import Finding
    from apx_doctor.reporters.sarif import fingerprint

    a = Finding("APX001", 3, "one wording", call_id="call_2")
    b = Finding("APX001", 3, "another wording", call_id="call_2")
    assert fingerprint("session.jsonl", a) == fingerprint("session.jsonl", b)
    second = json.loads(run_cli("check", "--isolated", "--output-format", "sarif", "session.jsonl").stdout)
    assert [r["partialFingerprints"] for r in second["runs"][0]["results"]] == prints


# ---- hostile text ---------------------------------------------------------------

HOSTILE_ID = "x,y::error file=evil.py,line=1::forged\n::warning::second %0A line\r"
HOSTILE_TOOL = "send,%25::\n::error::tool\x1b[31m"
HOSTILE_NAME = "ev,il::%0A.jsonl"


def _hostile(folder: Path) -> Path:
    path = folder / HOSTILE_NAME
    call = {"id": HOSTILE_ID, "type": "function", "function": {"name": HOSTILE_TOOL, "arguments": '{"q":"::error::%"}'}}
    lines = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "::notice::orphan,%", "content": "x"},
        {"role": "user", "content": "and?"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


_COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def test_github_commands_cannot_be_forged_by_transcript_text(isolated_cwd: Path) -> None:
    _hostile(isolated_cwd)
    result = run_cli("check", "--output-format", "github", HOSTILE_NAME)
    lines = result.stdout.splitlines()
    assert len(lines) == 2  # APX001 and APX002, nothing injected
    parsed = []
    for line in lines:
        match = _COMMAND.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match.group(2).split(","))
        parsed.append((match.group(1), {k: _unescape_property(v) for k, v in props.items()}, _unescape_data(match.group(3))))
    (level1, props1, msg1), (level2, props2, _msg2) = parsed
    assert (level1, props1["title"], props1["line"]) == ("error", "APX001", "2")
    assert props1["file"] == HOSTILE_NAME
    assert (level2, props2["title"]) == ("warning", "APX002")
    # The data part is one line; the only real newline is the one between message and advice.
    assert msg1.count("\n") == 1 and "\r" not in msg1 and "\x1b" not in result.stdout
    assert "x,y::error file=evil.py" in msg1  # shown, but as text inside an annotation


def test_escaping_matches_the_runner_rules() -> None:
    assert escape_data("50%\r\n::") == "50%25%0D%0A::"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


@pytest.mark.parametrize("fmt", ["sarif", "json", "json-lines", "text"])
def test_hostile_text_stays_data_in_every_format(fmt: str, isolated_cwd: Path) -> None:
    _hostile(isolated_cwd)
    result = run_cli("check", "--color", "never", "--output-format", fmt, HOSTILE_NAME)
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    if fmt == "sarif":
        doc = json.loads(result.stdout)
        res = doc["runs"][0]["results"]
        assert {r["ruleId"] for r in res} == {"APX001", "APX002"}
        uri = res[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == "ev%2Cil%3A%3A%250A.jsonl"
        assert res[0]["properties"]["callId"] == HOSTILE_ID
    elif fmt == "json":
        assert json.loads(result.stdout)["files"][0]["findings"][0]["call_id"] == HOSTILE_ID
    elif fmt == "json-lines":
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert [r["code"] for r in records] == ["APX001", "APX002"]
        assert records[0]["tool"] == HOSTILE_TOOL
    else:
        assert "\\x1b[31m" in result.stdout  # the escape shown, not obeyed


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_report_document_is_the_same_text_on_a_byte_stream_and_on_a_text_only_stream(fmt: str) -> None:
    # The report goes to a text stream's byte buffer where it has one (stdout),
    # and through the text layer where it has none (a library caller's StringIO).
    import io

    from apx_doctor.model import FileReport, Finding
    from apx_doctor.reporters import RenderContext, render

    report = FileReport(
        "s.jsonl", "chat", findings=[Finding("APX001", 2, "tool call 'c' has no result: é 漢 😀\u0085", call_id="c")]
    )
    text_only = io.StringIO()
    render(fmt, [report], RenderContext("check", "check", text_only, io.StringIO(), quiet=True))
    raw = io.BytesIO()
    layered = io.TextIOWrapper(raw, encoding="utf-8")
    render(fmt, [report], RenderContext("check", "check", layered, io.StringIO(), quiet=True))
    layered.flush()
    assert raw.getvalue().decode("utf-8") == text_only.getvalue()
    assert "é 漢 😀" in text_only.getvalue()  # non-ASCII text as it is
    assert "\u0085" not in text_only.getvalue()  # C1 controls are escaped, never raw
