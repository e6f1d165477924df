"""``target=`` in the library: the provider profiles of ``--target``, for a history in memory.

The golden cases of tests/targets run through ``check_messages`` and
``repair_messages`` and give what the CLI gives: the same codes, lines and
severities, and the same repaired messages.
"""

from __future__ import annotations

import itertools
import json
import typing
from pathlib import Path

import orjson
import pytest

from apx_doctor import Target, check_messages, repair_messages
from apx_doctor.profiles import AUTO, TARGETS
from apx_doctor.rules import RULES, FixSafety

CASES = sorted(p.parent for p in (Path(__file__).resolve().parents[1] / "targets").glob("*/*/input.jsonl"))


def _messages(path: Path) -> list:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _options(case: Path) -> dict:
    return json.loads((case / "options.json").read_text())


def _projected(finding) -> dict:
    out = {"code": finding.code, "line": finding.line, "severity": str(finding.severity)}
    if finding.call_id is not None:
        out["call_id"] = finding.call_id
    if finding.fixable is not None:
        out["fixable"] = finding.fixable
    return out


def test_target_names_every_profile_and_auto() -> None:
    assert typing.get_args(Target) == (AUTO, *TARGETS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_check_messages_reports_as_the_cli_does(case: Path) -> None:
    found = check_messages(_messages(case / "input.jsonl"), format=_options(case)["input_format"], target=case.parent.name)
    # A check repairs nothing: an opt-in fix the case's repair applies is not "fixable" here.
    want = [
        {k: v for k, v in f.items() if not (k == "fixable" and v is True and RULES[f["code"]].fix_safety is FixSafety.OPT_IN)}
        for f in json.loads((case / "findings.json").read_text())
    ]
    assert sorted(map(_projected, found), key=json.dumps) == sorted(want, key=json.dumps)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_repair_messages_gives_the_cli_s_repair(case: Path) -> None:
    opts = _options(case)
    result = repair_messages(
        _messages(case / "input.jsonl"),
        format=opts["input_format"],
        target=case.parent.name,
        drop_orphans=bool(opts.get("drop_orphans")),
        drop_empty_blocks=bool(opts.get("drop_empty_blocks")),
    )
    expected = case / "expected.jsonl"
    assert result.messages == _messages(expected if expected.exists() else case / "input.jsonl")


def test_an_orphan_result_is_an_error_only_where_the_provider_refuses_it() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_ghost", "content": "?"},
        {"role": "assistant", "content": "hello"},
    ]
    (plain,) = check_messages(history)
    (targeted,) = check_messages(history, target="openai-chat")
    assert (plain.code, str(plain.severity)) == ("APX002", "warning")
    assert (targeted.code, str(targeted.severity)) == ("APX002", "error")
    assert [str(f.severity) for f in check_messages(history, target="auto")] == ["error"]


def test_a_bedrock_repair_never_leaves_two_user_messages_in_a_row() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "text", "text": "never mind"}]},
    ]
    repaired = repair_messages(history, format="anthropic", target="bedrock").messages
    roles = [m["role"] for m in repaired]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert repaired[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": repaired[2]["content"][0]["content"],
    }
    assert check_messages(repaired, format="anthropic", target="bedrock") == []
    # Without the target the record stands as a message of its own, as before.
    assert len(repair_messages(history, format="anthropic").messages) == 4


def test_an_unknown_target_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="openai-chat"):
        check_messages([{"role": "user", "content": "hi"}], target="openai")  # type: ignore[arg-type]


def test_drop_empty_blocks_needs_a_target() -> None:
    with pytest.raises(ValueError, match="target"):
        repair_messages([{"role": "user", "content": "hi"}], drop_empty_blocks=True)
