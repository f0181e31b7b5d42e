"""Batch upgrades: many repositories, a branch, a commit and a report each.

    from codemods.batch import run_batch
    outcome = run_batch("repos.toml", workdir="work", jobs=2)
"""

from __future__ import annotations

import json
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from codemods import __version__
from codemods.batch.manifest import ManifestError, RepoEntry, load_manifest
from codemods.batch.resume import source_unmoved
from codemods.batch.runner import DONE, FAILED, MIGRATED, UNCHANGED, BatchSettings, RepoResult, process_plain
from codemods.engine.writer import replace_atomically

__all__ = ["run_batch", "BatchOutcome", "ManifestError", "RepoResult", "SchedulerError"]

STATE = "state.json"


class SchedulerError(Exception):
    """The Dask scheduler of --dask-scheduler cannot be reached: nothing ran."""


@dataclass
class BatchOutcome:
    results: list[RepoResult] = field(default_factory=list)
    resumed: set[str] = field(default_factory=set)

    @property
    def exit_code(self) -> int:
        """0 all migrated (or nothing to do); 2 nothing could run; 1 anything else."""
        if not self.results or all(r.status == FAILED for r in self.results):
            return 2
        return 0 if all(r.status in (MIGRATED, UNCHANGED) for r in self.results) else 1

    def to_dict(self) -> dict:
        return {
            "version": 1,
            "tool_version": __version__,
            "repos": [{**r.to_dict(), "resumed": r.name in self.resumed} for r in self.results],
            "exit_code": self.exit_code,
        }


def _load_state(workdir: Path) -> dict:
    try:
        state = json.loads((workdir / STATE).read_text())
        return state if isinstance(state, dict) and isinstance(state.get("repos"), dict) else {"repos": {}}
    except (OSError, ValueError):
        return {"repos": {}}  # a missing or corrupt state file means nothing is done yet


def _save_state(workdir: Path, state: dict) -> None:
    replace_atomically(workdir / STATE, json.dumps(state, indent=2).encode("utf-8"), prefix=".state.")


def _local(payloads: list[tuple[dict, dict]], jobs: int) -> Iterator[dict]:
    if jobs <= 1 or len(payloads) <= 1:
        for entry, settings in payloads:
            yield process_plain(entry, settings)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = {pool.submit(process_plain, e, s) for e, s in payloads}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield future.result()
        except BaseException:
            for future in pending:
                future.cancel()  # not started stays not started
            raise


def _dask(payloads: list[tuple[dict, dict]], scheduler: str) -> Iterator[dict]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ManifestError(
            "--dask-scheduler needs the dask extra: pip install '.[dask]' in a torch-migrate clone "
            "(or pip install 'dask[distributed]')"
        ) from None
    try:  # waits as long as dask's `distributed.comm.timeouts.connect` says (30 s unless configured)
        client = Client(scheduler)
    except (OSError, ValueError) as exc:  # refused, timed out, no such host, not an address
        raise SchedulerError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    with client:
        futures = [client.submit(process_plain, e, s, pure=False, key=f"torch-migrate-{e['name']}") for e, s in payloads]
        try:
            for _, result in as_completed(futures, with_results=True):
                yield result
        except BaseException:
            client.cancel(futures)
            raise


def run_batch(
    manifest: str | Path,
    workdir: str | Path,
    jobs: int = 1,
    dask_scheduler: str | None = None,
    resume: bool = False,
    verify: bool = True,
    allow_regressions: bool = False,
    push: bool = False,
    on_result: Callable[[RepoResult], None] | None = None,
) -> BatchOutcome:
    entries = load_manifest(manifest)
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    state = _load_state(work)
    settings = asdict(BatchSettings(str(work), verify, allow_regressions, push))

    outcome = BatchOutcome()
    previous: dict[str, RepoResult] = {}
    todo: list[RepoEntry] = []
    for entry in entries:
        saved = state["repos"].get(entry.name)
        if (
            resume
            and saved
            and saved.get("fingerprint") == entry.fingerprint()
            and saved.get("tool_version") == __version__
            and saved.get("status") in DONE
            and source_unmoved(saved, entry.source, entry.ref)  # new commits in the source: migrate it again
        ):
            previous[entry.name] = RepoResult(**saved)
            outcome.resumed.add(entry.name)
        else:
            todo.append(entry)

    payloads = [(asdict(e), settings) for e in todo]
    stream = _dask(payloads, dask_scheduler) if dask_scheduler else _local(payloads, jobs)
    fresh: dict[str, RepoResult] = {}
    for data in stream:
        result = RepoResult(**data)
        fresh[result.name] = result
        state["repos"][result.name] = result.to_dict()
        state["tool_version"] = __version__
        _save_state(work, state)  # after each repository: an interruption loses at most the ones running
        if on_result is not None:
            on_result(result)
    outcome.results = [previous.get(e.name) or fresh[e.name] for e in entries]
    return outcome
