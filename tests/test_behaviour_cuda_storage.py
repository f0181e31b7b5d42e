"""TM101 behaviour on storages: `storage.cuda()` becomes `storage.to(device=device)`, because a
storage's `.to()` takes the device by keyword only (`.to(device)` raises TypeError on torch 2.x).

There is no GPU here: the migrated code runs with `device` the CPU, and gives storages of the
same kind and contents as the receivers; the positional spelling is shown to fail.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402

SOURCE = """\
import torch

source = torch.arange(4.0)
plain = torch.Storage(4).cuda()
typed = torch.FloatStorage([1.0, 2.0]).cuda(non_blocking=True)
of_tensor = source.untyped_storage().cuda()
kept = source.storage()
moved = kept.cuda()
"""


def _migrated() -> str:
    result = transform_source(SOURCE, registry.select(["TM101"]), path="storage.py")
    assert result.problem is None, result.problem
    assert result.rewrites == {"TM101": 4}
    return result.code


def test_positional_device_fails_on_a_storage() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        storage = torch.Storage(2)
        with pytest.raises(TypeError):
            storage.to(torch.device("cpu"))


def test_migrated_storages_run_and_keep_kind_and_contents() -> None:
    code = _migrated()
    assert ".to(device=device" in code and ".to(device)" not in code
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "storage.py", "exec"), namespace)
    assert type(namespace["plain"]) is torch.storage.TypedStorage and namespace["plain"].size() == 4
    assert list(namespace["typed"]) == [1.0, 2.0] and namespace["typed"].dtype == torch.float32
    assert isinstance(namespace["of_tensor"], torch.UntypedStorage)
    assert bytes(namespace["of_tensor"]) == bytes(torch.arange(4.0).untyped_storage())
    assert list(namespace["moved"]) == [0.0, 1.0, 2.0, 3.0]
