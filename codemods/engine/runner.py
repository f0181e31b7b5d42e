"""Run the pipeline over many files: read, transform, diff or write; in parallel, deterministically."""

from __future__ import annotations

import difflib
import fnmatch
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from codemods.engine.notebooks import transform_notebook
from codemods.engine.pipeline import transform_source
from codemods.engine.source import SourceError, decode
from codemods.engine.writer import write_atomic
from codemods.helpers.codemod import FileContext
from codemods.helpers.facts import RepoFacts
from codemods.registry import Spec
from codemods.results import FileResult, Problem, Status

# Below this many files a process pool costs more to start than it saves.
_POOL_THRESHOLD = 8


@dataclass(frozen=True)
class Plan:
    """Everything a worker needs to process one file; plain data, so it pickles."""

    specs: tuple[Spec, ...]
    mode: str = "write"  # write | diff | check
    device_name: str = "device"
    facts: RepoFacts = field(default_factory=RepoFacts)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    max_bytes: int = 2_000_000
    root: str | None = None  # per-file-ignores globs are relative to this (the config's folder)

    def specs_for(self, rel: str) -> tuple[Spec, ...]:
        ignored = {
            code
            for pattern, codes in self.per_file_ignores
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern.rstrip("/") + "/*")
            for code in codes
        }
        if not ignored:
            return self.specs
        return tuple(s for s in self.specs if not any(s.code.startswith(i) or s.name == i for i in ignored))


def unified_diff(old: str, new: str, display: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{display.lstrip('/')}", f"b/{display.lstrip('/')}"
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def process_file(path: Path, display: str, plan: Plan) -> FileResult:
    """Migrate one file. Every failure becomes a `FileResult` with a `Problem`; nothing raises."""
    try:
        size = path.stat().st_size
        if size > plan.max_bytes:
            reason = f"larger than the {plan.max_bytes:,}-byte limit ({size:,} bytes); skipped"
            return FileResult(display, Status.ERROR, problem=Problem(display, 0, reason))
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(display, Status.ERROR, problem=Problem(display, 0, f"cannot read: {exc.strerror or exc}"))

    specs = plan.specs_for(os.path.relpath(path.resolve(), plan.root) if plan.root else display)
    if not specs:
        return FileResult(display, Status.SKIPPED)
    try:
        source = decode(data)
    except SourceError as exc:
        return FileResult(display, Status.ERROR, problem=Problem(display, exc.line, exc.reason))

    file = FileContext(display, plan.device_name, plan.facts)
    if path.suffix == ".ipynb":
        notebook = transform_notebook(source.text, specs, file)
        result = notebook.result
    else:
        result = transform_source(source.text, specs, file)
    if result.problem is not None:
        return FileResult(display, Status.ERROR, findings=result.findings, problem=result.problem)
    if not result.changed:
        status = Status.UNCHANGED if result.parsed else Status.SKIPPED
        return FileResult(display, status, findings=result.findings)

    diff = None
    if plan.mode == "diff":
        if path.suffix == ".ipynb":
            diff = "".join(
                unified_diff(old, new, f"{display} [cell {index}]")
                for index, old, new in zip(notebook.changed_cells, notebook.cells_before, notebook.cells_after)
            )
        else:
            diff = unified_diff(source.text, result.code, display)
    if plan.mode == "write":
        try:
            write_atomic(path, source.encode(result.code))
        except (OSError, UnicodeEncodeError) as exc:
            reason = f"cannot write: {getattr(exc, 'strerror', None) or exc}; left untouched"
            return FileResult(display, Status.ERROR, findings=result.findings, problem=Problem(display, 0, reason))
    return FileResult(display, Status.CHANGED, rewrites=result.rewrites or {}, findings=result.findings, diff=diff)


def _process(job: tuple[Path, str, Plan]) -> FileResult:
    path, display, plan = job
    try:
        return process_file(path, display, plan)
    except Exception as exc:  # a bug of ours must not take the other files down with it
        problem = Problem(display, 0, f"internal error: {type(exc).__name__}: {exc}")
        return FileResult(display, Status.ERROR, problem=problem)


def run_files(
    files: Sequence[tuple[Path, str]],
    plan: Plan,
    jobs: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> list[FileResult]:
    """Process `(path, display)` pairs; results come back in input order whatever `jobs` is."""
    jobs = jobs or os.cpu_count() or 1
    work = [(path, display, plan) for path, display in files]
    results: list[FileResult] = []
    for result in _results(work, jobs):
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _results(work: list, jobs: int) -> Iterator[FileResult]:
    if jobs <= 1 or len(work) < _POOL_THRESHOLD:
        yield from map(_process, work)
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    chunk = max(1, min(16, len(work) // (jobs * 4)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method)) as pool:
        yield from pool.map(_process, work, chunksize=chunk)
