"""Cline task histories: ``tasks/<id>/api_conversation_history.json``.

One JSON document: the array of Anthropic Messages API messages the task sends,
written whole each time (Cline: ``JSON.stringify(messages)``, compact, no final
line ending; Roo Code and Kilo Code write the same file the same way), each
message perhaps with a few keys of the runtime's own (``ts``, ...):

    [{"role": "user", "content": [...]}, {"role": "assistant", "content": [{"type": "tool_use", ...}]}, ...]

Each message is read exactly as the anthropic format reads one line (this
adapter wraps ``AnthropicAdapter``), and the not-run record is the same user
message of one ``tool_result`` block, inserted into the array. Only the
document's shape tells the format: a top-level array of role/content messages.
JSON Lines of such messages stay anthropic.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..engine import Entry, PendingCall
from .anthropic import AnthropicAdapter
from .base import DEFAULT_MARKER, Detection, FormatAdapter, Insertion

_ROLES = frozenset({"user", "assistant"})
# Keys of other formats' messages (OpenAI chat, Gemini): such an array is not Cline's.
_FOREIGN_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call", "parts"})


class ClineAdapter(FormatAdapter):
    name = "cline"
    description = "Cline, Roo Code, Kilo Code: api_conversation_history.json, one JSON array of Anthropic messages"
    priority = 70
    amends = AnthropicAdapter.amends
    # Read whole (apx_doctor.documents): the file is one JSON document.
    whole_file = True

    def __init__(self, *, marker: str = DEFAULT_MARKER) -> None:
        super().__init__(marker=marker)
        self._messages = AnthropicAdapter(marker=marker)

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        # Lines are never Cline's: its file is one document (``detect_document``).
        return Detection.NO

    @classmethod
    def detect_document(cls, value: Any) -> int:
        """How sure it is that one whole JSON document is a Cline history."""
        if type(value) is not list:
            return Detection.NO
        if value and all(_is_message(m) for m in value):
            return Detection.CERTAIN
        return Detection.COMPATIBLE

    @staticmethod
    def document_messages(value: Any) -> list:
        return value

    @staticmethod
    def with_messages(value: Any, messages: list) -> Any:
        return messages

    def classify(self, obj: Any) -> Entry | None:
        return self._messages.classify(obj)

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        return self._messages.not_run_records(closed, before)

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        return self._messages.drop_results(obj, call_ids)


def _is_message(value: Any) -> bool:
    if type(value) is not dict or _FOREIGN_KEYS.intersection(value):
        return False
    role = value.get("role")
    return isinstance(role, str) and role in _ROLES and isinstance(value.get("content"), (str, list))


ADAPTER = ClineAdapter
