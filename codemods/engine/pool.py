"""The pipeline's process pool: chunks of files in worker processes, and the pool's whole life.

A stop (Ctrl-C, SIGTERM) sets a shared flag each worker reads between files and before each
write; a worker still on its file after `GRACE` seconds is sent SIGTERM, which stops that file
where it stands (engine/interrupt.py: `Halted`, never between a write and its report), and one
still not done after as long again is killed. Each worker dies with the main process (killed
with SIGKILL too), and the pool is shut down before the run returns: no worker outlives its run.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Callable, Iterator

from codemods.engine import interrupt
from codemods.engine.interrupt import Halted, StopFlag
from codemods.results import FileResult, Problem, Status

# Seconds a worker may take to finish the file it is on once the run stops; as long again after
# SIGTERM stopped it mid-file, before it is killed (stuck in native code).
GRACE = 2.0

Job = tuple  # (path, display, plan)
Process = Callable[[Job], FileResult]

# In a pool worker: the run's plan, handed over once when the worker starts. Sent with every
# chunk instead, it was pickled in the main process (and unpickled in a worker) once per chunk,
# and it holds the whole repository's facts. And the function that processes one file.
_plan = None
_process: Process | None = None


def _start_worker(parent: int, halt, plan, process: Process) -> None:
    global _plan, _process
    interrupt.start_worker(parent, halt)
    _plan, _process = plan, process


def _process_chunk(files: list[tuple[Path, str]]) -> list[FileResult]:
    """The results of the chunk's first files, in order: all of them unless the run was halted
    (a file stopped after it was written is reported changed, with no details)."""
    results = []
    for path, display in files:
        if interrupt.halted():
            break
        try:
            with interrupt.working():
                result = _process((path, display, _plan))
        except Halted:
            interrupt.leave_if_orphaned()
            if interrupt.written():
                results.append(FileResult(display, Status.CHANGED))
            break
        results.append(result)
    return results


def pooled(work: list[tuple[int, Job]], jobs: int, stop: StopFlag, process: Process) -> Iterator[tuple[int, FileResult]]:
    """(index, `process(job)`) for each `(index, job)` in `jobs` worker processes, largest files
    first; after a stop request, only those of the files already done (see the module)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    # Largest files first: the last chunks are then small files, and no worker is left with a
    # large one while the others wait. Each result keeps its index (the caller orders by it).
    work = sorted(work, key=_size, reverse=True)
    size = max(1, min(16, len(work) // (jobs * 4)))
    chunks = [work[i : i + size] for i in range(0, len(work), size)]
    context = multiprocessing.get_context(method)
    halt = context.RawValue("b", 0)  # no lock: a worker reads it, and a killed main process holds none

    def set_halt() -> None:
        halt.value = 1

    stop.when_requested(set_halt)  # at once: the main process may be waiting on a whole chunk
    plan = work[0][1][2]  # every job of a run carries the same plan
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), halt, plan, process)
    )
    try:
        futures = [pool.submit(_process_chunk, [(path, display) for _, (path, display, _) in chunk]) for chunk in chunks]
        for position, (chunk, future) in enumerate(zip(chunks, futures)):
            while not stop.requested and not wait([future], timeout=0.25).done:
                pass  # a stop is seen within a quarter second, whatever the chunk's worker is on
            if stop.requested:
                yield from _in_progress(pool, chunks[position:], futures[position:])
                return
            try:
                results = future.result()
            except BrokenProcessPool:
                # A worker died (a native crash in the parser on some input). Finish the rest one
                # file per process: the file that kills its process is reported, every other
                # file migrates. First the other workers end (a file one of them is writing
                # would otherwise be read again half-way, and reported changed meanwhile).
                pool.shutdown(wait=True)
                for index, job in (pair for rest in chunks[position:] for pair in rest):
                    if stop.requested:
                        return
                    yield index, _isolated(job, method, process)
                return
            yield from zip((index for index, _ in chunk), results)
    except BaseException:  # a second Ctrl-C, a bug: the workers stop mid-file, then the pool ends
        set_halt()
        _signal(pool, signal.SIGTERM)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _size(item: tuple[int, tuple]) -> int:
    try:
        return os.path.getsize(item[1][0])
    except OSError:
        return 0  # unreadable: the worker reports it


def _in_progress(pool, chunks: list[list], futures: list) -> Iterator[tuple[int, FileResult]]:
    """After a stop request: cancel the chunks no worker has started; collect what the others
    finished (each stops after its file in progress, or in it after `GRACE`; `zip` pairs those
    results with their files)."""
    from concurrent.futures import TimeoutError as NotYet, wait
    from concurrent.futures.process import BrokenProcessPool

    for future in futures:
        future.cancel()
    running = [(chunk, future) for chunk, future in zip(chunks, futures) if not future.cancelled()]
    for last_resort in (signal.SIGTERM, signal.SIGKILL):
        if not wait([future for _, future in running], timeout=GRACE).not_done:
            break
        _signal(pool, last_resort)
    for chunk, future in running:
        try:
            results = future.result(timeout=GRACE)
        except (BrokenProcessPool, NotYet):  # what that worker wrote before dying cannot be known
            continue
        yield from zip((index for index, _ in chunk), results)


def _signal(pool, signum: int) -> None:
    """Send `signum` to each of the pool's workers (an idle one ignores SIGTERM)."""
    for pid in list(getattr(pool, "_processes", None) or ()):
        try:
            os.kill(pid, signum)
        except OSError:  # gone already
            pass


def _isolated(job: Job, method: str, process: Process) -> FileResult:
    """`process(job)` in a process of its own: a crash there is this file's alone. The plan goes
    over as the pool's does (inherited where processes fork, not pickled with the job)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    path, display, plan = job
    try:
        context = multiprocessing.get_context(method)
        initargs = (os.getpid(), None, plan, process)
        with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_start_worker, initargs=initargs) as pool:
            (result,) = pool.submit(_process_chunk, [(path, display)]).result()
            return result
    except BrokenProcessPool:
        reason = "the parser crashed on this file (its process died); left untouched"
        return FileResult(display, Status.ERROR, problem=Problem(display, 0, reason))
