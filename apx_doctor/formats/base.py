"""What a format adapter is.

An adapter reads one parsed line (or one message) at a time and says what it is
in the engine's terms: an ``Entry`` that makes calls, carries results, is a turn
boundary, or is passed over. It also writes the not-run record in its own
format. Adapters are created fresh for each history, so they may keep state
(the previous reply's id, a session id) between lines.

Adding a format is one new module in this package that defines ``ADAPTER``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..engine import Entry, PendingCall, ToolResult

DEFAULT_MARKER = "not run: the turn was interrupted"

# Markers other runtimes write when they close a call they lost. They answer a
# call structurally, but are no evidence that the tool ran (APX006).
PLACEHOLDER_TEXTS = frozenset(
    {
        "aborted",
        "[Tool result missing due to internal error]",
    }
)

_PLACEHOLDER_LONGEST = max(map(len, PLACEHOLDER_TEXTS))

# Returned by ``drop_results`` when the whole line goes.
DROP = object()


class Amend(Entry):
    """An entry the API refuses as written, which a repair rewrites without changing what it says.

    It pairs like any entry; the doctor also reports ``code`` on its line and
    replaces the line with ``replacement`` (blocks put in the order the API
    demands, say). It is reported wherever it stands, so an adapter returns one
    only for an entry inside the checked history (one that opens it), and only
    if it sets ``amends``.
    """

    __slots__ = ("call_id", "code", "message", "replacement")

    def __init__(
        self,
        entry: Entry,
        code: str,
        message: str,
        replacement: Any,
        call_id: str | None = None,
    ) -> None:
        Entry.__init__(self, entry.opens_history, entry.boundary, entry.results, entry.calls, entry.thread)
        self.code = code
        self.message = message
        self.replacement = replacement
        self.call_id = call_id


@dataclass(slots=True)
class Shape:
    """What one message is for the provider profiles' checks (``profiles.Structure``).

    Built only under ``--target``, by an adapter's ``shape`` hook; the pairing
    engine never sees it.
    """

    # "call" (an item a response makes: a call, a server item), "message" (an
    # assistant message), "reasoning", "output", "turn" (a user, system or
    # developer message), or "pass" (says nothing about what follows what).
    kind: str = "message"
    # "user" or "assistant" where the format's roles must alternate; None: takes no part.
    role: str | None = None
    # A real user entry (the first one starts the history a server conversation continues).
    opens: bool = False
    # Ends the window in which results may follow their calls.
    turn: bool = False
    # The item's own id (Responses), which must be unique in the input.
    item_id: str | None = None
    calls: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    # Text blocks with no text, outside results; ``droppable``: removing them
    # leaves the message other content (``without_empty_text`` can).
    empty_text: int = 0
    droppable: bool = False
    # Results with no content, or only empty text (their call ids).
    empty_results: tuple[str | None, ...] = ()
    # Thinking blocks whose signature is empty or missing.
    unsigned_thinking: int = 0

    @classmethod
    def of_blocks(
        cls,
        role: Any,
        other: bool,
        calls: list[Any],
        results: list[Any],
        empty: int,
        kept: int,
        empty_results: Sequence[str | None] = (),
        unsigned: int = 0,
    ) -> Shape:
        """A message of content blocks: a user message with content besides its results opens a turn."""
        opens = role == "user" and other
        return cls(
            "turn" if opens else "message",
            role,
            opens=opens,
            turn=opens,
            calls=tuple(calls),
            results=tuple(results),
            empty_text=empty,
            droppable=empty > 0 and kept > 0,
            empty_results=tuple(empty_results),
            unsigned_thinking=unsigned,
        )


class Detection:
    """How sure an adapter is that sample lines are in its format."""

    NO = 0
    COMPATIBLE = 1  # nothing contradicts it, nothing proves it
    CERTAIN = 2


@dataclass(slots=True)
class Insertion:
    """The not-run records for calls closed at one place, in call order."""

    records: list[Any] = field(default_factory=list)
    # A rewritten version of the entry the records stand before, for formats
    # that link entries to each other or put results into it (None: that
    # entry is left untouched).
    replace_next: Any = None
    # For each closed call, in order, what answers it: one of ``records`` or
    # ``replace_next``, for formats where one record answers several calls
    # (one user message of results). None: ``records[i]`` answers call i.
    answers: list[Any] | None = None


@dataclass(slots=True)
class LineReview:
    """The outcome for one line that is a whole history."""

    findings: list[Any] = field(default_factory=list)
    edits: list[Any] = field(default_factory=list)
    # The repaired line (None: unchanged).
    replacement: Any = None


class FormatAdapter:
    name: ClassVar[str]
    description: ClassVar[str] = ""
    # Lower comes first when several formats fit equally well.
    priority: ClassVar[int] = 100
    # False where the last pending calls of a history are not interrupted (a
    # training example's final call is its target).
    close_at_end: ClassVar[bool] = True
    # True where every line is a whole conversation of its own (datasets):
    # then ``review_line`` handles each line instead of ``classify``.
    one_history_a_line: ClassVar[bool] = False
    # True where each entry is one message of a model API's message list
    # (chat, anthropic, ...), not a runtime's record envelope: only such
    # formats are asked what a dataset row's messages are in.
    message_list: ClassVar[bool] = False
    # True where a rewritten line is written in its original's layout
    # (separators, \u escapes) whenever the standard library reproduces that
    # line exactly (``_layout``); False: compact, as orjson writes.
    keeps_layout: ClassVar[bool] = False
    # True where ``classify`` depends on the line and the marker alone (no state
    # kept between lines): the self-check of a repair may then reuse the
    # doctor's answer for a line it writes unchanged instead of asking again.
    pure_classify: ClassVar[bool] = False
    # True where ``classify`` may return an ``Amend``: only then does the
    # engine look for one, so other formats pay nothing per line.
    amends: ClassVar[bool] = False
    # Optional, for ``repair_messages``: ``clean_run(messages, start) -> (end,
    # answered call ids)`` proves a stretch gives the engine nothing to do, so
    # the library skips feeding it (see the chat adapter). None: every message
    # is fed.
    clean_run: ClassVar[Any] = None
    # Optional, for ``check``: ``quiet_lines() -> quiet.QuietLines``, the few
    # typed fields that prove a line gives the engine nothing to do, so that a
    # quiet stretch of a file is not parsed whole (see ``apx_doctor.quiet`` and
    # the chat adapter). None: every line is parsed and classified.
    quiet_lines: ClassVar[Any] = None
    # Under a provider profile whose roles alternate (``--target bedrock``), the
    # doctor sets this: an adapter whose not-run record would be a message of
    # its own puts it into the next user message instead.
    alternating: bool = False
    # Optional, for ``--target``: ``shape(obj) -> Shape | None`` says what a
    # message is for the APX3xx checks (None: nothing to check on it). None:
    # the format has none of them.
    shape: ClassVar[Any] = None

    def __init__(self, *, marker: str = DEFAULT_MARKER) -> None:
        self.marker = marker

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        """Return a ``Detection`` level for the first parsed lines of a file."""
        raise NotImplementedError

    def classify(self, obj: Any) -> Entry | None:
        """What this line is; None if it is no entry of the format (APX104)."""
        raise NotImplementedError

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        """Records answering ``closed`` (all fixable), placed before ``before`` (None: at the end)."""
        raise NotImplementedError

    def review_line(self, number: int, obj: Any, options: Any) -> LineReview:
        """Check one line that holds a whole history (``one_history_a_line`` formats)."""
        raise NotImplementedError

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        """The line without the given stray results, or ``DROP`` to remove it whole."""
        return DROP

    def without_empty_text(self, obj: Any) -> Any:
        """``obj`` without its empty text blocks (``--drop-empty-blocks``), for a line whose
        ``Shape`` says they are ``droppable``; results and thinking blocks are left as they are."""
        return obj

    def relink(self, obj: Any) -> Any:
        """A line that links to a line ``drop_results`` removed, re-pointed (None: unchanged).

        For formats whose lines link to each other (Claude Code's uuid tree);
        asked only of lines the repair does not otherwise rewrite.
        """
        return None

    def result_for(self, call_id: Any, content: Any) -> ToolResult:
        """A result answering ``call_id`` (no call unless a string) with ``content``."""
        # This runs for every result of a file: plain text (the common case)
        # takes no call, and the text is taken once for both tests. The length
        # test comes first: a set lookup hashes the whole (often long) result.
        text = content if type(content) is str else text_of(content)
        return ToolResult(
            call_id if type(call_id) is str or isinstance(call_id, str) else None,  # type: ignore[arg-type]  # None answers no call
            text == self.marker,
            text is not None and len(text) <= _PLACEHOLDER_LONGEST and text in PLACEHOLDER_TEXTS,
        )


def detect_by_line(samples: Sequence[Any], judge: Callable[[dict[str, Any]], int | None]) -> int:
    """The surest ``Detection`` that ``judge`` gives any sample object; one NO vetoes.

    ``judge`` returns None for an object that says nothing either way.
    """
    level = Detection.NO
    for obj in samples:
        if not isinstance(obj, dict):
            continue
        verdict = judge(obj)
        if verdict == Detection.NO:
            return Detection.NO
        if verdict is not None:
            level = max(level, verdict)
    return level


def stable_uuid(namespace: bytes, name: str) -> str:
    """The uuid5 of ``name`` in ``namespace`` (16 bytes): a second run writes the same id.

    ``name`` may hold lone surrogates (valid in JSON, not in UTF-8). Imported
    lazily: a check, which inserts nothing, loads neither hashlib nor uuid.
    """
    from hashlib import sha1
    from uuid import UUID

    digest = sha1(namespace + name.encode("utf-8", "surrogatepass")).digest()
    return str(UUID(bytes=digest[:16], version=5))


def without_last_results(blocks: list[Any], call_ids: Sequence[str | None], answers: Callable[[Any], Any]) -> list[Any]:
    """``blocks`` without the stray results: for an id given n times, its last n results.

    ``answers(block)`` is the call id a block answers, or ``NOT_A_RESULT``. The
    engine pairs the first result of an id and reports the later ones, so the
    later ones are what goes.
    """
    counts: dict[str | None, int] = {}
    for call_id in call_ids:
        counts[call_id] = counts.get(call_id, 0) + 1
    kept = []
    for block in reversed(blocks):
        call_id = answers(block)
        if call_id is not NOT_A_RESULT and counts.get(call_id, 0) > 0:
            counts[call_id] -= 1
            continue
        kept.append(block)
    kept.reverse()
    return kept


# What ``without_last_results``'s ``answers`` returns for a block that is no result.
NOT_A_RESULT = object()


def str_or_none(value: Any) -> str | None:
    """``value`` if it is a string. Transcripts may hold any JSON type anywhere, and a
    dict or list where a name belongs cannot be hashed, compared by prefix or joined."""
    return value if isinstance(value, str) else None


def text_of(content: Any) -> str | None:
    """The text of a result's content, if it is plain text (a string or one text part)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1:
        part = content[0]
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            text = part.get("text")
            return text if isinstance(text, str) else None
    return None
