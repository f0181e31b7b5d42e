"""`--statistics`: how often each code fired, one line per code (ruff's `--statistics`)."""

from __future__ import annotations

from collections import Counter

from codemods import registry
from codemods.results import Report


def statistics(report: Report) -> list[dict]:
    """Per code: its rewrites (made or pending) and its open findings, most frequent first.
    Review notes are not counted again: each is one of its code's rewrites."""
    rewrites = report.rewrites
    findings = Counter(f.code for f in report.open_findings)
    rows = []
    for code in set(rewrites) | set(findings):
        try:
            name = registry.get(code).name
        except registry.SelectionError:
            name = ""
        count = rewrites[code] + findings[code]
        rows.append({"code": code, "name": name, "count": count, "rewrites": rewrites[code], "findings": findings[code]})
    return sorted(rows, key=lambda row: (-row["count"], row["code"]))


def statistics_lines(report: Report) -> list[str]:
    """`count  CODE  name  (n rewrite(s), m finding(s))`, one line per code."""
    return [
        f"{row['count']:>5}  {row['code']}  {row['name']:<26} ({row['rewrites']} rewrite(s), {row['findings']} finding(s))"
        for row in statistics(report)
    ]
