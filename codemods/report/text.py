"""The human-readable report: diffs, findings grouped by file, rewrite counts, errors."""

from __future__ import annotations

from collections import defaultdict

import click

from codemods import registry
from codemods.results import Report


def _colour_diff(diff: str) -> str:
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            out.append(click.style(line, bold=True))
        elif line.startswith("@@"):
            out.append(click.style(line, fg="cyan"))
        elif line.startswith("+"):
            out.append(click.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(click.style(line, fg="red"))
        else:
            out.append(line)
    return "".join(out)


def render_diff(report: Report, colour: bool) -> str:
    diffs = "".join(f.diff or "" for f in report.files)
    return _colour_diff(diffs) if colour else diffs


def render(report: Report) -> str:
    lines: list[str] = []
    by_file = defaultdict(list)
    for finding in report.findings:
        by_file[finding.path].append(finding)
    for path in sorted(by_file):
        lines.append(path)
        for f in sorted(by_file[path], key=lambda f: (f.line, f.column, f.code)):
            label = "review" if f.kind == "review" else f.code
            tail = f"\n      suggested: {f.suggestion}" if f.suggestion else ""
            lines.append(f"  {f.line}:{f.column + 1}: {f.code} [{label if label == 'review' else f.safety}] {f.message}{tail}")
    if by_file:
        lines.append("")

    rewrites = report.rewrites
    if rewrites:
        verb = "rewrote" if report.mode == "write" else "would rewrite"
        lines.append(f"Rewrites ({verb}):")
        for code, count in sorted(rewrites.items()):
            try:
                name = registry.get(code).name
            except registry.SelectionError:
                name = ""
            lines.append(f"  {code} {name:<24} {count}")
    if report.problems:
        lines.append("Errors (files left untouched):")
        lines.extend(f"  {p}" for p in report.problems)

    parsed = sum(f.status.value in ("changed", "unchanged") for f in report.files)
    verb = "changed" if report.mode == "write" else "would change"
    lines.append(
        f"{len(report.changed)} file(s) {verb}; {len(report.files)} checked, {parsed} parsed; "
        f"{len(report.findings)} finding(s); {len(report.problems)} error(s)"
    )
    return "\n".join(lines)
