"""The smoke phase: a generated differential check for projects without tests (or beside them, `--smoke`).

The checks (`smoke_discover`) run on every side like a test run: in the same copies, with the
same interpreters and environments. Imports and models run in one `smoke_probe.py` process per
side (started again after a check that crashed it or hung past the timeout); each script's
`--help` is a process of its own. Each check's outcome is a `junit.Outcome` under its
`smoke::...` id, so comparison, reruns, the culprit search and the reports treat it as a test:

- an import or a script passes when it imports / answers `--help` with exit 0, and errors with
  its exception (or exit status) as the message;
- a model errors when it cannot be built or its forward raises; otherwise it is compared with
  the reference (`smoke_compare`): the before side's first run (with three sides, the baseline's
  when the before side could not run it). A difference is `failed` with the difference as its
  message. The before side's reruns are compared with its own first run, so a model whose output
  changes between identical runs is flaky, never a regression.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Sequence

from codemods.verify import execute, junit
from codemods.verify.compare import compare, compare3
from codemods.verify.model import SideRun, VerifyReport, environment_of
from codemods.verify.smoke_compare import model_difference
from codemods.verify.smoke_discover import IMPORT, MODEL, SCRIPT, Check, Discovery, discover, is_smoke
from codemods.verify.workspace import Abort, Workspace

PROBE_SCRIPT = Path(__file__).with_name("smoke_probe.py")
CHECK_TIMEOUT = 60.0  # seconds per import, model or --help (bounded by --timeout)
COMMAND = "smoke check"
CROSS_RTOL = 1e-4  # numbers computed by two torch releases (smoke_tolerance)


class SmokeRuns(Workspace):
    """Discovering the smoke checks, running them in a copy, and the smoke phase."""

    smoke: bool = False  # whether this verification runs the smoke check
    smoke_found: Discovery | None = None
    smoke_first: dict[str, dict[str, dict]] = {}  # side -> check id -> its first run's raw result

    @property
    def smoke_checks(self) -> dict[str, Check]:
        return {c.id: c for c in self.smoke_found.checks} if self.smoke_found else {}

    def _interpreter(self, project: Path) -> tuple[str, bool]:
        device = self.before_device if self.on_before(project) else self.device
        return device.python, device.uses_cuda

    def smoke_raw(self, project: Path, label: str, ids: Sequence[str]) -> dict[str, dict]:
        """Each check of `ids` run in `project`: its raw result (outcome, message, data)."""
        checks = [self.smoke_checks[i] for i in ids if i in self.smoke_checks]
        python, cuda = self._interpreter(project)
        env = {**self.env_for(project), "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
        timeout = min(CHECK_TIMEOUT, self.options.timeout)
        results: dict[str, dict] = {}
        folder = self.workdir / "smoke"
        folder.mkdir(exist_ok=True)
        script = folder / "tm_smoke_probe.py"  # its own folder: the script's folder heads sys.path
        if not script.exists():  # sides run in threads: each copies, and the last rename wins whole
            partial = folder / f"{script.name}.{label}.part"
            shutil.copyfile(PROBE_SCRIPT, partial)
            os.replace(partial, script)
        roots = [str((project / r).resolve()) for r in self.smoke_found.roots]
        groups: dict[str, list[Check]] = {}
        for c in checks:
            if c.kind in (IMPORT, MODEL):
                groups.setdefault(script_folder(c.path, self.smoke_found.roots, project), []).append(c)
        for where, todo in groups.items():
            # A file in a folder that is no package runs as a script there (`python tools/a/run.py`):
            # its folder heads sys.path, so `from helpers import x` finds tools/a/helpers.py. One
            # process per such folder: two folders may each have their own `models.py`.
            extra = [str((project / where).resolve())] if where else []
            self._probe(project, label, python, env, script, [*extra, *roots], todo, cuda, timeout, results)
        for c in checks:
            if c.kind == SCRIPT:
                results[c.id] = self._help(project, python, env, c, timeout)
        return results

    def _probe(self, project, label, python, env, script, roots, todo, cuda, timeout, results) -> None:
        """Run `todo` in one probe process, and again after a check that crashed or hung it."""
        folder = script.parent
        while todo:
            n = next(self.counter)
            plan, out = folder / f"{label}-{n}.json", folder / f"{label}-{n}.jsonl"
            plan.write_text(json.dumps({"checks": [c.to_plan() for c in todo], "roots": roots,
                                        "timeout": timeout, "device": "cuda" if cuda else "cpu"}))  # fmt: skip
            try:
                done = self.processes.run([python, str(script), str(plan), str(out)], project, env, self.options.timeout)
            except execute.StartError as exc:
                raise Abort(f"the smoke check cannot start ({label}): {exc}") from None
            started = None
            for line in out.read_text().splitlines() if out.exists() else ():
                entry = json.loads(line)
                if "start" in entry:
                    started = entry["start"]
                else:
                    results[entry["id"]], started = entry, None
            if started is None:
                return  # every check reported (or none started: nothing more to learn)
            why = f"timed out after {self.options.timeout:g} s" if done.timed_out else f"crashed the interpreter (exit {done.returncode})"
            results[started] = {"id": started, "outcome": "error", "message": why, "data": None}
            todo = todo[[c.id for c in todo].index(started) + 1 :]

    def _help(self, project: Path, python: str, env: dict, check: Check, timeout: float) -> dict:
        try:
            done = self.processes.run([python, check.path, "--help"], project, env, timeout)
        except execute.StartError as exc:
            return {"id": check.id, "outcome": "error", "message": str(exc), "data": None}
        if done.returncode == 0:
            return {"id": check.id, "outcome": "passed", "message": "", "data": None}
        last = done.tail.strip().splitlines()[-1] if done.tail.strip() else ""
        why = f"`--help` timed out after {timeout:g} s" if done.timed_out else f"`--help` exit {done.returncode}: {last}"
        return {"id": check.id, "outcome": "error", "message": why[:300], "data": None}

    def smoke_reference(self, test_id: str) -> tuple[str, dict] | tuple[None, None]:
        """The side whose first run the others are compared with, and that run."""
        for label in ("before", "baseline"):
            raw = self.smoke_first.get(label, {}).get(test_id)
            if raw is not None and raw["outcome"] == "passed":
                return label, raw
        return None, None

    def smoke_tolerance(self, one: str, other: str) -> tuple[float, float, float]:
        """rtol, atol and the scaled floor for comparing side `one`'s numbers with side `other`'s.

        The same torch gives the same numbers: the user's --rtol/--atol. Two torch releases do not
        (their kernels changed): numbers are held to CROSS_RTOL, and each element also to CROSS_RTOL
        of its tensor's largest value, so that a gradient near zero differing by 1e-7 in a tensor of
        values around 1e-2 is torch's arithmetic, not a difference the migration made."""
        if self.device_of(one).torch == self.device_of(other).torch:
            return self.options.rtol, self.options.atol, 0.0
        return max(self.options.rtol, CROSS_RTOL), self.options.atol, CROSS_RTOL

    def smoke_outcome(self, test_id: str, raw: dict | None, label: str) -> junit.Outcome:
        if raw is None:
            return junit.Outcome("error", "the smoke probe did not report it")
        if raw["outcome"] != "passed":
            what = "did not import: " if test_id.startswith("smoke::import::") else ""
            return junit.Outcome("error", (what + raw["message"])[:300])
        side, reference = self.smoke_reference(test_id)
        if label.endswith("before") and self.smoke_first.get("before", {}).get(test_id, {}).get("outcome") == "passed":
            side, reference = "before", self.smoke_first["before"][test_id]  # the before side's reruns: against itself
        check = self.smoke_checks.get(test_id)
        if check is None or check.kind != MODEL or reference is None or reference is raw:
            return junit.Outcome("passed")
        problem = model_difference(reference["data"], raw["data"], *self.smoke_tolerance(side, label))
        return junit.Outcome("failed", problem[:300]) if problem else junit.Outcome("passed")

    def smoke_observe(self, project: Path, label: str, ids: Sequence[str]) -> dict[str, junit.Outcome]:
        raws = self.smoke_raw(project, label, ids)
        return {i: self.smoke_outcome(i, raws.get(i), label) for i in ids if i in self.smoke_checks}

    def smoke_phase(self, report: VerifyReport, before: Path) -> None:
        self.smoke_found = discover(before)
        if not self.smoke_found.checks:
            if self.command is None:
                raise Abort(
                    "no tests found (no test_*.py or *_test.py), and nothing the smoke check can run (no importable "
                    "module, nn.Module or argument-parsing script); give --tests CMD or --probe CMD"
                )
            report.notes.append("the smoke check found nothing to run (no importable module, nn.Module or script)")
            return
        ids = [c.id for c in self.smoke_found.checks]
        labels = self.labels
        self.say(f"running the smoke check ({len(ids)} check(s)) on {', '.join(labels)}")
        timed = self.pmap(lambda label: _timed(self.smoke_raw, self.projects[label], label, ids), labels)
        raws = {label: raw for label, (raw, _) in zip(labels, timed)}
        seconds = {label: s for label, (_, s) in zip(labels, timed)}
        self.smoke_first = raws
        outcomes = {label: {i: self.smoke_outcome(i, raws[label].get(i), label) for i in ids} for label in labels}
        for label in labels:
            tally: dict[str, int] = {}
            for o in outcomes[label].values():
                tally[o.outcome] = tally.get(o.outcome, 0) + 1
            report.sides.append(
                SideRun(label, f"{COMMAND} ({len(ids)} checks)", 0, round(seconds[label], 2), True, tally, "", environment_of(self.device_of(label)))
            )
        if report.test_command is None:
            report.test_command = COMMAND
        ran = [i for i in ids if any(outcomes[label][i].outcome == "passed" for label in labels)]
        if not ran and self.command is None:
            first = outcomes["before"][ids[0]].message
            raise Abort(f"the smoke check ran nothing on any side: all {len(ids)} check(s) failed everywhere (first: {ids[0]}: {first})")
        if self.three:
            changes = compare3(outcomes["before"], outcomes["baseline"], outcomes["after"])
        else:
            changes = compare(outcomes["before"], outcomes["after"])
        report.changes.extend(changes)
        for label in labels:
            self.seen.setdefault(label, {}).update(outcomes[label])
        self.reruns(report, changes)
        self._notes(report, outcomes)

    def _notes(self, report: VerifyReport, outcomes: dict[str, dict[str, junit.Outcome]]) -> None:
        found = self.smoke_found
        counts = {kind: sum(c.kind == kind for c in found.checks) for kind in (IMPORT, MODEL, SCRIPT)}
        report.notes.append(
            f"smoke check: {counts[IMPORT]} module import(s), {counts[MODEL]} model(s), {counts[SCRIPT]} script(s) `--help`"
        )
        never = [i for i in outcomes["before"] if all(o[i].failing for o in outcomes.values())]
        if never:
            why = [f"{i} ({_short(outcomes['after'][i].message)})" for i in never[:10]]
            report.notes.append(
                f"{len(never)} smoke check(s) fail on every side (top-level work, sys.argv, a missing dependency or "
                f"input): no evidence either way: {'; '.join(why)}{' …' if len(never) > 10 else ''}"
            )
        if found.unbuildable:
            more = " …" if len(found.unbuildable) > 10 else ""
            report.notes.append(
                f"{len(found.unbuildable)} nn.Module subclass(es) not built: their arguments are needed and no call "
                f"in the project gives them (constants, or names of the calling module): {', '.join(found.unbuildable[:10])}{more}"
            )

    def smoke_without(self, project: Path, report: VerifyReport, flaky: set[str]) -> list[str]:
        """The regressions among the smoke checks in `project` (the migration minus the culprits)."""
        ids = [c.id for c in report.changes if is_smoke(c.id)]
        if not ids:
            return []
        first = {
            label: {c.id: junit.Outcome(getattr(c, label), getattr(c, f"{label}_message")) for c in report.changes
                    if is_smoke(c.id) and getattr(c, label)}
            for label in self.labels
        }  # fmt: skip
        after = self.smoke_observe(project, "without", ids)
        compared = compare3(first["before"], first["baseline"], after) if self.three else compare(first["before"], after)
        from codemods.verify.compare import COUNTED

        return [c.id for c in compared if c.kind in COUNTED and c.id not in flaky]


def script_folder(path: str, roots: Sequence[str], project: Path) -> str:
    """The folder of `path` when it is no package and no root (a folder of scripts), else ""."""
    folder = path.rpartition("/")[0]
    if not folder or folder in roots or (project / folder / "__init__.py").exists():
        return ""
    return folder


def _short(message: str, width: int = 90) -> str:
    return message if len(message) <= width else message[: width - 1] + "…"


def _timed(fn, *args):
    started = time.monotonic()
    return fn(*args), time.monotonic() - started
