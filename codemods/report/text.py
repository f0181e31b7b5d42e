"""The human-readable report: diffs, one line per finding (or grouped by file), the files that
change, rewrite counts, errors, and why the exit code is what it is."""

from __future__ import annotations

from collections import defaultdict

import click

from codemods import registry
from codemods.report.statistics import statistics_lines
from codemods.results import Finding, Report


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
    """The unified diff of every pending rewrite (only `--diff` prints one)."""
    if report.mode != "diff":
        return ""
    diffs = "".join(f.diff or "" for f in report.files)
    return _colour_diff(diffs) if colour else diffs


def _label(finding: Finding) -> str:
    return "review" if finding.kind == "review" else finding.safety


def _order(finding: Finding) -> tuple:
    return (finding.path, finding.line, finding.column, finding.code)


def _one_line(finding: Finding) -> str:
    """`path:line:col: CODE [safety] message`, as compilers, linters and editors print it."""
    tail = f" (suggested: {finding.suggestion})" if finding.suggestion else ""
    return f"{finding.path}:{finding.line}:{finding.column + 1}: {finding.code} [{_label(finding)}] {finding.message}{tail}"


def _grouped(findings: list[Finding]) -> list[str]:
    lines: list[str] = []
    by_file = defaultdict(list)
    for finding in findings:
        by_file[finding.path].append(finding)
    for path in sorted(by_file):
        lines.append(path)
        for f in sorted(by_file[path], key=_order):
            tail = f"\n      suggested: {f.suggestion}" if f.suggestion else ""
            lines.append(f"  {f.line}:{f.column + 1}: {f.code} [{_label(f)}] {f.message}{tail}")
    return lines


def _changed_files(report: Report) -> list[str]:
    if not report.changed:
        return []
    lines = ["Changed:" if report.mode == "write" else "Would change:"]
    for f in sorted(report.changed, key=lambda f: f.path):
        lines.append(f"  {f.path}  " + ", ".join(f"{code} ({n})" for code, n in sorted(f.rewrites.items())))
    return lines


def _rewrite_counts(report: Report) -> list[str]:
    rewrites = report.rewrites
    if not rewrites:
        return []
    lines = [f"Rewrites ({'rewrote' if report.mode == 'write' else 'would rewrite'}):"]
    for code, count in sorted(rewrites.items()):
        try:
            name = registry.get(code).name
        except registry.SelectionError:
            name = ""
        lines.append(f"  {code} {name:<24} {count}")
    return lines


def exit_reason(report: Report) -> str:
    """`exit N: why`, naming each bit set, and what findings do when they set none."""
    changed, opened, errors = len(report.changed), len(report.open_findings), len(report.problems)
    why = []
    if report.mode != "write" and changed:
        fails = "--exit-zero: they do not fail" if report.exit_zero else f"pending rewrites fail --{report.mode}"
        why.append(f"{changed} file(s) would change ({fails})")
    if report.fail_on_findings and opened:
        why.append(f"{opened} open finding(s) ({'--exit-zero: they do not fail' if report.exit_zero else '--fail-on-findings'})")
    if errors:
        why.append(f"{errors} file(s) could not be processed")
    if not why:
        if report.mode == "write":
            why.append(f"{changed} file(s) rewritten" if changed else "nothing to rewrite")
        else:
            why.append("nothing would change")
    if opened and not report.fail_on_findings:
        why.append(f"{opened} open finding(s) fail only with --fail-on-findings")
    return f"exit {report.exit_code}: " + "; ".join(why)


def render(report: Report, grouped: bool = False, quiet: bool = False, statistics: bool = False) -> str:
    """The report; `quiet`: only the findings and the errors (no summary); `statistics`: one
    line per code instead of one per finding."""
    findings = sorted(report.findings, key=_order)
    if statistics:
        lines = statistics_lines(report)
    else:
        lines = _grouped(findings) if grouped else [_one_line(f) for f in findings]
    if quiet:
        return "\n".join(lines + [f"{p}" for p in report.problems])
    if lines:
        lines.append("")
    lines += _changed_files(report) + _rewrite_counts(report)
    if report.problems:
        lines.append("Errors (files left untouched):")
        lines.extend(f"  {p}" for p in report.problems)

    if report.era is not None:
        lines.append(f"era: {report.era} (the torch the code was written for: what its defaults meant)")
    if report.target is not None:
        lines.append(f"target: {report.target}")
    if report.target_warning:
        lines.append(f"warning: {report.target_warning}")
    parsed = sum(f.status.value in ("changed", "unchanged") for f in report.files)
    verb = "changed" if report.mode == "write" else "would change"
    notes = len(report.findings) - len(report.open_findings)
    review = f" ({notes} to review)" if notes else ""
    lines.append(
        f"{len(report.changed)} file(s) {verb}; {len(report.files)} checked, {parsed} parsed; "
        f"{len(report.findings)} finding(s){review}; {len(report.problems)} error(s)"
    )
    lines.append(exit_reason(report))
    return "\n".join(lines)
