"""`apx-doctor rule` and the README's table come from the one registry."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from apx_doctor.rules import RULES, markdown_table

from ._cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
TABLE = re.compile(r"<!-- rules-table:start -->\n(.*?)<!-- rules-table:end -->", re.DOTALL)


def test_rule_explains_meaning_why_example_and_fix() -> None:
    result = run_cli("rule", "APX001")
    assert result.exit_code == 0
    rule = RULES["APX001"]
    out = result.stdout
    assert out.startswith("# APX001 interrupted-tool-call\n")
    for part in (rule.summary, rule.explanation, rule.fix, "Example:", '"name":"browser_text"'):
        assert part in out, part


def test_rule_takes_a_name_or_lower_case() -> None:
    assert run_cli("rule", "orphan-tool-result").stdout == run_cli("rule", "apx002").stdout != ""


def test_rule_all_lists_every_code_once() -> None:
    out = run_cli("rule", "--all").stdout
    assert re.findall(r"^# (APX\d{3}) ", out, re.MULTILINE) == list(RULES)


def test_rule_usage_errors() -> None:
    unknown = run_cli("rule", "APX999")
    assert unknown.exit_code == 2 and "no rule 'APX999'" in unknown.stderr
    assert run_cli("rule").exit_code == 2
    assert run_cli("rule", "--all", "APX001").exit_code == 2


def test_readme_table_is_the_generated_one() -> None:
    match = TABLE.search((ROOT / "README.md").read_text())
    assert match, "the README lost its rules-table markers"
    assert match.group(1) == markdown_table(), "README table is stale: replace it with `python -m apx_doctor.rules --markdown`"


def test_generator_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "apx_doctor.rules", "--markdown"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == markdown_table()
    assert all(f"`{code}`" in done.stdout for code in RULES)
