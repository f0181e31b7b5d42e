"""Batch output: a PR-ready REPORT.md per repository and the summary table."""

from __future__ import annotations

import os
import shutil
import sys

from codemods import registry
from codemods.batch.result import RepoResult

NARROW_BELOW = 120
"""Below this many columns the summary is one line per repository (the table needs about 160)."""

def _outcomes(counts: dict[str, int] | None) -> str:
    if not counts:
        return "—"
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if n)


def _codemod_rows(rewrites: dict[str, int]) -> list[str]:
    rows = ["| codemod | name | safety | rewrites |", "|---|---|---|---|"]
    for code, count in sorted(rewrites.items()):
        try:
            spec = registry.get(code)
            rows.append(f"| {code} | `{spec.name}` | {spec.safety.value} | {count} |")
        except registry.SelectionError:
            rows.append(f"| {code} | | | {count} |")
    return rows


def markdown_report(result: RepoResult, diffstat: str, checked, report) -> str:
    out = [f"# torch-migrate: {result.name}", "", f"**Status:** {result.status} — {result.message}", ""]
    if result.target:
        out += [f"**Target:** {result.target}", ""]
    if result.target_warning:
        out += [f"**Warning:** {result.target_warning}", ""]
    if result.era:
        out += [f"**Era (the torch the code was written for):** {result.era}", ""]
    if result.commit:
        out += [f"Branch `{result.branch}` at `{result.commit[:12]}` (from `{(result.base or '')[:12]}`).", ""]
    if diffstat:
        out += ["## Changes", "", "```", diffstat, "```", ""]
    if result.rewrites:
        out += ["## Codemods applied", "", *_codemod_rows(result.rewrites), ""]
    for spec in registry.all_specs():
        if spec.report_note is not None and spec.code in result.rewrites:
            heading, note = spec.report_note
            out += [f"## {heading}", "", note, ""]
    if report is not None and report.findings:
        out += ["## To review", ""]
        for f in report.findings:
            kind = "review" if f.kind == "review" else "finding"
            out.append(f"- `{f.path}:{f.line}` {f.code} ({kind}): {f.message}")
        out.append("")
    if result.problems:
        out += ["## Files left untouched", "", *(f"- {p}" for p in result.problems), ""]
    if checked is not None:
        out += ["## Verification", ""]
        row = "tests"
        if getattr(checked, "test_command", None) == "smoke check":  # verify/smoke.py: the project has no tests
            row = "smoke checks"
            out += ["No tests: the generated smoke check ran instead (imports, models, scripts' `--help`).", ""]
        if result.tests_baseline is not None:
            torch = result.torch
            out += [
                f"| | before (torch {torch.get('before')}) | baseline (torch {torch.get('baseline')}) | after (torch {torch.get('after')}) |",
                "|---|---|---|---|",
                f"| {row} | {_outcomes(result.tests_before)} | {_outcomes(result.tests_baseline)} | {_outcomes(result.tests_after)} |",
                "",
                "The baseline is the original code on the target torch: a test that passed before and fails",
                "after is a regression when it passes there, and unfixed (the upgrade broke it) when it does not.",
            ]
        else:
            out += ["| | before | after |", "|---|---|---|"]
            out.append(f"| {row} | {_outcomes(result.tests_before)} | {_outcomes(result.tests_after)} |")
        out.append("")
        if result.regressions:
            out += ["**Regressions:**", "", *(f"- `{t}`" for t in result.regressions), ""]
        if result.culprits:
            out += [f"Caused by: {', '.join(result.culprits)}", ""]
        if result.unfixed:
            out += ["**Unfixed** (broken by the torch upgrade; no codemod repaired them):", ""]
            for c in checked.unfixed:
                out.append(f"- `{c.test_id}`: {c.baseline_message}")
                out += [f"  - finding: {f}" for f in c.findings]
            out.append("")
        fixed = [c.test_id for c in checked.fixed]
        if fixed:
            out += ["**Fixed by the migration:**", "", *(f"- `{t}`" for t in fixed), ""]
        if getattr(checked, "coverage", None) is not None:
            out += checked.coverage.markdown()
        if checked.device is not None:
            out += [f"Device: {_device(checked.device)}", ""]
    else:
        out += ["Not verified (`--no-verify`).", ""]
    return "\n".join(out)


def _device(device) -> str:
    return device.summary


def untouched(result: RepoResult, shown: int = 3) -> str:
    """`2 file(s) left untouched: a.py, b.py`: the first few by name, then how many more."""
    files = result.untouched or result.problems  # a state file from before `untouched` has only the problems
    return f"{len(files)} file(s) left untouched: {_first(files, shown)}"


def _first(files: list[str], shown: int) -> str:
    return ", ".join(files[:shown]) + (f" and {len(files) - shown} more" if len(files) > shown else "")


def not_python3(result: RepoResult, shown: int = 3) -> str:
    """`2 file(s) not Python 3: a.py, b.py`: they will not import after the migration either."""
    return f"{len(result.not_python3)} file(s) not Python 3: {_first(result.not_python3, shown)}"


def summary_table(results: list[RepoResult], resumed: set[str]):
    from rich.table import Table

    table = Table(title="torch-migrate batch")
    three = any(r.tests_baseline is not None for r in results)
    tests_column = "tests before → baseline → after" if three else "tests before → after"
    for column in ("repo", "status", "files", "rewrites", "findings", tests_column, "regressions", "branch", "commit"):
        table.add_column(column, overflow="fold")
    for r in results:
        status = r.status + (" (resumed)" if r.name in resumed else "")
        if r.status == "failed":
            status += f": {r.message}"
        elif r.problems:
            status += f" ({untouched(r)}; see REPORT.md)"
        if r.status != "failed" and r.not_python3:
            status += f" ({not_python3(r)})"
        if r.tests_before is None:
            tests = "—"
        elif r.tests_baseline is not None:
            tests = f"{_outcomes(r.tests_before)} → {_outcomes(r.tests_baseline)} → {_outcomes(r.tests_after)}"
        else:
            tests = f"{_outcomes(r.tests_before)} → {_outcomes(r.tests_after)}"
        if r.unfixed:
            tests += f" ({len(r.unfixed)} unfixed)"
        table.add_row(
            r.name, status, str(r.files_changed), str(sum(r.rewrites.values())), str(r.findings), tests,
            ", ".join(r.regressions) or "0", r.branch if r.commit else "—", (r.commit or "—")[:10],
        )  # fmt: skip
    return table


def summary_width(stream=None) -> int:
    """The width the summary is laid out for: $COLUMNS when set, else the terminal's; a pipe or a
    file (a CI log) gets the wide table."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    if stream.isatty():
        return shutil.get_terminal_size((160, 24)).columns
    return 160


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def summary_lines(results: list[RepoResult], resumed: set[str], width: int) -> list[str]:
    """The narrow summary: one line per repository within `width` (what does not fit is left to its
    REPORT.md): the status first, then what a reader needs next (regressions, tests, files)."""
    names = max((len(r.name) for r in results), default=4)
    name_width = min(names, max(width // 6, 8))
    lines = ["torch-migrate batch (details: each repository's REPORT.md)"]
    for r in results:
        head = f"{_fit(r.name, name_width):<{name_width}}  {r.status}" + (" (resumed)" if r.name in resumed else "")
        if r.status == "failed":
            lines.append(_fit(f"{head}: {r.message}", width))
            continue
        parts = []
        if r.regressions:
            parts.append(_count(len(r.regressions), "regression"))
        if r.tests_before is not None:
            parts.append(f"tests {_outcomes(r.tests_before)} → {_outcomes(r.tests_after)}")
        if r.unfixed:
            parts.append(f"{len(r.unfixed)} unfixed")
        parts.append(f"{_count(r.files_changed, 'file')}, {_count(sum(r.rewrites.values()), 'rewrite')}")
        if r.problems:
            parts.append(f"{len(r.untouched or r.problems)} untouched")
        if r.not_python3:
            parts.append(f"{len(r.not_python3)} not Python 3")
        if r.commit:
            parts.append(r.commit[:10])
        line = head
        for index, part in enumerate(parts):
            candidate = f"{line}{': ' if index == 0 else '; '}{part}"
            room = width if index == len(parts) - 1 else width - 2  # the last part needs no " …" after it
            if len(candidate) > room:
                line = _fit(line + " …", width)
                break
            line = candidate
        lines.append(line)
    return lines


def print_summary(results: list[RepoResult], resumed: set[str], width: int | None = None) -> None:
    """The summary on stdout: the table when `width` (default `summary_width()`) has room for it,
    else one line per repository."""
    import click

    width = width or summary_width()
    if width < NARROW_BELOW:
        click.echo("\n".join(summary_lines(results, resumed, width)))
        return
    from rich.console import Console

    Console(width=width).print(summary_table(results, resumed))
