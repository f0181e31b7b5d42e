"""Verification reports: text for the terminal, JSON for machines, Markdown for a pull request."""

from __future__ import annotations

import json

from codemods import registry
from codemods.verify.compare import ADDED, CHANGED, FIXED, FLAKY, INTENDED, MISSING, NEW_FAILING, REGRESSION, UNCHANGED, UNFIXED
from codemods.verify.model import ERROR, OK, REGRESSIONS, UNCHANGED as NOTHING, VerifyReport
from codemods.versions import format_version

SECTIONS = (
    (REGRESSION, "Regressions"),
    (MISSING, "Missing after the migration (passed before)"),
    (UNFIXED, "Unfixed (passed before; fails after and in the baseline: the torch upgrade broke it, no codemod repaired it)"),
    (INTENDED, "Intended (a codemod changes this result on purpose, its reason below; not counted)"),
    (FIXED, "Fixed by the migration"),
    (NEW_FAILING, "Newly collected, failing (not collected or not importable before; not counted)"),
    (FLAKY, "Flaky (identical runs on one side observed different outcomes; not counted)"),
    (CHANGED, "Changed, still not passing"),
    (ADDED, "Added"),
)
ARROW = "→"


def _name(code: str) -> str:
    try:
        return registry.get(code).name
    except registry.SelectionError:
        return ""


def _tally(outcomes: dict[str, int]) -> str:
    order = ("passed", "failed", "error", "skipped")
    return ", ".join(f"{outcomes[k]} {k}" for k in order if outcomes.get(k)) or "no per-test results"


def _runs(change) -> str:
    if not change.reruns_before and not change.reruns_after:
        return ""
    baseline = ""

    def fmt(first: str | None, runs: list[str | None]) -> str:
        if first is None:
            return "not rerun (absent)"
        return "/".join(x or "could not rerun" for x in runs)

    before, after = fmt(change.before, change.reruns_before), fmt(change.after, change.reruns_after)
    if change.reruns_baseline:
        baseline = f"; baseline: {fmt(change.baseline, change.reruns_baseline)}"
    return f" (reruns before: {before}{baseline}; after: {after})"


def _smoke(side) -> bool:
    return side.command.startswith("smoke check")  # verify/smoke.py: many processes, no one exit status


def _exit(side) -> str:
    return "," if _smoke(side) else f" exit {side.returncode},"


def _same(report: VerifyReport) -> str:
    same = [c for c in report.changes if c.kind == UNCHANGED]
    failing = sum(c.after in ("failed", "error") for c in same)
    return f"{len(same)} test(s) with the same outcome before and after" + (
        f" ({failing} failing on both sides)." if failing else "."
    )


def text(report: VerifyReport) -> str:
    lines = [f"verify {report.path}"]
    if report.before_device is not None:
        lines.append(f"  before:   {report.before_device.summary} (the era of the original code)")
    if report.device is not None:
        lines.append(f"  {'target:' if report.before_device is not None else 'device:'}   {report.device.summary}")
    if report.target is not None:
        lines.append(f"  for:      {report.target}")
    if report.target_warning:
        lines.append(f"  warning:  {report.target_warning}")
    if report.migration is not None:
        rewrites = ", ".join(f"{c} {_name(c)} ×{n}" for c, n in sorted(report.migration.rewrites.items()))
        lines.append(f"  migrated: {len(report.migration.changed)} file(s){': ' + rewrites if rewrites else ''}")
        for stat in report.diffstat:
            lines.append(f"    {stat.path}  +{stat.added} -{stat.removed}")
    for side in report.sides:
        torch = f", torch {side.environment['torch']}" if report.three_sides and side.environment else ""
        lines.append(
            f"  {side.label + ':':<9} `{side.command}`{_exit(side)} {_tally(side.outcomes)} ({side.seconds:.1f} s{torch})"
        )
    lines.append("")
    for kind, title in SECTIONS:
        rows = [c for c in report.changes if c.kind == kind]
        if not rows:
            continue
        lines.append(f"{title} ({len(rows)}):")
        for c in rows:
            baseline = f" (baseline: {c.baseline or 'absent'})" if report.three_sides else ""
            lines.append(f"  {c.id}  {c.before or 'absent'} {ARROW} {c.after or 'absent'}{baseline}{_runs(c)}")
            if kind == UNFIXED or (kind == FIXED and report.three_sides):
                side = "baseline"
            else:
                side = "after" if kind in (REGRESSION, CHANGED, ADDED, NEW_FAILING) else "before"
            message = getattr(c, f"{side}_message")
            if message and kind != FLAKY:
                lines.append(f"      {side}: {message}")
            for finding in c.findings:
                lines.append(f"      finding: {finding}")
            if c.fixed_by:
                lines.append(f"      fixed by: {', '.join(c.fixed_by)}")
            if c.culprits:
                lines.append(f"      culprit: {', '.join(c.culprits)}")
            if c.note:
                lines.append(f"      note: {c.note}")
        lines.append("")
    if any(c.kind == UNCHANGED for c in report.changes):
        lines.append(_same(report))
    if report.probe is not None:
        p = report.probe
        lines.append(f"Probe `{p.command}`: {p.status} ({p.compared} number(s) compared)")
        if p.divergence is not None:
            d = p.divergence
            tb = f" (torch {p.before_torch})" if p.before_torch != p.after_torch else ""
            ta = f" (torch {p.after_torch})" if p.before_torch != p.after_torch else ""
            lines += [f"  first divergence, output line {d.line}: {d.reason}", f"    before{tb}: {d.before}", f"    after{ta}:  {d.after}"]
        if p.status == "after-failed":
            lines.append(f"  after (exit {p.after_returncode}): {p.after_tail.splitlines()[-1] if p.after_tail else ''}")
        if p.culprits:
            lines.append(f"  culprit: {', '.join(p.culprits)}")
    if p := report.probe:
        if p.intended:
            lines.append(f"  intended: {p.intended}")
    if report.coverage is not None:
        lines.append(report.coverage.line())
    if report.unexplained:
        lines.append(f"No single codemod explains: {', '.join(report.unexplained)}")
    if report.without_culprits is not None:
        w = report.without_culprits
        if w.clean:
            lines.append(f"Without {', '.join(w.units)}: no regressions; `run --verify --drop-culprits` writes the rest.")
        else:
            lines.append(f"Without {', '.join(w.units)}: still {len(w.regressions)} regression(s){'; probe ' + w.probe if w.probe else ''}.")
    for note in report.notes:
        lines.append(f"note: {note}")
    if report.copies:
        lines.append(f"copies kept in {report.copies}")
    label = {OK: "OK", NOTHING: "OK", REGRESSIONS: "REGRESSIONS", ERROR: "COULD NOT VERIFY"}[report.status]
    if report.status == REGRESSIONS and report.unfixed and not report.regressions:
        label = "UNFIXED"  # the migration broke nothing; the torch upgrade did
    lines.append(f"{label}: {report.message} ({report.seconds:.1f} s, exit {report.exit_code})")
    return "\n".join(lines)


def as_json(report: VerifyReport) -> str:
    return json.dumps(report.to_dict(), indent=2)


def _target(target) -> str:
    """`**torch 1.13** (requirements.txt: torch==1.13.1)`, for Markdown."""
    return f"**torch {format_version(target.version)}** ({target.source})"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: VerifyReport) -> str:
    icon = {OK: "✅", NOTHING: "✅", REGRESSIONS: "❌", ERROR: "⚠️"}[report.status]
    out = [f"## torch-migrate: verified migration of `{report.path}`", "", f"{icon} **{report.message}**", ""]
    if report.target is not None:
        out += [f"Target: {_target(report.target)}", ""]
    if report.target_warning:
        out += [f"⚠️ {report.target_warning}", ""]
    m = report.migration
    if m is not None and m.changed:
        added = sum(s.added for s in report.diffstat)
        removed = sum(s.removed for s in report.diffstat)
        out += [f"### Changes ({len(report.diffstat)} file(s), +{added} −{removed})", "", "| file | + | − |", "|---|---:|---:|"]
        out += [f"| `{_cell(s.path)}` | {s.added} | {s.removed} |" for s in report.diffstat]
        out += ["", "### Codemods applied", "", "| code | name | rewrites |", "|---|---|---:|"]
        out += [f"| {c} | {_name(c)} | {n} |" for c, n in sorted(m.rewrites.items())]
        findings = len(m.findings)
        if findings:
            out += ["", f"{findings} finding(s) left for manual review (`torch-migrate run --diff` lists them)."]
        out.append("")
    if report.sides:
        sides = report.sides
        head = " | ".join(s.label for s in sides)
        out += [f"### Tests (`{_cell(report.test_command or '')}`)", "", f"| | {head} |", "|---" * (len(sides) + 1) + "|"]
        if report.three_sides:
            out.append("| torch | " + " | ".join(str((s.environment or {}).get("torch")) for s in sides) + " |")
        if not all(_smoke(s) for s in sides):  # the smoke check's sides have none
            out.append("| exit code | " + " | ".join("—" if _smoke(s) else str(s.returncode) for s in sides) + " |")
        for k in ("passed", "failed", "error", "skipped"):
            if any(s.outcomes.get(k) for s in sides):
                out.append(f"| {k} | " + " | ".join(str(s.outcomes.get(k, 0)) for s in sides) + " |")
        out.append("| time | " + " | ".join(f"{s.seconds:.1f} s" for s in sides) + " |")
        rows = [c for c in report.changes if c.kind != UNCHANGED]
        if rows:
            three = report.three_sides
            cols = "| test | before |" + (" baseline |" if three else "") + " after | result | culprit |"
            out += ["", cols, "|---" * (6 if three else 5) + "|"]
            for c in rows:
                result = c.kind + (f" — {c.note}" if c.note else "")
                base = f" {c.baseline or '—'} |" if three else ""
                out.append(
                    f"| `{_cell(c.id)}` | {c.before or '—'} |{base} {c.after or '—'} | {_cell(result)} | {_cell(', '.join(c.culprits))} |"
                )
        out += ["", _same(report), ""] if any(c.kind == UNCHANGED for c in report.changes) else [""]
    if report.probe is not None:
        p = report.probe
        out += [f"### Probe (`{_cell(p.command)}`)", "", f"**{p.status}**, {p.compared} number(s) compared."]
        if p.divergence is not None:
            d = p.divergence
            out += ["", f"First divergence at output line {d.line}: {d.reason}", "", "```", f"- {d.before}", f"+ {d.after}", "```"]
        out.append("")
    if report.probe is not None and report.probe.intended:
        out += [f"Intended: {_cell(report.probe.intended)}", ""]
    if report.coverage is not None:
        out += report.coverage.markdown()
    if report.without_culprits is not None:
        w = report.without_culprits
        verdict = "no regressions" if w.clean else f"{len(w.regressions)} regression(s) remain"
        out += [f"Without {', '.join(w.units)}: {verdict}.", ""]
    if report.device is not None:
        out += ["### Device", ""]
        if report.before_device is not None:
            out += [f"- before (the era of the original code): {report.before_device.summary}", f"- target: {report.device.summary}"]
        else:
            out.append(report.device.summary)
        out.append("")
    for note in report.notes:
        out.append(f"- {note}")
    return "\n".join(out).rstrip() + "\n"


RENDERERS = {"text": text, "json": as_json, "markdown": markdown}
