"""Library row: repair_messages on an in-memory chat history, against deepagents' patch middleware.

    python bench/library.py MESSAGES RUNS   ->  JSON with both medians (or why the peer is missing)

Only the repair is timed. The peer gets the same history as LangChain message
objects, built before its clock starts.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import chat_history  # noqa: E402

from apx_doctor import repair_messages  # noqa: E402


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
                {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]), "type": "tool_call"}
                for c in m.get("tool_calls") or []
            ]
            out.append(AIMessage(content=m.get("content") or "", tool_calls=calls))
    return out


def main(size: int, runs: int) -> dict:
    messages, dangling = chat_history(size)
    ours = [_timed(lambda: repair_messages(messages)) for _ in range(runs)]
    inserted = len(repair_messages(messages).inserted)
    report = {"messages": len(messages), "dangling": dangling, "inserted": inserted, "ours": statistics.median(ours)}
    try:
        from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware
    except ImportError as exc:
        report["peer_missing"] = f"deepagents is not installed ({exc.name}); pip install -e '.[bench]'"
        return report
    history = _langchain(messages)
    middleware = PatchToolCallsMiddleware()
    peer = [_timed(lambda: middleware.before_agent({"messages": history}, None)) for _ in range(runs)]
    report["peer"] = statistics.median(peer)
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
