"""The stand-in APIs refuse what their providers refuse, so what `fix` writes under a profile is what the provider accepts.

tests/e2e/standin.py validates a request body the way the provider's API does
and raises ``Refusal`` with the API's own text. Here each validator is held to
apx_doctor's rule registry (``Rule.targets``: which provider refuses which rule):

- every golden case of tests/targets is turned into the request body the
  provider receives: its input is refused with the text of one of its error
  findings (accepted if it has none), and what `fix --target` writes for it is
  accepted, or still refused with the text of a finding the repair leaves;
- one hand-written sample per rule a provider refuses: apx_doctor reports that
  rule as an error under the profile, and the validator refuses the sample with
  the provider's text for it; the APX3xx texts are the ones the rule quotes;
- ordinary requests of the runtimes (Claude Code's split user messages, Codex's
  reasoning, call and message items) and what a provider tolerates are
  accepted, and apx_doctor reports no error for them either.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from apx_doctor.profiles import PROFILES, TARGETS
from apx_doctor.rules import RULES, FixSafety, search
from tests.e2e import standin
from tests.e2e.standin import Refusal
from tests.integration._cli import run_cli

CASES = sorted(p.parent for p in (Path(__file__).resolve().parent / "targets").glob("*/*/input.jsonl"))

VALIDATORS: dict[str, Callable[[dict], None]] = {
    "anthropic": standin.anthropic_validate,
    "openai-chat": standin.chat_validate,
    "openai-responses": standin.responses_validate,
    "bedrock": standin.bedrock_validate,
    "gemini": standin.gemini_validate,
    "deepseek": standin.deepseek_validate,
}

# The provider's words for each rule, per profile ("..." stands for what varies).
# Where the rule quotes the provider (``Rule.errors``) the quote is the text; the
# others are the APIs' texts as they answer with them.
_ERRORS = {code: rule.errors for code, rule in RULES.items()}
_NOT_ANSWERED = _ERRORS["APX007"][0]  # Anthropic words an unanswered call and a result after content alike
_NOT_LEADING = _ERRORS["APX007"][1]  # and so does Bedrock, in its own words
_SECOND_RESULT = "each tool_use must have a single result. Found multiple tool_result blocks with id: ..."
_CONVERSE_UNANSWERED = "Expected toolResult blocks at ... for the following Ids: ..."
_CONVERSE_EXCESS = "The number of toolResult blocks at ... exceeds the number of toolUse blocks of previous turn"
_CHAT_UNANSWERED = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
_CHAT_ORPHAN = _ERRORS["APX002"][1]
_RESPONSES_UNANSWERED = "No tool output found for function call ..."
_RESPONSES_ORPHAN = _ERRORS["APX002"][2]
_GEMINI_UNANSWERED = "Please ensure that the number of function response parts is equal to the number of function call parts"
_GEMINI_ORPHAN = "Please ensure that function response turn comes immediately after a function call turn"
# An empty string as a whole message's content: the API words it for the message, not a block.
_EMPTY_MESSAGE = "all messages must have non-empty content except for the optional final assistant message"
_GEMINI_ALTERNATE = "Please ensure that multiturn requests alternate between user and model"

TEXTS: dict[str, dict[str, tuple[str, ...]]] = {
    "anthropic": {
        "APX001": (_NOT_ANSWERED,),
        "APX002": (_ERRORS["APX002"][0],),
        "APX003": (_SECOND_RESULT,),
        "APX004": (_SECOND_RESULT,),
        "APX007": (_NOT_ANSWERED,),
        "APX301": (_ERRORS["APX301"][0],),
        # An empty string as a whole message's content is told in the API's words for a message.
        "APX304": (
            *_ERRORS["APX304"],
            "all messages must have non-empty content except for the optional final assistant message",
        ),
        "APX308": _ERRORS["APX308"],
    },
    "bedrock": {
        "APX001": (_NOT_LEADING, _CONVERSE_UNANSWERED),
        "APX002": (_ERRORS["APX002"][0], _CONVERSE_EXCESS),
        "APX003": (_SECOND_RESULT, _CONVERSE_EXCESS),
        "APX004": (_SECOND_RESULT, _CONVERSE_EXCESS),
        "APX007": (_NOT_LEADING,),
        "APX301": _ERRORS["APX301"],
        "APX304": (*_ERRORS["APX304"], _EMPTY_MESSAGE),
        "APX305": _ERRORS["APX305"],
        "APX306": (_ERRORS["APX306"][1],),
        "APX308": _ERRORS["APX308"],
    },
    "openai-chat": {
        "APX001": (_CHAT_UNANSWERED,),
        "APX002": (_CHAT_ORPHAN,),
        "APX003": ("Invalid parameter: Duplicate value for 'tool_call_id' of ...",),
        "APX004": (_CHAT_ORPHAN,),
    },
    "openai-responses": {
        "APX001": (_RESPONSES_UNANSWERED,),
        "APX002": (_RESPONSES_ORPHAN,),
        "APX302": _ERRORS["APX302"],
        "APX303": _ERRORS["APX303"],
    },
    "deepseek": {
        # DeepSeek words a call its output does not follow, split or missing, alike.
        "APX001": _ERRORS["APX307"],
        "APX002": (_RESPONSES_ORPHAN,),
        "APX302": _ERRORS["APX302"],
        "APX307": _ERRORS["APX307"],
    },
    "gemini": {
        "APX001": (_GEMINI_UNANSWERED,),
        "APX002": (_GEMINI_ORPHAN,),
        "APX003": (_GEMINI_UNANSWERED,),
        "APX004": (_GEMINI_ORPHAN,),
        "APX306": (_GEMINI_ALTERNATE,),
    },
}

# Rules the registry says a provider refuses that its validator does not refuse:
# the provider's answer to them is not known, and a stand-in invents no refusal.
UNCHECKED: dict[tuple[str, str], str] = {
    ("openai-responses", "APX003"): "a second function_call_output for a call: the API's answer is not known",
    ("openai-responses", "APX004"): "an output after the user's next message: the Responses API pairs call_id across the input",
    ("deepseek", "APX003"): "a second function_call_output for a call: DeepSeek's answer is not known",
    ("deepseek", "APX004"): "an output after a not-run record for its call: DeepSeek's answer is not known",
}


# ---------------------------------------------------------------- helpers


def _folded(text: str) -> str:
    # As apx_doctor.rules.search reads a pasted error: case, backticks and quotes aside.
    return " ".join("".join(" " if ch in "`'\"" else ch for ch in text.lower()).split())


def _says(message: str, pattern: str) -> bool:
    """Whether ``message`` holds ``pattern``, each "..." in it standing for anything."""
    text, at = _folded(message), 0
    for piece in (p.strip() for p in _folded(pattern).split("...")):
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _refusal(profile: str, body: dict) -> str | None:
    """The validator's refusal of ``body``, or None where it accepts it."""
    try:
        VALIDATORS[profile](body)
    except Refusal as refusal:
        return str(refusal)
    return None


def _assert_refused_as(profile: str, body: dict, codes: list[str]) -> None:
    refused = _refusal(profile, body)
    assert refused is not None, f"{profile} accepts a body holding {codes}: {json.dumps(body)}"
    texts = [text for code in codes for text in TEXTS[profile][code]]
    assert any(_says(refused, text) for text in texts), f"{refused!r} is none of the texts of {codes}"


def _user_item(item: dict) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def _body(input_format: str, lines: list[dict]) -> dict:
    """The request body the provider receives for a history of ``input_format``."""
    if input_format in ("anthropic", "bedrock-converse"):
        # The system prompt is a field of its own in both APIs, never a message.
        return {"messages": [m for m in lines if m.get("role") != "system"]}
    if input_format == "chat":
        return {"messages": lines}
    if input_format == "gemini-api":
        return {"contents": lines}
    if input_format == "responses":
        body: dict[str, Any] = {"input": lines}
        if lines and not _user_item(lines[0]):
            # It continues a conversation the server holds (what `--target` allows for).
            body["previous_response_id"] = "resp_held_by_server"
        return body
    raise AssertionError(f"no request body for {input_format}")


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _doctor_errors(profile: str, input_format: str, path: Path) -> list[str]:
    """The codes `check --target` reports as errors for the history at ``path``."""
    result = run_cli(
        "check", "--target", profile, "--input-format", input_format, "--isolated", "--output-format", "json", str(path)
    )
    assert result.exit_code in (0, 1), result.output
    return [f["code"] for f in json.loads(result.stdout)["files"][0]["findings"] if f["severity"] == "error"]


# ---------------------------------------------------------------- the golden cases


def _options(case: Path) -> dict:
    return json.loads((case / "options.json").read_text())


def _errors(case: Path) -> list[dict]:
    return [f for f in json.loads((case / "findings.json").read_text()) if f["severity"] == "error"]


def _resolved(finding: dict) -> bool:
    """Whether the repair with the case's options resolves this finding (as tests/integration/test_targets.py reads it)."""
    if finding.get("fixable") is False:
        return False
    safety = RULES[finding["code"]].fix_safety
    return safety is FixSafety.SAFE or (safety is FixSafety.OPT_IN and finding.get("fixable") is True)


def _fixed(case: Path, out: Path) -> list[dict]:
    """What `fix --target` writes for the case, with its options."""
    opts = _options(case)
    flags = ["--target", case.parent.name, "--input-format", opts["input_format"]]
    if opts.get("drop_orphans"):
        flags.append("--drop-orphans")
    if opts.get("drop_empty_blocks"):
        flags.append("--drop-empty-blocks")
    result = run_cli("fix", *flags, "--isolated", "--output", str(out), str(case / "input.jsonl"))
    assert result.exit_code in (0, 1) and out.exists(), result.output
    return _read(out)


# A repaired history a faithful validator refuses is a defect of apx_doctor: such
# a case is marked here, naming the defect, and the test of it fails strictly
# once the defect is gone. None is known.
DEFECTS: dict[str, str] = {}


def _case_param(case: Path) -> Any:
    name = f"{case.parent.name}/{case.name}"
    marks = [pytest.mark.xfail(strict=True, reason=DEFECTS[name])] if name in DEFECTS else []
    return pytest.param(case, id=name, marks=marks)


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.parent.name}/{c.name}") for c in CASES])
def test_the_stand_in_refuses_an_input_the_profile_refuses(case: Path) -> None:
    profile, errors = case.parent.name, _errors(case)
    body = _body(_options(case)["input_format"], _read(case / "input.jsonl"))
    if not errors:
        assert _refusal(profile, body) is None
        return
    _assert_refused_as(profile, body, [f["code"] for f in errors])


@pytest.mark.parametrize("case", [_case_param(c) for c in CASES])
def test_the_stand_in_accepts_what_fix_writes_and_refuses_what_it_leaves(case: Path, tmp_path: Path) -> None:
    profile = case.parent.name
    body = _body(_options(case)["input_format"], _fixed(case, tmp_path / "fixed.jsonl"))
    left = [f["code"] for f in _errors(case) if not _resolved(f)]
    if left:
        _assert_refused_as(profile, body, left)
    else:
        assert _refusal(profile, body) is None, json.dumps(body)


def test_every_profile_has_a_validator_and_every_case_a_profile() -> None:
    assert set(VALIDATORS) == set(TARGETS) == set(TEXTS)
    assert {c.parent.name for c in CASES} <= set(VALIDATORS)


# ---------------------------------------------------------------- hand-written samples

NOT_RUN = "not run: the turn was interrupted"


class Sample(NamedTuple):
    profile: str
    input_format: str
    name: str
    lines: list[dict]
    code: str | None = None  # the rule it breaks; None: a request the provider accepts
    extra: dict | None = None  # fields of the body besides the history

    @property
    def body(self) -> dict:
        return {**_body(self.input_format, self.lines), **(self.extra or {})}

    @property
    def id(self) -> str:
        return f"{self.profile}/{self.code or 'accepted'}/{self.name}"

    def param(self, *marks: Any) -> Any:
        return pytest.param(self, id=self.id, marks=marks)


def _tool_use(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "ls", "input": {}}


def _tool_result(call_id: str, content: Any = "a b") -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def _blocks(role: str, *blocks: dict) -> dict:
    return {"role": role, "content": list(blocks)}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


ASK = {"role": "user", "content": "List the files."}
AGAIN = {"role": "user", "content": "well?"}
DONE = _blocks("assistant", _text("Done."))


def _messages(profile: str) -> list[Sample]:
    """Anthropic-shaped samples: under ``anthropic``, and under ``bedrock`` as InvokeModel bodies."""
    fmt = "anthropic"
    return [
        Sample(profile, fmt, "call-then-text", [ASK, _blocks("assistant", _tool_use("t1")), AGAIN], "APX001"),
        Sample(profile, fmt, "result-answers-no-call", [ASK, DONE, _blocks("user", _tool_result("t9"), _text("and?"))], "APX002"),
        Sample(
            profile,
            fmt,
            "second-result-in-one-message",
            [ASK, _blocks("assistant", _tool_use("t1")), _blocks("user", _tool_result("t1"), _tool_result("t1", "again"))],
            "APX003",
        ),
        Sample(
            profile,
            fmt,
            "result-after-a-not-run-record",
            [
                ASK,
                _blocks("assistant", _tool_use("t1")),
                _blocks("user", _tool_result("t1", NOT_RUN), _text("go on")),
                DONE,
                _blocks("user", _tool_result("t1"), _text("it finished")),
            ],
            "APX004",
        ),
        Sample(
            profile,
            fmt,
            "result-after-text",
            [ASK, _blocks("assistant", _tool_use("t1")), _blocks("user", _text("here"), _tool_result("t1"))],
            "APX007",
        ),
        Sample(
            profile,
            fmt,
            "call-id-used-twice",
            [
                ASK,
                _blocks("assistant", _tool_use("t1")),
                _blocks("user", _tool_result("t1")),
                _blocks("assistant", _tool_use("t1")),
                _blocks("user", _tool_result("t1"), _text("same?")),
            ],
            "APX301",
        ),
        Sample(
            profile,
            fmt,
            "empty-text-block",
            [ASK, _blocks("assistant", _text(""), _tool_use("t1")), _blocks("user", _tool_result("t1"))],
            "APX304",
        ),
        Sample(
            profile,
            fmt,
            "empty-text-block-with-cache-control",
            [ASK, _blocks("assistant", {**_text(""), "cache_control": {"type": "ephemeral"}}), AGAIN],
            "APX304",
        ),
        Sample(profile, fmt, "empty-message", [ASK, {"role": "assistant", "content": ""}, AGAIN], "APX304"),
        Sample(
            profile,
            fmt,
            "thinking-with-empty-signature",
            [ASK, _blocks("assistant", {"type": "thinking", "thinking": "Look.", "signature": ""}, _text("Done.")), AGAIN],
            "APX308",
        ),
        Sample(
            profile,
            fmt,
            "thinking-without-signature",
            [ASK, _blocks("assistant", {"type": "thinking", "thinking": "Look."}, _text("Done.")), AGAIN],
            "APX308",
        ),
        Sample(
            profile,
            fmt,
            "results-lead-the-next-message",
            [
                ASK,
                _blocks(
                    "assistant", {"type": "thinking", "thinking": "Both.", "signature": "c2ln"}, _tool_use("t1"), _tool_use("t2")
                ),
                _blocks("user", _tool_result("t1"), _tool_result("t2"), _text("thanks")),
                DONE,
            ],
        ),
    ]


ANTHROPIC = [
    *_messages("anthropic"),
    # Claude Code writes a result and the next prompt as messages of their own; the API merges them.
    Sample("anthropic", "anthropic", "consecutive-user-messages", [ASK, {"role": "user", "content": "are you there?"}]),
    Sample(
        "anthropic",
        "anthropic",
        "results-split-over-user-messages",
        [
            ASK,
            _blocks("assistant", _tool_use("t1"), _tool_use("t2")),
            _blocks("user", _tool_result("t1")),
            _blocks("user", _tool_result("t2")),
            {"role": "user", "content": "[Request interrupted by user]"},
            DONE,
        ],
    ),
]


def _converse(role: str, *blocks: dict) -> dict:
    return {"role": role, "content": list(blocks)}


def _use(call_id: str) -> dict:
    return {"toolUse": {"toolUseId": call_id, "name": "ls", "input": {}}}


def _result(call_id: str, *content: dict) -> dict:
    return {"toolResult": {"toolUseId": call_id, "content": list(content or [{"text": "a b"}])}}


def _reasoning(**text: str) -> dict:
    return {"reasoningContent": {"reasoningText": {"text": "Look it up.", **text}}}


HI = _converse("user", {"text": "List the files."})
THANKS = {"text": "thanks"}
FINE = _converse("assistant", {"text": "Done."})

BEDROCK = [
    *_messages("bedrock"),
    Sample("bedrock", "anthropic", "consecutive-user-messages", [ASK, {"role": "user", "content": "are you there?"}], "APX306"),
    Sample(
        "bedrock",
        "anthropic",
        "empty-tool-result",
        [ASK, _blocks("assistant", _tool_use("t1")), _blocks("user", _tool_result("t1", ""))],
        "APX305",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "call-then-text",
        [HI, _converse("assistant", _use("t1")), _converse("user", THANKS)],
        "APX001",
    ),
    Sample(
        "bedrock", "bedrock-converse", "result-answers-no-call", [HI, FINE, _converse("user", _result("t9"), THANKS)], "APX002"
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "second-result-in-one-message",
        [HI, _converse("assistant", _use("t1")), _converse("user", _result("t1"), _result("t1"))],
        "APX003",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "result-after-a-not-run-record",
        [
            HI,
            _converse("assistant", _use("t1")),
            _converse("user", _result("t1", {"text": NOT_RUN})),
            FINE,
            _converse("user", _result("t1"), THANKS),
        ],
        "APX004",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "call-id-used-twice",
        [
            HI,
            _converse("assistant", _use("t1")),
            _converse("user", _result("t1")),
            _converse("assistant", _use("t1")),
            _converse("user", _result("t1")),
        ],
        "APX301",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "empty-text-block",
        [HI, _converse("assistant", {"text": ""}, _use("t1")), _converse("user", _result("t1"))],
        "APX304",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "empty-tool-result",
        [HI, _converse("assistant", _use("t1")), _converse("user", _result("t1", {"text": ""}))],
        "APX305",
    ),
    Sample("bedrock", "bedrock-converse", "consecutive-user-messages", [HI, _converse("user", THANKS), FINE], "APX306"),
    Sample("bedrock", "bedrock-converse", "consecutive-assistant-messages", [HI, FINE, FINE], "APX306"),
    Sample(
        "bedrock",
        "bedrock-converse",
        "reasoning-with-empty-signature",
        [HI, _converse("assistant", _reasoning(signature=""), _use("t1")), _converse("user", _result("t1"))],
        "APX308",
    ),
    Sample(
        "bedrock",
        "bedrock-converse",
        "results-then-text",
        [
            HI,
            _converse("assistant", _reasoning(signature="c2ln"), _use("t1"), _use("t2")),
            _converse("user", _result("t2"), _result("t1"), THANKS),
            FINE,
        ],
    ),
    # Some model families sign no reasoning: a signature left out was never there.
    Sample(
        "bedrock",
        "bedrock-converse",
        "reasoning-no-family-signs",
        [HI, _converse("assistant", _reasoning(), {"text": "Done."}), _converse("user", THANKS)],
    ),
]


def _call(call_id: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
    }


def _tool(call_id: str, content: str = "a b") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


SAID = {"role": "assistant", "content": "Done."}

CHAT = [
    Sample("openai-chat", "chat", "call-then-text", [ASK, _call("a"), AGAIN], "APX001"),
    Sample("openai-chat", "chat", "result-answers-no-call", [ASK, _tool("a"), SAID], "APX002"),
    Sample("openai-chat", "chat", "second-result", [ASK, _call("a"), _tool("a"), _tool("a", "again"), SAID], "APX003"),
    Sample(
        "openai-chat",
        "chat",
        "result-after-a-not-run-record",
        [ASK, _call("a"), _tool("a", NOT_RUN), AGAIN, _tool("a")],
        "APX004",
    ),
    Sample(
        "openai-chat",
        "chat",
        "results-in-any-order",
        [
            {"role": "system", "content": "Be brief."},
            ASK,
            {**_call("a"), "tool_calls": _call("a")["tool_calls"] + _call("b")["tool_calls"]},
            _tool("b"),
            _tool("a"),
            SAID,
        ],
    ),
]


def _function_call(call_id: str, item_id: str | None = None) -> dict:
    item = {"type": "function_call", "call_id": call_id, "name": "ls", "arguments": "{}"}
    return {**item, "id": item_id} if item_id else item


def _output(call_id: str, output: str = "a b") -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _reasons(item_id: str) -> dict:
    return {"type": "reasoning", "id": item_id, "summary": []}


def _says_item(text: str, item_id: str | None = None) -> dict:
    item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    return {**item, "id": item_id} if item_id else item


# A turn of Codex: its instructions, the prompt, reasoning before each call and message.
CODEX_TURN = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}]},
    _reasons("rs_1"),
    _function_call("call_1", "fc_1"),
    _output("call_1"),
    _reasons("rs_2"),
    _says_item("Two files.", "msg_1"),
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
]

RESPONSES = [
    Sample("openai-responses", "responses", "call-without-output", [ASK, _function_call("call_1"), AGAIN], "APX001"),
    Sample("openai-responses", "responses", "output-answers-no-call", [ASK, _output("call_9")], "APX002"),
    Sample(
        "openai-responses",
        "responses",
        "item-id-used-twice",
        [ASK, _says_item("One.", "msg_1"), AGAIN, _says_item("One.", "msg_1")],
        "APX302",
    ),
    Sample("openai-responses", "responses", "reasoning-last", [ASK, _reasons("rs_1")], "APX303"),
    Sample("openai-responses", "responses", "reasoning-before-the-next-prompt", [ASK, _reasons("rs_1"), AGAIN], "APX303"),
    Sample(
        "openai-responses",
        "responses",
        "reasoning-before-an-output",
        [ASK, _function_call("c1"), _reasons("rs_1"), _output("c1")],
        "APX303",
    ),
    Sample("openai-responses", "responses", "codex-turn", CODEX_TURN),
    # OpenAI lets a message of the same response stand between a call and its output.
    Sample(
        "openai-responses",
        "responses",
        "message-between-call-and-output",
        [ASK, _function_call("c1"), _says_item("Listing."), _output("c1")],
    ),
    Sample(
        "openai-responses",
        "responses",
        "output-continuing-a-server-conversation",
        [_output("call_held"), AGAIN],
        extra={"previous_response_id": "resp_1"},
    ),
    Sample("openai-responses", "responses", "text-input", [], extra={"input": "hi"}),
]

DEEPSEEK = [
    Sample(
        "deepseek",
        "responses",
        "message-between-call-and-output",
        [ASK, _function_call("c1"), _says_item("Listing."), _output("c1")],
        "APX307",
    ),
    Sample("deepseek", "responses", "call-without-output", [ASK, _function_call("c1"), AGAIN], "APX001"),
    Sample("deepseek", "responses", "output-answers-no-call", [ASK, _output("c9")], "APX002"),
    Sample(
        "deepseek",
        "responses",
        "item-id-used-twice",
        [ASK, _function_call("c1", "fc_1"), _output("c1"), _function_call("c2", "fc_1"), _output("c2")],
        "APX302",
    ),
    Sample(
        "deepseek",
        "responses",
        "output-right-after-its-call",
        [ASK, _reasons("rs_1"), _function_call("c1", "fc_1"), _output("c1"), _says_item("Done.")],
    ),
    # Reasoning is no message, and a lone reasoning item is not DeepSeek's rule (APX303 is a warning there).
    Sample(
        "deepseek", "responses", "reasoning-between-call-and-output", [ASK, _function_call("c1"), _reasons("rs_1"), _output("c1")]
    ),
    Sample("deepseek", "responses", "reasoning-last", [ASK, _reasons("rs_1")]),
]


def _content(role: str, *parts: dict) -> dict:
    return {"role": role, "parts": list(parts)}


def _function(call_id: str) -> dict:
    return {"functionCall": {"id": call_id, "name": "ls", "args": {}}}


def _response(call_id: str, output: str = "a b") -> dict:
    return {"functionResponse": {"id": call_id, "name": "ls", "response": {"output": output}}}


PROMPT = _content("user", {"text": "List the files."})
REPLY = _content("model", {"text": "Done."})

GEMINI = [
    Sample("gemini", "gemini-api", "two-user-contents", [PROMPT, _content("user", {"text": "are you there?"}), REPLY], "APX306"),
    Sample("gemini", "gemini-api", "two-model-contents", [PROMPT, REPLY, REPLY, _content("user", {"text": "well?"})], "APX306"),
    Sample(
        "gemini",
        "gemini-api",
        "call-then-text",
        [PROMPT, _content("model", _function("c1")), _content("user", {"text": "well?"})],
        "APX001",
    ),
    Sample("gemini", "gemini-api", "response-answers-no-call", [PROMPT, REPLY, _content("user", _response("c9"))], "APX002"),
    Sample(
        "gemini",
        "gemini-api",
        "second-response",
        [PROMPT, _content("model", _function("c1")), _content("user", _response("c1"), _response("c1"))],
        "APX003",
    ),
    Sample(
        "gemini",
        "gemini-api",
        "response-after-a-not-run-record",
        [
            PROMPT,
            _content("model", _function("c1")),
            _content("user", _response("c1", NOT_RUN)),
            REPLY,
            _content("user", _response("c1"), {"text": "x"}),
        ],
        "APX004",
    ),
    Sample(
        "gemini",
        "gemini-api",
        "call-response-reply",
        [
            PROMPT,
            _content("model", {"text": "Let me see."}, _function("c1")),
            _content("user", _response("c1"), {"text": "go on"}),
            REPLY,
        ],
    ),
]

SAMPLES = [*ANTHROPIC, *BEDROCK, *CHAT, *RESPONSES, *DEEPSEEK, *GEMINI]
REFUSED = [s for s in SAMPLES if s.code]
ACCEPTED = [s for s in SAMPLES if not s.code]


def _history(sample: Sample, tmp_path: Path) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in sample.lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("sample", [s.param() for s in REFUSED])
def test_a_sample_of_a_rule_is_refused_with_the_providers_text_for_it(sample: Sample, tmp_path: Path) -> None:
    # The sample is what the rule names: the doctor reports it as an error under the profile.
    assert sample.code in _doctor_errors(sample.profile, sample.input_format, _history(sample, tmp_path))
    _assert_refused_as(sample.profile, sample.body, [sample.code])


@pytest.mark.parametrize("sample", [s.param() for s in ACCEPTED])
def test_an_ordinary_request_is_accepted_and_the_doctor_agrees(sample: Sample, tmp_path: Path) -> None:
    assert _refusal(sample.profile, sample.body) is None
    if sample.lines:
        assert _doctor_errors(sample.profile, sample.input_format, _history(sample, tmp_path)) == []


@pytest.mark.parametrize("profile", TARGETS)
def test_every_rule_a_provider_refuses_has_a_sample_its_stand_in_refuses(profile: str) -> None:
    sampled = {s.code for s in REFUSED if s.profile == profile}
    unchecked = {code for p, code in UNCHECKED if p == profile}
    assert set(PROFILES[profile].refuses) - sampled == unchecked
    assert sampled <= set(TEXTS[profile])


# Provider texts the registry does not quote: `rule search` cannot find the rule from them.
# Refusals whose text the registry does not quote yet (none left: the rules quote them all).
_UNQUOTED: dict[str, str] = {}


def _quoted_param(sample: Sample) -> Any:
    reason = _UNQUOTED.get(sample.id)
    return sample.param(pytest.mark.xfail(strict=True, reason=reason)) if reason else sample.param()


@pytest.mark.parametrize("sample", [_quoted_param(s) for s in REFUSED if s.code and s.code.startswith("APX3")])
def test_the_registry_finds_the_rule_from_the_refusal(sample: Sample) -> None:
    refused = _refusal(sample.profile, sample.body)
    assert refused is not None
    assert sample.code in [rule.code for rule in search(refused)], refused
