"""A straightforward standard-library script doing the doctor's pairing check on a chat file.

What someone would write in ten minutes: json.loads every line, remember the
calls of each assistant message, tick them off as tool messages answer them,
and report what is still open when the next non-tool message (or the end) comes.
"""

import json
import sys


def main(path: str) -> int:
    pending: dict[str, int] = {}
    dangling = orphans = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            message = json.loads(line)
            role = message.get("role")
            if role == "tool":
                if pending.pop(message.get("tool_call_id"), None) is None:
                    orphans += 1
                continue
            dangling += len(pending)
            pending.clear()
            if role == "assistant":
                for call in message.get("tool_calls") or []:
                    pending[call["id"]] = number
    dangling += len(pending)
    print(f"{dangling} calls without a result, {orphans} results without a call")
    return 1 if dangling else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
