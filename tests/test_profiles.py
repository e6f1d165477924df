"""Provider profiles (--target): the acceptance points of issue 16 that are not golden cases."""

from __future__ import annotations

import itertools
import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from apx_doctor import stream
from apx_doctor.doctor import RepairOptions
from apx_doctor.profiles import PROFILES, TARGETS, resolve
from apx_doctor.rules import RULES

from integration._cli import run_cli

ORPHAN_CHAT = b'{"role":"user","content":"hi"}\n{"role":"tool","tool_call_id":"call_9","content":"42"}\n'


def test_a_chat_orphan_fails_check_under_openai_chat(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(ORPHAN_CHAT)
    assert run_cli("check", "--isolated", str(path)).exit_code == 0  # no target: a warning, as before
    result = run_cli("check", "--isolated", "--target", "openai-chat", "--output-format", "json", str(path))
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)["files"][0]["findings"]
    assert (finding["code"], finding["severity"]) == ("APX002", "error")


def test_fail_on_sets_the_lowest_severity_that_fails(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(ORPHAN_CHAT)  # one warning, no error, without a target
    assert run_cli("check", "--isolated", "--fail-on", "error", str(path)).exit_code == 0
    assert run_cli("check", "--isolated", "--fail-on", "warning", str(path)).exit_code == 1
    assert run_cli("check", "--isolated", "--fail-on", "info", str(path)).exit_code == 1
    assert run_cli("check", "--isolated", "--fail-on", "fatal", str(path)).exit_code == 2


def test_target_and_fail_on_come_from_the_configuration(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(ORPHAN_CHAT)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "apx-doctor.toml").write_text('target = "openai-chat"\n')
    assert run_cli("check", str(path)).exit_code == 1
    (tmp_path / "apx-doctor.toml").write_text('fail-on = "warning"\n')
    assert run_cli("check", str(path)).exit_code == 1
    (tmp_path / "apx-doctor.toml").write_text('target = "nowhere"\n')
    assert run_cli("check", str(path)).exit_code == 2


def test_unknown_target_is_a_usage_error(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(ORPHAN_CHAT)
    result = run_cli("check", "--isolated", "--target", "nowhere", str(path))
    assert result.exit_code == 2 and "openai-responses" in result.stderr


def test_auto_takes_the_provider_the_format_implies() -> None:
    assert resolve("auto", "chat") is PROFILES["openai-chat"]
    assert resolve("auto", "bedrock-converse") is PROFILES["bedrock"]
    assert resolve(None, "chat") is None


def test_every_target_enforces_the_stray_result_rules() -> None:
    for name in TARGETS:
        assert {"APX002", "APX003", "APX004"} <= set(PROFILES[name].refuses)


def test_rule_search_finds_each_rule_by_its_provider_error() -> None:
    quoted = [(code, error) for code, rule in RULES.items() for error in rule.errors]
    assert {code for code, _ in quoted} >= {f"APX30{i}" for i in range(1, 9)}
    for code, error in quoted:
        fragment = max(error.split("..."), key=len).strip()
        assert f"# {code} " in run_cli("rule", "--search", fragment).stdout, (code, fragment)
        assert (
            error in RULES[code].explanation.replace("'rs_...'", "'...'")
            or code in ("APX303",)
            or fragment in RULES[code].explanation
        )


def test_rule_search_takes_a_whole_message_with_its_ids() -> None:
    out = run_cli(
        "rule", "--search", "Item 'rs_68af' of type 'reasoning' was provided without its required following item"
    ).stdout
    assert out.startswith("# APX303 ")
    assert run_cli("rule", "--search", "unexpected tool_use_id").stdout.startswith("# APX002 ")
    assert run_cli("rule", "--search", "no such provider text anywhere").exit_code == 1


# --- A Bedrock-profile repair of an Anthropic history never leaves two user messages in a row ---

_ids = st.sampled_from(["t1", "t2", "t3"])


@st.composite
def _alternating_anthropic(draw) -> list[dict]:
    """An Anthropic history whose roles alternate, with calls answered or not, and cut anywhere."""
    messages: list[dict] = [{"role": "user", "content": draw(st.sampled_from(["hi", [{"type": "text", "text": "hi"}]]))}]
    for turn in range(draw(st.integers(1, 4))):
        calls = draw(st.lists(_ids, max_size=3, unique=True))
        ids = [f"{c}_{turn}" for c in calls]
        blocks = [{"type": "tool_use", "id": i, "name": "ls", "input": {}} for i in ids]
        if draw(st.booleans()) or not blocks:
            blocks.insert(0, {"type": "text", "text": "Looking."})
        messages.append({"role": "assistant", "content": blocks})
        answered = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
        content: list = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in answered]
        if draw(st.booleans()) or not content:
            content.append({"type": "text", "text": "go on"})
        if draw(st.booleans()) and len(content) > 1:
            content.reverse()  # results after the text (APX007)
        if draw(st.booleans()):
            messages.append({"role": "user", "content": content})
        else:
            break  # cut after the assistant message
    return messages


def _roles(data: bytes) -> list[str]:
    return [orjson.loads(line)["role"] for line in data.splitlines()]


@settings(max_examples=150, deadline=None)
@given(_alternating_anthropic())
def test_bedrock_repair_of_an_anthropic_history_never_puts_two_user_messages_in_a_row(messages) -> None:
    data = b"".join(orjson.dumps(m) + b"\n" for m in messages)
    config = stream.StreamConfig(input_format="anthropic", repair=RepairOptions(target="bedrock"))
    sink = stream.MemorySink()
    result = stream.run(data.splitlines(keepends=True), config, sink)
    roles = _roles(sink.getvalue())
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert not [f for f in result.findings if f.code == "APX306"]
    # Every call is answered in the repaired history.
    again = stream.run(sink.getvalue().splitlines(keepends=True), config)
    assert not [f for f in again.findings if f.code in ("APX001", "APX007")]
