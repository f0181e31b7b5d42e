"""SARIF 2.1.0: findings, rewrites and errors for code-scanning UIs (GitHub, GitLab, VS Code)."""

from __future__ import annotations

from pathlib import Path

from codemods import __version__
from codemods.registry import Spec, all_specs
from codemods.report.edits import Edit, changes, file_edits
from codemods.results import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The tool is not published and has no public home yet: no link (SARIF makes `informationUri` optional).
INFO_URI: str | None = None


def _rule(spec: Spec) -> dict:
    return {
        "id": spec.code,
        "name": spec.name,
        "shortDescription": {"text": spec.summary},
        "fullDescription": {"text": spec.doc.strip().splitlines()[0] if spec.doc.strip() else spec.summary},
        "help": {"text": spec.doc.strip() or spec.summary},
        "properties": {"safety": spec.label},
    }


def _location(path: str, line: int = 0, column: int = 0, end_line: int = 0) -> dict:
    physical: dict = {"artifactLocation": {"uri": Path(path).as_posix()}}
    if line > 0:
        physical["region"] = {"startLine": line, "startColumn": column + 1}
        if end_line > line:
            physical["region"]["endLine"] = end_line
    return {"physicalLocation": physical}


def changed_lines(diff: str) -> list[tuple[int, int]]:
    """The (first, last) lines of the original file each change of a unified diff touches; a
    pure insertion is placed on the line it follows (or line 1)."""
    return [
        (c.line, c.line + c.count - 1) if c.count else (max(c.line - 1, 1), max(c.line - 1, 1)) for c in changes(diff)
    ]


def _lines_text(spans: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _fix_result(path: str, edit: Edit, index: dict[str, int]) -> dict:
    """One pending rewrite: located on the region it replaces, with that replacement as its fix."""
    lines = _lines_text([(edit.first_line, edit.last_line)])
    also = f" (with {', '.join(edit.codes[1:])})" if len(edit.codes) > 1 else ""
    uri = {"uri": Path(path).as_posix()}
    return {
        "ruleId": edit.code,
        **({"ruleIndex": index[edit.code]} if edit.code in index else {}),
        "level": "warning",
        "message": {"text": f"{edit.code}{also} would change this file (lines {lines})"},
        "locations": [{"physicalLocation": {"artifactLocation": uri, "region": edit.region()}}],
        "fixes": [
            {
                "description": {"text": f"apply the {edit.code} rewrite of lines {lines}"},
                "artifactChanges": [
                    {
                        "artifactLocation": uri,
                        "replacements": [{"deletedRegion": edit.region(), "insertedContent": {"text": edit.replacement}}],
                    }
                ],
            }
        ],
        "properties": {"codes": list(edit.codes)},
    }


def render(report: Report) -> dict:
    index = {spec.code: i for i, spec in enumerate(all_specs())}
    results = []
    for finding in report.findings:
        message = finding.message + (f" Suggested: {finding.suggestion}" if finding.suggestion else "")
        results.append(
            {
                "ruleId": finding.code,
                **({"ruleIndex": index[finding.code]} if finding.code in index else {}),
                "level": "note" if finding.kind == "review" else "warning",
                "kind": "review" if finding.kind == "review" else "fail",
                "message": {"text": message},
                "locations": [_location(finding.path, finding.line, finding.column)],
            }
        )
    if report.mode != "write":
        for changed in report.changed:
            edits = file_edits(changed)
            if edits:
                results.extend(_fix_result(changed.path, edit, index) for edit in edits)
                continue
            # A notebook's diff counts lines per cell, not in the .ipynb file: no region there.
            for code, count in sorted(changed.rewrites.items()):
                results.append(
                    {
                        "ruleId": code,
                        **({"ruleIndex": index[code]} if code in index else {}),
                        "level": "warning",
                        "message": {"text": f"{count} rewrite(s) by {code} would change this file"},
                        "locations": [_location(changed.path)],
                    }
                )
    notifications = [
        {
            "level": "error",
            "message": {"text": problem.reason},
            "locations": [_location(problem.path, problem.line)],
            **({"associatedRule": {"id": problem.code}} if problem.code else {}),
        }
        for problem in report.problems
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torch-migrate",
                        "version": __version__,
                        **({"informationUri": INFO_URI} if INFO_URI else {}),
                        "rules": [_rule(spec) for spec in all_specs()],
                    }
                },
                "invocations": [
                    {"executionSuccessful": not report.problems, "toolExecutionNotifications": notifications}
                ],
                "columnKind": "unicodeCodePoints",  # libcst's columns, and the edits': str indexes + 1
                "results": results,
            }
        ],
    }
