"""batch on a Dask cluster whose workers are daemonic processes (as real ones are), on repositories
large enough for the migration to want a process pool, and a scheduler that cannot be reached."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.api import Options, migrate
from codemods.batch import run_batch
from codemods.engine.runner import in_processes
from tests.conftest import ROOT, load_script

bench_batch = load_script("bench_batch")

FILES = 210  # past the facts pass's pool threshold (200) as well as the pipeline's (8)


def _tree(clone: Path, commit: str) -> str:
    return subprocess.run(["git", "rev-parse", f"{commit}^{{tree}}"], cwd=clone, check=True, capture_output=True, text=True).stdout


def _migrate_here(folder: str, answer) -> None:
    """In a daemonic process: a migration that would use a pool, and the facts pass's map."""
    try:
        report = migrate([folder], Options(jobs=2, cache=False))
        answer.send((len(report.changed), list(in_processes(abs, [-1, -2, -3], jobs=2))))
    except BaseException as exc:  # the parent shows it
        answer.send(repr(exc))


def test_a_daemonic_process_migrates_in_itself(tmp_path: Path) -> None:
    repo = bench_batch.make_repo(tmp_path, "repo", 12)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_migrate_here, args=(str(repo), writer), daemon=True)
    child.start()
    answer = reader.recv() if reader.poll(60) else "no answer"
    child.join(10)
    assert answer == (12, [1, 2, 3])


def test_dask_workers_migrate_a_large_repository_as_the_local_pool_does(tmp_path: Path, monkeypatch) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    repo = bench_batch.make_repo(tmp_path / "src", "large", FILES)
    manifest = bench_batch.write_manifest(tmp_path / "repos.toml", [repo])
    local = run_batch(manifest, tmp_path / "local", verify=False, jobs=2).results[0]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = run_batch(manifest, tmp_path / "dask", verify=False, dask_scheduler=cluster.scheduler_address).results[0]

    assert (remote.status, remote.message) == ("migrated", "not verified (--no-verify)")
    assert (remote.files_changed, remote.rewrites, remote.problems) == (FILES, local.rewrites, [])
    assert local.files_changed == FILES
    # the same tree: every migrated file byte-identical to the local pool's
    assert _tree(tmp_path / "dask" / "repos" / "large", remote.commit) == _tree(tmp_path / "local" / "repos" / "large", local.commit)
    migrated = subprocess.run(["git", "show", "tm/upgrade:pkg1/model_7.py"], cwd=repo, check=True, capture_output=True, text=True).stdout
    assert "Variable" not in migrated and 'reduction="sum"' in migrated and ".to(device)" in migrated


@pytest.mark.parametrize(
    ("address", "reason"),
    [("tcp://127.0.0.1:1", "Timed out trying to connect to tcp://127.0.0.1:1 after 1 s"), ("nonsense", "missing port number")],
)
def test_an_unreachable_scheduler_is_one_clear_error(tmp_path: Path, address: str, reason: str) -> None:
    pytest.importorskip("distributed")
    manifest = bench_batch.write_manifest(tmp_path / "repos.toml", [bench_batch.make_repo(tmp_path, "repo", 1)])
    command = [sys.executable, "-m", "codemods", "batch", str(manifest), "--workdir", str(tmp_path / "work")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}
    done = subprocess.run([*command, "--dask-scheduler", address], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()  # one line, no traceback
    assert line.startswith(f"Error: cannot reach the Dask scheduler {address}: ") and reason in line
