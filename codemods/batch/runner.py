"""One repository of a batch: clone, branch, migrate, verify, commit, report. Plain data in and out,
so the same function runs in-process, in a process pool or on a Dask worker."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from codemods import __version__, registry
from codemods.batch import git
from codemods.batch.manifest import RepoEntry

MIGRATED, UNCHANGED, REGRESSIONS, FAILED = "migrated", "unchanged", "regressions", "failed"
DONE = (MIGRATED, UNCHANGED, REGRESSIONS)


@dataclass(frozen=True)
class BatchSettings:
    workdir: str
    verify: bool = True
    allow_regressions: bool = False
    push: bool = False


@dataclass
class RepoResult:
    name: str
    source: str
    status: str = FAILED
    message: str = ""
    branch: str = ""
    commit: str | None = None
    base: str | None = None
    files_changed: int = 0
    rewrites: dict[str, int] = field(default_factory=dict)
    findings: int = 0
    problems: list[str] = field(default_factory=list)
    tests_before: dict[str, int] | None = None
    tests_after: dict[str, int] | None = None
    regressions: list[str] = field(default_factory=list)
    culprits: list[str] = field(default_factory=list)
    pushed_to: str | None = None
    report_dir: str | None = None
    seconds: float = 0.0
    fingerprint: str = ""
    tool_version: str = __version__

    def to_dict(self) -> dict:
        return asdict(self)


def _commit_message(result: RepoResult, verdict: str) -> str:
    lines = ["Migrate legacy PyTorch code with torch-migrate", ""]
    for code, count in sorted(result.rewrites.items()):
        try:
            name = registry.get(code).name
        except registry.SelectionError:
            name = ""
        lines.append(f"- {code} {name}: {count} rewrite(s)")
    lines += ["", f"Verification: {verdict}", "", f"torch-migrate {__version__}"]
    return "\n".join(lines)


def _counts(side) -> dict[str, int] | None:
    return dict(side.outcomes) if side is not None else None


def _verify_and_apply(clone: Path, entry: RepoEntry, settings: BatchSettings, result: RepoResult):
    """Verify, then write the verified migration into the clone. Returns (migration report, verdict, verify report)."""
    from codemods.api import Options, migrate

    selection = dict(select=entry.select, ignore=entry.ignore, unsafe=entry.unsafe)
    if not settings.verify:
        report = migrate([str(clone)], Options(mode="write", **selection))
        return report, "not verified (--no-verify)", None
    from codemods.verify import VerifyOptions, verify

    options = VerifyOptions(
        tests=entry.tests, probe=entry.probe, python=entry.python, device=entry.device, timeout=entry.timeout, **selection
    )
    checked = verify(clone, options)
    if checked.status == "error":
        raise RuntimeError(f"verification could not run: {checked.message}")
    sides = {s.label: s for s in checked.sides}
    result.tests_before, result.tests_after = _counts(sides.get("before")), _counts(sides.get("after"))
    result.regressions = [c.test_id for c in checked.regressions]
    result.culprits = [str(u) for u in checked.culprit_units]
    if checked.regressions or (checked.probe is not None and checked.probe.regression):
        if not settings.allow_regressions:
            return checked.migration, checked.message, checked
    report = migrate([str(clone)], Options(mode="write", **selection))
    return report, checked.message, checked


def process_repo(entry: RepoEntry, settings: BatchSettings) -> RepoResult:
    """Migrate one repository in its own clone under the work dir. Never raises (but KeyboardInterrupt)."""
    started = time.monotonic()
    result = RepoResult(name=entry.name, source=entry.source, branch=entry.branch, fingerprint=entry.fingerprint())
    workdir = Path(settings.workdir)
    clone = workdir / "repos" / entry.name
    report_dir = workdir / "reports" / entry.name
    done = False
    try:
        shutil.rmtree(clone, ignore_errors=True)
        clone.parent.mkdir(parents=True, exist_ok=True)
        git.clone(entry.source, clone)
        result.base = git.checkout_new_branch(clone, entry.branch, entry.ref)
        report, verdict, checked = _verify_and_apply(clone, entry, settings, result)
        if report is not None:
            result.files_changed = len(report.changed)
            result.rewrites = dict(report.rewrites)
            result.findings = len(report.findings)
            # Paths relative to the repository: the clone's location is an accident of the work dir.
            result.problems = [str(replace(p, path=os.path.relpath(p.path, clone))) for p in report.problems]
        if result.regressions or (checked is not None and checked.status == "regressions"):
            result.status = REGRESSIONS
            result.message = verdict + ("" if not settings.allow_regressions else "; committed anyway (--allow-regressions)")
        if result.status == REGRESSIONS and not settings.allow_regressions:
            pass  # nothing committed
        elif result.files_changed:
            result.commit = git.commit_all(clone, _commit_message(result, verdict))
            result.status = result.status if result.status == REGRESSIONS else MIGRATED
            result.message = result.message or verdict
            _publish(clone, entry, settings, result)
        else:
            result.status, result.message = UNCHANGED, "nothing to migrate"
        _write_reports(report_dir, result, clone, checked, report)
        result.report_dir = str(report_dir)
        done = True
    except (git.GitError, OSError, RuntimeError, ValueError) as exc:
        result.status, result.message = FAILED, str(exc)
        done = True
    except Exception as exc:  # a crash in one repository must never stop the others
        result.status, result.message = FAILED, f"internal error: {type(exc).__name__}: {exc}"
        done = True
    finally:
        result.seconds = round(time.monotonic() - started, 2)
        if not done:  # interrupted: leave nothing half-done behind
            shutil.rmtree(clone, ignore_errors=True)
    return result


def _publish(clone: Path, entry: RepoEntry, settings: BatchSettings, result: RepoResult) -> None:
    if entry.is_path:
        if git.checked_out_branch(entry.source) == entry.branch:
            raise RuntimeError(f"branch {entry.branch!r} is checked out in {entry.source}; not overwriting it")
        git.push_branch(clone, entry.source, entry.branch)
        result.pushed_to = entry.source
    elif settings.push:
        git.push_branch(clone, "origin", entry.branch)
        result.pushed_to = entry.source


def _write_reports(report_dir: Path, result: RepoResult, clone: Path, checked, report) -> None:
    from codemods.batch.render import markdown_report

    report_dir.mkdir(parents=True, exist_ok=True)
    stat = git.diffstat(clone, result.base) if result.commit else ""
    (report_dir / "REPORT.md").write_text(markdown_report(result, stat, checked, report), encoding="utf-8")
    payload = {"repo": result.to_dict(), "verification": checked.to_dict() if checked is not None else None}
    (report_dir / "report.json").write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")


def process_plain(entry: dict, settings: dict) -> dict:
    """`process_repo` on plain dicts: what crosses a process or network boundary."""
    fields = {**entry, "select": tuple(entry["select"]) if entry.get("select") else entry.get("select")}
    if entry.get("ignore"):
        fields["ignore"] = tuple(entry["ignore"])
    return process_repo(RepoEntry(**fields), BatchSettings(**settings)).to_dict()
