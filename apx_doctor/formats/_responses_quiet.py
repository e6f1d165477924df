"""The Responses format's quiet lines: the few fields that prove an item gives the engine nothing to do.

Imported only by ``ResponsesAdapter.quiet_lines``, once a check has lines past
the head, so that a short run never imports msgspec. What ``classify`` makes of
an item, told from its ``type``, ``role``, ``call_id`` (``id`` for a local
shell output) and ``output``:

* a user, system or developer message, or a compaction: a boundary; taken
  (``QUIET``) only with nothing pending, since otherwise it closes calls;
* an assistant message, a self-contained server item (reasoning, web search,
  MCP...) or an item type the adapter does not know: passed over; taken
  anywhere, held within a step;
* a call (``function_call``, ``custom_tool_call``...) with a string
  ``call_id``: it opens a step with nothing pending, and joins the step in
  progress otherwise, unless that id is still waiting (the engine's APX005);
* an output whose call is waiting and whose ``output`` is neither the marker
  nor a placeholder: it answers that call, and ends the step with the last.

Each call is an item of its own, so a step is what lies between the first
call made with nothing pending and the output that leaves nothing pending:
calls, outputs in any order, and items passed over. Anything else deviates,
and the general code reads it: an item without ``type`` or ``role``, a call
without a string ``call_id`` (which ``classify`` passes over), client and
server tool search (told apart by a field not typed here), a stray output, a
boundary with calls pending, a field of an unexpected type.

The adapter keeps no state between lines: ``classify`` depends on the line and
the marker alone, so nothing needs to be followed here but the step.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step
from ._quiet_results import PlainResults
from .base import FormatAdapter
from .responses import _CALLS, _COMPACTION, _OUTPUTS, _TOOL_SEARCH_CALL, _TOOL_SEARCH_OUTPUT

# A call or an output, or passed over, as its ``execution`` says (not typed here): read whole.
_TOOL_SEARCH = frozenset({_TOOL_SEARCH_CALL, _TOOL_SEARCH_OUTPUT})


class _Item(msgspec.Struct, gc=False):
    # Unknown keys are skipped; of a key given twice the last counts, as in
    # orjson's dict. A field of another JSON type than the one typed here is
    # not typed: the line goes the general way, which says what it is.
    type: str | None = None
    # A role outside these is no entry of the format (APX104): not typed.
    role: Literal["user", "assistant", "system", "developer"] | None = None
    call_id: str | None = None
    # Only a local shell output's link to its call, when it has no call_id.
    id: str | None = None
    # Kept as its raw JSON: only a short one is read.
    output: msgspec.Raw = msgspec.Raw(b"null")


class ResponsesQuietLines:
    """``quiet.QuietLines`` for Responses input items."""

    def __init__(self, adapter: FormatAdapter) -> None:
        self.decode = msgspec.json.Decoder(_Item).decode
        results = PlainResults(adapter)
        self.plain = results.plain
        # Asked here first: a long result (the common case) costs no call.
        self.plain_above = results.plain_above

    def text_bytes(self, line: _Item) -> int:
        output = line.output
        return len(output) if memoryview(output)[0] == 0x22 else 0

    def thread(self) -> None:
        return None  # one thread

    def opens(self, line: _Item, raw: bytes) -> bool:
        return (line.type is None or line.type == "message") and line.role == "user"

    def take(self, line: _Item, step: Step) -> int:
        kind = line.type
        waiting = step.waiting
        if kind is None or kind == "message":
            role = line.role
            if role == "assistant":  # part of the response around it: passed over
                return QUIET if waiting is None else HELD
            if role is None:  # an item reference without its type, or no entry of the format
                return DEVIATES
            # A user, system or developer message: a boundary, which closes what is pending.
            return QUIET if waiting is None else DEVIATES
        if kind in _OUTPUTS:
            call_id = line.call_id
            if call_id is None and kind == "local_shell_call_output":
                call_id = line.id  # the SDK links this output by its ``id``
            # (None is in no set: an output that links to no call is stray.)
            if waiting is None or call_id not in waiting:
                return DEVIATES
            output = line.output
            # ``plain``'s first test inlined: most outputs are long strings.
            if not (len(output) > self.plain_above and memoryview(output)[0] == 0x22) and not self.plain(output):
                return DEVIATES
            waiting.remove(call_id)
            step.answered.append(call_id)
            if waiting:
                return HELD
            step.waiting = None
            return ENDS
        if kind in _CALLS:
            call_id = line.call_id
            if call_id is None:  # passed over by ``classify``: odd enough to read whole
                return DEVIATES
            if waiting is None:
                step.waiting = {call_id}
                step.mark = len(step.answered)
                return OPENS
            if call_id in waiting:  # a call id already waiting: the engine reports it
                return DEVIATES
            waiting.add(call_id)
            return HELD
        if kind == _COMPACTION:  # a boundary
            return QUIET if waiting is None else DEVIATES
        if kind in _TOOL_SEARCH:
            return DEVIATES
        # A self-contained server item, or an item type of a newer API: passed over.
        return QUIET if waiting is None else HELD
