"""The gemini-api format: detection, check and fix through the CLI and the library, pairing by id
and, without one, by position and name, records in the shape the Gemini API documents for a
function response, and the API's own rules (roles alternate, the function response turn right
after the call turn, one response part per call part) on every repaired history."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from apx_doctor import check_messages, repair_messages
from apx_doctor.cli import app
from apx_doctor.formats import adapters, detect_format
from apx_doctor.formats.base import DEFAULT_MARKER, Detection
from apx_doctor.formats.gemini_api import GeminiApiAdapter

from strategies import gemini_api as strategy

FORMAT = "gemini-api"
CASES = Path(__file__).resolve().parents[1] / "cases" / FORMAT


def user(text):
    return {"role": "user", "parts": [{"text": text}]}


def say(text):
    return {"role": "model", "parts": [{"text": text}]}


def fcall(name="get_weather", id=None, **args):
    call = {"name": name, "args": args}
    return {"functionCall": {"id": id, **call} if id else call}


def model(*parts):
    return {"role": "model", "parts": list(parts)}


def fresponse(name="get_weather", id=None, output="20 C"):
    response = {"name": name, "response": {"output": output}}
    return {"functionResponse": {"id": id, **response} if id else response}


def responses(*parts, text=None, role="user"):
    parts = list(parts) + ([{"text": text}] if text else [])
    return {"role": role, "parts": parts}


def not_run(name="get_weather", id=None):
    return fresponse(name, id, DEFAULT_MARKER)


def codes(findings):
    return [(f.code, f.line, f.call_id) for f in findings]


# --- the Gemini API's rules, as the service applies them ---------------------------------------


def _side(content):
    return "model" if content.get("role") == "model" else "user"


def shape_violations(content):
    """What the API reference forbids in one Content (Content, Part, FunctionCall, FunctionResponse)."""
    problems = []
    if content.get("role") not in (None, "user", "model", "function") or set(content) - {"role", "parts"}:
        problems.append("a Content is {role?: user|model, parts}")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        return [*problems, "parts is a non-empty list"]
    for part in parts:
        if not isinstance(part, dict) or "type" in part:
            problems.append(f"not a Part: {part!r}")
            continue
        response = part.get("functionResponse")
        if response is not None:
            if not isinstance(response.get("name"), str) or not response["name"]:
                problems.append("a FunctionResponse names its function")
            if not isinstance(response.get("response"), dict):
                problems.append("a FunctionResponse's response is a JSON object")
            if "id" in response and not isinstance(response["id"], str):
                problems.append("a FunctionResponse's id is a string")
            if set(response) - {"id", "name", "response", "parts", "willContinue", "scheduling"}:
                problems.append("unknown FunctionResponse field")
    return problems


def api_violations(contents):
    """What the service refuses: user and model alternate; the content after a function call turn is
    a function response turn with one response per call, by id where the response has one and by
    name for the rest; and no response answers a turn that made no call."""
    problems = []
    previous = None
    calls = None
    for index, content in enumerate(contents):
        problems += [f"contents.{index}: {p}" for p in shape_violations(content)]
        side = _side(content)
        if side == previous:
            problems.append(f"contents.{index}: multiturn requests alternate between user and model")
        parts = content["parts"]
        if side == "user":
            answered = [p["functionResponse"] for p in parts if "functionResponse" in p]
            made = calls or []
            if len(answered) != len(made):
                problems.append(
                    f"contents.{index}: the number of function response parts ({len(answered)}) is not the "
                    f"number of function call parts of the function call turn ({len(made)})"
                )
            else:
                by_id = {c["id"]: c for c in made if c.get("id")}
                explicit = [r["id"] for r in answered if r.get("id")]
                if any(i not in by_id for i in explicit) or len(set(explicit)) != len(explicit):
                    problems.append(f"contents.{index}: a response id names no call of the turn")
                else:
                    left = Counter(c.get("name") for c in made if c.get("id") not in explicit)
                    loose = Counter(r.get("name") for r in answered if not r.get("id"))
                    if left != loose:
                        problems.append(f"contents.{index}: responses {dict(loose)} for calls {dict(left)}")
            calls = None
        else:
            if calls:
                problems.append(f"contents.{index}: a function call turn is not answered by the next content")
            calls = [p["functionCall"] for p in parts if "functionCall" in p]
        previous = side
    if calls:
        problems.append("function calls unanswered at the end")
    return problems


@pytest.mark.parametrize(
    "history, problem",
    [
        ([user("q"), model(fcall(id="c_a")), user("well?")], "number of function response parts (0)"),
        (
            [user("q"), model(fcall(id="c_a"), fcall(id="c_b")), responses(fresponse(id="c_a")), responses(fresponse(id="c_b"))],
            "alternate",
        ),
        ([user("q"), model(fcall(id="c_a")), responses(fresponse(id="c_a")), user("next")], "alternate"),
        ([user("q"), model(fcall(id="c_a")), say("more")], "not answered by the next content"),
        ([user("q"), model(fcall(id="c_a"))], "unanswered at the end"),
        ([user("q"), model(fcall(id="c_a")), responses(fresponse(id="c_x"))], "names no call"),
        ([user("q"), model(fcall("f"), fcall("g")), responses(fresponse("f"), fresponse("f"))], "responses"),
        (
            [user("q"), model(fcall(id="c_a")), responses({"functionResponse": {"id": "c_a", "response": {}}})],
            "names its function",
        ),
    ],
)
def test_the_validator_has_teeth(history, problem) -> None:
    assert any(problem in p for p in api_violations(history)), api_violations(history)


# --- detection -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["recorded_request_model_retry.jsonl", "recorded_request_thinking_other_model.jsonl"])
def test_the_corpus_samples_are_detected_and_clean(corpus: Path, name: str) -> None:
    path = corpus / FORMAT / name
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert GeminiApiAdapter.detect(lines) == Detection.CERTAIN
    assert detect_format(lines) is GeminiApiAdapter
    report = json.loads(CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", str(path)]).stdout)
    (file,) = report["files"]
    assert file["format"] == FORMAT
    # Every functionCall is answered by the functionResponse with its id in the next content
    # (an {"error": ...} response is a real, failed, result).
    assert file["findings"] == []
    assert check_messages(lines, format=FORMAT) == []
    assert api_violations(lines) == []


def test_the_corpus_retry_cut_before_its_second_response_is_interrupted(corpus: Path) -> None:
    lines = [orjson.loads(line) for line in (corpus / FORMAT / "recorded_request_model_retry.jsonl").read_bytes().splitlines()]
    cut = repair_messages(lines[:4], format=FORMAT)
    assert codes(cut.findings) == [("APX001", 4, "pyd_ai_9f63eafb0eac47419f4f6c19975e924b")]
    assert cut.messages[4] == {"role": "user", "parts": [not_run("get_capital", "pyd_ai_9f63eafb0eac47419f4f6c19975e924b")]}
    assert api_violations(cut.messages) == []


def test_no_other_adapter_claims_a_gemini_line_and_it_claims_none_of_theirs() -> None:
    contents = [
        user("Weather?"),
        model(fcall(id="c_1")),
        responses(fresponse(id="c_1"), text="thanks"),
        {"parts": [{"text": "no role"}]},
    ]
    for adapter in adapters():
        if adapter is not GeminiApiAdapter:
            assert adapter.detect(contents) == Detection.NO, adapter.name
    others = [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": [{"text": "hi"}]}],
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}],
        [{"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}],
        [{"messages": [user("hi")]}],
        # The AI SDK's UI messages carry parts too, typed, under the role "assistant".
        [{"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}],
        [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        # Qwen Code nests Gemini contents inside its own records.
        [{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "parts": [{"text": "hi"}]}}],
    ]
    for lines in others:
        assert GeminiApiAdapter.detect(lines) == Detection.NO, lines


def test_user_text_is_compatible_and_model_or_function_parts_are_certain() -> None:
    plain = [user("hi"), {"parts": [{"text": "again"}]}]
    assert GeminiApiAdapter.detect(plain) == Detection.COMPATIBLE
    assert detect_format(plain) is GeminiApiAdapter
    for decisive in (
        say("hello"),
        model(fcall()),
        responses(fresponse()),
        {"parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBO"}}]},
    ):
        assert GeminiApiAdapter.detect([user("hi"), decisive]) == Detection.CERTAIN


@pytest.mark.parametrize(
    "line",
    [
        {"role": "assistant", "parts": [{"text": "hi"}]},
        {"role": "user", "parts": [{"text": 3}]},
        {"role": "user", "parts": [{"nothing": "known"}]},
        {"role": "user", "parts": "hi"},
        {"role": "user", "parts": [{"text": "hi"}], "content": "hi"},
        {"role": ["user"], "parts": [{"text": "hi"}]},
    ],
    ids=["assistant-role", "text-not-a-string", "no-part-field", "parts-not-a-list", "foreign-key", "list-role"],
)
def test_a_line_that_contradicts_the_format_vetoes_it(line) -> None:
    assert GeminiApiAdapter.detect([user("hi"), model(fcall()), line]) == Detection.NO


# --- the pairing rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        [user("q"), model(fcall(id="c_a"), fcall(id="c_b")), responses(fresponse(id="c_b"), fresponse(id="c_a")), say("done")],
        [
            user("q"),
            model(fcall("f"), fcall("f"), fcall("g")),
            responses(fresponse("g"), fresponse("f"), fresponse("f")),
            say("done"),
        ],
        [
            user("q"),
            model(fcall("f", id="c_1"), fcall("f", id="c_2")),
            responses(fresponse("f"), fresponse("f")),
            say("by position"),
        ],
        [
            user("q"),
            model(fcall(id="c_a")),
            responses(fresponse(id="c_a"), text="and then?"),
            model(fcall(id="c_b")),
            responses(fresponse(id="c_b")),
        ],
        [user("q"), model(fcall()), responses(fresponse(), role="function"), say("older SDKs")],
        [{"parts": [{"text": "q"}]}, model(fcall(id="c_a")), {"parts": [fresponse(id="c_a")]}, say("no roles")],
        [
            user("q"),
            model({"text": "hmm", "thought": True}, {"executableCode": {"code": "1"}}, {"codeExecutionResult": {"output": "1"}}),
            user("ok"),
        ],
    ],
    ids=[
        "ids-out-of-order",
        "no-ids-by-name",
        "ids-answered-by-position",
        "responses-then-text",
        "function-role",
        "no-role",
        "server-parts",
    ],
)
def test_sound_histories_have_no_findings(history) -> None:
    assert check_messages(history, format=FORMAT) == []
    assert api_violations(history) == []


def test_calls_without_ids_are_answered_by_position_and_name_within_their_turn() -> None:
    # get_weather twice and get_time; the response for get_time and one for get_weather arrived.
    history = [
        user("q"),
        model(fcall(city="SF"), fcall("get_time"), fcall(city="NY")),
        responses(fresponse("get_time", output="14:00"), fresponse(output="20 C")),
        say("SF 20 C"),
    ]
    result = repair_messages(history, format=FORMAT)
    # The first get_weather response answers the first get_weather call: the second is open.
    assert codes(result.findings) == [("APX001", 2, "get_weather#2@1")]
    assert result.messages[2]["parts"] == [*history[2]["parts"], not_run()]
    assert api_violations(result.messages) == []
    assert check_messages(result.messages, format=FORMAT) == []


def test_the_turn_scopes_calls_without_ids() -> None:
    # The same name in two turns is two calls: a response after the second answers only the second.
    history = [
        user("q"),
        model(fcall()),
        user("skip it"),
        model(fcall()),
        responses(fresponse()),
        user("and a stray:"),
        model(fcall("other")),
        responses(fresponse("other"), fresponse()),
    ]
    assert codes(check_messages(history, format=FORMAT)) == [("APX001", 2, "get_weather#1@1"), ("APX002", 8, "get_weather#1@3")]


def test_a_response_without_id_answers_a_call_with_one_that_no_response_claimed_by_id() -> None:
    history = [user("q"), model(fcall(id="c_1"), fcall(id="c_2")), responses(fresponse(), fresponse(id="c_1")), say("x")]
    # c_1 is claimed by its id, so the response without one answers c_2.
    assert check_messages(history, format=FORMAT) == []


def test_an_extra_response_without_id_answers_nothing() -> None:
    history = [user("q"), model(fcall()), responses(fresponse(), fresponse(output="again")), say("x")]
    assert codes(check_messages(history, format=FORMAT)) == [("APX002", 3, "get_weather#2@1")]
    dropped = repair_messages(history, format=FORMAT, drop_orphans=True).messages[2]
    assert dropped == responses(fresponse())


def test_a_call_closed_by_the_next_user_text_is_answered_inside_that_content() -> None:
    prompt = {"role": "user", "parts": [{"text": "what did it find?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}]}
    history = [user("q"), model({"text": "looking"}, fcall(id="c_a")), prompt]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "c_a")]
    assert result.messages == [*history[:2], {"role": "user", "parts": [not_run(id="c_a"), *prompt["parts"]]}]
    assert result.inserted == [] and [(e.action, e.line) for e in result.edits] == [("insert", 3), ("replace", 3)]
    assert api_violations(result.messages) == []


def test_a_partial_response_turn_takes_the_missing_records_after_its_responses() -> None:
    history = [
        user("q"),
        model(fcall(id="c_a"), fcall(id="c_b"), fcall(id="c_c")),
        responses(fresponse(id="c_b"), text="a and c?"),
        say("b only"),
    ]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "c_a"), ("APX001", 2, "c_c")]
    assert result.messages[2]["parts"] == [fresponse(id="c_b"), not_run(id="c_a"), not_run(id="c_c"), {"text": "a and c?"}]
    assert result.messages[3] is history[3]
    assert api_violations(result.messages) == []


def test_calls_cut_before_another_model_content_get_one_user_turn_between() -> None:
    history = [user("q"), model(fcall(id="c_a"), fcall("get_time")), say("sorry, I was cut off")]
    result = repair_messages(history, format=FORMAT)
    assert codes(result.findings) == [("APX001", 2, "c_a"), ("APX001", 2, "get_time#1@1")]
    assert result.messages == [*history[:2], {"role": "user", "parts": [not_run(id="c_a"), not_run("get_time")]}, history[2]]
    assert [(i.index, i.call_id) for i in result.inserted] == [(2, "c_a")]
    assert api_violations(result.messages) == []


def test_a_file_that_answers_under_the_function_role_gets_records_under_it() -> None:
    history = [
        user("q"),
        model(fcall()),
        responses(fresponse(), role="function"),
        say("and NY?"),
        user("yes"),
        model(fcall(city="NY")),
    ]
    result = repair_messages(history, format=FORMAT)
    assert result.messages[-1] == {"role": "function", "parts": [not_run()]}
    assert repair_messages([user("q"), model(fcall())], format=FORMAT).messages[-1]["role"] == "user"


def test_a_content_without_role_keeps_having_none() -> None:
    history = [{"parts": [{"text": "q"}]}, model(fcall(id="c_a")), {"parts": [{"text": "well?"}]}]
    result = repair_messages(history, format=FORMAT)
    assert result.messages[2] == {"parts": [not_run(id="c_a"), {"text": "well?"}]}


def test_a_response_after_the_turn_is_late_not_an_answer() -> None:
    history = [user("q"), model(fcall(id="c_a")), user("hurry"), say("..."), responses(fresponse(id="c_a"))]
    assert codes(check_messages(history, format=FORMAT)) == [("APX001", 2, "c_a"), ("APX004", 5, "c_a")]


def test_placeholder_responses_are_info() -> None:
    history = [
        user("q"),
        model(fcall(id="c_a")),
        responses({"functionResponse": {"id": "c_a", "name": "get_weather", "response": {"error": "aborted"}}}),
    ]
    assert codes(check_messages(history, format=FORMAT)) == [("APX006", 3, "c_a")]


def test_drop_orphans_removes_only_the_stray_copies() -> None:
    history = [
        user("q"),
        model(fcall(id="c_a")),
        responses(fresponse(id="c_a", output="1"), fresponse(id="c_a", output="2"), fresponse(id="c_ghost"), text="next"),
    ]
    result = repair_messages(history, format=FORMAT, drop_orphans=True)
    assert codes(result.findings) == [("APX002", 3, "c_ghost"), ("APX003", 3, "c_a")]
    assert result.messages[2] == responses(fresponse(id="c_a", output="1"), text="next")
    assert api_violations(result.messages) == []


def test_a_call_without_a_name_is_reported_and_never_answered() -> None:
    history = [user("q"), model({"functionCall": {"args": {}}}), user("well?")]
    result = repair_messages(history, format=FORMAT)
    assert [(f.code, f.call_id, f.fixable) for f in result.findings] == [("APX001", "#1@1", False)]
    assert result.messages == history and result.edits == []


def test_the_record_says_output_not_error_and_follows_the_marker() -> None:
    history = [user("q"), model(fcall(id="c_a")), user("well?")]
    part = repair_messages(history, format=FORMAT, marker="no result").messages[2]["parts"][0]
    # "output" is the key Gemini documents for a function's output; "error" would claim a failure.
    assert part == {"functionResponse": {"id": "c_a", "name": "get_weather", "response": {"output": "no result"}}}
    repaired = repair_messages(history, format=FORMAT, marker="no result").messages
    assert check_messages(repaired, format=FORMAT, marker="no result") == []


def test_keep_open_tail_leaves_the_last_turn_open() -> None:
    history = [user("q"), model(fcall(id="c_a")), user("next"), model(fcall(id="c_b"))]
    result = repair_messages(history, format=FORMAT, keep_open_tail=True)
    assert codes(result.findings) == [("APX001", 2, "c_a")]
    assert result.messages[3:] == history[3:]


def test_a_dataset_row_of_gemini_contents_is_read_as_gemini(tmp_path: Path) -> None:
    row = {"messages": [user("q"), model(fcall(id="c_a")), user("well?"), model(fcall(id="c_b"))]}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    report = json.loads(CliRunner().invoke(app, ["check", "--isolated", "--output-format", "json", str(path)]).stdout)
    (file,) = report["files"]
    # The row's last call is its training target; the one cut mid-row is interrupted.
    assert file["format"] == "datasets"
    assert [(f["code"], f["line"], f.get("index"), f["call_id"]) for f in file["findings"]] == [("APX001", 1, 1, "c_a")]


# --- every repaired history, as the service would read it ----------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=strategy.histories(alternating=True))
def test_every_repaired_history_is_accepted_by_the_api_rules(history) -> None:
    result = repair_messages(history, format=FORMAT, drop_orphans=True)
    assert api_violations(result.messages) == []
    for inserted in result.inserted:
        assert shape_violations(inserted.record) == []
    again = repair_messages(result.messages, format=FORMAT, drop_orphans=True)
    assert again.messages == result.messages and again.edits == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=strategy.histories())
def test_every_call_reported_fixable_is_answered_and_positions_still_pair(history) -> None:
    result = repair_messages(history, format=FORMAT)
    fixable = [f for f in result.findings if f.code == "APX001" and f.fixable]
    # One not-run response more for every call reported fixable, and none for any other.
    assert _not_run_parts(result.messages) - _not_run_parts(history) == len(fixable)
    # Re-read, the records answer exactly the calls that were open, and nothing else moved.
    again = check_messages(result.messages, format=FORMAT)
    assert [f for f in again if f.code == "APX001" and f.fixable] == []
    assert [(f.code, f.call_id) for f in again if f.code != "APX001"] == [
        (f.code, f.call_id) for f in result.findings if f.code != "APX001"
    ]


def _not_run_parts(contents) -> int:
    return sum(
        1
        for content in contents
        for part in content["parts"]
        if part.get("functionResponse", {}).get("response") == {"output": DEFAULT_MARKER}
    )


# --- the command line ------------------------------------------------------------------------


def _write(path: Path, lines) -> bytes:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    path.write_bytes(data)
    return data


def test_cli_check_dry_run_in_place_and_output(tmp_path: Path) -> None:
    lines = [user("q"), model({"text": "let me look"}, fcall()), user("well?"), say("I cannot tell.")]
    path = tmp_path / "session.jsonl"
    original = _write(path, lines)
    runner = CliRunner()

    check = runner.invoke(app, ["check", "--isolated", "--output-format", "json", str(path)])
    assert check.exit_code == 1
    file = json.loads(check.stdout)["files"][0]
    assert file["format"] == FORMAT
    assert [(f["code"], f["line"], f["call_id"]) for f in file["findings"]] == [("APX001", 2, "get_weather#1@1")]

    dry = runner.invoke(app, ["fix", "--isolated", str(path)])
    assert dry.exit_code == 1 and path.read_bytes() == original

    out = tmp_path / "repaired.jsonl"
    assert runner.invoke(app, ["fix", "--isolated", "--output", str(out), str(path)]).exit_code == 1
    before, after = original.splitlines(), out.read_bytes().splitlines()
    # Only the user content that takes the record is rewritten; the rest is written back byte for byte.
    assert len(after) == len(before) and after[:2] == before[:2] and after[3] == before[3]
    assert orjson.loads(after[2]) == {"role": "user", "parts": [not_run(), {"text": "well?"}]}

    assert runner.invoke(app, ["fix", "--isolated", "--in-place", str(path)]).exit_code == 1
    assert path.read_bytes() == out.read_bytes()
    assert runner.invoke(app, ["check", "--isolated", str(path)]).exit_code == 0
    assert runner.invoke(app, ["fix", "--isolated", "--in-place", str(path)]).exit_code == 0
    assert path.read_bytes() == out.read_bytes()


def test_library_leaves_its_input_alone() -> None:
    history = [user("q"), model(fcall()), user("well?")]
    before = orjson.dumps(history)
    result = repair_messages(history, format=FORMAT)
    assert orjson.dumps(history) == before
    assert result.messages[0] is history[0] and result.messages[1] is history[1]


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir()), ids=str)
def test_golden_repairs_are_accepted_by_the_api_rules(case: str) -> None:
    repaired = [orjson.loads(line) for line in (CASES / case / "expected.jsonl").read_bytes().splitlines()]
    findings = json.loads((CASES / case / "findings.json").read_text())
    options = CASES / case / "options.json"
    dropped = options.exists() and json.loads(options.read_text()).get("drop_orphans", False)
    unfixable = any(f["code"] == "APX001" and f.get("call_id", "").startswith("#") for f in findings)
    strays = any(f["code"] in ("APX002", "APX003", "APX004") for f in findings) and not dropped
    # Stray responses that are kept, and calls no record can answer, stay what the API refuses.
    if not unfixable and not strays:
        assert api_violations(repaired) == [], case
    for content in repaired:
        assert shape_violations(content) == [], (case, content)
