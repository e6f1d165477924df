"""Local stand-ins for the model APIs the runtimes speak, for the end-to-end tests.

    python -m tests.e2e.standin --api anthropic|responses|gemini|chat --log requests.jsonl

Binds 127.0.0.1 on a free port, prints ``port N`` once it listens, and serves
until it is killed. Every request body is appended to the log as one JSON line
``{"path", "status", "error", "call", "body"}`` (``call``: the id of the tool
call the answer made), so a test can read exactly what
a runtime sent.

The stand-in answers the way a model would in a scripted session:
- a request whose last user text holds ``TRIGGER`` and which offers a shell
  tool gets one call of that tool, running the command the prompt names after
  ``TRIGGER`` (everything after it on the line);
- anything else gets a short text reply. A resume must get text only: a rule
  such as "the prompt is there and no result yet" turns true again when a
  runtime drops the interrupted call on resume, and would start a second call.

Before it answers, it validates the history the way the real API does, and
answers 400 with the real API's error text. Each validator refuses what
apx_doctor's rule registry says its provider refuses (``Rule.targets`` in
apx_doctor/rules.py), and nothing a real runtime's ordinary request holds:
- pairing: a call with no result, a result that answers no call, or a second
  one. Anthropic merges consecutive messages of one role before it validates,
  and answers a call only from the results that lead the next user message;
  the Responses API pairs ``call_id`` across the input; Gemini wants every
  ``functionCall`` of a model turn answered by a ``functionResponse`` in the
  very next content; Chat Completions wants an assistant message's
  ``tool_calls`` answered by the ``tool`` messages right after it;
- structure: Anthropic refuses a ``tool_use`` id used twice, an empty text
  block and a thinking block without its signature; the Responses API an item
  id used twice and a reasoning item without the item it precedes; Gemini
  roles that do not alternate.

``bedrock_validate`` (Converse or Anthropic-shaped bodies, roles not merged)
and ``deepseek_validate`` (Responses-shaped input, each output right after its
call) are validators only: no runtime under test speaks those APIs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TRIGGER = "APX-RUN-TOOL:"
REPLY = "Understood."

# Shell tools of the runtimes, and how each takes its command.
SHELL_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Bash": lambda command: {"command": command, "description": "Run the requested command"},  # Claude Code
    "exec_command": lambda command: {"cmd": command},  # Codex CLI
    "shell": lambda command: {"command": ["bash", "-lc", command]},
    "shell_command": lambda command: {"command": command},
    "run_shell_command": lambda command: {"command": command},  # Gemini CLI, Qwen Code
    "bash": lambda command: {"command": command},  # pi, OpenCode, Copilot CLI
    "run_commands": lambda command: {"commands": [command]},  # Cline CLI
    # Factory Droid: its schema requires a summary of 3-8 words and a risk level.
    "Execute": lambda command: {
        "summary": "Run the requested command",
        "command": command,
        "riskLevelReason": "It runs only the test's own scratch command.",
        "riskLevel": "medium",
    },
}

_ids = itertools.count(1)


class Refusal(Exception):
    """A request the real API answers with 400 (``param``: the field it names, where it names one)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


# ---------------------------------------------------------------- Anthropic


# The Messages API's own texts ("{...}": what varies). An unanswered call and a
# result placed after other content are refused alike: the API answers a call
# only from the results that lead the next user message.
ANTHROPIC_UNANSWERED = (
    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
ANTHROPIC_ORPHAN = (
    "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
ANTHROPIC_SECOND_RESULT = (
    "messages.{index}.content.{position}: each tool_use must have a single result. "
    "Found multiple `tool_result` blocks with id: {id}"
)
ANTHROPIC_DUPLICATE_CALL = "messages.{index}.content.{position}: `tool_use` ids must be unique"
ANTHROPIC_EMPTY_TEXT = "messages: text content blocks must be non-empty"
ANTHROPIC_EMPTY_CACHED_TEXT = "messages.{index}.content.{position}.text: cache_control cannot be set for empty text blocks"
ANTHROPIC_EMPTY_MESSAGE = (
    "messages.{index}: all messages must have non-empty content except for the optional final assistant message"
)
ANTHROPIC_UNSIGNED = "messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
_CALL_BLOCKS = ("tool_use", "server_tool_use")


def anthropic_merged(messages: list[dict]) -> list[dict]:
    """Consecutive messages of one role as one, their content joined (as the API does)."""
    merged: list[dict] = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if merged and merged[-1]["role"] == message.get("role"):
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message.get("role"), "content": blocks})
    return merged


def anthropic_validate(body: dict) -> None:
    """Refuses what the Messages API refuses (rules.py, ``targets`` holding "anthropic"):
    blocks that say nothing or lost their signature, a call id used twice, a second
    result, and calls and results that do not pair up once consecutive messages of
    one role are merged (so Claude Code's split user messages pass)."""
    messages = _dicts(body.get("messages"))
    anthropic_blocks_valid(messages)
    anthropic_paired(anthropic_merged(messages), _anthropic_unanswered)


def anthropic_blocks_valid(messages: list[dict]) -> None:
    """The per-block rules, at the positions of the request as sent."""
    calls: set[Any] = set()
    results: set[Any] = set()
    for index, message in enumerate(messages):
        content = message.get("content")
        last = index == len(messages) - 1 and message.get("role") == "assistant"
        if content == "" and not last:
            raise Refusal(ANTHROPIC_EMPTY_MESSAGE.format(index=index))
        for position, block in enumerate(_dicts(content if isinstance(content, list) else [])):
            where = {"index": index, "position": position}
            kind = block.get("type")
            if kind == "text" and block.get("text") == "":
                raise Refusal(ANTHROPIC_EMPTY_CACHED_TEXT.format(**where) if "cache_control" in block else ANTHROPIC_EMPTY_TEXT)
            if kind == "thinking" and not (isinstance(block.get("signature"), str) and block["signature"]):
                raise Refusal(ANTHROPIC_UNSIGNED.format(**where))
            if kind in _CALL_BLOCKS:
                _first(calls, block.get("id"), ANTHROPIC_DUPLICATE_CALL.format(**where))
            if kind == "tool_result":
                call_id = block.get("tool_use_id")
                _first(results, call_id, ANTHROPIC_SECOND_RESULT.format(**where, id=call_id))


def anthropic_paired(messages: list[dict], unanswered: Callable[[int, list, list], str]) -> None:
    """Every ``tool_use`` answered by the results that lead the next message, and every
    result answering a call of the message before; ``unanswered`` words the refusal."""
    for index, message in enumerate(messages):
        blocks = _dicts(message["content"])
        if message["role"] == "assistant":
            calls = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            after = _dicts(messages[index + 1]["content"]) if index + 1 < len(messages) else []
            leading = itertools.takewhile(lambda b: b.get("type") == "tool_result", after)
            answered = {b.get("tool_use_id") for b in leading}
            missing = [c for c in calls if c not in answered]
            if missing:
                raise Refusal(unanswered(index, calls, missing))
            continue
        before = _dicts(messages[index - 1]["content"]) if index and messages[index - 1]["role"] == "assistant" else []
        called = {b.get("id") for b in before if b.get("type") == "tool_use"}
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in called:
                raise Refusal(ANTHROPIC_ORPHAN.format(index=index, position=position, id=block.get("tool_use_id")))


def _anthropic_unanswered(index: int, calls: list, missing: list) -> str:
    return ANTHROPIC_UNANSWERED.format(index=index, ids=", ".join(map(str, missing)))


def anthropic_last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        if texts:
            return "\n".join(texts)
        if any(b.get("type") == "tool_result" for b in content or []):
            return ""
    return ""


def anthropic_answer(body: dict) -> tuple[list[dict], str]:
    """The content blocks of the reply and its stop reason."""
    tool, command = _requested_tool(anthropic_last_user_text(body), _tool_names(body))
    if tool is None:
        return [{"type": "text", "text": REPLY}], "end_turn"
    block = {"type": "tool_use", "id": f"toolu_standin{next(_ids):04d}", "name": tool, "input": SHELL_TOOLS[tool](command)}
    return [block], "tool_use"


def anthropic_message(blocks: list[dict], stop: str, model: str) -> dict:
    return {
        "id": f"msg_standin{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6},
    }


def anthropic_events(message: dict) -> Iterator[tuple[str, dict]]:
    head = dict(message, content=[], stop_reason=None)
    yield "message_start", {"type": "message_start", "message": head}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = dict(block, input={})
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 6},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_error(message: str) -> dict:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


# ---------------------------------------------------------------- Responses

_CALL_TYPES = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "function_call_output",
}
_OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}
# What an item is for the order rules, as apx_doctor's Responses adapter reads it:
# outputs of client calls, and messages that open a turn, are no part of a response.
_OUTPUT_ITEMS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
        "tool_search_output",
    }
)
_TURN_ROLES = frozenset({"user", "system", "developer"})

# The Responses API's own texts.
RESPONSES_ORPHAN = "No tool call found for function call output with call_id {id}."
RESPONSES_UNANSWERED = "No tool output found for function call {id}."
RESPONSES_DUPLICATE_ITEM = "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
RESPONSES_LONELY_REASONING = "Item '{id}' of type 'reasoning' was provided without its required following item."


def responses_validate(body: dict) -> None:
    """Refuses what the Responses API refuses (rules.py, ``targets`` holding
    "openai-responses"): an item id used twice, outputs and calls that do not pair
    up across the input, and a reasoning item that no call or message follows.
    Messages and reasoning may stand between a call and its output."""
    items = _checked_input(body)
    if items is None:
        return
    outputs = {i.get("call_id") for i in items if i.get("type") in _OUTPUT_TYPES}
    for item in items:
        if item.get("type") in _CALL_TYPES and item.get("call_id") not in outputs:
            raise Refusal(RESPONSES_UNANSWERED.format(id=item.get("call_id")))
    responses_reasoning_followed(items)


def responses_ids_unique(items: list[dict]) -> None:
    seen: set[Any] = set()
    for item in items:
        if item.get("type") == "item_reference":
            continue  # it names an item, it is none
        if item.get("type") == "local_shell_call_output" and item.get("call_id") is None:
            continue  # its id is the link to its call
        _first(seen, item.get("id") or None, RESPONSES_DUPLICATE_ITEM.format(id=item.get("id")))


def responses_orphans(items: list[dict], body: dict) -> None:
    """Every output answers a call of the input. With ``previous_response_id`` the
    server holds the calls of the conversation the input continues: an output before
    the first user message may answer one of those."""
    calls = {i.get("call_id") for i in items if i.get("type") in _CALL_TYPES}
    continued = bool(body.get("previous_response_id"))
    for item in items:
        if _item_kind(item) == "turn" and item.get("role") == "user":
            continued = False
        if item.get("type") in _OUTPUT_TYPES and item.get("call_id") not in calls and not continued:
            raise Refusal(RESPONSES_ORPHAN.format(id=item.get("call_id")))


def responses_reasoning_followed(items: list[dict]) -> None:
    """A reasoning item is followed by the call or message of its response; items
    that say nothing about order (an item reference) are passed over."""
    waiting: dict | None = None
    for item in items:
        kind = _item_kind(item)
        if waiting is not None and kind != "pass":
            if kind not in ("call", "message"):
                raise Refusal(RESPONSES_LONELY_REASONING.format(id=waiting.get("id")))
            waiting = None
        if kind == "reasoning":
            waiting = item
    if waiting is not None:
        raise Refusal(RESPONSES_LONELY_REASONING.format(id=waiting.get("id")))


def _item_kind(item: dict) -> str:
    """The item's part in the order rules: "message" (an assistant message), "turn" (a
    message that opens a turn, or a compaction), "call" (a call, or a server item a
    response makes), "output", "reasoning", or "pass" (says nothing about order)."""
    kind = item.get("type")
    if kind is None or kind == "message":
        role = item.get("role")
        return "message" if role == "assistant" else "turn" if role in _TURN_ROLES else "pass"
    if kind in _OUTPUT_ITEMS:
        return "output"
    if kind == "reasoning":
        return "reasoning"
    if kind == "item_reference":
        return "pass"
    if kind == "compaction":
        return "turn"
    return "call" if isinstance(kind, str) else "pass"


def _checked_input(body: dict) -> list[dict] | None:
    """The input items, after the checks every Responses-shaped API makes (unique ids,
    no orphan output); None for a string input, which holds no items to check."""
    items = body.get("input") or []
    if isinstance(items, str):
        return None
    items = _dicts(items)
    responses_ids_unique(items)
    responses_orphans(items, body)
    return items


def responses_last_user_text(body: dict) -> str:
    items = body.get("input") or []
    if isinstance(items, str):
        return items
    for item in reversed(items):
        if item.get("type") in _OUTPUT_TYPES:
            return ""
        if item.get("type", "message") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def responses_output(body: dict) -> list[dict]:
    tool, command = _requested_tool(responses_last_user_text(body), _tool_names(body))
    number = next(_ids)
    if tool is None:
        return [
            {
                "type": "message",
                "id": f"msg_standin{number:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}],
            }
        ]
    return [
        {
            "type": "function_call",
            "id": f"fc_standin{number:04d}",
            "call_id": f"call_standin{number:04d}",
            "name": tool,
            "arguments": json.dumps(SHELL_TOOLS[tool](command)),
            "status": "completed",
        }
    ]


def responses_events(body: dict, output: list[dict]) -> Iterator[tuple[str, dict]]:
    response = {
        "id": f"resp_standin{next(_ids):04d}",
        "object": "response",
        "status": "in_progress",
        "model": body.get("model"),
        "output": [],
    }
    sequence = itertools.count()
    yield "response.created", {"type": "response.created", "sequence_number": next(sequence), "response": response}
    for index, item in enumerate(output):
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "sequence_number": next(sequence), "output_index": index, "item": item},
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": next(sequence),
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": text,
                },
            )
        yield (
            "response.output_item.done",
            {"type": "response.output_item.done", "sequence_number": next(sequence), "output_index": index, "item": item},
        )
    done = dict(
        response,
        status="completed",
        output=output,
        usage={
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 6,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 18,
        },
    )
    yield "response.completed", {"type": "response.completed", "sequence_number": next(sequence), "response": done}


def responses_error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": None}}


# ---------------------------------------------------------------- Gemini

# The Gemini API's own texts (as its 400 INVALID_ARGUMENT answers word them).
GEMINI_UNANSWERED = (
    "Please ensure that the number of function response parts is equal to the number of function call "
    "parts of the function call turn."
)
GEMINI_ORPHAN = "Please ensure that function response turn comes immediately after a function call turn."
GEMINI_CALL_PLACE = "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
GEMINI_ALTERNATE = "Please ensure that multiturn requests alternate between user and model."


def gemini_parts(content: Any) -> list[dict]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def gemini_validate(body: dict) -> None:
    """Refuses what the Gemini API refuses (rules.py, ``targets`` holding "gemini"):
    roles that do not alternate, and calls and responses that do not pair up."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    for index, content in enumerate(contents):
        parts = gemini_parts(content)
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        before = contents[index - 1] if index else None
        if before is not None and _gemini_side(content) == _gemini_side(before):
            raise Refusal(GEMINI_ALTERNATE)
        before_calls = [p["functionCall"] for p in gemini_parts(before) if isinstance(p.get("functionCall"), dict)]
        if responses and (not before_calls or before.get("role") != "model"):
            raise Refusal(GEMINI_ORPHAN)
        if calls:
            if content.get("role") != "model":
                raise Refusal(GEMINI_CALL_PLACE)
            # After the user's turn or after function responses: not first, not after the model.
            if before is None or (before.get("role") == "model"):
                raise Refusal(GEMINI_CALL_PLACE)
            after = contents[index + 1] if index + 1 < len(contents) else None
            answers = [p["functionResponse"] for p in gemini_parts(after) if isinstance(p.get("functionResponse"), dict)]
            if len(answers) != len(calls):
                raise Refusal(GEMINI_UNANSWERED)
            # Where the calls carry ids, the responses answer them by id (the
            # API's text for a mismatch is not known here: it is told as a count).
            ids = sorted(str(c.get("id")) for c in calls if c.get("id"))
            if ids and sorted(str(a.get("id")) for a in answers if a.get("id")) != ids:
                raise Refusal(GEMINI_UNANSWERED)


def _gemini_side(content: dict) -> str:
    # A blank or missing role, and the older SDKs' "function", are the user's side.
    return "model" if content.get("role") == "model" else "user"


def gemini_last_user_text(body: dict) -> str:
    """The last text part of the last user turn: Gemini CLI joins a resumed
    prompt to the turn before it when the model turn between them is gone, so
    the whole turn still holds the prompt that asked for the call."""
    for content in reversed([c for c in body.get("contents") or [] if isinstance(c, dict)]):
        if content.get("role", "user") != "user":
            continue
        for part in reversed(gemini_parts(content)):
            if "functionResponse" in part:
                return ""
            if isinstance(part.get("text"), str):
                return part["text"]
    return ""


def gemini_tool_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        for declaration in (tool or {}).get("functionDeclarations") or []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.append(declaration["name"])
    return names


def gemini_answer(body: dict, model: str) -> dict:
    """One ``GenerateContentResponse``: a call of the shell tool, or text.

    The call carries an ``id``, which the API may leave out (Gemini CLI then
    makes one up): with it, the call the stand-in made can be found again."""
    tool, command = _requested_tool(gemini_last_user_text(body), gemini_tool_names(body))
    number = next(_ids)
    if tool is None:
        parts = [{"text": REPLY}]
    else:
        parts = [{"functionCall": {"id": f"call_standin{number:04d}", "name": tool, "args": SHELL_TOOLS[tool](command)}}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 6, "totalTokenCount": 18},
        "modelVersion": model,
        "responseId": f"resp_standin{number:04d}",
    }


def gemini_error(message: str) -> dict:
    return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


# ---------------------------------------------------------------- Chat Completions

CHAT_SECOND_RESULT = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}] and messages[{index}]."
)


def chat_validate(body: dict) -> None:
    """Refuses what Chat Completions refuses (rules.py, ``targets`` holding "openai-chat"):
    tool messages that answer no call of the assistant message before their run, or
    answer one twice, and calls that run does not answer."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            # Answers the assistant message before the run of tool messages it stands in.
            start = index
            while start and messages[start - 1].get("role") == "tool":
                start -= 1
            before = messages[start - 1] if start else {}
            called = {c.get("id") for c in before.get("tool_calls") or [] if isinstance(c, dict)}
            if before.get("role") != "assistant" or message.get("tool_call_id") not in called:
                raise Refusal(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            earlier = [i for i in range(start, index) if messages[i].get("tool_call_id") == message.get("tool_call_id")]
            if earlier:
                call_id = message.get("tool_call_id")
                raise Refusal(
                    CHAT_SECOND_RESULT.format(id=call_id, first=earlier[0], index=index), f"messages.[{index}].tool_call_id"
                )
        elif message.get("role") == "assistant" and message.get("tool_calls"):
            answered = set()
            for after in messages[index + 1 :]:
                if after.get("role") != "tool":
                    break
                answered.add(after.get("tool_call_id"))
            missing = [c.get("id") for c in message["tool_calls"] if isinstance(c, dict) and c.get("id") not in answered]
            if missing:
                raise Refusal(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(map(str, missing)),
                    "messages",
                )


def chat_last_user_text(body: dict) -> str:
    for message in reversed([m for m in body.get("messages") or [] if isinstance(m, dict)]):
        if message.get("role") == "tool":
            return ""
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def chat_message(body: dict) -> dict:
    """The assistant message of the reply: one call of the shell tool, or text."""
    tool, command = _requested_tool(chat_last_user_text(body), _tool_names(body))
    if tool is None:
        return {"role": "assistant", "content": REPLY}
    call = {
        "id": f"call_standin{next(_ids):04d}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(SHELL_TOOLS[tool](command))},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


_CHAT_USAGE = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}


def chat_completion(body: dict, message: dict) -> dict:
    return {
        "id": f"chatcmpl-standin{next(_ids):04d}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": _CHAT_USAGE,
    }


def chat_chunks(body: dict, message: dict) -> Iterator[dict]:
    head = {
        "id": f"chatcmpl-standin{next(_ids):04d}",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": body.get("model"),
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    calls = message.get("tool_calls") or []
    if not calls:
        yield chunk({"content": message["content"]})
    for index, call in enumerate(calls):
        function = call["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": function["name"], "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        yield dict(head, choices=[], usage=_CHAT_USAGE)


def chat_error(message: str, param: str | None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}


# ---------------------------------------------------------------- Bedrock (validators only: no HTTP api)

# Bedrock's own texts. Its Converse API words pairing in toolUse/toolResult terms;
# an Anthropic-shaped body (InvokeModel) gets the Messages API's checks with the
# wording Bedrock passes on, but roles are not merged: they must alternate.
BEDROCK_ALTERNATE = (
    "A conversation must alternate between user and assistant roles. "
    "Make sure the conversation alternates between user and assistant roles and try again."
)
BEDROCK_NOT_LEADING = (
    "messages.{index}: Did not find {count} `tool_result` block(s) at the beginning of this message. "
    "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
)
CONVERSE_UNANSWERED = "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}"
CONVERSE_EXCESS = (
    "The number of toolResult blocks at messages.{index}.content exceeds the number of toolUse blocks of previous turn."
)
CONVERSE_DUPLICATE_CALL = "The toolUse blocks at messages.{index}.content contain duplicate Ids."
BEDROCK_EMPTY_TEXT = "messages.{index}.content.{position}: text content blocks must be non-empty"


def bedrock_validate(body: dict) -> None:
    """Refuses what Bedrock refuses (rules.py, ``targets`` holding "bedrock"), for a
    Converse body or an Anthropic-shaped one: roles that do not alternate, empty
    text and empty tool results, unsigned reasoning, a call id used twice, and
    calls and results that do not pair up."""
    messages = _dicts(body.get("messages"))
    for index in range(1, len(messages)):
        if messages[index].get("role") == messages[index - 1].get("role"):
            raise Refusal(BEDROCK_ALTERNATE)
    if _converse(messages):
        converse_validate(messages)
        return
    _bedrock_empty_results(messages)
    anthropic_blocks_valid(messages)
    anthropic_paired(anthropic_merged(messages), _bedrock_not_leading)


def _converse(messages: list[dict]) -> bool:
    """Whether the body is Converse's: its content blocks are unions with no ``type``."""
    return any(isinstance(m.get("content"), list) and any("type" not in b for b in _dicts(m["content"])) for m in messages)


def _bedrock_not_leading(index: int, calls: list, missing: list) -> str:
    return BEDROCK_NOT_LEADING.format(index=index + 1, count=len(calls))


def _bedrock_empty_results(messages: list[dict]) -> None:
    """An Anthropic-shaped result with no content, or only empty text (Bedrock refuses it)."""
    for index, message in enumerate(messages):
        content = message.get("content")
        for position, block in enumerate(_dicts(content if isinstance(content, list) else [])):
            if block.get("type") == "tool_result" and "content" in block and _says_nothing(block["content"]):
                raise Refusal(BEDROCK_EMPTY_TEXT.format(index=index, position=position))


def _says_nothing(content: Any) -> bool:
    if content == "":
        return True
    return isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and b.get("text") == "" for b in content
    )


def converse_validate(messages: list[dict]) -> None:
    calls: set[Any] = set()
    for index, message in enumerate(messages):
        blocks = _dicts(message.get("content"))
        _converse_blocks_valid(index, blocks)
        uses = [b["toolUse"].get("toolUseId") for b in blocks if isinstance(b.get("toolUse"), dict)]
        for use in uses:
            _first(calls, use, CONVERSE_DUPLICATE_CALL.format(index=index))
        results = [b["toolResult"].get("toolUseId") for b in blocks if isinstance(b.get("toolResult"), dict)]
        before = _dicts(messages[index - 1].get("content")) if index else []
        if len(results) > len([b for b in before if isinstance(b.get("toolUse"), dict)]):
            raise Refusal(CONVERSE_EXCESS.format(index=index))
        after = _dicts(messages[index + 1].get("content")) if index + 1 < len(messages) else []
        answered = {b["toolResult"].get("toolUseId") for b in after if isinstance(b.get("toolResult"), dict)}
        missing = [u for u in uses if u not in answered]
        if missing:
            raise Refusal(CONVERSE_UNANSWERED.format(index=index + 1, ids=", ".join(map(str, missing))))


def _converse_blocks_valid(index: int, blocks: list[dict]) -> None:
    for position, block in enumerate(blocks):
        where = {"index": index, "position": position}
        result = block.get("toolResult")
        reasoning = block.get("reasoningContent")
        if _converse_empty_text(block) or (isinstance(result, dict) and _converse_says_nothing(result.get("content"))):
            raise Refusal(BEDROCK_EMPTY_TEXT.format(**where))
        text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
        # Some model families sign nothing: only a signature present but empty was cut off.
        if isinstance(text, dict) and "signature" in text and not (isinstance(text["signature"], str) and text["signature"]):
            raise Refusal(ANTHROPIC_UNSIGNED.format(**where))


def _converse_empty_text(block: dict) -> bool:
    return len(block) == 1 and block.get("text") == ""


def _converse_says_nothing(content: Any) -> bool:
    return isinstance(content, list) and all(isinstance(b, dict) and _converse_empty_text(b) for b in content)


# ---------------------------------------------------------------- DeepSeek (validator only: no HTTP api)

# DeepSeek's text for a call whose output does not follow it (a message between,
# or none at all): it wants each output right after its call.
DEEPSEEK_NO_OUTPUT = "No tool output found for tool call {id}."


def deepseek_validate(body: dict) -> None:
    """Refuses a Responses-shaped input the way DeepSeek does (rules.py, ``targets``
    holding "deepseek"): the Responses API's orphans and repeated item ids, and a
    call whose output an assistant message (or the next turn) stands before. A
    reasoning item between a call and its output is no message: it may stand there."""
    items = _checked_input(body)
    if items is None:
        return
    open_calls: dict[Any, bool] = {}
    for item in items:
        kind = _item_kind(item)
        if kind == "call" and item.get("type") in _CALL_TYPES:
            open_calls[item.get("call_id")] = False
        elif item.get("type") in _OUTPUT_TYPES and open_calls.pop(item.get("call_id"), False):
            raise Refusal(DEEPSEEK_NO_OUTPUT.format(id=item.get("call_id")))
        elif kind == "message":
            open_calls = dict.fromkeys(open_calls, True)
        elif kind == "turn" and open_calls:
            raise Refusal(DEEPSEEK_NO_OUTPUT.format(id=next(iter(open_calls))))
    if open_calls:
        raise Refusal(DEEPSEEK_NO_OUTPUT.format(id=next(iter(open_calls))))


# ---------------------------------------------------------------- shared


def _dicts(value: Any) -> list[dict]:
    """The dicts of a list (a request may hold anything; only objects are checked)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _first(seen: set[Any], key: Any, refusal: str) -> None:
    """Records ``key``; refuses with ``refusal`` if it was seen before (only a string is an id)."""
    if not isinstance(key, str):
        return
    if key in seen:
        raise Refusal(refusal)
    seen.add(key)


def _tool_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _requested_tool(prompt: str, offered: list[str]) -> tuple[str | None, str]:
    """The shell tool to call and its command, or None: answer with text."""
    if TRIGGER not in prompt:
        return None, ""
    command = prompt.split(TRIGGER, 1)[1].splitlines()[0].strip()
    for name in offered:
        if name in SHELL_TOOLS:
            return name, command
    return None, ""


class Handler(BaseHTTPRequestHandler):
    api = "anthropic"
    log_path = ""
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log file is the record
        pass

    def do_GET(self) -> None:
        # Model lists and health checks: an empty list is a valid answer.
        self._record(None, 200)
        self._json(200, {"data": [], "object": "list", "models": []})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self._record(raw.decode("utf-8", "replace"), 400)
            self._json(400, {"error": {"message": "invalid JSON body"}})
            return
        path = self.path.split("?", 1)[0]
        if self.api == "anthropic" and path.endswith("/messages/count_tokens"):
            self._record(body, 200)
            self._json(200, {"input_tokens": 12})
        elif self.api == "anthropic" and path.endswith("/messages"):
            self._anthropic(body)
        elif self.api == "responses" and path.endswith("/responses"):
            self._responses(body)
        elif self.api == "gemini" and path.endswith(":countTokens"):
            self._record(body, 200)
            self._json(200, {"totalTokens": 12})
        elif self.api == "gemini" and path.endswith((":generateContent", ":streamGenerateContent")):
            self._gemini(body, path)
        elif self.api == "chat" and path.endswith("/chat/completions"):
            self._chat(body)
        else:
            self._record(body, 404)
            self._json(404, {"error": {"message": f"no such endpoint: {path}"}})

    def _anthropic(self, body: dict) -> None:
        try:
            anthropic_validate(body)
        except Refusal as refusal:
            self._record(body, 400, str(refusal))
            self._json(400, anthropic_error(str(refusal)))
            return
        blocks, stop = anthropic_answer(body)
        message = anthropic_message(blocks, stop, str(body.get("model")))
        self._record(body, 200, call=blocks[0].get("id"))
        if body.get("stream"):
            self._sse(anthropic_events(message))
        else:
            self._json(200, message)

    def _responses(self, body: dict) -> None:
        try:
            responses_validate(body)
        except Refusal as refusal:
            self._record(body, 400, str(refusal))
            self._json(400, responses_error(str(refusal)))
            return
        output = responses_output(body)
        self._record(body, 200, call=output[0].get("call_id"))
        self._sse(responses_events(body, output))

    def _gemini(self, body: dict, path: str) -> None:
        try:
            gemini_validate(body)
        except Refusal as refusal:
            self._record(body, 400, str(refusal))
            self._json(400, gemini_error(str(refusal)))
            return
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        answer = gemini_answer(body, model)
        part = answer["candidates"][0]["content"]["parts"][0]
        self._record(body, 200, call=(part.get("functionCall") or {}).get("id"))
        if path.endswith(":streamGenerateContent"):
            # ``?alt=sse``: data-only events, one response each.
            self._sse((None, chunk) for chunk in [answer])
        else:
            self._json(200, answer)

    def _chat(self, body: dict) -> None:
        try:
            chat_validate(body)
        except Refusal as refusal:
            self._record(body, 400, str(refusal))
            self._json(400, chat_error(str(refusal), refusal.param))
            return
        message = chat_message(body)
        self._record(body, 200, call=(message.get("tool_calls") or [{}])[0].get("id"))
        if body.get("stream"):
            self._sse(((None, chunk) for chunk in chat_chunks(body, message)), done="[DONE]")
        else:
            self._json(200, chat_completion(body, message))

    def _record(self, body: Any, status: int, error: str | None = None, call: str | None = None) -> None:
        # ``call``: the id of the tool call this answer made, if it made one.
        line = json.dumps({"path": self.path, "status": status, "error": error, "call": call, "body": body})
        with self.lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line + "\n")

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterable[tuple[str | None, dict]], done: str | None = None) -> None:
        """Server-sent events; a ``None`` name sends a data-only event (Gemini, Chat Completions)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        if done:
            self.wfile.write(f"data: {done}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=("anthropic", "responses", "gemini", "chat"), required=True)
    parser.add_argument("--log", required=True, help="append every request here, one JSON line each")
    args = parser.parse_args(argv)
    handler = type("StandinHandler", (Handler,), {"api": args.api, "log_path": args.log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
