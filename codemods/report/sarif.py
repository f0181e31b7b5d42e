"""SARIF 2.1.0: findings, rewrites and errors for code-scanning UIs (GitHub, GitLab, VS Code)."""

from __future__ import annotations

from pathlib import Path

from codemods import __version__
from codemods.registry import Spec, all_specs
from codemods.results import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://pypi.org/project/torch-migrate/"


def _rule(spec: Spec) -> dict:
    return {
        "id": spec.code,
        "name": spec.name,
        "shortDescription": {"text": spec.summary},
        "fullDescription": {"text": spec.doc.strip().splitlines()[0] if spec.doc.strip() else spec.summary},
        "help": {"text": spec.doc.strip() or spec.summary},
        "properties": {"safety": spec.kind},
    }


def _location(path: str, line: int = 0, column: int = 0) -> dict:
    physical: dict = {"artifactLocation": {"uri": Path(path).as_posix()}}
    if line > 0:
        physical["region"] = {"startLine": line, "startColumn": column + 1}
    return {"physicalLocation": physical}


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
