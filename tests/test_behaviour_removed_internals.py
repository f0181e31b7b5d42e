"""TM008 behaviour, one test per table entry kind: the old code fails (or silently misbehaves)
on torch 2.13; the migrated code does what the old code did on the torch it was written for."""

from __future__ import annotations

import collections.abc
import importlib
import itertools
import sys
import textwrap
import types

import pytest

from codemods import registry
from codemods.api import transform_source
from codemods.transforms.removed_internals import table

torch = pytest.importorskip("torch")


def _migrate(code: str):
    result = transform_source(textwrap.dedent(code), [registry.get("TM008")])
    assert result.problem is None
    return result


def _run(code: str, *args):
    namespace: dict = {}
    exec(compile(textwrap.dedent(code), "<code>", "exec"), namespace)
    return namespace["run"](*args)


SCHEDULERS = '''
import inspect
import torch.optim.lr_scheduler
from torch.optim.lr_scheduler import _LRScheduler


def run():
    found = set()
    for name, cls in torch.optim.lr_scheduler.__dict__.items():
        if inspect.isclass(cls) and issubclass(cls, _LRScheduler) and cls != _LRScheduler:
            found.add(name)
    return found
'''


def test_lr_scheduler_discovery_finds_the_schedulers_again():
    assert _run(SCHEDULERS) == set()  # torch >= 2.0: no scheduler derives from _LRScheduler
    result = _migrate(SCHEDULERS)
    found = _run(result.code)
    # What torch 1.x found: every built-in scheduler derived from _LRScheduler.
    assert {"LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "CyclicLR", "OneCycleLR"} <= found
    assert [f.kind for f in result.findings] == ["review"]  # ReduceLROnPlateau now matches too


def test_subclassing_lr_scheduler_behaves_the_same():
    code = '''
    import torch
    from torch.optim.lr_scheduler import _LRScheduler


    class Halve(_LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]


    def run():
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
        sched = Halve(opt)
        lrs = []
        for _ in range(3):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs
    '''
    result = _migrate(code)
    assert "_LRScheduler" not in result.code
    assert _run(result.code) == _run(code) == [0.5, 0.25, 0.125]


def _old_zero_gradients(x):
    """torch.autograd.gradcheck.zero_gradients as torch 1.x had it."""
    if isinstance(x, torch.Tensor):
        if x.grad is not None:
            x.grad.detach_()
            x.grad.zero_()
    elif isinstance(x, collections.abc.Iterable):
        for elem in x:
            _old_zero_gradients(elem)


ZERO = '''
import torch
from torch.autograd.gradcheck import zero_gradients


def run(tensors):
    zero_gradients(tensors)
    return [t.grad for t in tensors[:1] + tensors[1]]
'''


def _tensors():
    a, b, c = (torch.ones(2, requires_grad=True) for _ in range(3))
    (a * 2 + b * 3 + c).sum().backward()
    return [a, [b, c]]


def test_zero_gradients_is_inlined(monkeypatch):
    with pytest.raises(ImportError):
        _run(ZERO, _tensors())
    fake = types.ModuleType("torch.autograd.gradcheck")
    fake.zero_gradients = _old_zero_gradients
    monkeypatch.setitem(sys.modules, "torch.autograd.gradcheck", fake)
    before = _run(ZERO, _tensors())
    monkeypatch.undo()
    after = _run(_migrate(ZERO).code, _tensors())
    torch.testing.assert_close(after, before)
    torch.testing.assert_close(after, [torch.zeros(2)] * 3)


def test_private_dataloader_paths_and_accumulate():
    code = '''
    import torch
    from torch.utils.data._utils.collate import default_collate
    from torch.utils.data.dataloader import default_convert
    from torch._utils import _accumulate


    def run():
        batch = default_collate([(torch.ones(2), 1), (torch.zeros(2), 2)])
        return batch, default_convert([1, 2]), list(_accumulate([1, 2, 3]))
    '''
    result = _migrate(code)
    assert "_utils" not in result.code
    batch, converted, sums = _run(result.code)
    torch.testing.assert_close(batch, [torch.stack([torch.ones(2), torch.zeros(2)]), torch.tensor([1, 2])])
    assert converted == [1, 2] and sums == list(itertools.accumulate([1, 2, 3]))


def test_type_name_tests_become_dtype_tests():
    code = '''
    def run(x):
        return [x.__class__.__name__ == "FloatTensor", type(x).__name__ in ["DoubleTensor", "HalfTensor"],
                x.__class__.__name__ != "LongTensor"]
    '''
    migrated = _migrate("import torch\n" + textwrap.dedent(code)).code
    float32, float64, long = torch.zeros(1), torch.zeros(1, dtype=torch.float64), torch.zeros(1, dtype=torch.long)
    # Since torch 0.4 every tensor's class is Tensor: the old tests are always False / True.
    assert _run(code, float32) == [False, False, True]
    # What torch 0.3 answered, when a float tensor's class was FloatTensor:
    assert _run(migrated, float32) == [True, False, True]
    assert _run(migrated, float64) == [False, True, True]
    assert _run(migrated, long) == [False, False, False]
    assert _run(migrated, [1.0]) == [False, False, True]  # not a tensor, as before


def test_table_targets_exist_and_removed_names_are_gone():
    t = table()
    for old, entry in t["renames"].items():
        module, _, name = entry["to"].rpartition(".")
        if module.startswith("torchvision"):
            continue
        new = getattr(importlib.import_module(module), name)
        old_module, _, old_name = old.rpartition(".")
        try:
            still = getattr(importlib.import_module(old_module), old_name, None)
        except ImportError:
            still = None
        if old.endswith("._LRScheduler"):
            assert issubclass(still, new) and still is not new  # kept, but no scheduler derives from it
        else:
            assert still is None or still is new, old
    for old in list(t["removed"]) + list(t["helpers"]):
        module, _, name = old.rpartition(".")
        assert not hasattr(importlib.import_module(module), name), f"{old} exists again"
    for dtype in t["tensor_type_names"].values():
        assert isinstance(getattr(torch, dtype), torch.dtype)
