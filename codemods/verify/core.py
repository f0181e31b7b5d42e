"""`verify()`: migrate a copy, run the tests (or a probe) in both copies, compare, explain.

    from codemods.verify import verify, VerifyOptions
    report = verify("path/to/repo", VerifyOptions(rerun=2))
    report.exit_code  # 0 no regressions, 1 regressions, 2 could not run
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Callable

from codemods.verify import copies, execute, intended
from codemods.verify.apply import digest, digest_of
from codemods.verify.coverage_runs import CoverageRuns
from codemods.verify.evidence import evidence
from codemods.verify.intended import IntendedChanges
from codemods.verify.migration import diffstat, fired, unified
from codemods.verify.model import ERROR, OK, REGRESSIONS, UNCHANGED, VerifyOptions, VerifyReport
from codemods.verify.testruns import MAX_TARGETS, NothingCollected, Run
from codemods.verify.workspace import PROBE, SUITE, Abort

__all__ = ["verify", "Session", "Run", "Abort", "SUITE", "PROBE", "MAX_TARGETS"]


class Session(CoverageRuns, IntendedChanges):
    """One verification: the workspace and its copies (`workspace`), the test runs (`testruns`),
    the probe (`probing`) and the culprit search (`culprit_phase`, with `intended` divergences
    told apart); `_verify` runs them in order, measuring the after side's runs (`coverage_runs`)."""


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
    signals = _Signals()
    try:
        _verify(session, report)
    except Abort as exc:
        report.status, report.message = ERROR, str(exc)
    finally:
        signals.closing = True  # a second Ctrl-C must not cut the clean-up short
        session.processes.close()
        if options.keep_copies:
            report.copies = str(session.workdir)
        else:
            copies.remove(session.workdir)
        signals.restore()
        report.seconds = time.monotonic() - started
    if signals.pending is not None:  # it came during the clean-up of a finished verification
        raise execute.Interrupted(signals.pending)
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
    report.verified_files = {rel: (after / rel).read_bytes() for rel in changed}
    report.verified = {rel: digest_of(data) for rel, data in report.verified_files.items()}
    if migration.problems:
        report.notes.append(f"{len(migration.problems)} file(s) could not be migrated and were left as they are")
    if not changed:
        report.status, report.message = UNCHANGED, "nothing to migrate: no codemod changed any file; nothing to verify"
        return
    report.notes.extend(session.setup_device(asked))
    report.device, report.before_device = session.device, session.before_device
    session.isolate_imports(after, changed)
    report.notes.extend(session.notes)
    session.start_coverage(changed)
    session.choose_command(before)
    if session.command is not None:
        report.test_command = session.command.text
        try:
            session.test_phase(report, before, after)
        except NothingCollected as nothing:
            if options.tests:
                raise  # the user's own command: never replaced behind their back
            session.smoke_instead(report, nothing)
    if session.smoke:
        session.smoke_phase(report, before)
    if options.probe:
        session.probe_phase(report, before, after)
    session.rewrite_coverage(report)
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
        parts.append("no regressions — " + evidence(report))
    elif report.coverage is not None:
        parts.append(report.coverage.short())
    parts += intended.summary(report)
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
        compared = f" ({report.probe.compared} number(s) compared)" if report.probe.status == "equal" else ""
        parts.append(f"probe {report.probe.status}{compared}")
    return "; ".join(parts)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Signals:
    """While verifying, SIGTERM and SIGHUP stop verify as Ctrl-C does (`execute.Interrupted`, which
    the CLI turns into exit 128 + the signal), so the suites are stopped and the copies removed;
    once `closing`, further signals wait for the clean-up (`pending`: the first of them, raised
    after it). Main thread only: elsewhere a signal is the caller's."""

    def __init__(self) -> None:
        self.closing = False
        self.pending: int | None = None
        self.previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in STOP_SIGNALS:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN or (signum == signal.SIGINT and current is not signal.default_int_handler):
                continue  # ignored (`nohup`, `&`) or someone else's: theirs to handle
            try:
                self.previous[signum] = signal.signal(signum, self.handle)
            except (ValueError, OSError):
                pass

    def handle(self, signum: int, frame) -> None:
        if not self.closing:
            raise execute.Interrupted(signum)
        if self.pending is None:
            self.pending = signum  # never dropped: verify raises it once the clean-up is done

    def restore(self) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)

