"""The helper TM201 writes into migrated modules, imported as a module and run with a fake h5py.

The behaviour tests (`test_behaviour_h5py_*.py`) run the written copy with real files and real
DataLoader workers; these check each rule of the helper on its own, without h5py or torch.
"""

from __future__ import annotations

import pickle
import sys
import types

import pytest

from codemods.transforms.h5py_lazy_open.runtime import helper, lazy_h5py
from codemods.transforms.h5py_lazy_open.runtime.lazy_h5py import _H5_INHERITED, _H5Lazy, _H5PerProcess


class _FakeFile:
    """What `h5py.File(...)` returns here: remembers its arguments, its reads and whether it is closed."""

    opened: list[_FakeFile] = []

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs, self.closed = args, kwargs, False
        _FakeFile.opened.append(self)

    def __getitem__(self, key):
        return ("item", self, key)

    def get(self, key):
        return ("get", self, key)

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fake_h5py(monkeypatch):
    _FakeFile.opened = []
    monkeypatch.setitem(sys.modules, "h5py", types.SimpleNamespace(File=_FakeFile))
    _H5_INHERITED.clear()
    yield
    _H5_INHERITED.clear()


def test_a_file_is_opened_on_first_use_with_its_arguments_and_reused():
    lazy = _H5Lazy("data.h5", "r", swmr=True)
    assert _FakeFile.opened == []
    handle = lazy.open()
    assert (handle.args, handle.kwargs) == (("data.h5", "r"), {"swmr": True})
    assert lazy.open() is handle and len(_FakeFile.opened) == 1


def test_reads_are_replayed_on_the_file_of_this_process():
    lazy = _H5Lazy("data.h5")
    item, got = lazy["x"], lazy.get("y")
    assert _FakeFile.opened == []
    handle = lazy.open()
    assert item.open() == ("item", handle, "x") and got.open() == ("get", handle, "y")


def test_closing_closes_this_process_file_and_the_next_use_opens_it_again():
    lazy = _H5Lazy("data.h5")
    first = lazy.open()
    lazy["x"].close()  # a derived read closes the file it came from
    assert first.closed
    second = lazy.open()
    assert second is not first and not second.closed


def test_a_handle_inherited_from_another_process_is_kept_alive_never_used_or_closed(monkeypatch):
    lazy = _H5Lazy("data.h5")
    parent = lazy.open()
    monkeypatch.setattr(lazy_h5py.os, "getpid", lambda: -1)  # as a forked child sees it
    child = lazy.open()
    assert child is not parent and not parent.closed and _H5_INHERITED == [parent]
    lazy.close()
    assert child.closed and not parent.closed


def test_pickling_carries_only_the_arguments():
    lazy = _H5Lazy("data.h5", "r")
    derived = lazy["x"]
    derived.open()
    copy = pickle.loads(pickle.dumps(derived))
    assert copy._value is None and copy.source._value is None and copy.source.args == ("data.h5", "r")
    assert len(_FakeFile.opened) == 1
    assert copy.open()[1] is _FakeFile.opened[1]


class _Frames:
    h5 = _H5PerProcess()
    labels = _H5PerProcess()


def test_the_descriptor_opens_on_read_and_closes_by_name():
    frames = _Frames()
    frames.h5, frames.labels = _H5Lazy("x.h5"), "not lazy"
    handle = frames.h5
    assert isinstance(handle, _FakeFile) and frames.h5 is handle and frames.labels == "not lazy"
    assert _Frames.h5 is vars(_Frames)["h5"]  # read on the class: the descriptor itself
    _H5PerProcess.close(frames, "labels")
    assert not handle.closed
    _H5PerProcess.close(frames)
    assert handle.closed


def test_the_descriptor_raises_attribute_error_for_an_unset_attribute():
    frames = _Frames()
    with pytest.raises(AttributeError, match="h5"):
        frames.h5
    assert getattr(frames, "h5", None) is None
    frames.h5 = _H5Lazy("x.h5")
    del frames.h5
    with pytest.raises(AttributeError):
        del frames.h5


def test_the_helper_text_is_the_module_below_its_marker_and_can_use_the_module_import():
    with open(lazy_h5py.__file__, encoding="utf-8") as handle:
        source = handle.read()
    assert source.endswith(helper(None)) and helper(None).startswith("_H5_INHERITED = []")
    through_alias = helper("h5.File")
    assert "import h5py" not in through_alias
    assert "self._value, self._pid = h5.File(*self.args, **self.kwargs), pid\n" in through_alias
    compile(through_alias, "<helper>", "exec")
