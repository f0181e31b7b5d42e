"""TM201 on datasets that already close their HDF5 file in `__init__`: nothing to migrate.

The `closed_in_init` fixture reads everything in `__init__` and closes the file (or uses
`with`); TM201 leaves it as it is, and as it is it already leaves no handle open, pickles and
gives the same items with `spawn`/`fork` workers as without. A dataset that closes its file on
one path only (`closed_conditionally`) is still migrated, and reads the same either way.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
h5py = pytest.importorskip("h5py")
np = pytest.importorskip("numpy")

from torch.utils.data import DataLoader  # noqa: E402

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

CASES = FIXTURES / "TM201-h5py-lazy-open"
START_METHODS = [m for m in ("fork", "spawn") if m in multiprocessing.get_all_start_methods()]
CLOSED = ("Preloaded", "LocalHandle", "ClosedInFinally", "WithBlock")


def _open_files() -> int:
    return h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("tm201_closed")
    data = root / "data.h5"
    with h5py.File(data, "w") as f:
        f["frames"] = np.random.default_rng(0).standard_normal((5, 3)).astype("f4")
        f["labels"] = np.arange(5) * 7
    spec = registry.get("TM201")
    closed = transform_source((CASES / "closed_in_init.in.py").read_text(), [spec])
    conditional_source = (CASES / "closed_conditionally.in.py").read_text()
    conditional = transform_source(conditional_source, [spec])
    (root / "tm201_closed.py").write_text(closed.code)
    (root / "tm201_conditional_before.py").write_text(conditional_source)
    (root / "tm201_conditional_after.py").write_text(conditional.code)
    with pytest.MonkeyPatch.context() as patch:  # spawn workers import the modules by name
        patch.syspath_prepend(str(root))
        paths = [str(root), str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
        yield str(data), closed, conditional


def _items(dataset, **loader) -> list:
    return [tuple(np.asarray(t).tolist() for t in (b if isinstance(b, (list, tuple)) else [b])) for b in DataLoader(dataset, batch_size=None, **loader)]


def test_nothing_to_migrate_and_no_helper(env):
    _, closed, _ = env
    assert not closed.changed and not closed.findings
    assert "_H5Lazy" not in closed.code


@pytest.mark.parametrize("method", START_METHODS)
@pytest.mark.parametrize("name", CLOSED)
def test_as_left_it_already_works_with_workers(env, name, method):
    data, _, _ = env
    module = importlib.import_module("tm201_closed")
    before = _open_files()
    dataset = getattr(module, name)(data)
    assert _open_files() == before  # no handle outlives __init__
    pickle.dumps(dataset)
    serial = _items(dataset)
    assert _items(dataset, num_workers=2, multiprocessing_context=method) == serial


@pytest.mark.parametrize("preload", [False, True])
def test_closing_on_one_path_is_still_migrated_and_reads_the_same(env, preload):
    data, _, conditional = env
    assert conditional.changed and "_H5Lazy" in conditional.code
    old = importlib.import_module("tm201_conditional_before").MaybePreloaded(data, preload)
    new = importlib.import_module("tm201_conditional_after").MaybePreloaded(data, preload)
    assert len(old) == len(new)
    assert _items(new) == _items(old)
    pickle.dumps(new)
    method = "spawn" if "spawn" in START_METHODS else START_METHODS[0]
    assert _items(new, num_workers=2, multiprocessing_context=method) == _items(old)


def test_a_closed_handle_left_on_self_is_reported_because_it_cannot_be_pickled(env):
    data, _, _ = env
    source = (CASES / "closed_then_read.in.py").read_text()
    result = transform_source(source, [registry.get("TM201")])
    assert not result.changed and any("cannot be pickled" in f.message for f in result.findings)
    root = Path(importlib.import_module("tm201_closed").__file__).parent
    (root / "tm201_closed_then_read.py").write_text(source)
    dataset = importlib.import_module("tm201_closed_then_read").KeepsTheClosedFile(data)
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(dataset)
