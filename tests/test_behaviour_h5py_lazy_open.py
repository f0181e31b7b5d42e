"""TM201 behaviour: the fixture datasets, before and after migration, with real files and workers.

The fixture sources are written to a temp dir as importable modules (spawn workers import them
by name), next to a small HDF5 file; the original and the migrated classes then run under
DataLoader with `num_workers=0` and `2`, with the `fork` and `spawn` start methods.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
h5py = pytest.importorskip("h5py")
np = pytest.importorskip("numpy")

from torch.utils.data import ConcatDataset, DataLoader, Dataset  # noqa: E402

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

CASES = FIXTURES / "TM201-h5py-lazy-open"
ROWS = 6
START_METHODS = [m for m in ("fork", "spawn") if m in multiprocessing.get_all_start_methods()]


def open_files() -> int:
    return h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Original and migrated fixture modules in an importable temp dir, and the data file."""
    root = tmp_path_factory.mktemp("tm201")
    data, frames = root / "data.h5", root / "frames.h5"
    rng = np.random.default_rng(0)
    # The basic fixture opens its file with swmr=True: HDF5 then needs the latest format, and
    # refuses to open the same file without SWMR at the same time, so it gets a file of its own.
    with h5py.File(frames, "w", libver="latest") as f:
        f["frames"] = rng.standard_normal((ROWS, 3)).astype("f4")
        f["labels"] = np.arange(ROWS) * 10
    with h5py.File(data, "w") as f:
        f["frames"] = rng.standard_normal((ROWS, 3)).astype("f4")
        f["labels"] = np.arange(ROWS) * 100
        f["x"] = rng.standard_normal((ROWS, 3)).astype("f4")
        f["data"] = rng.standard_normal((ROWS, 3)).astype("f4")
        f["label"] = rng.standard_normal((ROWS, 3)).astype("f4")
        f["fc/feats"] = rng.standard_normal((ROWS, 2)).astype("f4")
    spec = registry.get("TM201")
    for case in ("basic", "aliases", "helper_method", "subclass", "local_import"):
        source = (CASES / f"{case}.in.py").read_text()
        result = transform_source(source, [spec])
        assert result.changed and result.problem is None
        (root / f"tm201_{case}_before.py").write_text(source)
        (root / f"tm201_{case}_after.py").write_text(result.code)
    sys.path.insert(0, str(root))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root), str(Path(__file__).parents[1]), *filter(None, [old])])
    try:
        yield SimpleNamespace(root=root, data=str(data), frames=str(frames))
    finally:
        sys.path.remove(str(root))
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


def build(env, version: str) -> list[Dataset]:
    """One dataset of each map-style fixture class, from the `before` or `after` module."""
    basic = importlib.import_module(f"tm201_basic_{version}")
    aliases = importlib.import_module(f"tm201_aliases_{version}")
    local_import = importlib.import_module(f"tm201_local_import_{version}")
    opt = SimpleNamespace(input_label_h5=env.data, input_fc_h5=env.data)
    return [
        basic.Frames(env.frames), aliases.DatasetFromHdf5(env.data), aliases.Captions(opt), local_import.Frames(env.data)
    ]


def items(dataset, **loader) -> list:
    return [_plain(x) for x in DataLoader(dataset, batch_size=None, **loader)]


def _plain(x):
    if isinstance(x, (list, tuple)):
        return tuple(_plain(v) for v in x)
    return np.asarray(x).tolist()


def test_original_keeps_files_open_and_cannot_be_pickled(env):
    before = open_files()
    datasets = build(env, "before")
    assert open_files() > before
    for dataset in datasets:
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(dataset)


@pytest.mark.skipif("spawn" not in START_METHODS, reason="no spawn start method on this platform")
@pytest.mark.filterwarnings("ignore:Got pickle error")
def test_original_fails_with_spawn_workers(env):
    dataset = build(env, "before")[0]
    with pytest.raises(TypeError, match="pickle"):
        items(dataset, num_workers=2, multiprocessing_context="spawn")


def test_migrated_leaves_no_file_open_after_construction(env):
    before = open_files()
    datasets = build(env, "after")
    assert open_files() == before
    assert [len(d) for d in datasets] == [ROWS] * len(datasets)  # metadata read in __init__ and through the handle


@pytest.mark.parametrize("method", START_METHODS)
def test_migrated_workers_yield_the_serial_items(env, method):
    dataset = ConcatDataset(build(env, "after"))
    serial = items(dataset, num_workers=0)
    assert len(serial) == len(dataset.datasets) * ROWS
    parallel = items(dataset, num_workers=2, multiprocessing_context=method)
    assert parallel == serial


def test_migrated_pickles_after_use_and_copies_read_the_same(env):
    for dataset in build(env, "after"):
        first = _plain(dataset[0])
        assert open_files() > 0
        copy = pickle.loads(pickle.dumps(dataset))
        assert _plain(copy[ROWS - 1]) == _plain(dataset[ROWS - 1])
        assert _plain(copy[0]) == first


class _WhoRead(Dataset):
    """Each item with the pid of the worker that read it and the pid its h5py handle was opened in."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        item = self.dataset[index]
        return item, os.getpid(), vars(self.dataset)["h5"]._pid


@pytest.mark.skipif("fork" not in START_METHODS, reason="no fork start method on this platform")
def test_forked_workers_never_use_the_parents_handle(env):
    dataset = build(env, "after")[0]
    serial = [_plain(dataset[i]) for i in range(ROWS)]  # the parent now holds an open handle
    assert vars(dataset)["h5"]._pid == os.getpid()
    got = list(DataLoader(_WhoRead(dataset), batch_size=None, num_workers=2, multiprocessing_context="fork"))
    assert [_plain(item) for item, _, _ in got] == serial
    workers = {int(pid) for _, pid, _ in got}
    assert os.getpid() not in workers
    assert all(int(pid) == int(opened) for _, pid, opened in got)  # each worker opened its own
    assert _plain(dataset[1]) == serial[1]  # and the parent's handle still works


def test_close_and_del_keep_working(env):
    shards = importlib.import_module("tm201_helper_method_after").Shards
    before = open_files()
    dataset = shards(env.data, key="frames")
    assert dataset.size == ROWS
    assert open_files() == before
    rows = [r.tolist() for r in dataset]
    assert len(rows) == ROWS and open_files() == before + 1
    dataset.close()
    assert open_files() == before
    del dataset  # __del__ calls close() again: nothing to close, no error
    assert open_files() == before


def test_subclass_reading_in_its_init_closes_again(env):
    before_module = importlib.import_module("tm201_subclass_before")
    after_module = importlib.import_module("tm201_subclass_after")
    baseline = open_files()
    after = after_module.WithStats(env.data)
    assert open_files() == baseline
    before = before_module.WithStats(env.data)
    assert after.mean == before.mean
    assert [_plain(after[i]) for i in range(ROWS)] == [_plain(before[i]) for i in range(ROWS)]
