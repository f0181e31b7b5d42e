"""A file is replaced only while it is still the file that was read: an edit saved while a run
works, a link put in its place, another run's rewrite — each is left as it is and reported
("changed while torch-migrate ran", exit bit 2), never overwritten or written through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codemods import api
from codemods.api import Options
from codemods.engine import runner, writer
from codemods.engine.writer import Changed, Identity, Original, write_atomic
from codemods.results import Status

ROOT = Path(__file__).resolve().parents[1]
LEGACY = "import torch.nn as nn\n\ncrit = nn.MSELoss(size_average=False)\n"
EDITED = "import torch.nn as nn\n\ncrit = nn.MSELoss(size_average=False)  # the user's edit\n"
CHANGED_MEANWHILE = "changed while torch-migrate ran; left as it is"


def _during_the_run(monkeypatch: pytest.MonkeyPatch, edit) -> None:
    """Call `edit()` once, after the run has read its file and before it writes it."""
    transform = runner.transform_source

    def transform_then_edit(*args, **kwargs):
        result = transform(*args, **kwargs)
        edit()
        return result

    monkeypatch.setattr(runner, "transform_source", transform_then_edit)


def _only_result(report):
    (result,) = report.files
    return result


def _migrate(path: Path, **options):
    return api.migrate([path], Options(cache=False, use_config=False, jobs=1, **options))


def test_an_edit_saved_while_the_run_works_is_kept_and_reported(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    _during_the_run(monkeypatch, lambda: target.write_text(EDITED))  # in place, as many editors save
    report = _migrate(target)
    result = _only_result(report)
    assert result.status is Status.ERROR and result.problem.reason == CHANGED_MEANWHILE
    assert target.read_text() == EDITED
    assert report.exit_code & 2
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temp file left


def test_an_editor_save_by_rename_is_kept_even_with_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)

    def save() -> None:  # write a new file and rename it over: another inode, same bytes
        (tmp_path / "train.py~").write_text(LEGACY)
        os.replace(tmp_path / "train.py~", target)

    _during_the_run(monkeypatch, save)
    assert _only_result(_migrate(target)).problem.reason == CHANGED_MEANWHILE
    assert target.read_text() == LEGACY


def test_a_link_put_in_the_files_place_is_never_written_through(tmp_path: Path, monkeypatch) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    target, victim = tree / "train.py", outside / "victim.py"
    target.write_text(LEGACY)
    victim.write_text(LEGACY)  # the very bytes that were read: only the link shows the swap

    def swap() -> None:
        target.unlink()
        target.symlink_to(victim)

    _during_the_run(monkeypatch, swap)
    assert _only_result(_migrate(target)).problem.reason == CHANGED_MEANWHILE
    assert victim.read_text() == LEGACY and target.is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]


def test_a_folder_swapped_for_a_link_sends_no_write_elsewhere(tmp_path: Path, monkeypatch) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "pkg").mkdir(parents=True)
    outside.mkdir()
    target = tree / "pkg" / "train.py"
    target.write_text(LEGACY)
    (outside / "train.py").write_text(LEGACY)

    def swap() -> None:
        (tree / "pkg").rename(tree / "pkg.old")
        (tree / "pkg").symlink_to(outside)

    _during_the_run(monkeypatch, swap)
    assert _only_result(_migrate(target)).problem.reason == CHANGED_MEANWHILE
    assert (outside / "train.py").read_text() == LEGACY and (tree / "pkg.old" / "train.py").read_text() == LEGACY
    assert sorted(p.name for p in outside.iterdir()) == ["train.py"]


def test_a_link_that_was_there_when_read_is_still_written_through(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(LEGACY)
    (tmp_path / "alias.py").symlink_to("real.py")
    report = _migrate(tmp_path / "alias.py")
    assert _only_result(report).status is Status.CHANGED
    assert (tmp_path / "alias.py").is_symlink() and "reduction=" in (tmp_path / "real.py").read_text()


def test_another_run_finishing_first_keeps_its_result(tmp_path: Path, monkeypatch) -> None:
    # the second run to write sees the file changed since it read it, and leaves the first's result
    target = tmp_path / "train.py"
    target.write_text(LEGACY + "x = x.cuda()\n")
    first: list = []

    def other_run() -> None:
        monkeypatch.undo()  # the other run itself is not interrupted
        first.append(_migrate(target, select=("TM101",)))

    _during_the_run(monkeypatch, other_run)
    second = _only_result(_migrate(target, select=("TM001",)))
    assert _only_result(first[0]).status is Status.CHANGED
    assert second.problem.reason == CHANGED_MEANWHILE
    text = target.read_text()
    assert ".to(device)" in text and "size_average=False" in text  # the first run's result, whole


@pytest.mark.skipif(writer._renameat2() is None, reason="needs renameat2 (Linux) to swap in one step")
def test_a_save_landing_between_the_check_and_the_swap_is_swapped_back(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    original = Original(Identity.of(target), target.read_bytes())
    exchange = writer._exchange
    saved = []

    def save_then_exchange(folder, a, b):
        if not saved:  # the editor's save lands after the check, just before the swap
            (tmp_path / "train.py~").write_text(EDITED)
            os.replace(tmp_path / "train.py~", target)
            saved.append(True)
        return exchange(folder, a, b)

    monkeypatch.setattr(writer, "_exchange", save_then_exchange)
    with pytest.raises(Changed):
        write_atomic(target, b"migrated\n", original)
    assert target.read_text() == EDITED
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


def test_two_runs_at_once_lose_neither_runs_result(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    source = LEGACY + "\n\ndef step(x):\n    return crit(x.cuda(), x)\n"
    for i in range(40):
        (project / f"m{i:02d}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def start(code: str) -> subprocess.Popen:
        command = [sys.executable, "-m", "codemods", "run", "proj", "--no-cache", "-j", "2", "--select", code, "--format", "json"]
        return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    runs = {"TM001": start("TM001"), "TM101": start("TM101")}
    marks = {"TM001": 'reduction="sum"', "TM101": ".to(device)"}
    for code, proc in runs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 2), err
        for entry in json.loads(out)["files"]:
            text = (tmp_path / entry["path"]).read_text()
            if entry["status"] == "changed":  # what a run says it wrote is there
                assert marks[code] in text, (code, entry["path"])
            else:
                assert entry["status"] == "error" and CHANGED_MEANWHILE in json.dumps(entry), entry
    for path in project.iterdir():
        compile(path.read_text(), str(path), "exec")
    assert not list(project.glob("*.tm-tmp")) and not list(project.glob(".*.tm-tmp"))


def test_a_worker_writing_when_the_pool_breaks_is_not_raced_by_the_rerun(tmp_path: Path, monkeypatch) -> None:
    # a worker dies (a native crash) while another is replacing a file: the files of the broken
    # pool are run again one per process, and that file's rerun must read it only once the
    # other worker is done, not race it (and report its own run's write as a user's edit)
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the hooks are fork-inherited state")
    transform, open_unchanged = runner.transform_source, writer._open_unchanged
    writing, rerun = tmp_path / "writing", tmp_path / "rerun"

    def crash_or_dawdle(text, *args, **kwargs):
        if "CRASH" in text:  # dies while the other worker is writing
            while not writing.exists():
                time.sleep(0.01)
            os._exit(139)
        if "SLOW" in text and rerun.exists():
            time.sleep(3)  # the rerun of the file being written: read early, written late
        if "SLOW" in text:
            rerun.touch()
        return transform(text, *args, **kwargs)

    def slow_check(folder, name, expect):
        if name.startswith("slow"):
            writing.touch()
            time.sleep(1.5)
        return open_unchanged(folder, name, expect)

    monkeypatch.setattr(runner, "transform_source", crash_or_dawdle)
    monkeypatch.setattr(writer, "_open_unchanged", slow_check)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "slow.py").write_text(LEGACY + "# SLOW\n" * 40)  # the largest: the first chunk
    (project / "crash.py").write_text(LEGACY + "# CRASH\n" * 20)
    for i in range(6):
        (project / f"m{i}.py").write_text(LEGACY)
    report = api.migrate([project], Options(cache=False, use_config=False, jobs=2))
    problems = {Path(p.path).name: p.reason for p in report.problems}
    assert list(problems) == ["crash.py"], problems
    assert "reduction=" in (project / "slow.py").read_text()
