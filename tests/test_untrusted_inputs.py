"""What a project, or the machine, can do to a run: a repository's git config naming commands, a
`torch/` folder of its own, files too large to read, a file-size limit, no /dev/shm, an --output
that cannot be written, an error nobody foresaw. None of it runs the project's code, reads a
huge file, rewrites files it cannot report on, or exits 1 (which means "would change")."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.batch import git as batch_git
from codemods.cli import main
from codemods.engine import runner
from codemods.engine.source import TooLarge, read_limited
from codemods.verify import copies

LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n"


def _cli(*args: str, cwd: Path | None = None, limits: dict[int, int] | None = None) -> subprocess.CompletedProcess:
    """torch-migrate in a child process, under resource limits (`resource.RLIMIT_*` -> bytes)."""

    def limit() -> None:
        for which, value in (limits or {}).items():
            resource.setrlimit(which, (value, value))

    return subprocess.run(
        [sys.executable, "-m", "codemods", *args],
        cwd=cwd, preexec_fn=limit, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _legacy_files(folder: Path, count: int) -> list[Path]:
    folder.mkdir(exist_ok=True)
    files = [folder / f"m{i}.py" for i in range(count)]
    for path in files:
        path.write_text(LEGACY)
    return files


# --- a repository's git config names commands: none of them runs -------------------------------


@pytest.fixture
def booby_trapped(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose .git/config runs a script (writing MARKER) as its fsmonitor and hooks."""
    marker = tmp_path / "MARKER"
    script = tmp_path / "trap.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\n')
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "reference-transaction", "pre-commit"):
        (hooks / hook).symlink_to(script)
    repo = tmp_path / "repo"
    _legacy_files(repo, 1)
    env = {**os.environ, **{f"GIT_{who}_{what}": "t" for who in ("AUTHOR", "COMMITTER") for what in ("NAME", "EMAIL")}}
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "legacy")):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)
    subprocess.run(["git", "config", "core.fsmonitor", str(script)], cwd=repo, check=True)
    subprocess.run(["git", "config", "core.hooksPath", str(hooks)], cwd=repo, check=True)
    # the trap is real: plain git runs it
    subprocess.run(["git", "ls-files"], cwd=repo, check=True, capture_output=True)
    assert marker.exists()
    marker.unlink()
    return repo, marker


def test_run_diff_runs_no_command_of_the_repository(booby_trapped) -> None:
    repo, marker = booby_trapped
    result = CliRunner().invoke(main, ["run", "--diff", "--no-cache", str(repo)])
    assert result.exit_code == 1 and 'reduction="sum"' in result.output
    assert not marker.exists()


def test_verify_copies_run_no_command_of_the_repository(booby_trapped, tmp_path: Path) -> None:
    repo, marker = booby_trapped
    source = copies.source_of(repo)
    assert source.git and "m0.py" in source.files
    copies.make_copy(source, tmp_path / "copy")
    assert (tmp_path / "copy" / "m0.py").read_text() == LEGACY
    assert not marker.exists()


def test_batch_git_runs_no_command_of_the_repository(booby_trapped, tmp_path: Path) -> None:
    repo, marker = booby_trapped
    batch_git.clone(str(repo), tmp_path / "clone")
    batch_git.git(repo, "status", "--porcelain")  # fsmonitor
    batch_git.git(repo, "checkout", "--quiet", "-b", "migrate")  # hooks
    assert not marker.exists()


def test_doctor_does_not_import_the_projects_own_torch(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    project = tmp_path / "project"
    (project / "torch").mkdir(parents=True)
    (project / "torch" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n__version__ = '0.0'\n")
    done = _cli("doctor", ".", "--format", "json", cwd=project)
    assert "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()


# --- files too large to read ------------------------------------------------------------------


def test_huge_files_are_refused_before_they_are_read(tmp_path: Path) -> None:
    """An 8 GB (sparse) file and a 50 MB one: each refused by its size, named, exit bit 2; the
    other files migrate. The child may not use more than 3 GB: reading either would fail."""
    project = tmp_path / "p"
    (small,) = _legacy_files(project, 1)
    with open(project / "huge.py", "wb") as handle:
        handle.truncate(8 * 1024**3)
    (project / "fifty.py").write_text(LEGACY * (50 * 1024**2 // len(LEGACY)))
    done = _cli("run", "--diff", str(project), limits={resource.RLIMIT_AS: 3 * 1024**3})
    assert done.returncode == 3, done.stdout + done.stderr  # 1: the small file would change; 2: two refused
    assert "Traceback" not in done.stderr
    for name in ("huge.py", "fifty.py"):
        (line,) = [ln for ln in done.stdout.splitlines() if name in ln and "limit" in ln]
        assert f"({(project / name).stat().st_size:,} bytes)" in line
    assert "+++ b/" + small.as_posix().lstrip("/") in done.stdout


def test_a_file_growing_after_its_size_was_asked_is_still_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n" * 1000)
    assert read_limited(path, 6000) == b"x = 1\n" * 1000
    real = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((*real(fd)[:6], 10, *real(fd)[7:])))  # says 10 bytes
    with pytest.raises(TooLarge, match="grew past it"):
        read_limited(path, 100)


# --- what the machine refuses -------------------------------------------------------------------


def test_a_file_size_limit_degrades_to_clear_errors(tmp_path: Path) -> None:
    """RLIMIT_FSIZE 0: no semaphore (a file in /dev/shm) can be made, so no pool; no file can be
    written. The run is serial; each file is reported and left as it was; the report file too."""
    files = _legacy_files(tmp_path / "p", 10)
    limits = {resource.RLIMIT_FSIZE: 0}
    wrote = _cli("run", "-j", "2", "--no-cache", str(tmp_path / "p"), limits=limits)
    assert wrote.returncode == 2 and "Traceback" not in wrote.stderr, wrote.stderr
    assert all(f"{path}: cannot write: File too large" in wrote.stdout for path in files)
    assert all(path.read_text() == LEGACY for path in files)

    diff = _cli("run", "--diff", "-j", "2", "--no-cache", str(tmp_path / "p"), limits=limits)
    assert diff.returncode == 1 and diff.stdout.count("+++ b/") == 10, diff.stderr

    report = tmp_path / "report.txt"
    told = _cli("run", "--diff", "--no-cache", str(tmp_path / "p"), "-o", str(report), limits=limits)
    assert told.returncode == 2 and "Traceback" not in told.stderr
    assert f"cannot write the report to {report}: File too large" in told.stderr


def test_no_shared_memory_runs_in_one_process(tmp_path: Path, monkeypatch) -> None:
    """Without /dev/shm, multiprocessing cannot make a semaphore: the pool is skipped, not fatal."""
    import _multiprocessing

    class NoShm:
        SEM_VALUE_MAX = _multiprocessing.SemLock.SEM_VALUE_MAX

        def __init__(self, *args, **kwargs) -> None:
            raise FileNotFoundError(2, "No such file or directory")  # sem_open's answer without /dev/shm

    monkeypatch.setattr(_multiprocessing, "SemLock", NoShm)
    runner._shared_locks.cache_clear()
    try:
        _legacy_files(tmp_path / "p", 10)
        result = CliRunner().invoke(main, ["run", "--diff", "-j", "2", "--no-cache", str(tmp_path / "p")])
    finally:
        runner._shared_locks.cache_clear()
    assert not isinstance(result.exception, OSError), result.exception
    assert result.exit_code == 1 and result.output.count("+++ b/") == 10, result.output


# --- the command line's own failures -------------------------------------------------------------


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder no file can be made in: read-only by its mode, else (root ignores modes) /proc."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except OSError:
        return folder
    (folder / "probe").unlink()
    return Path("/proc")


def test_output_into_an_unwritable_folder_is_refused_before_any_rewrite(tmp_path: Path) -> None:
    (path,) = _legacy_files(tmp_path / "p", 1)
    report = _unwritable_folder(tmp_path) / "report.txt"
    result = CliRunner().invoke(main, ["run", str(path), "--output", str(report)])
    assert result.exit_code == 2, result.output
    assert f"cannot write {report}" in result.output
    assert path.read_text() == LEGACY


def test_an_unforeseen_error_exits_2_in_one_line(tmp_path: Path, monkeypatch) -> None:
    from codemods import api

    def broken(*args, **kwargs):
        raise RuntimeError("something nobody foresaw\nsecond line")

    monkeypatch.setattr(api, "migrate", broken)
    _legacy_files(tmp_path / "p", 1)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "p")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: RuntimeError: something nobody foresaw (TORCH_MIGRATE_DEBUG=1 shows the traceback)"
    ]
    monkeypatch.setenv("TORCH_MIGRATE_DEBUG", "1")
    debug = CliRunner().invoke(main, ["run", str(tmp_path / "p")])
    assert debug.exit_code == 2 and "Traceback" in debug.output and "second line" in debug.output


def test_a_ctrl_c_no_command_handles_exits_130_not_1(tmp_path: Path, monkeypatch) -> None:
    """batch (and doctor) leave Ctrl-C to the group: click alone would print 'Aborted!' and exit 1,
    which means regressions."""
    import codemods.batch

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(codemods.batch, "run_batch", stopped)
    result = CliRunner().invoke(main, ["batch", str(tmp_path / "manifest.toml"), "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 130, result.output
    assert result.output.strip() == "interrupted"


def test_a_closed_output_pipe_exits_2() -> None:
    """`torch-migrate ... | head`: the reader goes away; Python and click would exit 1."""
    child = subprocess.Popen([sys.executable, "-m", "codemods", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # long before the child has imported what it needs to print
    _, err = child.communicate(timeout=60)
    assert child.returncode == 2, err
    assert b"Traceback" not in err and b"Exception ignored" not in err
