"""Migrate a tree through the engine, optionally with some codemods switched off on some files.

This is `codemods.api.migrate` with two differences verify needs: display paths relative to the
project (so `per-file-ignores` from the project's config match the same way in a copy as in the
user's tree), and extra per-file exclusions for culprit trials and `--drop-culprits`.
"""

from __future__ import annotations

import difflib
import glob
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from codemods import api
from codemods.engine.runner import run_files
from codemods.results import FileResult, Report, Status
from codemods.versions import Target

ALL_FILES = "*"  # an exclusion's file meaning "every file"


@dataclass(frozen=True, order=True)
class Unit:
    """One codemod on one file (or on every file): what culprit search switches off."""

    code: str
    file: str = ALL_FILES

    def __str__(self) -> str:
        return self.code if self.file == ALL_FILES else f"{self.code} on {self.file}"


def migrate_tree(
    project: Path, options: api.Options, without: Iterable[Unit] = (), jobs: int | None = 1, target: Target | None = None
) -> Report:
    """Migrate every file under `project` (write/diff/check per `options.mode`) minus `without`,
    for `target` (verify resolves it once, in the user's tree: a copy has no `.git` to bound the
    search for the repository's pin), else the target `options` and the copy give."""
    plan, _, files, problems = api.plan_for([project], options)
    if target is not None:
        plan = replace(plan, target=target)
    root = getattr(plan, "root", None)  # where the engine matches per-file globs from, when it says

    def pattern(unit: Unit) -> str:
        if unit.file == ALL_FILES:
            return "*"
        rel = os.path.relpath((project / unit.file).resolve(), root) if root else unit.file
        return glob.escape(Path(rel).as_posix())

    extra = tuple((pattern(u), (u.code,)) for u in without)
    if extra:
        plan = replace(plan, per_file_ignores=(*plan.per_file_ignores, *extra))
    jobs_list = [(f, f.relative_to(project).as_posix()) for f in files]
    results = run_files(jobs_list, plan, jobs)
    results.extend(FileResult(p.path, Status.ERROR, problem=p) for p in problems)
    return Report(files=results, mode=options.mode, codes=tuple(s.code for s in plan.specs), target=plan.target)


def fired(report: Report) -> dict[str, list[str]]:
    """Codemod code -> files it rewrote, in pipeline order."""
    by_code: dict[str, list[str]] = {code: [] for code in report.codes}
    for result in report.changed:
        for code in result.rewrites:
            by_code.setdefault(code, []).append(result.path)
    return {code: sorted(paths) for code, paths in by_code.items() if paths}


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int
    removed: int


def diffstat(before: Path, after: Path, paths: Iterable[str]) -> list[FileStat]:
    stats = []
    for rel in sorted(set(paths)):
        try:
            old = _text(before / rel).splitlines()  # a file the migration made (a companion) was empty
            new = (after / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        added = removed = 0
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        stats.append(FileStat(rel, added, removed))
    return stats


def unified(before: Path, after: Path, paths: Iterable[str]) -> str:
    from codemods.engine.runner import unified_diff

    out = []
    for rel in sorted(set(paths)):
        try:
            old = _text(before / rel)
            new = (after / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out.append(unified_diff(old, new, rel))
    return "".join(out)


def _text(path: Path) -> str:
    """A file's text, empty when the file does not exist (a new file the migration made)."""
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
