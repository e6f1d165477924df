"""Deterministic benchmark data: big transcripts in every format, and many small sessions.

Every file comes from one seeded random generator, so two runs write the same
bytes. Sizes follow what recorded agent sessions hold: short user prompts,
medium assistant text, small tool arguments and tool results from a few hundred
bytes to tens of kilobytes (file reads, command output). About 1% of calls get
no result (an interrupted turn), a few results answer nothing (orphans), some
sessions end their lines with CRLF, and the text mixes ASCII with accented
letters, CJK and emoji.

    python bench/generate.py [--scale 0.05] [--out bench/data]

The abstract session (turns of steps of calls) is written once per format, so
each format gets the same shape.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

SEED = 20260531
GB = 1 << 30
# Bumped when the data's shape changes, so cached files are rebuilt.
VERSION = 4
WRITE_CHUNK = 8 << 20

_WORDS = (
    "the of and to in is that for it as with was on be at by this had not are but from or have an they which "
    "one you were all we when there can an your def return self import class value error file line path test "
    "deploy dashboard status build request response config token user agent tool call result session"
).split()
_NON_ASCII = ["café", "naïve", "Zürich", "日本語", "文字列", "😀", "→", "Ωμέγα", "привет", "ß"]
_TOOLS = ["read_file", "bash", "grep", "browser_text", "write_file", "list_dir", "web_search", "edit_file"]


def _text_pool(rng: random.Random, size: int) -> str:
    """One long text that slices are cut from: cheap realistic strings."""
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_NON_ASCII) if rng.random() < 0.03 else rng.choice(_WORDS)
        sep = "\n" if rng.random() < 0.06 else " "
        parts.append(word + sep)
        length += len(word) + 1
    return "".join(parts)


@dataclass
class Call:
    id: str
    name: str
    arguments: str
    result: str | None  # None: the turn was cut before the result came


@dataclass
class Step:
    text: str
    calls: list[Call]
    # Results in the order they arrive (parallel calls finish in any order).
    order: list[int] = field(default_factory=list)


@dataclass
class Turn:
    user: str
    steps: list[Step]
    final: str | None  # None: the turn was interrupted
    orphan: str | None = None  # an id of a result that answers nothing


@dataclass
class Session:
    index: int
    system: str
    turns: list[Turn]
    crlf: bool


# How long each kind of text is, a profile a shape of file:
# "long": the original bench data (about 2.1 KB a line, results up to 40 KB);
# "short": API logs and chat exports (about 600 B a line: a sentence a user
#   turn, small arguments, results of 50-2,000 characters);
# "real": lines as long as in real Claude Code sessions (a median of about
#   1 KB, a mean of about 3.6 KB, a long tail of large tool results).
PROFILES = ("long", "short", "real")


class Shapes:
    """Draws sessions; the same seed gives the same sessions."""

    def __init__(self, seed: int, *, interrupt: float = 0.006, orphan: float = 0.002, profile: str = "long") -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}")
        self.profile = profile
        self.rng = random.Random(seed)
        self.pool = _text_pool(self.rng, 1 << 20)
        self.interrupt = interrupt
        self.orphan = orphan
        self.counter = 0
        self.calls = 0
        self.dangling = 0
        self.orphans = 0

    def text(self, low: int, high: int) -> str:
        n = int(self.rng.triangular(low, high, low + (high - low) / 4))
        start = self.rng.randrange(0, len(self.pool) - n)
        return self.pool[start : start + n]

    def sized(self, long: tuple[int, int], short: tuple[int, int]) -> str:
        """A text of the ``long`` profile's size range, or of ``short`` in the short profile."""
        return self.text(*(short if self.profile == "short" else long))

    def result_text(self) -> str:
        r = self.rng.random()
        if self.profile == "short":
            return self.text(50, 2_000)
        if self.profile == "real":
            # Log-normal: most results a few hundred bytes, a tail of whole files.
            n = min(600_000, max(20, int(self.rng.lognormvariate(6.9, 2.2))))
            start = self.rng.randrange(0, len(self.pool) - n)
            return self.pool[start : start + n]
        # Tool output: mostly a few KB, sometimes tens of KB (a long file read).
        if r < 0.5:
            return self.text(100, 2_000)
        if r < 0.9:
            return self.text(1_000, 8_000)
        return self.text(8_000, 40_000)

    def call(self) -> Call:
        self.counter += 1
        self.calls += 1
        name = self.rng.choice(_TOOLS)
        args = orjson.dumps({"path": f"src/{self.text(4, 24).strip()}.py", "query": self.sized((10, 200), (5, 60))}).decode()
        return Call(f"call_{self.counter:08d}", name, args, self.result_text())

    def session(self, index: int, max_turns: int = 12) -> Session:
        rng = self.rng
        turns = []
        for _ in range(rng.randint(1, max_turns)):
            steps = []
            final: str | None = self.sized((50, 1_500), (20, 300))
            for _ in range(rng.randint(0, 4)):
                width = rng.choices((1, 2, 3, 4), (70, 15, 10, 5))[0]
                calls = [self.call() for _ in range(width)]
                order = list(range(width))
                if width > 1 and rng.random() < 0.3:
                    rng.shuffle(order)
                steps.append(Step(self.sized((0, 400), (0, 120)), calls, order))
                if rng.random() < self.interrupt * 2:
                    # The turn is cut: some results of this step never arrive.
                    lost = rng.sample(range(width), rng.randint(1, width))
                    for i in lost:
                        calls[i].result = None
                    self.dangling += len(lost)
                    final = None
                    break
            orphan = None
            if steps and rng.random() < self.orphan * 4:
                self.counter += 1
                self.orphans += 1
                orphan = f"call_{self.counter:08d}x"
            turns.append(Turn(self.sized((20, 800), (15, 200)), steps, final, orphan))
        return Session(index, self.sized((100, 600), (40, 300)), turns, crlf=rng.random() < 0.1)


# ---------------------------------------------------------------------------
# One writer a format: a session in, the lines (dicts) out.


def chat_lines(s: Session) -> Iterator[dict]:
    yield {"role": "system", "content": s.system}
    for turn in s.turns:
        yield {"role": "user", "content": turn.user}
        for step in turn.steps:
            yield {
                "role": "assistant",
                "content": step.text or None,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in step.calls
                ],
            }
            for i in step.order:
                c = step.calls[i]
                if c.result is not None:
                    yield {"role": "tool", "tool_call_id": c.id, "content": c.result}
            if turn.orphan and step is turn.steps[-1]:
                yield {"role": "tool", "tool_call_id": turn.orphan, "content": "late output"}
        if turn.final is not None:
            yield {"role": "assistant", "content": turn.final}


def anthropic_lines(s: Session) -> Iterator[dict]:
    for turn in s.turns:
        yield {"role": "user", "content": turn.user}
        for step in turn.steps:
            blocks: list[dict] = [{"type": "text", "text": step.text}] if step.text else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": orjson.loads(c.arguments)} for c in step.calls]
            yield {"role": "assistant", "content": blocks}
            results = [
                {"type": "tool_result", "tool_use_id": step.calls[i].id, "content": step.calls[i].result}
                for i in step.order
                if step.calls[i].result is not None
            ]
            if turn.orphan and step is turn.steps[-1]:
                results.append({"type": "tool_result", "tool_use_id": turn.orphan, "content": "late output"})
            if results:
                yield {"role": "user", "content": results}
        if turn.final is not None:
            yield {"role": "assistant", "content": [{"type": "text", "text": turn.final}]}


def _responses_items(s: Session) -> Iterator[dict]:
    yield {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": s.system}]}
    for turn in s.turns:
        yield {"type": "message", "role": "user", "content": [{"type": "input_text", "text": turn.user}]}
        for step in turn.steps:
            if step.text:
                yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": step.text}]}
            for c in step.calls:
                yield {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
            for i in step.order:
                c = step.calls[i]
                if c.result is not None:
                    yield {"type": "function_call_output", "call_id": c.id, "output": c.result}
            if turn.orphan and step is turn.steps[-1]:
                yield {"type": "function_call_output", "call_id": turn.orphan, "output": "late output"}
        if turn.final is not None:
            yield {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": turn.final}]}


def responses_lines(s: Session) -> Iterator[dict]:
    return _responses_items(s)


def codex_lines(s: Session) -> Iterator[dict]:
    clock = _Clock(s.index)
    yield {
        "timestamp": clock(),
        "type": "session_meta",
        "payload": {
            "id": f"bench-{s.index}",
            "timestamp": clock.last,
            "cwd": "/home/bench/project",
            "originator": "codex_cli_rs",
            "cli_version": "0.77.0",
        },
    }
    yield {
        "timestamp": clock(),
        "type": "turn_context",
        "payload": {"cwd": "/home/bench/project", "approval_policy": "on-request", "model": "gpt-5"},
    }
    for item in _responses_items(s):
        if item.get("role") == "developer":
            continue
        yield {"timestamp": clock(), "type": "response_item", "payload": item}
        if item["type"] == "message" and item["role"] == "assistant":
            yield {"timestamp": clock(), "type": "event_msg", "payload": {"type": "token_count", "info": None}}


class _Clock:
    def __init__(self, index: int) -> None:
        self.seconds = 1_700_000_000 + index * 3_600
        self.last = ""

    def __call__(self) -> str:
        self.seconds += 1
        h, rest = divmod(self.seconds % 86_400, 3_600)
        m, sec = divmod(rest, 60)
        self.last = f"2025-01-04T{h:02d}:{m:02d}:{sec:02d}.000Z"
        return self.last


def claude_code_lines(s: Session) -> Iterator[dict]:
    clock = _Clock(s.index)
    session_id = f"00000000-0000-4000-8000-{s.index:012d}"
    counter = [0]
    parent: list[str | None] = [None]

    def line(kind: str, message: dict, **extra) -> dict:
        counter[0] += 1
        uuid = f"{s.index:08x}-0000-4000-8000-{counter[0]:012x}"
        out = {
            "parentUuid": parent[0],
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/bench/project",
            "sessionId": session_id,
            "version": "2.0.42",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": clock(),
            **extra,
        }
        parent[0] = uuid
        return out

    reply = [0]

    def assistant(blocks: list[dict]) -> Iterator[dict]:
        reply[0] += 1
        msg_id = f"msg_{s.index:06d}{reply[0]:06d}"
        for block in blocks:
            yield line(
                "assistant",
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [block],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 20},
                },
                requestId=f"req_{msg_id}",
            )

    for turn in s.turns:
        yield line("user", {"role": "user", "content": turn.user})
        for step in turn.steps:
            blocks: list[dict] = [{"type": "text", "text": step.text}] if step.text else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": orjson.loads(c.arguments)} for c in step.calls]
            yield from assistant(blocks)
            for i in step.order:
                c = step.calls[i]
                if c.result is not None:
                    yield line(
                        "user",
                        {"role": "user", "content": [{"tool_use_id": c.id, "type": "tool_result", "content": c.result}]},
                        toolUseResult={"stdout": c.result[:200], "stderr": "", "interrupted": False},
                    )
        if turn.final is not None:
            yield from assistant([{"type": "text", "text": turn.final}])


def claude_code_agent_lines(s: Session) -> Iterator[dict]:
    """A Claude Code sub-agent's own file (``agent-*.jsonl``): the same lines, each of its one sidechain thread."""
    agent = f"a{s.index:07x}"
    for line in claude_code_lines(s):
        line["isSidechain"] = True
        line["agentId"] = agent
        yield line


def datasets_lines(s: Session) -> Iterator[dict]:
    # One conversation a line: each session is one training example.
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in _TOOLS[:4]]
    messages = list(chat_lines(s))
    if turn_tail_is_call(messages):
        # A trailing call is a training target, not an interruption: end on text.
        messages.append({"role": "user", "content": "thanks"})
    yield {"messages": messages, "tools": tools}


def turn_tail_is_call(messages: list[dict]) -> bool:
    return messages[-1].get("role") in ("assistant", "tool") and messages[-1].get("content") is None


WRITERS: dict[str, Callable[[Session], Iterator[dict]]] = {
    "chat": chat_lines,
    "anthropic": anthropic_lines,
    "responses": responses_lines,
    "codex": codex_lines,
    "claude-code": claude_code_lines,
    "claude-code-agent": claude_code_agent_lines,
    "datasets": datasets_lines,
}


@dataclass
class Made:
    path: Path
    bytes: int
    lines: int
    calls: int
    dangling: int
    orphans: int


def write_transcript(
    path: Path, fmt: str, target_bytes: int, seed: int = SEED, max_turns: int = 12, profile: str = "long"
) -> Made:
    """Sessions in ``fmt`` (lines as long as ``profile`` says) written one after another until ``target_bytes``."""
    shapes = Shapes(seed, profile=profile)
    writer = WRITERS[fmt]
    size = lines = 0
    buffer: list[bytes] = []
    buffered = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        index = 0
        while size < target_bytes:
            session = shapes.session(index, max_turns)
            index += 1
            term = b"\r\n" if session.crlf else b"\n"
            for obj in writer(session):
                data = orjson.dumps(obj) + term
                buffer.append(data)
                buffered += len(data)
                lines += 1
            if buffered >= WRITE_CHUNK:
                out.write(b"".join(buffer))
                buffer.clear()
                buffered = 0
            size = out.tell() + buffered
        out.write(b"".join(buffer))
    os.replace(tmp, path)
    return Made(path, path.stat().st_size, lines, shapes.calls, shapes.dangling, shapes.orphans)


def write_folder(folder: Path, count: int, seed: int = SEED) -> Made:
    """``count`` small chat sessions, one a file."""
    shapes = Shapes(seed + 1)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("session-*.jsonl"):  # from a run at another scale
        old.unlink()
    size = lines = 0
    for index in range(count):
        session = shapes.session(index, max_turns=3)
        data = b"".join(orjson.dumps(obj) + b"\n" for obj in chat_lines(session))
        (folder / f"session-{index:05d}.jsonl").write_bytes(data)
        size += len(data)
        lines += data.count(b"\n")
    return Made(folder, size, lines, shapes.calls, shapes.dangling, shapes.orphans)


def chat_history(messages: int, seed: int = SEED) -> tuple[list[dict], int]:
    """An in-memory chat history of about ``messages`` messages (1% of calls dangling)."""
    shapes = Shapes(seed + 2)
    out: list[dict] = []
    index = 0
    while len(out) < messages:
        out.extend(chat_lines(shapes.session(index)))
        index += 1
    return out, shapes.dangling


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=float(os.environ.get("BENCH_SCALE", "1")))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--formats", default=",".join(WRITERS))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for fmt in args.formats.split(","):
        made = write_transcript(args.out / f"{fmt}.jsonl", fmt, int(GB * args.scale))
        print(f"{fmt}: {made.bytes:,} bytes, {made.lines:,} lines, {made.calls:,} calls, {made.dangling:,} dangling")
    made = write_folder(args.out / "sessions", max(20, int(5000 * args.scale)))
    print(f"sessions: {made.bytes:,} bytes in {made.lines:,} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
