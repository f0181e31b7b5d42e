"""SARIF 2.1.0: findings, rewrites and errors for code-scanning UIs (GitHub, GitLab, VS Code)."""

from __future__ import annotations

import re
from pathlib import Path

from codemods import __version__
from codemods.registry import Spec, all_specs
from codemods.results import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
INFO_URI = "https://pypi.org/project/torch-migrate/"


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
    spans: list[tuple[int, int]] = []
    old = old_left = new_left = 0
    removed: list[int] = []
    inserted = False

    def close() -> None:
        nonlocal inserted
        if removed:
            spans.append((removed[0], removed[-1]))
        elif inserted:
            spans.append((max(old - 1, 1), max(old - 1, 1)))
        removed.clear()
        inserted = False

    for line in diff.splitlines():
        if old_left == 0 and new_left == 0:  # between hunks: headers, or the next hunk's @@
            match = _HUNK.match(line)
            if match:
                old, old_left, new_left = int(match[1]), int(match[2] or 1), int(match[3] or 1)
                old = old if old_left else old + 1  # "-5,0": the insertion comes after line 5
            continue
        if line.startswith("-"):
            removed.append(old)
            old, old_left = old + 1, old_left - 1
        elif line.startswith("+"):
            inserted, new_left = True, new_left - 1
        elif line.startswith(" ") or line == "":
            close()
            old, old_left, new_left = old + 1, old_left - 1, new_left - 1
        if old_left == 0 and new_left == 0:
            close()
    return spans


def _lines_text(spans: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


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
            # A notebook's diff counts lines per cell, not in the .ipynb file: no region there.
            spans = [] if changed.path.endswith(".ipynb") else changed_lines(changed.diff or "")
            where = f" (lines {_lines_text(spans)})" if spans else ""
            first, last = spans[0] if spans else (0, 0)
            for code, count in sorted(changed.rewrites.items()):
                results.append(
                    {
                        "ruleId": code,
                        **({"ruleIndex": index[code]} if code in index else {}),
                        "level": "warning",
                        "message": {"text": f"{count} rewrite(s) by {code} would change this file{where}"},
                        "locations": [_location(changed.path, first, 0, last)],
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
                        "informationUri": INFO_URI,
                        "rules": [_rule(spec) for spec in all_specs()],
                    }
                },
                "invocations": [
                    {"executionSuccessful": not report.problems, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
