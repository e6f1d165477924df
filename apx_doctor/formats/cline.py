"""Cline histories: the VS Code extension's ``api_conversation_history.json``, and the CLI's session file.

Two documents hold the same Anthropic Messages API messages, each message
perhaps with a few keys of the runtime's own (``id``, ``ts``, ``modelInfo``,
``metrics``):

- the extension's ``tasks/<id>/api_conversation_history.json``: a top-level
  array of messages, written whole each time (``JSON.stringify(messages)``,
  compact, no final line ending; Roo Code and Kilo Code write the same file the
  same way)::

      [{"role": "user", "content": [...]}, {"role": "assistant", "content": [{"type": "tool_use", ...}]}, ...]

- Cline CLI 3.x (``@cline/sdk``): ``~/.cline/data/sessions/<sid>/<sid>.messages.json``,
  an object written whole with ``JSON.stringify(session, null, 2)`` and a final
  line ending::

      {"version": 1, "updated_at", "agent": "lead", "sessionId", "origin": {...}, "messages": [...], "system_prompt"}

Each message is read exactly as the anthropic format reads one line (this
adapter wraps ``AnthropicAdapter``), and the not-run record is the same user
message of one ``tool_result`` block, inserted into the messages. In the CLI's
file the block also carries ``name``, the call's tool name, as Cline's own
results do: the CLI refuses a tool_result without it before sending
(``AI_TypeValidationError ... toolName``). The extension's array is sent to the
Anthropic API as it is, which refuses unknown fields, so its record has none.
The record has no ``id`` or ``ts``: Cline's loader gives a message that lacks
them its own when it next saves the session.

Only the document's shape tells the format: a top-level array of role/content
messages, or an object with the CLI's ``version``, ``agent`` and ``sessionId``
beside its ``messages``. JSON Lines of such messages stay anthropic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall
from .anthropic import AnthropicAdapter
from .base import DEFAULT_MARKER, Detection, FormatAdapter, Insertion

_ROLES = frozenset({"user", "assistant"})
# Keys of other formats' messages (OpenAI chat, Gemini): such an array is not Cline's.
_FOREIGN_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call", "parts"})
# Keys of other runtimes' session objects that also hold "messages" and "sessionId"
# (Gemini CLI's projectHash, OpenCode's info): such an object is not Cline's.
_FOREIGN_SESSION_KEYS = frozenset({"projectHash", "info", "startTime", "lastUpdated"})


class ClineAdapter(FormatAdapter):
    name = "cline"
    description = (
        "Cline, Roo Code, Kilo Code: api_conversation_history.json (one JSON array of Anthropic messages), "
        "and Cline CLI's <id>.messages.json"
    )
    priority = 70
    amends = AnthropicAdapter.amends
    # Read whole (apx_doctor.documents): the file is one JSON document.
    whole_file = True

    def __init__(self, *, marker: str = DEFAULT_MARKER) -> None:
        super().__init__(marker=marker)
        self._messages = AnthropicAdapter(marker=marker)
        # True in a Cline CLI session file (``read_document``): its record names the tool.
        self.session = False

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        # Lines are never Cline's: its file is one document (``detect_document``).
        return Detection.NO

    @classmethod
    def detect_document(cls, value: Any) -> int:
        """How sure it is that one whole JSON document is a Cline history."""
        if type(value) is dict:
            return _detect_session(value)
        if type(value) is not list:
            return Detection.NO
        if value and all(_is_message(m) for m in value):
            return Detection.CERTAIN
        return Detection.COMPATIBLE

    @staticmethod
    def document_messages(value: Any) -> list[Any]:
        messages: list[Any] = value["messages"] if type(value) is dict else value
        return messages

    def read_document(self, value: Any) -> None:
        """The document the messages come from (apx_doctor.documents): the CLI's object, or the extension's array."""
        self.session = type(value) is dict

    @staticmethod
    def with_messages(value: Any, messages: list[Any]) -> Any:
        return {**value, "messages": messages} if type(value) is dict else messages  # the same keys in the same order

    def classify(self, obj: Any) -> Entry | None:
        return self._messages.classify(obj)

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        insertion = self._messages.not_run_records(closed, before)
        if not self.session:
            return insertion
        names = {p.call.id: p.call.name for p in closed if isinstance(p.call.name, str)}
        records = [_named(record, names) for record in insertion.records]
        replace_next = None if insertion.replace_next is None else _named(insertion.replace_next, names)
        # Each call keeps the record that answers it (records[i], or the merged message).
        swap: dict[int, Any] = {id(old): new for old, new in zip(insertion.records, records)}
        if insertion.replace_next is not None:
            swap[id(insertion.replace_next)] = replace_next
        answers = None if insertion.answers is None else [swap.get(id(a), a) for a in insertion.answers]
        return Insertion(records, replace_next, answers)

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        return self._messages.drop_results(obj, call_ids)


def _is_message(value: Any) -> bool:
    if type(value) is not dict or _FOREIGN_KEYS.intersection(value):
        return False
    role = value.get("role")
    return isinstance(role, str) and role in _ROLES and isinstance(value.get("content"), (str, list))


def _detect_session(value: dict[str, Any]) -> int:
    """A Cline CLI session file: its messages beside the keys the CLI writes around them."""
    messages = value.get("messages")
    if type(messages) is not list or not isinstance(value.get("sessionId"), str):
        return Detection.NO
    if _FOREIGN_SESSION_KEYS.intersection(value):
        return Detection.NO
    # "version" and "agent" are what set the CLI's file apart from any object with a
    # sessionId and messages; without them it may only be read when named.
    written_by_cline = type(value.get("version")) is int and isinstance(value.get("agent"), str)
    if written_by_cline and all(_is_message(m) for m in messages):
        return Detection.CERTAIN
    return Detection.COMPATIBLE


def _named(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``message`` with each not-run result (a call of ``names``) naming its tool, as Cline's own results do."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [_with_name(block, names) for block in content]}


def _with_name(block: Any, names: dict[str, str]) -> Any:
    if type(block) is not dict or block.get("type") != "tool_result" or "name" in block:
        return block
    name = names.get(block.get("tool_use_id"))  # type: ignore[arg-type]
    if name is None:
        return block
    # Where Cline writes it: after the id, before the content.
    head = {key: block[key] for key in ("type", "tool_use_id") if key in block}
    return {**head, "name": name, **block}


ADAPTER = ClineAdapter
