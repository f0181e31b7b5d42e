"""Run the pipeline over many files: read, transform, diff or write; in parallel, deterministically."""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
import signal
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, TypeVar

from codemods.engine import companions
from codemods.engine.cache import Cache, FileOutcome, content_digest
from codemods.engine.gc_pause import paused_gc
from codemods.engine.interrupt import Interrupted, StopFlag, deferred_interrupt, die_with_parent, start_worker
from codemods.engine.pipeline import transform_source
from codemods.engine.pool import pooled
from codemods.engine.python2 import unparsed
from codemods.engine.source import Decoded, SourceError, TooLarge, decode, read_limited
from codemods.engine.writer import Changed, Identity, Original, ReadOnly, sweep_temps, write_atomic
from codemods.helpers.context import FileContext
from codemods.helpers.facts import RepoFacts
from codemods.helpers.scan import names_key
from codemods.registry import Spec
from codemods.results import FileResult, Problem, Status
from codemods.versions import Target, format_version

if TYPE_CHECKING:
    from codemods.era import Era

# multiprocessing and concurrent.futures are imported where a pool starts: a run of a handful of
# files never starts one (every import is paid by every small run, pre-commit's among them).

T = TypeVar("T")
R = TypeVar("R")

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
    cache_dir: str | None = None  # the per-file result cache (engine/cache.py); None: no cache
    target: Target = field(default_factory=Target)  # the torch the output must run on
    era: Era | None = None  # the torch the code was written for, when a selected codemod asks (codemods/era.py)
    # path -> (content digest, size) of the files the facts pass read (with a cache): a warm run's
    # lookups outside write mode answer from them, without reading, hashing or even a stat of
    # every file again
    digests: Mapping[str, tuple[bytes, int]] = field(default_factory=dict, compare=False)

    def context(self, display: str) -> FileContext:
        """What a codemod may know of this file beyond its tree."""
        return FileContext(display, self.device_name, self.facts, target_torch=self.target.version, era=self.era)

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


def _lines(text: str) -> list[str]:
    """Lines as Python, libcst's positions and SARIF count them: ended by CRLF, LF or CR only
    (str.splitlines also breaks at form feeds and U+2028, and every later line number with them)."""
    return _LINE.findall(text)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def unified_diff(old: str, new: str, display: str) -> str:
    lines = difflib.unified_diff(_lines(old), _lines(new), f"a/{display.lstrip('/')}", f"b/{display.lstrip('/')}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def process_file(path: Path, display: str, plan: Plan, *, cached_only: bool = False) -> FileResult | None:
    """Migrate one file. Every failure becomes a `FileResult` with a `Problem`; nothing raises.

    With `cached_only`, None when the result would need the pipeline (not in the cache). Such a
    lookup outside write mode keys on the digest the facts pass took (`plan.digests`), and reads
    the file only if the entry is not the whole answer.
    """
    try:
        known = plan.digests.get(str(path)) if cached_only and plan.mode != "write" else None
        if known is not None and known[1] > plan.max_bytes:  # known: the digest's bytes
            raise TooLarge(known[1], plan.max_bytes)
        notebook = path.suffix == ".ipynb"
        # which file is read, taken first: a write later replaces only that file with those bytes
        seen = Identity.of(path) if plan.mode == "write" else None
        data = read_limited(path, plan.max_bytes) if known is None or notebook else None
    except TooLarge as exc:
        return FileResult(display, Status.ERROR, problem=Problem(display, 0, exc.reason))
    except OSError as exc:
        return FileResult(display, Status.ERROR, problem=Problem(display, 0, f"cannot read: {exc.strerror or exc}"))

    specs = plan.specs if not plan.per_file_ignores else plan.specs_for(
        os.path.relpath(path.resolve(), plan.root) if plan.root else display
    )
    if not specs:
        return FileResult(display, Status.SKIPPED)
    if notebook:
        return None if cached_only else _notebook(path, display, data, specs, plan, seen)

    cache = _cache(plan.cache_dir)
    if cached_only and cache is None:
        return None
    key = outcome = source = None
    if cache is not None:
        uses_facts = any(s.reads_repo for s in specs)
        names = "" if uses_facts else names_key(plan.facts, display)  # the whole facts already hold them
        key = cache.key(
            content_digest(data) if data is not None else known[0], display, [s.code for s in specs], plan.device_name,
            plan.facts if uses_facts else None, f"{format_version(plan.target.version)}\0{plan.era}\0{names}",
        )
        outcome = cache.get(key, text=plan.mode == "write")
    fresh = outcome is None
    if fresh:
        if cached_only:
            return None
        outcome, source = _outcome(data, display, specs, plan)
    # --check keeps the diff too: reports locate pending rewrites by its hunks (SARIF regions).
    # The display path and the bytes are in the key, so the entry keeps the diff once made.
    if outcome.status is Status.CHANGED and plan.mode != "write" and outcome.diff is None:
        if data is None:
            return None  # the entry has no diff yet: the full run reads the file and makes it
        source = source if source is not None else decode(data)
        outcome = replace(outcome, diff=unified_diff(source.text, outcome.code, display))
        fresh = True
    if cache is not None and fresh:
        cache.put(key, outcome)

    result = FileResult(display, outcome.status, outcome.rewrites, outcome.findings, outcome.problem, notes=outcome.notes)
    if outcome.status is not Status.CHANGED:
        return result
    extra = companions.needed(path, outcome.companions)  # decided here, each run: the file system's state
    if extra:
        result, refused = companions.checked(result, extra, plan.mode)
        if refused:
            return result
    if plan.mode == "write":
        source = source if source is not None else decode(data)  # a cache hit: only decoding is redone
        failed = _write(path, source, outcome.code, display, outcome.findings, Original(seen, data))
        if failed is not None:
            return failed
        return result
    return replace(result, diff=outcome.diff)


def _write(path: Path, source: Decoded, code: str, display: str, findings, original: Original) -> FileResult | None:
    """Write the migrated text in the file's own encoding over the file `original` was read from;
    a `FileResult` only when that fails (the file is then left as it is)."""
    try:
        write_atomic(path, source.encode(code), original)
    except ReadOnly:
        problem = Problem(display, 0, "read-only; left untouched")
        return FileResult(display, Status.ERROR, findings=findings, problem=problem)
    except Changed:  # saved, replaced or made a link since it was read: the user's version stands
        problem = Problem(display, 0, "changed while torch-migrate ran; left as it is")
        return FileResult(display, Status.ERROR, findings=findings, problem=problem)
    except (OSError, UnicodeEncodeError) as exc:
        reason = f"cannot write: {getattr(exc, 'strerror', None) or exc}; left untouched"
        return FileResult(display, Status.ERROR, findings=findings, problem=Problem(display, 0, reason))
    return None


def _outcome(data: bytes, display: str, specs: tuple[Spec, ...], plan: Plan) -> tuple[FileOutcome, Decoded | None]:
    """What the pipeline makes of a module's bytes: the part of `process_file` that is cached."""
    try:
        source = decode(data)
    except SourceError as exc:
        return FileOutcome(Status.ERROR, {}, problem=Problem(display, exc.line, exc.reason)), None
    result = transform_source(source.text, specs, plan.context(display))
    notes = tuple(result.notes)
    if result.problem is not None:
        return FileOutcome(Status.ERROR, {}, result.findings, result.problem, notes), source
    if not result.changed:
        status = Status.UNCHANGED if result.parsed else Status.SKIPPED
        findings = result.findings if result.parsed else (*result.findings, *unparsed(source.text, display, specs))
        return FileOutcome(status, {}, findings, notes=notes), source
    rewrites, made = dict(result.rewrites or {}), companions.wanted(source.text, result.code)
    return FileOutcome(Status.CHANGED, rewrites, result.findings, None, notes, result.code, companions=made), source


@lru_cache(maxsize=4)
def _cache(directory: str | None) -> Cache | None:
    """One Cache per directory and process (pool workers build their own)."""
    return Cache(directory) if directory else None


def _notebook(
    path: Path, display: str, data: bytes, specs: tuple[Spec, ...], plan: Plan, seen: Identity | None
) -> FileResult:
    """Notebooks are not cached (rare, and their diff is per cell)."""
    try:
        source = decode(data)
    except SourceError as exc:
        return FileResult(display, Status.ERROR, problem=Problem(display, exc.line, exc.reason))
    from codemods.engine.notebooks import cell_label, transform_notebook  # only for a notebook

    notebook = transform_notebook(source.text, specs, plan.context(display))
    result = notebook.result
    if result.problem is not None:
        return FileResult(display, Status.ERROR, findings=result.findings, problem=result.problem)
    if not result.changed:
        status = Status.UNCHANGED if result.parsed else Status.SKIPPED
        return FileResult(display, status, findings=result.findings)
    diff = None
    if plan.mode != "write":
        diff = "".join(
            unified_diff(old, new, f"{display} [{cell_label(index)}]")
            for index, old, new in zip(notebook.changed_cells, notebook.cells_before, notebook.cells_after)
        )
    if plan.mode == "write":
        failed = _write(path, source, result.code, display, result.findings, Original(seen, data))
        if failed is not None:
            return failed
    return FileResult(
        display, Status.CHANGED, rewrites=result.rewrites or {}, findings=result.findings, diff=diff, notes=result.notes
    )


def _process(job: tuple[Path, str, Plan]) -> FileResult:
    path, display, plan = job
    try:
        with paused_gc():
            return process_file(path, display, plan)
    except Exception as exc:  # a bug of ours must not take the other files down with it
        problem = Problem(display, 0, f"internal error: {type(exc).__name__}: {exc}")
        return FileResult(display, Status.ERROR, problem=problem)


def processes(jobs: int | None) -> int:
    """How many processes a run of `jobs` (None: one per CPU) may use here: only this one in a
    daemonic process (a Dask worker's, a multiprocessing pool's), which may start no children."""
    # A process multiprocessing started has it imported; any other is no daemon (and pays no import)
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.current_process().daemon:
        return 1
    return jobs or os.cpu_count() or 1


def run_files(
    files: Sequence[tuple[Path, str]],
    plan: Plan,
    jobs: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> list[FileResult]:
    """Process `(path, display)` pairs; results come back in input order whatever `jobs` is.

    Ctrl-C or SIGTERM stops the run once the files in progress are done (engine/pool.py), and
    raises `Interrupted` with the results of every file finished (so the caller can name exactly
    the files rewritten).
    """
    jobs = processes(jobs)
    work = [(path, display, plan) for path, display in files]
    done: dict[int, FileResult] = {}
    if plan.mode == "write":
        sweep_temps({path.parent for path, _ in files})  # what a killed run left half-written

    def finished(index: int, result: FileResult) -> None:
        done[index] = result
        if on_result is not None:
            on_result(result)

    with deferred_interrupt() as stop:
        try:
            # Cache hits are answered here (reading and hashing is cheap); only misses go to
            # the pipeline, so a warm run starts no worker processes at all.
            for index, job in enumerate(work if plan.cache_dir else ()):
                if stop.requested:
                    break
                hit = _lookup(job)
                if hit is not None:
                    finished(index, hit)
            misses = [] if stop.requested else [(i, job) for i, job in enumerate(work) if i not in done]
            for index, result in _results(misses, jobs, stop):
                finished(index, result)
        finally:
            cache = _cache(plan.cache_dir)
            if cache is not None:
                cache.close()  # a connection is freed by the cycle collector only (sqlite3's statement cache)
    results = [done[i] for i in sorted(done)]
    if stop.requested:
        raise Interrupted(companions.listed(results, plan.mode), stop.signum)
    if len(results) != len(work):
        raise AssertionError("fewer results than files")
    return companions.listed(results, plan.mode)


def _lookup(job: tuple[Path, str, Plan]) -> FileResult | None:
    path, display, plan = job
    try:
        return process_file(path, display, plan, cached_only=True)
    except Exception:  # whatever went wrong, the full run of this file will say it
        return None


def _results(work: list[tuple[int, tuple]], jobs: int, stop: StopFlag) -> Iterator[tuple[int, FileResult]]:
    """(index, result) for each `(index, job)`: in order in this process, largest files first in
    a pool; after a stop request, only those of the files already done (engine/pool.py)."""
    if jobs <= 1 or len(work) < _POOL_THRESHOLD or not _shared_locks():
        for index, job in work:
            if stop.requested:
                return
            yield index, _process(job)
        return
    yield from pooled(work, jobs, stop, _process)


@lru_cache(maxsize=1)
def _shared_locks() -> bool:
    """Whether processes can share a lock here (a POSIX semaphore: a file in /dev/shm on Linux).
    Without /dev/shm, or under a file-size limit too low for one, every pool fails at its first
    lock: the work is then done in this process."""
    try:
        import multiprocessing.synchronize  # raises ImportError where there is no sem_open

        multiprocessing.get_context().Lock()
    except (OSError, ImportError):
        return False
    return True


def in_processes(function: Callable[[T], R], items: Sequence[T], jobs: int | None = None) -> Iterator[R]:
    """`map(function, items)` in `jobs` processes (in this one for one job or one item), in order.

    For work without a crash risk (the pipeline itself goes through `_results`, which survives a
    worker's death)."""
    jobs = processes(jobs)
    if jobs <= 1 or len(items) <= 1 or not _shared_locks():
        yield from map(function, items)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    # Ctrl-C reaches the workers too: the process that waits on them stops the run (a worker
    # interrupted mid-item would print its traceback), and they end with their item
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=start_worker, initargs=(os.getpid(),)) as pool:
        yield from pool.map(function, items)


def apart(function: Callable[..., R], *args) -> R:
    """`function(*args)` computed in a forked child process and its result sent back pickled;
    in this process where there is no fork, or the child dies or cannot send its result.

    For a phase that allocates much more than it returns (the facts pass of a large repository:
    every file's parts, then their merge), run before a pool is forked from this process: each
    worker's memory counts every page this process holds, and the phase's garbage would stay
    here (the allocator keeps the arenas its few survivors sit in)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return function(*args)  # a pool's worker (batch) may have no children
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_send_result, args=(writer, function, args, os.getpid()))
    try:
        child.start()
    except OSError:  # no process to be had (a limit on processes, memory)
        reader.close()
        writer.close()
        return function(*args)
    writer.close()
    try:
        kind, value = reader.recv()
    except (EOFError, OSError):
        kind, value = "failed", None  # it died before it could answer
    except BaseException:  # Ctrl-C, SIGTERM: its work is not wanted any more (its pool dies with it)
        child.terminate()
        raise
    finally:
        reader.close()
        child.join(timeout=5)
        if child.is_alive():
            child.terminate()
            child.join()
    return value if kind == "ok" else function(*args)


def _send_result(writer, function: Callable, args: tuple, parent: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # `terminate` ends it where it stands, not the handler forked with it
    die_with_parent(parent)
    try:
        writer.send(("ok", function(*args)))
    except KeyboardInterrupt:  # the main process stops the run itself
        pass
    except Exception as exc:  # this process takes it up again: a bug shows there, with its traceback
        writer.send(("failed", repr(exc)))
    finally:
        writer.close()
