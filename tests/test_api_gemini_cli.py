"""The library repairs the ``messages`` array of a Gemini CLI session, as ``apx-doctor fix`` repairs the file."""

from __future__ import annotations

import copy

from apx_doctor import DEFAULT_MARKER, check_messages, repair_messages
from apx_doctor.documents import repair_document

MESSAGES = [
    {"id": "u1", "timestamp": "2026-04-29T21:00:01.000Z", "type": "user", "content": [{"text": "list the files"}]},
    {
        "id": "g1",
        "timestamp": "2026-04-29T21:00:02.000Z",
        "type": "gemini",
        "content": "looking",
        "toolCalls": [
            {
                "id": "c1",
                "name": "glob",
                "args": {"pattern": "*"},
                "status": "executing",
                "timestamp": "2026-04-29T21:00:02.000Z",
            },
            {
                "id": "c2",
                "name": "read",
                "args": {},
                "status": "success",
                "result": [{"functionResponse": {"id": "c2", "name": "read", "response": {"output": "ok"}}}],
            },
        ],
    },
    {"id": "u2", "timestamp": "2026-04-29T21:00:09.000Z", "type": "user", "content": [{"text": "well?"}]},
]


def test_a_cut_call_is_answered_in_its_own_record() -> None:
    before = copy.deepcopy(MESSAGES)
    result = repair_messages(MESSAGES, format="gemini-cli")
    (finding,) = result.findings
    assert (finding.code, finding.line, finding.index, finding.call_id, finding.fixable) == ("APX001", 2, 1, "c1", True)
    assert MESSAGES == before
    assert result.messages[0] is MESSAGES[0] and result.messages[2] is MESSAGES[2]
    (inserted,) = result.inserted
    assert inserted.index == 1 and result.messages[1] is inserted.record
    cut = inserted.record["toolCalls"][0]
    assert cut["status"] == "cancelled"
    assert cut["result"] == [{"functionResponse": {"id": "c1", "name": "glob", "response": {"output": DEFAULT_MARKER}}}]
    assert inserted.record["toolCalls"][1] == MESSAGES[1]["toolCalls"][1]
    assert result.changed
    # The same repair as a session file gets, and nothing left to do.
    assert result.messages == repair_document({"sessionId": "s", "projectHash": "p", "messages": MESSAGES}).value["messages"]
    assert check_messages(result.messages, format="gemini-cli") == []
