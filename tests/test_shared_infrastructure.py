"""One way each: the atomic write, the file walk and the torch probe are shared, not copied."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codemods.engine.discovery import discover, walk
from codemods.engine.writer import replace_atomically
from codemods.era import detect_era

VARIABLE = "from torch.autograd import Variable\n"


def test_replace_atomically_leaves_the_target_and_no_temp_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")

    def fail(tmp: str) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_atomically(target, b"new", prefix=".state.", prepare=fail)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    replace_atomically(target, b"new", prefix=".state.", durable=True)
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_the_batch_state_file_is_written_whole(tmp_path: Path) -> None:
    from codemods.batch import _load_state, _save_state

    _save_state(tmp_path, {"repos": {"r": {"status": "migrated"}}})
    assert _load_state(tmp_path) == {"repos": {"r": {"status": "migrated"}}}
    assert json.loads((tmp_path / "state.json").read_text())["repos"]["r"]["status"] == "migrated"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_the_era_scan_reads_the_files_a_run_covers(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text("import torch\n")
    for skipped in ("build", "node_modules", "myenv"):  # myenv: a virtualenv, known by its pyvenv.cfg
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "old.py").write_text(VARIABLE)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    covered = [p.relative_to(tmp_path).as_posix() for p in discover([tmp_path], suffixes=(".py",)).files]
    assert covered == ["pkg/model.py"]
    assert detect_era(tmp_path) is None  # none of the skipped folders' idioms count
    (tmp_path / "pkg" / "legacy.py").write_text(VARIABLE)
    assert str(detect_era(tmp_path)) == "torch < 0.4 (idioms: Variable at pkg/legacy.py:1)"


def test_walk_lists_each_folder_in_order_and_skips_what_it_is_told(tmp_path: Path) -> None:
    for rel in ("b.txt", "a/z.py", "a/sub/y.py", "dist/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    names = lambda paths: [p.relative_to(tmp_path).as_posix() for p in paths]  # noqa: E731
    assert names(walk(tmp_path)) == ["b.txt", "a/z.py", "a/sub/y.py"]
    assert names(walk(tmp_path, skip=frozenset())) == ["b.txt", "a/z.py", "a/sub/y.py", "dist/x.py"]


def test_doctor_and_verify_ask_torch_the_same_way() -> None:
    torch = pytest.importorskip("torch")
    from codemods import doctor
    from codemods.verify.device import detect

    here = doctor.probe_torch()
    there = detect(sys.executable, "auto")
    assert here.installed and here.version == there.torch == str(torch.__version__)
    assert (here.cuda_available, here.cuda_version, here.devices) == (there.cuda_available, there.cuda_version, there.devices)


def test_a_torch_that_does_not_import_is_reported_by_both(monkeypatch, tmp_path) -> None:
    from codemods import doctor, torch_probe

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ModuleNotFoundError
    info = torch_probe.describe()
    assert info["torch"] is None and not info["imported"] and info["error"].startswith("ModuleNotFoundError")
    # doctor asks a child process (started in an empty folder): give it a torch that fails the same way
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert doctor.probe_torch() == doctor.TorchInfo(installed=False, error="ModuleNotFoundError: No module named 'torch'")
