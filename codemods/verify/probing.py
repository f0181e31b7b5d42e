"""The probe phase: run a probe command before and after, and compare what it prints."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from codemods.verify import execute
from codemods.verify.model import ProbeResult, VerifyReport
from codemods.verify.probe import first_divergence
from codemods.verify.workspace import Abort, Workspace, last_lines


class ProbeRuns(Workspace):
    """Running `--probe` in a copy and judging its output against the before side's."""

    def probe_run(self, project: Path, label: str) -> execute.Completed:
        try:
            done = self.processes.run(self.options.probe, project, self.env_for(project), self.options.timeout, merge_output=False)
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
            raise Abort(f"the probe fails before and after (exit {b.returncode}): {last_lines(b.tail)}")
        if report.probe.status == "equal" and report.probe.compared == 0:
            report.notes.append("the probe printed no numbers: only its text was compared")
