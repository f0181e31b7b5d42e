"""One repository of a batch: clone, branch, migrate, verify, commit, report. Plain data in and out,
so the same function runs in-process, in a process pool or on a Dask worker."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from codemods import registry
from codemods.batch import git
from codemods.batch.manifest import RepoEntry, entry_problem
from codemods.batch.render import markdown_report
from codemods.batch.result import DONE, FAILED, MIGRATED, REGRESSIONS, UNCHANGED, RepoResult
from codemods.engine.python2 import names_unparsed

__all__ = ["BatchSettings", "RepoResult", "process_repo", "process_plain", "DONE", "FAILED", "MIGRATED", "REGRESSIONS", "UNCHANGED"]


@dataclass(frozen=True)
class BatchSettings:
    workdir: str
    verify: bool = True
    allow_regressions: bool = False
    push: bool = False


def _commit_message(result: RepoResult, verdict: str) -> str:
    lines = ["Migrate legacy PyTorch code with torch-migrate", ""]
    for code, count in sorted(result.rewrites.items()):
        try:
            name = registry.get(code).name
        except registry.SelectionError:
            name = ""
        lines.append(f"- {code} {name}: {count} rewrite(s)")
    lines += ["", f"Verification: {verdict}"]
    return "\n".join(lines)  # git.commit_all adds the trailers that name the tool and its version


def _counts(side) -> dict[str, int] | None:
    return dict(side.outcomes) if side is not None else None


def _verify_and_apply(clone: Path, entry: RepoEntry, settings: BatchSettings, result: RepoResult):
    """Verify, then write the verified migration into the clone. Returns (migration report, verdict, verify report).

    The migration is written by `apply_verified`, as `run --verify` writes it: the verified copy's
    own bytes (never a second migration), checked against their digests, and refused when a file
    changed since the copy was taken. Only `--no-verify` migrates the clone directly.
    """
    from codemods.api import Options, migrate

    selection = dict(select=entry.select, ignore=entry.ignore, unsafe=entry.unsafe)
    if not settings.verify:
        report = migrate([str(clone)], Options(mode="write", target_torch=entry.target_torch, **selection))
        result.target, result.target_warning, result.era = str(report.target), report.target_warning, report.era
        return report, "not verified (--no-verify)", None
    from codemods.verify import VerifyOptions, apply_verified, verify
    from codemods.verify.model import ERROR, UNCHANGED as NOTHING_TO_MIGRATE

    options = VerifyOptions(
        tests=entry.tests, probe=entry.probe, python=entry.python, before_python=entry.before_python,
        device=entry.device, timeout=entry.timeout, target_torch=entry.target_torch, **selection,
    )  # fmt: skip
    checked = verify(clone, options)
    if checked.target is not None:
        result.target, result.target_warning = str(checked.target), checked.target_warning
    if checked.status == ERROR:
        raise RuntimeError(f"verification could not run: {checked.message}")
    sides = {s.label: s for s in checked.sides}
    result.tests_before, result.tests_after = _counts(sides.get("before")), _counts(sides.get("after"))
    if "baseline" in sides:
        result.tests_baseline = _counts(sides["baseline"])
        result.torch = {label: (side.environment or {}).get("torch") for label, side in sides.items()}
    result.unfixed = [c.test_id for c in checked.unfixed]
    result.regressions = [c.test_id for c in checked.regressions]
    result.culprits = [str(u) for u in checked.culprit_units]
    if checked.regressions or (checked.probe is not None and checked.probe.regression):
        if not settings.allow_regressions:
            return checked.migration, checked.message, checked
    if checked.status == NOTHING_TO_MIGRATE:
        return checked.migration, checked.message, checked
    applied = apply_verified(clone, checked, options, allow_regressions=settings.allow_regressions)
    if not applied.complete:
        if applied.written:  # leave the clone as it was cloned: the next run re-clones a clean tree
            git.git(clone, "checkout", "--", ".")
        raise RuntimeError(f"verified, but {applied.message.removeprefix('nothing written: ')}")
    return applied.migration, checked.message, checked


def process_repo(entry: RepoEntry, settings: BatchSettings) -> RepoResult:
    """Migrate one repository in its own clone under the work dir. Never raises (but KeyboardInterrupt)."""
    started = time.monotonic()
    result = RepoResult(name=entry.name, source=entry.source, branch=entry.branch, fingerprint=entry.fingerprint())
    workdir = Path(settings.workdir)
    clone = workdir / "repos" / entry.name
    report_dir = workdir / "reports" / entry.name
    done = fresh = False  # fresh: the clone is this run's own, so an interruption may remove it
    try:
        if problem := entry_problem(asdict(entry)):  # the manifest's check, for entries made elsewhere too
            raise ValueError(problem)
        _check_source(entry)
        _check_reclone(clone, workdir, entry.source)
        fresh = True
        _remove_clone(clone, workdir)
        clone.parent.mkdir(parents=True, exist_ok=True)
        git.clone(entry.source, clone)
        # Before the (long) verification: who commits, and whether the branch may be replaced.
        author = git.identity(Path(entry.source) if entry.is_path else clone)
        target = _publish_target(entry, settings)
        result.base = git.base_commit(clone, entry.ref)
        expected = _replaceable_branch(clone, entry, target, result.base)
        git.checkout_new_branch(clone, entry.branch, result.base)
        report, verdict, checked = _verify_and_apply(clone, entry, settings, result)
        if report is not None:
            result.files_changed = len(report.changed)
            result.rewrites = dict(report.rewrites)
            result.findings = len(report.findings)
            # Paths relative to the repository: the clone's location is an accident of the work dir.
            problems = [replace(p, path=_in_repository(p.path, clone)) for p in report.problems]
            result.problems = [str(p) for p in problems]
            result.untouched = list(dict.fromkeys(p.path for p in problems))
            result.not_python3 = [_in_repository(f.path, clone) for f in report.findings if names_unparsed(f)]
        # Unfixed tests (broken by the torch upgrade, passing in no copy of the target) do not hold
        # back a migration that broke nothing; the row and REPORT.md list them.
        regressed = checked is not None and (checked.regressions or (checked.probe is not None and checked.probe.regression))
        if result.regressions or regressed:
            result.status = REGRESSIONS
            result.message = verdict + ("" if not settings.allow_regressions else "; committed anyway (--allow-regressions)")
        if result.status == REGRESSIONS and not settings.allow_regressions:
            pass  # nothing committed
        elif result.files_changed:
            result.commit = git.commit_all(clone, _commit_message(result, verdict), author)
            result.status = result.status if result.status == REGRESSIONS else MIGRATED
            result.message = result.message or verdict
            if target is not None:
                try:
                    git.push_branch(clone, target, entry.branch, expected)
                except git.GitError as exc:
                    raise git.GitError(f"{exc}; the migration is committed in {clone}") from None
                result.pushed_to = entry.source
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
        if fresh and not done:  # interrupted: leave nothing half-done behind
            try:
                _remove_clone(clone, workdir, ignore_errors=True)
            except RuntimeError:
                pass  # no longer a folder of ours to remove: left as it is, and the interruption goes on
    return result


def _in_repository(path: str, clone: Path) -> str:
    """A report's path relative to the repository (a verified migration's paths already are)."""
    return os.path.relpath(path, clone) if os.path.isabs(path) else path


def _check_source(entry: RepoEntry) -> None:
    if not entry.is_path:
        return
    source = Path(entry.source)
    if not source.exists():
        raise RuntimeError(f"`path` {source} does not exist")
    if not (source / ".git").exists():
        raise RuntimeError(f"`path` {source} is not a git repository (no .git in it)")


def _remove_clone(clone: Path, workdir: Path, ignore_errors: bool = False) -> None:
    """Remove a clone of the work dir's; refuses (RuntimeError) any path but a folder directly in its `repos`."""
    repos = workdir.resolve() / "repos"
    if clone.name in ("", ".", "..") or clone.is_symlink() or clone.parent.resolve() != repos:
        raise RuntimeError(f"not removing {clone}: the batch only ever removes its own clones, folders directly in {repos}")
    if os.path.lexists(clone):
        shutil.rmtree(clone, ignore_errors=ignore_errors)


def _check_reclone(clone: Path, workdir: Path, source: str) -> None:
    """The clone under the work dir is rebuilt on every run: refuse if what is there is not an earlier
    clone of `source` made by the batch, or if the user worked in it since."""
    if not os.path.lexists(clone):
        return
    git_dir = clone / ".git"  # a real one: git would otherwise read the config of a repository around the work dir
    if not git_dir.is_dir() or git_dir.is_symlink() or git.origin_url(clone) != source:
        raise RuntimeError(
            f"{clone} is in the way and is not the batch's clone of {source}; not removing it: "
            "move it out of the work dir, or give this repository another `name`"
        )
    if git.git(clone, "status", "--porcelain"):
        raise RuntimeError(f"{clone} has uncommitted changes; commit or remove them (it is re-cloned on every run)")
    # Commits on its local branches that are not in the source and that the tool did not make.
    mine = git.user_commits(clone, "--branches", "--remotes", "--tags")
    if mine:
        raise RuntimeError(
            f"{clone} has commit(s) torch-migrate did not make and the source does not have "
            f"({git.describe(clone, mine)}); push or remove them (it is re-cloned on every run)"
        )


def _publish_target(entry: RepoEntry, settings: BatchSettings) -> str | None:
    """Where the branch goes: back into a `path` repository, to a `url` one's origin with --push."""
    if entry.is_path:
        if git.checked_out_branch(entry.source) == entry.branch:
            raise RuntimeError(f"branch {entry.branch!r} is checked out in {entry.source}; not overwriting it")
        return entry.source
    return "origin" if settings.push else None


def _replaceable_branch(clone: Path, entry: RepoEntry, target: str | None, base: str) -> str | None:
    """The tip of the branch that publishing will replace with `base` and the migration commit (None:
    there is none); refuses (RuntimeError) unless it is the tool's own branch and the replacement drops
    no commit torch-migrate did not make from its history.

    A commit is the tool's own only when its trailers say so (an earlier run's result, not amended
    since). A commit kept elsewhere (another branch, a tag) still counts: the branch would no longer
    hold it. The fresh clone's `origin/*` refs are the target's branches."""
    if target is None:
        return None
    tip = git.ref_sha(clone, f"refs/remotes/origin/{entry.branch}")
    if tip is None:
        return None
    where = entry.source if entry.is_path else f"origin ({entry.source})"
    foreign = git.user_commits(clone, tip, base)
    if foreign:
        raise RuntimeError(
            f"branch {entry.branch!r} already exists in {where} with {len(foreign)} commit(s) torch-migrate did not make "
            f"({git.describe(clone, foreign)}); not replacing it: merge or rename that branch, "
            f"or give this repository another `branch` in the manifest"
        )
    if not git.grew_from_tool_commit(clone, tip):  # a user's branch (main, say) is never moved, not even forward
        raise RuntimeError(
            f"branch {entry.branch!r} already exists in {where} and torch-migrate did not make it "
            f"(its tip: {git.describe(clone, [tip])}); not moving it: give this repository another `branch` in the manifest"
        )
    return tip


def _write_reports(report_dir: Path, result: RepoResult, clone: Path, checked, report) -> None:
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
