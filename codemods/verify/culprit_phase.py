"""The culprit phases: which codemod (then which file) causes each regression, and which fixed
each test the torch upgrade broke; then a check of the migration without the culprits.

The search itself is `culprits.search` (pure logic); this module gives it its trials: migrate
a fresh copy with some units switched off and see which of the tests (or the probe) still fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from codemods.verify import copies, culprits, junit
from codemods.verify.apply import digest
from codemods.verify.compare import COUNTED, FLAKY, NEW_FAILING, compare, compare3
from codemods.verify.migration import Unit
from codemods.verify.model import VerifyReport, WithoutCulprits
from codemods.verify.probing import ProbeRuns
from codemods.verify.smoke_discover import is_smoke
from codemods.verify.testruns import TestRuns
from codemods.verify.workspace import PROBE


class CulpritSearch(TestRuns, ProbeRuns):
    """Trial migrations that switch codemods off, and the phases that use them."""

    def failing_after(self, project: Path, ids: Sequence[str], label: str) -> set[str]:
        """Which of `ids` fail (or are absent) in `project`: a culprit trial's answer."""
        failing: set[str] = set()
        tests = [i for i in ids if i != PROBE]
        if tests:
            outcomes = self.observe(project, label, tests, self.seen.get("after"))
            if outcomes is None:
                failing |= set(tests)
            else:
                failing |= {i for i in tests if i not in outcomes or outcomes[i].failing}
        if PROBE in ids:
            if self.probe_after(project).regression:
                failing.add(PROBE)
        return failing

    def trial(self, ids: Sequence[str]) -> Callable[[frozenset[Unit]], set[str]]:
        def run(without: frozenset[Unit]) -> set[str]:
            root, project, _ = self.new_copy("trial", without=without)
            try:
                return self.failing_after(project, ids, "trial")
            finally:
                copies.remove(root)

        return run

    def fixers_phase(self, report: VerifyReport, by_code: dict[str, list[str]]) -> None:
        """Three sides: the codemod behind each test the torch upgrade broke and the migration
        repaired — the one whose removal makes it fail again (the culprit search, inverted)."""
        fixed = [c.id for c in report.fixed if c.before == "passed"]
        if not self.three or not fixed or not self.options.find_culprits:
            return
        self.say(f"finding the codemod(s) that fixed {len(fixed)} test(s)")
        trial = self.trial(fixed)
        found = culprits.search(
            culprits.codemod_units(by_code), fixed, lambda without: set(fixed) - trial(without), self.pmap
        )
        counts: dict[str, int] = {}
        for c in report.changes:
            c.fixed_by = [str(u) for u in found.culprits.get(c.id, [])]
            for code in c.fixed_by:
                counts[code] = counts.get(code, 0) + 1
        report.fixed_by = dict(sorted(counts.items()))
        if found.trials:
            report.notes.append(f"fixers: {found.trials} trial migration(s)")

    def culprit_phase(self, report: VerifyReport, by_code: dict[str, list[str]]) -> None:
        """Name the codemod (then its file) behind each regression, and behind each newly
        collected test that fails after (the migration made it importable; what keeps it failing?)."""
        regressions = [c.id for c in report.regressions]
        newly = [c.id for c in report.changes if c.kind == NEW_FAILING]
        if report.probe is not None and report.probe.regression:
            regressions.append(PROBE)
        failing = regressions + newly
        if not regressions and not newly or not self.options.find_culprits:
            return
        self.say(f"searching for the codemod(s) behind {len(failing)} failing test(s)")
        found = culprits.search(culprits.codemod_units(by_code), failing, self.trial(failing), self.pmap)
        trials = found.trials
        per_test: dict[str, list[Unit]] = {}
        groups: dict[tuple[Unit, ...], list[str]] = {}
        for t, units in found.culprits.items():
            groups.setdefault(tuple(units), []).append(t)
        for units, tests in groups.items():
            together = any(t in found.together for t in tests)
            for unit in units:
                base = frozenset(u for u in units if u != unit) if together else frozenset()
                self.say(f"narrowing {unit.code} down to files")
                files = culprits.search(
                    culprits.file_units(unit.code, by_code[unit.code]), tests, self.trial(tests), self.pmap, base
                )
                trials += files.trials
                for t in tests:
                    per_test.setdefault(t, []).extend(files.culprits.get(t) or [unit])
        report.unexplained = [t for t in found.unexplained if t in regressions]
        by_unit: dict[Unit, list[str]] = {}
        for t, units in per_test.items():
            for u in units:
                by_unit.setdefault(u, []).append(t)
        report.culprit_units = sorted({u for t, us in per_test.items() if t in regressions for u in us})
        report.culprits = {str(u): sorted(ts) for u, ts in sorted(by_unit.items())}
        for c in report.changes:
            c.culprits = [str(u) for u in per_test.get(c.id, [])]
            if c.id in found.together and c.culprits:
                c.note = (c.note + "; " if c.note else "") + "no single change explains it: these only together"
        if report.probe is not None:
            report.probe.culprits = [str(u) for u in per_test.get(PROBE, [])]
        report.notes.append(
            f"culprit search: {trials} trial migration(s)" if trials
            else "culprit search needed no trial: each failing test involves a single codemod change"
        )
        if report.culprit_units:
            self.confirm_without(report)

    def confirm_without(self, report: VerifyReport) -> None:
        """Run everything again on the migration minus the culprits: is the rest clean?"""
        units = report.culprit_units
        self.say("checking the migration without the culprits")
        root, project, migration = self.new_copy("without", without=units)
        try:
            changed = [f.path for f in migration.changed]
            files = {rel: (project / rel).read_bytes() for rel in changed}
            # What --drop-culprits would write must not have changed in the user's tree either.
            pristine = self.source.project_in(self.workdir / "base")
            report.baseline.update({rel: digest(pristine / rel) for rel in changed if rel not in report.baseline})
            flaky = {c.id for c in report.changes if c.kind == FLAKY}
            regressions: list[str] = []
            if self.command is not None:
                first = {
                    label: {
                        c.id: junit.Outcome(getattr(c, label), getattr(c, f"{label}_message"), imported=getattr(c, f"{label}_imported"))
                        for c in report.changes
                        if getattr(c, label)
                    }
                    for label in self.labels
                }  # fmt: skip
                run = self.run_tests(project, "without")
                after = self.side_outcomes(run, first["before"])
                compared = compare3(first["before"], first["baseline"], after) if self.three else compare(first["before"], after)
                regressions = [c.id for c in compared if c.kind in COUNTED and c.id not in flaky and not is_smoke(c.id)]
            regressions += self.smoke_without(project, report, flaky)
            probe = self.probe_after(project).status if report.probe is not None else None
            report.without_culprits = WithoutCulprits([str(u) for u in units], regressions, probe, migration, files)
        finally:
            copies.remove(root)
