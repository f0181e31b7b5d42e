"""TM104 recognises the `module.` strips written against the keys themselves (issue 15): in-place
`sd[k[7:]] = sd.pop(k)` loops (under `startswith("module.")` or not, with a temporary, or a copy
then `del`) and an if/else store into a new dict. Each migrated function gives the original's
keys and tensors on a DataParallel checkpoint, and the guarded ones also on a plain one."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

SOURCE = (FIXTURES / "TM104-state-dict-prefix" / "in_place.in.py").read_text()
GUARDED = ("guarded_pop", "pop_then_store", "copy_then_delete", "both_branches")
EVERY_KEY = ("every_key",)


def _namespace(source: str) -> dict:
    namespace: dict = {"__name__": "loops"}
    exec(compile(source, "loops.py", "exec"), namespace)
    return namespace


def _checkpoints() -> tuple[dict, dict]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    return torch.nn.DataParallel(net).state_dict(), net.state_dict()


def _same(new: dict, old: dict) -> None:
    assert sorted(new) == sorted(old)
    for key, value in new.items():
        torch.testing.assert_close(value, old[key], rtol=0, atol=0)


@pytest.mark.parametrize("function", GUARDED + EVERY_KEY)
def test_migrated_strip_gives_the_original_keys(function: str) -> None:
    migrated = migrate(SOURCE, "TM104")
    assert "for k" not in migrated and "for key" not in migrated  # every loop became the library call
    before, after = _namespace(SOURCE), _namespace(migrated)
    wrapped, plain = _checkpoints()
    _same(after[function](dict(wrapped)), before[function](dict(wrapped)))
    assert not any(k.startswith("module.") for k in after[function](dict(wrapped)))
    if function in GUARDED:  # the originals leave a plain checkpoint as it is; so does the call
        _same(after[function](dict(plain)), before[function](dict(plain)))
        _same(after[function](dict(plain)), plain)


def test_strip_over_a_copy_of_the_keys_loads_both_checkpoints() -> None:
    migrated = migrate(SOURCE, "TM104")
    assert "all_keys" not in migrated
    before, after = _namespace(SOURCE), _namespace(migrated)
    for checkpoint in _checkpoints():
        results = []
        for namespace in (before, after):
            torch.manual_seed(1)
            net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
            namespace["over_a_key_copy"](net, dict(checkpoint))
            results.append(net.state_dict())
        _same(results[1], results[0])
