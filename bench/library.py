"""Library row: the LangChain middleware against deepagents' patch middleware, on the same history.

    python bench/library.py MESSAGES RUNS   ->  JSON with the medians (or why the peer is missing)

Both get the same in-memory chat history as LangChain message objects, built
before any clock starts, and are timed on the same hook
(``before_agent(state, runtime)``), alternately, run after run. Ours answers
each interrupted call with the not-run record at its place and reports what it
found through ``logging``: the bench gives that logger a handler that drops
records, so each record is still made, as in an application that configured
logging, but nothing is printed. ``repair_messages`` on the history as plain
dicts is timed too, for the row's context.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import chat_history

from apx_doctor import repair_messages


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _langchain(messages: list[dict]):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out = []
    for m in messages:
        role = m["role"]
        if role == "system":
            out.append(SystemMessage(content=m["content"]))
        elif role == "user":
            out.append(HumanMessage(content=m["content"]))
        elif role == "tool":
            out.append(ToolMessage(content=m["content"], tool_call_id=m["tool_call_id"]))
        else:
            calls = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "type": "tool_call",
                }
                for c in m.get("tool_calls") or []
            ]
            out.append(AIMessage(content=m.get("content") or "", tool_calls=calls))
    return out


def _quiet_logging() -> None:
    # Records are made and handled, never printed (a configured application's cost, not a terminal's).
    log = logging.getLogger("apx_doctor")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.WARNING)


def main(size: int, runs: int) -> dict:
    messages, dangling = chat_history(size)
    plain = [_timed(lambda: repair_messages(messages)) for _ in range(runs)]
    report = {"messages": len(messages), "dangling": dangling, "plain": statistics.median(plain)}
    try:
        from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware

        from apx_doctor.integrations.langchain import InterruptedToolCallsMiddleware
    except ImportError as exc:
        report["peer_missing"] = f"{exc.name} is not installed; pip install -e '.[bench]'"
        return report
    _quiet_logging()
    history = _langchain(messages)
    state = {"messages": history}
    ours, peer = InterruptedToolCallsMiddleware(), PatchToolCallsMiddleware()
    repaired = ours.before_agent(state, None)
    report["inserted"] = len(repaired["messages"]) - 1 - len(history) if repaired else 0
    ours_times, peer_times = [], []
    for _ in range(runs):
        ours_times.append(_timed(lambda: ours.before_agent(state, None)))
        peer_times.append(_timed(lambda: peer.before_agent(state, None)))
    report["ours"] = statistics.median(ours_times)
    report["peer"] = statistics.median(peer_times)
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
