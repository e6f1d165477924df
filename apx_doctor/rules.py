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
            "unexpected `tool_use_id` found in `tool_result` blocks)."
        ),
        example='{"role":"user","content":"hi"}\n{"role":"tool","tool_call_id":"call_9","content":"42"}',
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
            "immediately after). The result is real, so it still answers its call; the fix changes "
            "only the order of the blocks in that message, never what they say."
        ),
        example=(
            '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]}\n'
            '{"role":"user","content":[{"type":"text","text":"here it is"},'
            '{"type":"tool_result","tool_use_id":"toolu_1","content":"20 C"}]}'
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
        f"What it means: {rule.summary}.",
        "",
        f"Why it matters: {rule.explanation}",
    ]
    if rule.example:
        parts += ["", "Example:", "", *("    " + line for line in rule.example.splitlines())]
    return "\n".join(parts) + "\n"


def markdown_table() -> str:
    """The README's table of codes; a test keeps the README equal to it."""
    rows = ["| code | name | severity | what it means | fix |", "|---|---|---|---|---|"]
    for rule in _RULES:
        cells = (f"`{rule.code}`", f"`{rule.name}`", str(rule.severity), rule.summary, rule.fix)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m apx_doctor.rules --markdown
    import sys

    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m apx_doctor.rules --markdown")
    sys.stdout.write(markdown_table())
