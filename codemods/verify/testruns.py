"""The test phase: run the test command on every side, read per-test outcomes, rerun what changed.

A side's outcomes come from pytest's JUnit XML, from `unittest -v` output, or (when neither
says anything per test) from the command's exit status. Reruns tell a real change from a
flaky test; a rerun that pytest cannot collect falls back to modules, then to the whole command.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from codemods.verify import execute, junit
from codemods.verify.commands import TestCommand, has_tests
from codemods.verify.compare import FIXED, FLAKY, RERUN, compare, compare3, expand, judge
from codemods.verify.device import needs_cuda
from codemods.verify.model import SideRun, VerifyReport, environment_of
from codemods.verify.smoke import SmokeRuns
from codemods.verify.smoke_discover import is_smoke
from codemods.verify.unittest_output import parse_output
from codemods.verify.workspace import PROBE, SUITE, Abort, last_lines

MAX_TARGETS = 300  # beyond this many tests a rerun runs the whole command (and stays under ARG_MAX)


@dataclass
class Run:
    """One run of the test command in one copy."""

    returncode: int | None
    seconds: float
    tests: dict[str, junit.Outcome] | None  # None: no per-test results
    tail: str

    @property
    def usable(self) -> bool:
        """pytest ran what it was asked to: not a usage error (a target it could not collect:
        "found no collectors for ...", exit 4) nor an internal error (exit 3)."""
        return self.tests is not None and self.returncode not in (3, 4)


class NothingCollected(Abort):
    """The default test command found test files but pytest collected no test from them on either
    side (exit 5): `verify` then proves the migration with the smoke check instead."""


class TestRuns(SmokeRuns):
    """Running the test command in a copy, and the test phase of a verification."""

    def command_for(self, project: Path) -> TestCommand:
        if self.on_before(project) and not self.options.tests:
            return TestCommand.default(self.before_device.python)
        return self.command

    def choose_command(self, before: Path) -> None:
        if self.options.tests:
            self.command = TestCommand.from_user(self.options.tests)
        elif has_tests(before):
            self.command = TestCommand.default(self.device.python)
        elif not self.options.probe:
            self.smoke = True  # no tests: the generated smoke check (smoke.py) is the evidence
        if self.options.smoke:
            self.smoke = True
        if self.command is not None and self.command.pytest is not None:
            # Two sides: only `python -m pytest` is sure to be the target's (a `pytest` script may be any on PATH).
            runs_python = os.path.basename(self.command.pytest[0]).startswith("python")
            sides = (("before", self.before_device), ("target", self.device)) if self.three else (("target", self.device),)
            for which, device in sides:
                if not device.has_pytest and (self.three or runs_python):
                    raise Abort(
                        f"the {which} interpreter {device.python} cannot import pytest, which runs the tests: give the "
                        "project's interpreter with --python (in a batch manifest: `python = \"…/bin/python\"`), "
                        "or install pytest into it"
                    )

    def run_tests(self, project: Path, label: str, targets: Sequence[str] | None = None) -> Run:
        """The test command in `project`; with `targets` (node ids or module ids), only those.

        Targets that cannot be named on a command line, or too many, run everything.
        """
        command = self.command_for(project)
        xml = self.workdir / "junit" / f"{label}-{next(self.counter)}.xml"
        xml.parent.mkdir(exist_ok=True)
        paths = None
        if targets is not None and command.pytest is not None:
            bases = [project, *project.parents]
            paths = [junit.rerun_target(i, bases) for i in targets]
            if not all(paths) or len(paths) > MAX_TARGETS:
                paths = None
        argv = command.argv(xml, paths, cwd=project)
        try:
            done = self.processes.run(argv, project, self.env_for(project, command.env), self.options.timeout)
        except execute.StartError as exc:
            raise Abort(f"the test command cannot start ({label}): {exc}") from None
        if done.timed_out:
            raise Abort(f"the test command timed out after {self.options.timeout:g} s ({label} side); raise --timeout")
        tests = None
        if command.pytest is not None and xml.exists():
            try:
                tests = junit.parse(xml)
            except junit.JUnitError:
                tests = None
        elif command.pytest is None:
            tests = parse_output(done.stdout + done.stderr)
        return Run(done.returncode, done.seconds, tests, done.tail)

    def observe(
        self, project: Path, label: str, ids: Sequence[str], seen: dict[str, junit.Outcome] | None = None
    ) -> dict[str, junit.Outcome] | None:
        """The outcomes of `ids` in `project`, or None when no run could observe them.

        Each id is targeted the way `seen` (that side's first run) says it can be collected:
        by node id, or by its module when the module failed to import there (a node id in a
        module that does not import makes pytest collect nothing at all). If pytest still stops
        before running (a target it cannot collect), the modules are targeted, then the whole
        command runs: one bad target never decides the others' outcomes.
        """
        smoke = [i for i in ids if is_smoke(i)]
        if smoke:
            found = self.smoke_observe(project, label, smoke)
            rest = [i for i in ids if not is_smoke(i)]
            other = self.observe(project, label, rest, seen) if rest else {}
            return None if other is None else {**other, **found}
        tests = [i for i in ids if i not in (SUITE, PROBE)]
        seen = seen or {}
        plan = sorted({junit.module_of(i) if i in seen and not seen[i].imported else i for i in tests})
        attempts: list[list[str] | None] = []
        if tests and self.command.pytest is not None:
            attempts += [plan, sorted({junit.module_of(i) for i in tests})]
        attempts.append(None)
        tried: list = []
        for targets in attempts:
            if targets in tried:
                continue
            tried.append(targets)
            run = self.run_tests(project, label, targets)
            if run.usable:
                return expand(run.tests, tests)
            if run.tests is None and (SUITE in ids or self.command.pytest is None):
                return self.side_outcomes(run)  # by exit status
        return None

    def side_outcomes(self, run: Run, ids: Iterable[str] | None = None) -> dict[str, junit.Outcome]:
        """The run's per-test outcomes; without any, its exit status stands for each of `ids`
        (the tests another run saw), or for the whole command (SUITE)."""
        if run.tests is not None:
            return run.tests
        last = run.tail.strip().splitlines()[-1] if run.tail.strip() else ""
        if self.command is not None and self.command.pytest is None:  # judged by its exit code alone
            outcome = "passed" if run.returncode == 0 else "failed"
            message = f"exit {run.returncode}" + (f": {last}" if last else "")
        else:
            outcome = "passed" if run.returncode == 0 else "error"
            message = f"pytest gave no per-test results (exit {run.returncode}): {last}"
        message = message[:300]
        return {i: junit.Outcome(outcome, message) for i in (list(ids or ()) or [SUITE])}

    def test_phase(self, report: VerifyReport, before: Path, after: Path) -> None:
        labels = self.labels
        self.say(f"running `{self.command.text}` on {', '.join(labels)}")
        runs = dict(zip(labels, self.pmap(lambda label: self.run_tests(self.projects[label], label), labels)))
        for label, run in runs.items():
            tally: dict[str, int] = {}
            for o in (run.tests or {}).values():
                tally[o.outcome] = tally.get(o.outcome, 0) + 1
            report.sides.append(
                SideRun(
                    label, self.command_for(self.projects[label]).text, run.returncode, round(run.seconds, 2),
                    run.tests is not None, tally, run.tail[-1500:], environment_of(self.device_of(label)),
                )
            )  # fmt: skip
        first_before, first_after = runs["before"], runs["after"]
        if self.command.pytest is not None:
            if first_before.tests is None and first_after.tests is None:
                raise Abort(
                    f"pytest ran on neither side (exit {first_before.returncode}): "
                    f"{last_lines(first_before.tail)}"
                )
            if not first_before.tests and not first_after.tests and first_before.returncode == 5:
                raise NothingCollected("pytest collected no tests on either side; give --tests CMD or --probe CMD")
        elif first_before.tests is None and first_after.tests is None and ran_nothing(first_before, first_after):
            raise Abort(f"the test command ran no test on either side: {last_lines(first_before.tail)}")
        elif first_before.returncode != 0 and first_after.returncode != 0:
            report.notes.append("the test command fails both before and after: no evidence either way")
        other = {"before": first_after, "baseline": first_before, "after": first_before}
        outcomes = {label: self.side_outcomes(run, other[label].tests) for label, run in runs.items()}
        if self.command.pytest is None and (first_before.tests is None or first_after.tests is None):
            report.notes.append(
                "the test command is not pytest and printed no per-test results (unittest -v style) on "
                f"{'either side' if first_before.tests is None and first_after.tests is None else 'one side'}: "
                "compared by its exit status"
            )
        if self.three:
            report.changes = compare3(outcomes["before"], outcomes["baseline"], outcomes["after"])
        else:
            report.changes = compare(outcomes["before"], outcomes["after"])
        ids = sorted(set().union(*outcomes.values()))
        self.seen = {label: expand(o, ids) for label, o in outcomes.items()}
        self.reruns(report)
        self.device_notes(report)

    def smoke_instead(self, report: VerifyReport, why: NothingCollected) -> None:
        """Drop the test phase that collected nothing; the smoke check becomes the evidence."""
        report.notes.append(f"{str(why).split(';')[0]} (`{self.command.text}`): the smoke check is the evidence instead")
        report.test_command, report.sides[:] = None, []
        self.command, self.smoke = None, True

    def reruns(self, report: VerifyReport, changes: Sequence | None = None) -> None:
        """Rerun every changed test on every side; a change that does not hold is flaky.

        Each side reruns only the tests it observed (by node id, or by module where its module
        did not import); a rerun that does not observe a test records None: could not rerun.
        """
        changed = [c for c in (report.changes if changes is None else changes) if c.kind in RERUN]
        if not changed or self.options.rerun <= 0:
            return
        labels = self.labels
        wanted = {label: [c.id for c in changed if getattr(c, label) is not None] for label in labels}

        def rerun(label: str) -> dict[str, junit.Outcome] | None:
            if not wanted[label]:
                return {}
            return self.observe(self.projects[label], f"rerun-{label}", wanted[label], self.seen[label])

        for round_ in range(1, self.options.rerun + 1):
            self.say(f"rerunning {len(changed)} changed test(s) on {', '.join(labels)} ({round_}/{self.options.rerun})")
            for label, seen in zip(labels, self.pmap(rerun, labels)):
                for c in changed:
                    getattr(c, f"reruns_{label}").append(_seen(seen, c.id) if getattr(c, label) is not None else None)
        for c in changed:
            lost = [label for label in labels if getattr(c, label) is not None and None in getattr(c, f"reruns_{label}")]
            if judge(c) == FLAKY:
                c.kind = FLAKY
                c.note = "outcome changed between identical runs: flaky, not caused by the migration"
            elif lost:
                c.note = f"could not rerun on the {' and '.join(lost)} side: the first run's outcome stands"

    def unfixed_findings(self, report: VerifyReport) -> None:
        """For each unfixed test, the findings the migration left on the files of its baseline
        traceback (and its own module): what is left to do by hand."""
        if not report.unfixed or report.migration is None:
            return
        roots = [self.copy_root(p) for p in self.projects.values()]
        by_file: dict[str, list] = {}
        for f in report.migration.findings:
            by_file.setdefault(f.path, []).append(f)
        for c in report.unfixed:
            outcome = self.seen.get("baseline", {}).get(c.id)
            head = self.smoke_checks[c.id].path if c.id in self.smoke_checks else junit.module_of(c.id)
            files = [head, *(outcome.files if outcome else ())]
            for file in dict.fromkeys(_relative(f, roots, self.source.project) for f in files):
                c.findings += [f"{f.path}:{f.line}: {f.code} {f.message}" for f in by_file.get(file, [])]

    def device_notes(self, report: VerifyReport) -> None:
        if self.device is None or self.device.uses_cuda:
            return
        moved = [c for c in report.changes if c.kind == FIXED and needs_cuda(c.before_message)]
        for c in moved:
            c.note = "failed before because it needed CUDA; the migrated code runs on CPU"
        if moved:
            report.notes.append(
                f"{len(moved)} test(s) failed before only because they asked for CUDA on a machine without "
                "a visible GPU; after migration they run on CPU. On a GPU machine they may have passed before."
            )


NO_TESTS_RAN = re.compile(r"^Ran 0 tests?\b|^NO TESTS RAN\b|\bno tests ran\b|\bcollected 0 items\b", re.M)


def ran_nothing(*runs: Run) -> bool:
    """Whether every run says it ran no test (`unittest` finding nothing: "Ran 0 tests ... OK" or,
    on Python 3.12+, "NO TESTS RAN"; pytest's "no tests ran"): a command like that proves nothing."""
    return all(NO_TESTS_RAN.search(run.tail) for run in runs)


def _relative(file: str, roots: Sequence[Path], project_rel: str) -> str:
    """A traceback's file as a path relative to the project (tracebacks name copies' paths)."""
    path = Path(file)
    if path.is_absolute():
        for root in roots:
            try:
                rel = path.relative_to(root / project_rel if project_rel not in ("", ".") else root)
            except ValueError:
                continue
            return rel.as_posix()
    return path.as_posix()


def _seen(outcomes: dict[str, junit.Outcome] | None, test_id: str) -> str | None:
    if outcomes is None or test_id not in outcomes:
        return None
    return outcomes[test_id].outcome
