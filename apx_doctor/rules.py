"""The one registry of rules.

Every code the doctor can report lives here, with what it means and how it is
fixed. The ``rule`` command, the README table and the SARIF rule list are all
rendered from this table, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value


class FixSafety(str, Enum):
    """How a finding is repaired, from the user's point of view."""

    SAFE = "safe"  # `fix` applies it
    OPT_IN = "opt-in"  # applied only with a flag the user passes
    NONE = "none"  # never changed by the doctor

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    fix: str
    fix_safety: FixSafety
    explanation: str
    example: str = ""
    # The provider profiles (``--target``) that refuse a history holding this
    # finding: under one of them it is an error. Under another profile it is
    # reported with ``target_severity`` (None: not reported); with no target,
    # with ``severity`` as before. See profiles.py.
    targets: tuple[str, ...] = ()
    target_severity: Severity | None = None
    # Rules checked only under a target (the APX3xx structural checks).
    target_only: bool = False
    # The providers' own error texts for it ("..." stands for what varies, an id):
    # ``search`` finds the rule from a message pasted whole out of a log.
    errors: tuple[str, ...] = ()


_EVERY_TARGET = ("anthropic", "openai-chat", "openai-responses", "bedrock", "gemini", "deepseek")

_RULES = (
    Rule(
        code="APX001",
        name="interrupted-tool-call",
        severity=Severity.ERROR,
        summary="a tool call has no result before the next non-tool entry or the end of the history",
        fix="insert the not-run record right where the next non-tool entry begins, or at the end",
        fix_safety=FixSafety.SAFE,
        explanation=(
            "The turn that made this call was cut off before a result was recorded. Model APIs "
            "refuse such a history, and a model shown one tends to invent what the tool found. "
            "The fix closes the call with one record, 'not run: the turn was interrupted', which "
            "says only that no result was received in that turn. It does not claim the action "
            "failed: the request may have reached the service. Before retrying a tool with side "
            "effects, check the current state."
        ),
        example=(
            '{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",'
            '"function":{"name":"browser_text","arguments":"{}"}}]}\n'
            '{"role":"user","content":"what did it find?"}'
        ),
    ),
    Rule(
        code="APX002",
        name="orphan-tool-result",
        severity=Severity.WARNING,
        summary="a tool result answers no pending or recently settled call",
        fix="removed only with --drop-orphans",
        fix_safety=FixSafety.OPT_IN,
        explanation=(
            "The result names a call id that no assistant entry before it requested, or one settled "
            "so long ago that the doctor no longer remembers it (a thread's last 10,000 settled calls "
            "are always remembered, up to 20,000 are: memory stays flat on histories of any length). "
            "It is ignored for pairing: it never answers a later call. APIs refuse it (Anthropic: "
            "unexpected `tool_use_id` found in `tool_result` blocks; OpenAI Chat: messages with role "
            "'tool' must be a response to a preceeding message with 'tool_calls'; Responses: No tool "
            "call found for function call output with call_id ...). Under --target it is an error, "
            "except an output before the first user item of a Responses history, which may answer a "
            "call of the conversation the server holds (previous_response_id)."
        ),
        example='{"role":"user","content":"hi"}\n{"role":"tool","tool_call_id":"call_9","content":"42"}',
        targets=_EVERY_TARGET,
        target_severity=Severity.WARNING,
        errors=(
            "unexpected `tool_use_id` found in `tool_result` blocks",
            "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
            "No tool call found for function call output with call_id ...",
        ),
    ),
    Rule(
        code="APX003",
        name="duplicate-tool-result",
        severity=Severity.WARNING,
        summary="a second result for a call that was already answered",
        fix="removed only with --drop-orphans",
        fix_safety=FixSafety.OPT_IN,
        explanation=(
            "A call has exactly one result. A second one usually comes from a retried write of the "
            "runtime; which one the model should believe is not knowable from the history."
        ),
        targets=_EVERY_TARGET,
        target_severity=Severity.WARNING,
    ),
    Rule(
        code="APX004",
        name="late-tool-result",
        severity=Severity.WARNING,
        summary="a result for a call that was already closed as interrupted",
        fix="removed only with --drop-orphans",
        fix_safety=FixSafety.OPT_IN,
        explanation=(
            "The call was closed, by a not-run record or by the next non-tool entry, before this "
            "result arrived. The result is real evidence that the tool ran, but it stands where no "
            "API accepts it."
        ),
        targets=_EVERY_TARGET,
        target_severity=Severity.WARNING,
    ),
    Rule(
        code="APX005",
        name="reused-tool-call-id",
        severity=Severity.ERROR,
        summary="two pending calls share one id",
        fix="none: which result belongs to which call cannot be known",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Results are matched to calls by id. While two calls with the same id are both waiting, "
            "a result cannot be attributed; the doctor pairs it with the first and reports this."
        ),
    ),
    Rule(
        code="APX006",
        name="placeholder-tool-result",
        severity=Severity.INFO,
        summary="a result is another runtime's placeholder, not evidence that the tool ran",
        fix="none: the call is answered structurally",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Some runtimes close interrupted calls with a marker of their own (Codex: 'aborted', "
            "Claude Code: '[Tool result missing due to internal error]'). The history is valid, but "
            "the tool may or may not have run."
        ),
    ),
    Rule(
        code="APX007",
        name="tool-result-after-content",
        severity=Severity.ERROR,
        summary="a tool result stands after other content in its message, where the API wants results first",
        fix="move the message's results to its front, in their order; every other block stays as it is",
        fix_safety=FixSafety.SAFE,
        explanation=(
            "Anthropic's Messages API answers a tool_use only from the tool_result blocks that lead the "
            "next user message: text, images or documents go after them. A result placed after other "
            "content is refused (400: `tool_use` ids were found without `tool_result` blocks "
            "immediately after; through Bedrock: Did not find 1 tool_result block(s) at the beginning "
            "of this message). The result is real, so it still answers its call; the fix changes "
            "only the order of the blocks in that message, never what they say."
        ),
        example=(
            '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]}\n'
            '{"role":"user","content":[{"type":"text","text":"here it is"},'
            '{"type":"tool_result","tool_use_id":"toolu_1","content":"20 C"}]}'
        ),
        errors=(
            "`tool_use` ids were found without `tool_result` blocks immediately after",
            "Did not find ... tool_result block(s) at the beginning of this message",
        ),
    ),
    Rule(
        code="APX101",
        name="invalid-json",
        severity=Severity.ERROR,
        summary="a line is not valid JSON",
        fix="none: fix writes nothing for such a file",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Every line of a JSONL transcript is one JSON value. A line that cannot be parsed may "
            "hold a call or a result, so the file cannot be repaired safely; it is left as it is."
        ),
    ),
    Rule(
        code="APX102",
        name="truncated-last-line",
        severity=Severity.ERROR,
        summary="the last line cannot be parsed and has no line ending (a crash mid-write)",
        fix="none: fix writes nothing for such a file",
        fix_safety=FixSafety.NONE,
        explanation=(
            "The writer stopped in the middle of a line. What the line would have said is lost; "
            "the doctor never guesses it, and never writes such a file."
        ),
    ),
    Rule(
        code="APX103",
        name="byte-order-mark",
        severity=Severity.WARNING,
        summary="the file starts with a UTF-8 byte-order mark",
        fix="none (kept)",
        fix_safety=FixSafety.NONE,
        explanation=(
            "JSON text must not start with a byte-order mark (RFC 8259). Many readers choke on it. "
            "The rest of the file is still checked, and the mark is kept as it is."
        ),
    ),
    Rule(
        code="APX104",
        name="unrecognised-entry",
        severity=Severity.WARNING,
        summary="valid JSON, but no entry of the format",
        fix="none (kept)",
        fix_safety=FixSafety.NONE,
        explanation=(
            "The line parses, but is not an entry the format defines (a number, an array, an object "
            "without a role). It neither answers nor closes a call, and is kept."
        ),
    ),
    Rule(
        code="APX105",
        name="blank-line",
        severity=Severity.WARNING,
        summary="an empty or whitespace-only line",
        fix="none (kept)",
        fix_safety=FixSafety.NONE,
        explanation="Blank lines are not JSONL entries. They are passed over and kept.",
    ),
    Rule(
        code="APX201",
        name="transcript-in-project-contract",
        severity=Severity.WARNING,
        summary="a transcript lies inside the portable project contract (.apc/ or an agent definition)",
        fix="none: move the transcript out; the doctor never edits the contract",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Transcripts are runtime state. The portable project contract (AGENTS.md, the .apc/ "
            "folder, agent definitions) is what a project hands to every runtime, and a recorded "
            "session does not belong in it. The file is still checked, but fix --in-place never "
            "writes anything under .apc/ or to AGENTS.md."
        ),
        example="$ apx-doctor check .apc/sessions/run-1.jsonl",
    ),
    Rule(
        code="APX301",
        name="duplicate-tool-call-id",
        severity=Severity.WARNING,
        summary="a tool call reuses the id of an earlier call in the history",
        fix="none: which result belongs to which call cannot be known",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. Providers pair results with calls by id over the whole "
            "request, so an id may be used once. Anthropic refuses a repeated one (`tool_use` ids "
            "must be unique), and so does Bedrock (The toolUse blocks at messages.2.content contain "
            "duplicate Ids). Renaming a call would also rename what its result answers, so the "
            "doctor reports it and changes nothing."
        ),
        example=(
            '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}]}\n'
            '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a"}]}\n'
            '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}]}'
        ),
        targets=("anthropic", "bedrock"),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=(
            "`tool_use` ids must be unique",
            "The toolUse blocks at ... contain duplicate Ids",
        ),
    ),
    Rule(
        code="APX302",
        name="duplicate-item-id",
        severity=Severity.WARNING,
        summary="two input items carry the same id",
        fix="none: which item the id names cannot be known",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. The Responses API refuses an input that holds one item id "
            "twice (Duplicate item found with id ...), as a retried write of a runtime may leave "
            "it. Both items may hold real content, so the doctor reports the second and removes "
            "neither."
        ),
        example=('{"type":"reasoning","id":"rs_1","summary":[]}\n{"type":"reasoning","id":"rs_1","summary":[]}'),
        targets=("openai-responses", "deepseek"),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=("Duplicate item found with id ...",),
    ),
    Rule(
        code="APX303",
        name="reasoning-without-following-item",
        severity=Severity.WARNING,
        summary="a reasoning item is not followed by the call or message it belongs before",
        fix="none: the item it belongs before was never recorded",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. A response cut off right after its reasoning leaves that "
            "item alone, and the Responses API refuses it (Item 'rs_...' of type 'reasoning' was "
            "provided without its required following item). The missing call or message cannot "
            "be written without inventing it, and removing the reasoning would drop recorded "
            "content, so the doctor reports it."
        ),
        example=(
            '{"role":"user","content":"hi"}\n{"type":"reasoning","id":"rs_1","summary":[]}\n{"role":"user","content":"well?"}'
        ),
        targets=("openai-responses",),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=("Item '...' of type 'reasoning' was provided without its required following item",),
    ),
    Rule(
        code="APX304",
        name="empty-text-block",
        severity=Severity.WARNING,
        summary="a message holds a text block with no text",
        fix="removed only with --drop-empty-blocks, and only where the message keeps other content",
        fix_safety=FixSafety.OPT_IN,
        explanation=(
            "Checked under --target. An interrupted turn often leaves the text block it had "
            "started, still empty. Anthropic refuses it (text content blocks must be non-empty; "
            "with a cache breakpoint: cache_control cannot be set for empty text blocks; a message "
            "whose whole content is empty: all messages must have non-empty content except for the "
            "optional final assistant message), and so does Bedrock. The block says nothing, so --drop-empty-blocks removes it; a message "
            "it is the only content of is left as it is (removing it would break the turn order)."
        ),
        example='{"role":"assistant","content":[{"type":"text","text":""},{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}]}',
        targets=("anthropic", "bedrock"),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=(
            "text content blocks must be non-empty",
            "cache_control cannot be set for empty text blocks",
            "all messages must have non-empty content except for the optional final assistant message",
        ),
    ),
    Rule(
        code="APX305",
        name="empty-tool-result",
        severity=Severity.WARNING,
        summary="a tool result has no content, or only empty text",
        fix="none: the tool's output cannot be invented",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. A result written while its tool was still running can be "
            "left with an empty content list or one empty text block. Bedrock refuses it, and "
            "Anthropic refuses its empty text block (text content blocks must be non-empty). "
            "The result is real, and only the runtime knows what the tool returned, so the doctor "
            "reports it and changes nothing."
        ),
        example=('{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":""}]}}]}'),
        targets=("bedrock",),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=("text content blocks must be non-empty",),
    ),
    Rule(
        code="APX306",
        name="roles-not-alternating",
        severity=Severity.WARNING,
        summary="two messages of one role stand in a row where the provider wants them to alternate",
        fix="none in the history; a repair under such a target never adds a second message of one role",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. Bedrock Converse, Gemini and many chat templates refuse a "
            "history whose roles do not alternate (Conversation roles must alternate "
            "user/assistant/user/assistant; A conversation must alternate between user and "
            "assistant roles; Gemini: Please ensure that multiturn requests alternate between user "
            "and model). Anthropic's own API merges such messages, so its histories often "
            "hold them. Under such a target the doctor puts each not-run record into the next "
            "user message instead of adding one, and reports the pairs already in the history."
        ),
        example=(
            '{"role":"user","content":[{"type":"text","text":"hi"}]}\n'
            '{"role":"user","content":[{"type":"text","text":"are you there?"}]}'
        ),
        targets=("bedrock", "gemini"),
        target_severity=None,
        target_only=True,
        errors=(
            "Conversation roles must alternate user/assistant/user/assistant",
            "A conversation must alternate between user and assistant roles",
            "Please ensure that multiturn requests alternate between user and model",
        ),
    ),
    Rule(
        code="APX307",
        name="tool-result-split-from-call",
        severity=Severity.WARNING,
        summary="another message stands between a tool call and its result, where the provider wants them together",
        fix="none: moving the result would reorder the history",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. OpenAI accepts an assistant message or reasoning between a "
            "call and its output; stricter providers do not. DeepSeek refused a Responses history "
            "with an assistant message between call-a and its output (No tool output found for "
            "tool call call-a.). The doctor moves no recorded line; under such a target it also "
            "writes no not-run record where one would stand split from its call, and reports "
            "that call as not fixable."
        ),
        example=(
            '{"type":"function_call","call_id":"call-a","name":"ls","arguments":"{}"}\n'
            '{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]}\n'
            '{"type":"function_call_output","call_id":"call-a","output":"a b"}'
        ),
        targets=("deepseek",),
        target_severity=None,
        target_only=True,
        errors=("No tool output found for tool call ...",),
    ),
    Rule(
        code="APX308",
        name="thinking-block-without-signature",
        severity=Severity.WARNING,
        summary="a thinking block has an empty or missing signature",
        fix="none: thinking blocks are never edited",
        fix_safety=FixSafety.NONE,
        explanation=(
            "Checked under --target. A thinking block is sent back with the signature the "
            "provider gave it; a crash mid-write can leave it empty or missing, and the API "
            "refuses it (Invalid `signature` in `thinking` block). Providers also refuse a "
            "modified thinking block, so the doctor never edits or removes one: it reports it."
        ),
        example='{"role":"assistant","content":[{"type":"thinking","thinking":"Let me look.","signature":""}]}',
        targets=("anthropic", "bedrock"),
        target_severity=Severity.WARNING,
        target_only=True,
        errors=("Invalid `signature` in `thinking` block",),
    ),
)

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}


def get_rule(code: str) -> Rule:
    return RULES[code.upper()]


def rule_markdown(rule: Rule) -> str:
    """One rule explained, as the ``rule`` command prints it."""
    parts = [
        f"# {rule.code} {rule.name}",
        "",
        f"Severity: {rule.severity}. Fix: {rule.fix_safety} ({rule.fix}).",
        "",
        *([f"Under --target: {target_severities(rule)}.", ""] if rule.targets else []),
        f"What it means: {rule.summary}.",
        "",
        f"Why it matters: {rule.explanation}",
    ]
    if rule.example:
        parts += ["", "Example:", "", *("    " + line for line in rule.example.splitlines())]
    return "\n".join(parts) + "\n"


def target_severities(rule: Rule) -> str:
    """How ``rule`` is reported under the provider profiles (``--target``), in words."""
    if not rule.targets:
        return f"{rule.severity} under every target"
    out = "error under " + ", ".join(rule.targets)
    others = str(rule.target_severity) if rule.target_severity is not None else "not reported"
    if len(rule.targets) < len(_EVERY_TARGET):
        out += f"; {others} under the others"
    if rule.target_only:
        out += "; checked only under a target"
    return out


def search(text: str) -> list[Rule]:
    """The rules whose code, name, summary, fix or explanation holds ``text``, or one of
    whose provider errors ``text`` holds (a message pasted whole out of a log, ids and all).

    Case and runs of white space, backticks and quotes are ignored, so a fragment of a
    provider's error (``unexpected tool_use_id``, with or without its backticks) finds
    the rule that quotes it.
    """
    needle = _folded(text)
    if not needle:
        return []
    return [
        rule
        for rule in _RULES
        if any(needle in _folded(part) for part in (rule.code, rule.name, rule.summary, rule.fix, rule.explanation, *rule.errors))
        or any(_holds(needle, _folded(error)) for error in rule.errors)
    ]


def _holds(needle: str, error: str) -> bool:
    """Whether ``needle`` holds the whole of ``error``, each "..." standing for anything."""
    at = 0
    for piece in error.split("..."):
        piece = piece.strip()
        found = needle.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _folded(text: str) -> str:
    kept = "".join(" " if ch in "`'\"" else ch for ch in text.lower().replace("\u2026", "..."))
    return " ".join(kept.split())


def markdown_table() -> str:
    """The README's table of codes; a test keeps the README equal to it."""
    rows = [
        "| code | name | severity | under `--target` | what it means | fix |",
        "|---|---|---|---|---|---|",
    ]
    for rule in _RULES:
        under = ", ".join(rule.targets) + " (error)" if rule.targets else "as without"
        if rule.targets and len(rule.targets) < len(_EVERY_TARGET):
            under += "; others: " + (str(rule.target_severity) if rule.target_severity else "not reported")
        severity = "only under `--target`" if rule.target_only else str(rule.severity)
        cells = (f"`{rule.code}`", f"`{rule.name}`", severity, under, rule.summary, rule.fix)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m apx_doctor.rules --markdown
    import sys

    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m apx_doctor.rules --markdown")
    sys.stdout.write(markdown_table())
