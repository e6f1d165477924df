"""SARIF 2.1.0, as GitHub code scanning and other viewers take it.

One rule entry for every code in the registry, so a result's ``ruleIndex`` is
stable across runs. ``partialFingerprints`` are built from what identifies a
finding in a transcript (code, path relative to the working folder, call id or
line, position in a row), never from the message, so a reworded message does
not make an alert look new.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import orjson

from .. import __version__
from ..model import FileReport, Finding
from ..rules import RULES, Rule, Severity
from ..safe import json_dumps, json_safe, printable
from . import RenderContext, report_fixed, summary_text, write_document

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "apxDoctorFinding/v1"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(rule: Rule) -> dict[str, Any]:
    help_text = f"{rule.explanation}\n\nFix: {rule.fix}."
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.explanation},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"fixSafety": str(rule.fix_safety)},
    }


def relative_uri(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else os.path.normpath(path)
    # A name that is no UTF-8 (held as surrogate escapes) is quoted from its own bytes.
    return quote(os.fsencode(relative.replace(os.sep, "/")), safe="/")


def fingerprint(uri: str, finding: Finding) -> str:
    where = f"call={finding.call_id}" if finding.call_id is not None else f"line={finding.line}"
    key = "\0".join((finding.code, uri, where, str(finding.index)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _result(report: FileReport, finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    uri = relative_uri(report.path)
    text = printable(finding.message)
    if finding.advice:
        text += "\n" + printable(finding.advice)
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": index[finding.code],
        "level": LEVEL[finding.severity],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    # Code scanning needs a line; a finding about the whole file points at line 1.
                    "region": {"startLine": max(finding.line or 1, 1)},
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(uri, finding)},
    }
    props = {k: v for k, v in (("callId", finding.call_id), ("tool", finding.tool), ("index", finding.index)) if v is not None}
    if props:
        result["properties"] = props
    return result


def document(reports: Sequence[FileReport]) -> dict[str, Any]:
    rules = list(RULES.values())
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = [_result(r, f, index) for r in reports if r.error is None for f in r.findings]
    notifications = [
        {"level": "error", "message": {"text": printable(r.error)}, "locations": [_file_location(r)]}
        for r in reports
        if r.error is not None
    ]
    failed = bool(notifications)
    notifications += [
        {
            "level": "note",
            "message": {"text": f"skipped: not a transcript ({printable(r.skipped)})"},
            "locations": [_file_location(r)],
        }
        for r in reports
        if r.skipped is not None
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "apx-doctor",
                "version": __version__,
                "rules": [_rule(rule) for rule in rules],
            }
        },
        "invocations": [{"executionSuccessful": not failed, "toolExecutionNotifications": notifications}],
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _file_location(report: FileReport) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": relative_uri(report.path), "uriBaseId": "%SRCROOT%"}}}


def render(reports: Sequence[FileReport], ctx: RenderContext) -> None:
    write_document(ctx.out, json_safe(json_dumps(document(reports), option=orjson.OPT_INDENT_2)))
    report_fixed(reports, ctx)
    if not ctx.quiet:
        ctx.err.write(summary_text(reports, ctx) + "\n")
        ctx.err.flush()
