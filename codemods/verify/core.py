"""`verify()`: migrate a copy, run the tests (or a probe) in both copies, compare, explain.

    from codemods.verify import verify, VerifyOptions
    report = verify("path/to/repo", VerifyOptions(rerun=2))
    report.exit_code  # 0 no regressions, 1 regressions, 2 could not run
"""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

from codemods import api
from codemods.verify import copies, culprits, execute, imports, junit
from codemods.verify.apply import digest
from codemods.verify.commands import TestCommand, has_tests
from codemods.verify.compare import COUNTED, FIXED, FLAKY, NEW_FAILING, RERUN, compare, compare3, expand, judge
from codemods.verify.device import Device, DeviceError, default_python, detect, environment, needs_cuda
from codemods.verify.migration import Unit, diffstat, fired, migrate_tree, unified
from codemods.verify.model import (
    ERROR, OK, REGRESSIONS, UNCHANGED, ProbeResult, SideRun, VerifyOptions, VerifyReport, WithoutCulprits,
    environment_of,
)  # fmt: skip
from codemods.verify.probe import first_divergence
from codemods.verify.unittest_output import parse_output
from codemods.versions import Target

SUITE = "<test command>"  # the id of a whole run that gave no per-test results
PROBE = "<probe>"
MAX_TARGETS = 300  # beyond this many tests a rerun runs the whole command (and stays under ARG_MAX)


class Abort(Exception):
    """Verification cannot go on; the message says why (status error, exit 2)."""


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


class Session:
    def __init__(self, path: Path, options: VerifyOptions, on_event: Callable[[str], None] | None) -> None:
        self.path = path
        self.options = options
        self.say = on_event or (lambda _msg: None)
        self.workdir = Path(tempfile.mkdtemp(prefix="torch-migrate-verify-"))
        self.counter = itertools.count(1)
        self.device: Device | None = None  # the target interpreter
        self.env: dict[str, str] = {}
        # With --before-python (three sides): the original code's interpreter, for the before copy.
        self.before_device: Device | None = None
        self.before_env: dict[str, str] = {}
        self.projects: dict[str, Path] = {}  # side label -> its copy of the project
        self.pythonpath: list[str] = []  # folders, relative to a copy's root, put first on PYTHONPATH
        self.workers = 1
        self.notes: list[str] = []
        self.source: copies.Source | None = None
        self.command: TestCommand | None = None
        self.seen: dict[str, dict[str, junit.Outcome]] = {}  # side -> its first run's outcomes, expanded
        self.target: Target | None = None  # what every migration of this session is for (resolve_target)
        self.target_warning: str | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def pmap(self, fn: Callable, items: Sequence) -> list:
        """Map over independent runs, concurrently when there is room; Ctrl-C stops them all."""
        if self.workers <= 1 or len(items) <= 1:
            return [fn(item) for item in items]
        pool = ThreadPoolExecutor(max_workers=self.workers)
        try:
            futures = [pool.submit(fn, item) for item in items]
            return [f.result() for f in futures]
        except BaseException:
            execute.kill_all()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def copy_root(self, project: Path) -> Path:
        return self.workdir / project.relative_to(self.workdir).parts[0]

    def env_for(self, project: Path, extra: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
        """The environment of a run in `project`'s copy (plus `extra`, the test command's own
        `NAME=value` words): the copy's own folders first on PYTHONPATH if needed."""
        env = {**(self.before_env if self.on_before(project) else self.env), **dict(extra)}
        if not self.pythonpath:
            return env
        root = self.copy_root(project)
        first = [str(root / rel) for rel in self.pythonpath]
        rest = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
        return {**env, "PYTHONPATH": os.pathsep.join(first + rest)}

    @property
    def three(self) -> bool:
        return self.before_device is not None

    @property
    def labels(self) -> list[str]:
        return ["before", "baseline", "after"] if self.three else ["before", "after"]

    def on_before(self, project: Path) -> bool:
        """Whether `project` is the before copy, which runs with the before interpreter."""
        return self.three and self.copy_root(project) == self.copy_root(self.projects["before"])

    def device_of(self, label: str) -> Device:
        return self.before_device if label == "before" and self.three else self.device

    def command_for(self, project: Path) -> TestCommand:
        if self.on_before(project) and not self.options.tests:
            return TestCommand.default(self.before_device.python)
        return self.command

    def isolate_imports(self, after: Path, changed: Sequence[str]) -> None:
        """Make sure the copies import their own code, not the user's tree (editable installs)."""
        root = self.copy_root(after)
        rels = [str(Path(self.source.project) / rel) for rel in changed]
        roots = imports.import_roots(root, rels)
        timeout = min(self.options.timeout, 120)
        found = imports.origins(self.device.python, after, self.env_for(after), roots, timeout)
        leaking = sorted(
            n
            for n, where in found.items()
            if not imports.inside(where, self.workdir)
            and (imports.inside(where, self.source.root) or imports.installed_copy(where, roots[n][1]))
        )
        if not leaking:
            return
        self.pythonpath = sorted({roots[n][0] for n in leaking})
        found = imports.origins(self.device.python, after, self.env_for(after), leaking, timeout)
        still = sorted(n for n, where in found.items() if not imports.inside(where, root))
        if still:
            raise Abort(
                f"{', '.join(still)} would be imported from {self.source.root}, not from the copy "
                "(an editable install that cannot be overridden?); both sides would test the original code"
            )
        self.notes.append(
            f"{', '.join(leaking)} would be imported from outside the copies (an installed or editable "
            "package, or PYTHONPATH); each copy puts its own folder first on PYTHONPATH to test its own code"
        )

    def migration_options(self) -> api.Options:
        o = self.options
        return api.Options(
            mode="write", select=o.select, ignore=o.ignore, unsafe=o.unsafe, exclude=o.exclude, use_config=o.use_config,
            target_torch=o.target_torch,
        )  # fmt: skip

    def resolve_target(self, asked: Callable[[], dict[str, Device]]) -> tuple[Target, str | None]:
        """The torch to migrate for (api.target_for), decided in the user's tree: without an
        explicit one, the target interpreter's torch. An interpreter that cannot answer leaves
        the repository's pin (its error is reported once the migration is known to change files)."""

        def interpreter() -> Target | None:
            try:
                device = asked()["target"]
            except Abort:
                return None
            return api.interpreter_target(device.torch, device.python)

        return api.targeting([self.path], self.migration_options(), interpreter)

    def new_copy(self, label: str, without: Iterable[Unit] | None = None, jobs: int | None = 1):
        """A fresh copy of the pristine base; migrated (minus `without`) unless `without` is None.

        `jobs=None` (a process pool) only from the main thread before any run starts.
        """
        root = copies.clone_copy(self.workdir / "base", self.workdir / f"{label}-{next(self.counter)}")
        project = self.source.project_in(root)
        report = None
        if without is not None:
            report = migrate_tree(project, self.migration_options(), without, jobs=jobs, target=self.target)
        return root, project, report

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
            done = execute.run(argv, project, self.env_for(project, command.env), self.options.timeout)
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

    # -- the steps --------------------------------------------------------------------------

    def prepare(self, asked: Callable[[], dict[str, Device]]) -> tuple[Path, Path, api.Report]:
        self.say("copying the project")
        try:
            self.source = copies.source_of(self.path)
            copies.make_copy(self.source, self.workdir / "base")
        except copies.CopyError as exc:
            raise Abort(str(exc)) from None
        before_root, before, _ = self.new_copy("before")
        self.target, self.target_warning = self.resolve_target(asked)
        _, after, report = self.new_copy("after", without=(), jobs=None)
        self.projects = {"before": before, "after": after}
        return before, after, report

    def ask(self, python: str, which: str) -> Device:
        if os.sep in python:  # a path: relative to where the user is, not to the copies
            python = os.path.abspath(python)
        self.say(f"asking {python} ({which}) about torch and CUDA")
        try:
            return detect(python, self.options.device, timeout=min(self.options.timeout, 300))
        except DeviceError as exc:
            raise Abort(f"{which} interpreter: {exc}" if self.options.before_python else str(exc)) from None

    def ask_all(self) -> Callable[[], dict[str, Device]]:
        """Ask the interpreters about themselves in the background (each imports torch: seconds),
        while the project is copied and migrated; the result waits for them."""
        wanted = {"target": default_python(self.options.python)}
        if self.options.before_python:
            wanted["before"] = self.options.before_python
        pool = ThreadPoolExecutor(max_workers=len(wanted))
        futures = {which: pool.submit(self.ask, python, which) for which, python in wanted.items()}
        pool.shutdown(wait=False)
        return lambda: {which: future.result() for which, future in futures.items()}

    def setup_device(self, asked: Callable[[], dict[str, Device]]) -> list[str]:
        """With a distinct before interpreter, three sides."""
        notes = []
        devices = asked()
        self.device = devices["target"]
        self.env = environment(self.device.python, self.options.device)
        if self.options.before_python:
            before = devices["before"]
            for which, device in (("before", before), ("target", self.device)):
                if device.torch is None:
                    why = device.torch_error or "not installed"
                    raise Abort(f"the {which} interpreter {device.python} has no torch ({why}); both sides need one")
            if os.path.abspath(before.python) == os.path.abspath(self.device.python):  # not realpath: venvs link one base
                notes.append("--before-python is the target interpreter: two sides, as without it")
            else:
                self.before_device = before
                self.before_env = environment(before.python, self.options.device)
                _, self.projects["baseline"], _ = self.new_copy("baseline")
        parallel = self.options.parallel
        if parallel is None:
            # Two suites sharing one GPU can run each other out of memory: that is not a regression.
            parallel = (os.cpu_count() or 1) >= 2 and not self.device.uses_cuda
        self.workers = len(self.labels) if parallel else 1
        return notes

    def choose_command(self, before: Path) -> None:
        if self.options.tests:
            self.command = TestCommand.from_user(self.options.tests)
        elif has_tests(before):
            self.command = TestCommand.default(self.device.python)
        elif not self.options.probe:
            raise Abort("no tests found (no test_*.py or *_test.py); give --tests CMD or --probe CMD")
        if self.three and self.command is not None and self.command.pytest is not None:
            for which, device in (("before", self.before_device), ("target", self.device)):
                if not device.has_pytest:
                    raise Abort(f"the {which} interpreter {device.python} cannot import pytest, which runs the tests")

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
                    f"{_last_lines(first_before.tail)}"
                )
            if not first_before.tests and not first_after.tests and first_before.returncode == 5:
                raise Abort("pytest collected no tests on either side; give --tests CMD or --probe CMD")
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

    def reruns(self, report: VerifyReport) -> None:
        """Rerun every changed test on every side; a change that does not hold is flaky.

        Each side reruns only the tests it observed (by node id, or by module where its module
        did not import); a rerun that does not observe a test records None: could not rerun.
        """
        changed = [c for c in report.changes if c.kind in RERUN]
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
            files = [junit.module_of(c.id), *(outcome.files if outcome else ())]
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
        root, project, _ = self.new_copy("without", without=units)
        try:
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
                regressions = [c.id for c in compared if c.kind in COUNTED and c.id not in flaky]
            probe = self.probe_after(project).status if report.probe is not None else None
            report.without_culprits = WithoutCulprits([str(u) for u in units], regressions, probe)
        finally:
            copies.remove(root)

    # -- probe ------------------------------------------------------------------------------

    def probe_run(self, project: Path, label: str) -> execute.Completed:
        try:
            done = execute.run(self.options.probe, project, self.env_for(project), self.options.timeout, merge_output=False)
        except execute.StartError as exc:
            raise Abort(f"the probe command cannot start ({label}): {exc}") from None
        if done.timed_out:
            raise Abort(f"the probe timed out after {self.options.timeout:g} s ({label} side); raise --timeout")
        # Each copy lives in its own folder: paths printed by the probe must not count as differences.
        root = self.copy_root(project)
        stdout = done.stdout.replace(os.path.realpath(root), "<copy>").replace(str(root), "<copy>")
        return replace(done, stdout=stdout)

    def probe_after(self, project: Path) -> ProbeResult:
        """The probe in a migrated copy, compared with the first before-run."""
        return self.judge_probe(self.probe_before, self.probe_run(project, "trial"))

    def judge_probe(self, before: execute.Completed, after: execute.Completed) -> ProbeResult:
        o = self.options
        result = ProbeResult(
            o.probe, "equal", before_returncode=before.returncode, after_returncode=after.returncode,
            before_tail=before.tail[-1500:], after_tail=after.tail[-1500:],
            before_torch=self.device_of("before").torch, after_torch=self.device.torch,
        )  # fmt: skip
        if before.returncode != 0 and after.returncode != 0:
            result.status = "both-failed"
        elif after.returncode != 0:
            result.status = "after-failed"
        elif before.returncode != 0:
            result.status = "fixed"
        else:
            result.divergence, result.compared = first_divergence(before.stdout, after.stdout, o.rtol, o.atol)
            result.status = "diverged" if result.divergence else "equal"
        return result

    def probe_phase(self, report: VerifyReport, before: Path, after: Path) -> None:
        self.say(f"running the probe `{self.options.probe}` before and after")
        b, a = self.pmap(lambda side: self.probe_run(side[1], side[0]), [("before", before), ("after", after)])
        self.probe_before = b
        report.probe = self.judge_probe(b, a)
        if report.probe.status == "both-failed":
            raise Abort(f"the probe fails before and after (exit {b.returncode}): {_last_lines(b.tail)}")
        if report.probe.status == "equal" and report.probe.compared == 0:
            report.notes.append("the probe printed no numbers: only its text was compared")


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


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(no output)"


def verify(
    path: str | Path, options: VerifyOptions | None = None, on_event: Callable[[str], None] | None = None
) -> VerifyReport:
    """Verify the migration of the project at `path`. The user's tree is only read.

    Raises `codemods.config.ConfigError` / `codemods.registry.SelectionError` for bad options;
    every other failure is a report with status "error" (exit code 2).
    """
    options = options or VerifyOptions()
    started = time.monotonic()
    report = VerifyReport(str(path))
    session = Session(Path(path), options, on_event)
    restore = _terminate_as_interrupt()
    try:
        _verify(session, report)
    except Abort as exc:
        report.status, report.message = ERROR, str(exc)
    finally:
        execute.kill_all()
        restore()
        if options.keep_copies:
            report.copies = str(session.workdir)
        else:
            copies.remove(session.workdir)
        report.seconds = time.monotonic() - started
    return report


def _verify(session: Session, report: VerifyReport) -> None:
    options = session.options
    asked = session.ask_all()
    before, after, migration = session.prepare(asked)
    report.migration = migration
    report.target, report.target_warning = session.target, session.target_warning
    changed = [f.path for f in migration.changed]
    report.diffstat = diffstat(before, after, changed)
    report.diff = unified(before, after, changed)
    report.baseline = {rel: digest(before / rel) for rel in changed}
    report.verified = {rel: digest(after / rel) for rel in changed}
    if migration.problems:
        report.notes.append(f"{len(migration.problems)} file(s) could not be migrated and were left as they are")
    if not changed:
        report.status, report.message = UNCHANGED, "nothing to migrate: no codemod changed any file; nothing to verify"
        return
    report.notes.extend(session.setup_device(asked))
    report.device, report.before_device = session.device, session.before_device
    session.isolate_imports(after, changed)
    report.notes.extend(session.notes)
    session.choose_command(before)
    if session.command is not None:
        report.test_command = session.command.text
        session.test_phase(report, before, after)
    if options.probe:
        session.probe_phase(report, before, after)
    session.unfixed_findings(report)
    session.culprit_phase(report, fired(migration))
    session.fixers_phase(report, fired(migration))
    bad = report.regressions or report.unfixed or (report.probe is not None and report.probe.regression)
    report.status = REGRESSIONS if bad else OK
    report.message = _verdict(report)


def _verdict(report: VerifyReport) -> str:
    parts = []
    if report.regressions:
        parts.append(f"{len(report.regressions)} regression(s)")
    if report.unfixed:
        parts.append(
            f"{len(report.unfixed)} unfixed (broken by the torch upgrade {report.era} → {report.device.torch}; "
            "no codemod repaired them)"
        )
    if report.probe is not None and report.probe.regression:
        parts.append(f"probe {report.probe.status}")
    if report.culprit_units:
        parts.append("caused by " + ", ".join(str(u) for u in report.culprit_units))
    if report.status == OK:
        parts.append("no regressions")
    if report.fixed:
        by = ", ".join(f"{code} ×{n}" for code, n in report.fixed_by.items())
        parts.append(f"{len(report.fixed)} test(s) fixed by the migration" + (f" ({by})" if by else ""))
    if report.newly_failing:
        culprit = sum(bool(c.culprits) for c in report.newly_failing)
        parts.append(
            f"{len(report.newly_failing)} newly collected test(s) failing"
            + (f" ({culprit} explained by a codemod change)" if culprit else "")
        )
    if report.flaky:
        parts.append(f"{len(report.flaky)} flaky")
    if report.probe is not None and not report.probe.regression:
        parts.append(f"probe {report.probe.status}")
    return "; ".join(parts)


def _terminate_as_interrupt() -> Callable[[], None]:
    """Treat SIGTERM like Ctrl-C while verifying, so the copies and child processes are cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)
