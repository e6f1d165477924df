"""The Gemini API format: the request's ``contents``, one Content a line.

    {"role": "user", "parts": [{"text": "..."}]}
    {"role": "model", "parts": [{"text": "...", "thought": true}, {"functionCall": {"id"?, "name", "args"}, "thoughtSignature"?}]}
    {"role": "user", "parts": [{"functionResponse": {"id"?, "name", "response": {"output"|"error": ...}}}]}

``role`` may be left out or blank (a user turn), and the older SDKs wrote
function responses under the role ``function``; all are read as the user's side.

What the API demands, and how it maps onto the engine:

- Roles alternate between user and model, and the function response turn
  comes right after the function call turn and holds as many
  ``functionResponse`` parts as that turn has ``functionCall`` parts ("Please
  ensure that the number of function response parts is equal to the number of
  function call parts of the function call turn").
- So every Content is a turn boundary: a user Content first delivers the
  responses it holds, then closes what is still pending; a model Content closes
  the previous one's calls.
- A response answers the call with its ``id``. Where a response has no ``id``
  it answers by position and name: the k-th such response named N answers the
  k-th call named N of the last model turn that no response claimed by id. A
  call without an ``id`` is reported as ``N#k@T``: the k-th call named N
  without an id in the T-th model Content of the file.
- A user Content with anything besides responses (text, inline data, files)
  is a real user entry and starts the checked history.
- ``thought`` parts, ``executableCode`` and ``codeExecutionResult`` (run by
  the server) are no calls.

The not-run record is a ``functionResponse`` part ``{"id"?, "name", "response":
{"output": MARKER}}``: ``output`` is the key Gemini documents for a function's
output, ``error`` the one for a failure, which nobody knows happened. The call's
``id`` is repeated where it had one. The records of one model turn go into one
user Content: into the next Content where that is a user Content (that line is
rewritten, the records after the responses it already holds, so positions keep
pairing as they did), or as one new Content before a model Content or at the
end. A call without a name cannot be answered (a response must name its
function): it is reported, not repaired.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall, ToolCall
from .base import DROP, Detection, FormatAdapter, Insertion, Shape, detect_by_line

_KEYS = frozenset({"role", "parts"})
# "" and no role at all: a user turn (the API lets the role be blank or unset).
_ROLES = frozenset({"user", "model", "function", ""})
# Fields of a Part (the Gemini API's Part and the SDKs' types). Parts have no ``type``.
_PART_FIELDS = frozenset(
    {
        "text",
        "inlineData",
        "fileData",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
        "thought",
        "thoughtSignature",
        "videoMetadata",
        "partMetadata",
        "mediaResolution",
        "toolCall",
        "toolResponse",
    }
)
# Fields no other message format has: one of them settles detection.
_DECISIVE = _PART_FIELDS - {"text"}

_BOUNDARY = Entry(boundary=True)
_PROMPT = Entry(opens_history=True, boundary=True)
# A part that is empty text and nothing else (APX304).
_EMPTY_TEXT = {"text": ""}


class GeminiApiAdapter(FormatAdapter):
    name = "gemini-api"
    description = "Gemini API: the contents list, one Content a line"
    priority = 16
    message_list = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # How many model Contents have been read: scopes the ids of calls without one.
        self._turn = 0
        # The last model Content's calls, in order.
        self._calls: Sequence[ToolCall] = ()
        # The role this file gives function responses (older SDKs: "function").
        self._results_role = "user"

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _detect_one)

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line: one function, each key read once, the name
        # index of a turn's calls built only when a response has no id.
        if type(obj) is not dict:
            return None
        parts = obj.get("parts")
        if type(parts) is not list:
            return None
        role = obj.get("role")
        if role == "model":
            self._turn += 1
            calls: list[ToolCall] | None = None
            unnamed = None
            for part in parts:
                call = part.get("functionCall") if type(part) is dict else None
                if type(call) is not dict:
                    continue
                name = call.get("name")
                if type(name) is not str:
                    name = None
                given = call.get("id")
                if type(given) is str and given:
                    call_id = given
                else:
                    given = None
                    key = name or ""
                    if unnamed is None:
                        unnamed = {key: 1}
                        k = 1
                    else:
                        k = unnamed[key] = unnamed.get(key, 0) + 1
                    call_id = f"{key}#{k}@{self._turn}"
                # A response must name its function: a call without a name has no honest answer.
                found = ToolCall(call_id, name, call.get("args"), bool(name), given)
                if calls is None:
                    calls = [found]
                else:
                    calls.append(found)
            if calls is None:
                self._calls = ()
                return _BOUNDARY
            self._calls = calls
            return Entry(False, True, (), tuple(calls))
        if role is None or role == "user" or role == "function" or role == "":
            results: list[Any] | None = None
            # Responses without an id: (their index in ``results``, name, text).
            loose = None
            other = False
            result_for = self.result_for
            for part in parts:
                if type(part) is not dict:
                    continue
                response = part.get("functionResponse")
                if type(response) is not dict:
                    other = True
                    continue
                body = response.get("response")
                text = None
                if type(body) is dict:
                    # A not-run record's text is its output; another runtime's placeholder may be an error.
                    text = body.get("output")
                    if text is None:
                        text = body.get("error")
                given = response.get("id")
                if results is None:
                    results = []
                if type(given) is str and given:
                    results.append(result_for(given, text))
                else:
                    if loose is None:
                        loose = []
                    loose.append((len(results), response.get("name"), text))
                    results.append(None)
            if results is None:
                return _PROMPT if other else _BOUNDARY
            if role == "function":
                self._results_role = role
            if loose is not None:
                claimed = {r.call_id for r in results if r is not None}
                ids = self._by_position([name for _, name, _ in loose], claimed)
                for (index, _, text), call_id in zip(loose, ids):
                    results[index] = result_for(call_id, text)
            # Responses, then the boundary: what they leave pending is closed here.
            return Entry(other, True, tuple(results))
        return None

    def _by_position(self, names: list[Any], claimed: set[Any]) -> list[str]:
        """The calls that responses without an id answer, by name and position in the last turn.

        The k-th such response named N answers the k-th call named N that no
        response claimed by id; one past them answers a call the turn never made.
        """
        by_name: dict[str, list[str]] = {}
        for call in self._calls:
            by_name.setdefault(call.name or "", []).append(call.id)
        open_calls: dict[str, list[str]] = {}
        taken: dict[str, int] = {}
        ids = []
        for name in names:
            key = name if type(name) is str else ""
            calls = by_name.get(key, ())
            free = open_calls.get(key)
            if free is None:
                free = open_calls[key] = [c for c in calls if c not in claimed]
            j = taken[key] = taken.get(key, 0) + 1
            if j <= len(free):
                ids.append(free[j - 1])
            else:
                ids.append(f"{key}#{len(calls) + j - len(free)}@{self._turn}")
        return ids

    def _answered_ids(self, responses: list[Any]) -> list[Any]:
        """The call id each response answers, as ``classify`` pairs them."""
        ids: list[Any] = [r.get("id") for r in responses]
        ids = [i if type(i) is str and i else None for i in ids]
        loose = [index for index, i in enumerate(ids) if i is None]
        if loose:
            claimed = {i for i in ids if i is not None}
            for index, call_id in zip(loose, self._by_position([responses[i].get("name") for i in loose], claimed)):
                ids[index] = call_id
        return ids

    def not_run_records(self, closed: Sequence[PendingCall], before: Any) -> Insertion:
        records = [self._part(p.call) for p in closed]
        parts = before.get("parts") if type(before) is dict else None
        if type(parts) is list and _users(before.get("role")):
            # The next Content is the user turn the responses belong in: one
            # function response turn answers the whole call turn.
            merged = {**before, "parts": _after_responses(parts, records)}
            return Insertion([], merged, [merged] * len(closed))
        record = {"role": self._results_role, "parts": records}
        return Insertion([record], answers=[record] * len(closed))

    def _part(self, call: ToolCall) -> dict[str, Any]:
        response: dict[str, Any] = {}
        if call.context is not None:
            response["id"] = call.context
        response["name"] = call.name
        response["response"] = {"output": self.marker}
        return {"functionResponse": response}

    def shape(self, obj: Any) -> Shape | None:
        """What a Content is for the --target checks (APX3xx)."""
        if type(obj) is not dict or type(obj.get("parts")) is not list:
            return None
        role = obj.get("role")
        if role == "model":
            side = "assistant"
        elif _users(role):
            side = "user"
        else:
            return None
        calls, results = [], []
        empty = kept = 0
        other = False
        for part in obj["parts"]:
            if type(part) is not dict:
                continue
            if part == _EMPTY_TEXT:
                empty += 1
                continue
            kept += 1
            call, response = part.get("functionCall"), part.get("functionResponse")
            if type(call) is dict:
                if type(call.get("id")) is str and call["id"]:
                    calls.append(call["id"])
            elif type(response) is dict:
                if type(response.get("id")) is str and response["id"]:
                    results.append(response["id"])
            else:
                other = True
        return Shape.of_blocks(side, other, calls, results, empty, kept)

    def without_empty_text(self, obj: Any) -> Any:
        # Only a part that is nothing but empty text: one with a thoughtSignature is kept.
        return {**obj, "parts": [p for p in obj["parts"] if p != _EMPTY_TEXT]}

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        parts = obj.get("parts") if type(obj) is dict else None
        if type(parts) is not list:
            return DROP
        responses = [p.get("functionResponse") for p in parts if type(p) is dict and type(p.get("functionResponse")) is dict]
        ids = iter(reversed(self._answered_ids(responses)))
        # The stray responses of an id are its last occurrences: an earlier one
        # may have answered the call.
        to_drop = Counter(call_ids)
        kept_reversed = []
        for part in reversed(parts):
            if type(part) is dict and type(part.get("functionResponse")) is dict:
                call_id = next(ids)
                if to_drop[call_id] > 0:
                    to_drop[call_id] -= 1
                    continue
            kept_reversed.append(part)
        if not kept_reversed:
            return DROP
        return {**obj, "parts": kept_reversed[::-1]}


def _users(role: Any) -> bool:
    return role is None or role == "user" or role == "function" or role == ""


def _after_responses(parts: list[Any], records: list[Any]) -> list[Any]:
    """``parts`` with ``records`` right after its last functionResponse (at the front if it has none)."""
    at = 0
    for index, part in enumerate(parts):
        if type(part) is dict and type(part.get("functionResponse")) is dict:
            at = index + 1
    return [*parts[:at], *records, *parts[at:]]


def _detect_one(obj: dict[str, Any]) -> int:
    # A Content has parts and an optional role, and nothing else.
    role = obj.get("role")
    if obj.keys() - _KEYS or (role is not None and (type(role) is not str or role not in _ROLES)):
        return Detection.NO
    parts = obj.get("parts")
    if type(parts) is not list:
        return Detection.NO
    level = Detection.CERTAIN if role == "model" else Detection.COMPATIBLE
    for part in parts:
        # Other formats' part lists (the AI SDK's UI messages, say) type their parts.
        if type(part) is not dict or "type" in part:
            return Detection.NO
        fields = part.keys() & _PART_FIELDS
        if not fields:
            return Detection.NO
        if "text" in fields and type(part["text"]) is not str:
            return Detection.NO
        if fields & _DECISIVE:
            level = Detection.CERTAIN
    return level


ADAPTER = GeminiApiAdapter
