"""TM401 behaviour: old code using `collections.Mapping` and NumPy's removed aliases fails on
today's Python/NumPy; migrated, it gives what it gave when those aliases existed (recreated here
from their old definitions)."""

from __future__ import annotations

import collections
import collections.abc
import textwrap

import pytest

from codemods import registry
from codemods.api import transform_source
from codemods.gates.python_compat import COLLECTIONS_ABCS, NUMPY

np = pytest.importorskip("numpy")

OLD = textwrap.dedent(
    '''
    import collections
    from collections import Sequence, OrderedDict
    import numpy as np


    def run():
        best = np.Inf
        worst = -np.Infinity
        out = [best > 1e308, worst < -1e308, np.isnan(np.NaN), np.NINF < 0]
        out.append(isinstance({}, collections.Mapping))
        out.append(isinstance([], Sequence) and not isinstance(OrderedDict(), Sequence))
        out.append(np.zeros(2, dtype=np.float).dtype.name)
        out.append(np.zeros(2, dtype=np.int).dtype.name)
        out.append(np.array([1], dtype=np.object).dtype.name)
        out.append(np.array([1.5], dtype=np.float_).dtype.name)
        out.append(np.array([1j], dtype=np.complex_).dtype.name)
        out.append(np.array(["a"], dtype=np.string_).dtype.kind)
        out.append(np.asscalar(np.array([7]) + 1))
        out.append(float(np.product([2, 3])) + float(np.cumproduct([2, 3])[-1]))
        out.append(bool(np.sometrue([0, 1])) and not bool(np.alltrue([0, 1])))
        out.append(float(np.round_(2.567, 2)))
        return out
    '''
)

# What the removed names were, for recreating them around the old code.
OLD_NUMPY = {
    "Inf": np.inf, "Infinity": np.inf, "NaN": np.nan, "NINF": -np.inf, "float": float, "int": int,
    "object": object, "float_": np.float64, "complex_": np.complex128, "string_": np.bytes_,
    "product": np.prod, "cumproduct": np.cumprod, "sometrue": np.any, "alltrue": np.all,
    "round_": np.round, "asscalar": lambda a: a.item(),
}


def _run(code: str):
    namespace: dict = {}
    exec(compile(code, "<code>", "exec"), namespace)
    return namespace["run"]()


def test_old_code_fails_today():
    with pytest.raises(ImportError):
        _run(OLD)
    without_import = OLD.replace("from collections import Sequence, OrderedDict\n", "")
    with pytest.raises(AttributeError):
        _run(without_import)


@pytest.mark.filterwarnings("ignore:In the future `np.object`:FutureWarning")
def test_migrated_code_gives_what_the_aliases_gave(monkeypatch):
    for name in ("Mapping", "Sequence"):
        monkeypatch.setattr(collections, name, getattr(collections.abc, name), raising=False)
    for name, value in OLD_NUMPY.items():
        monkeypatch.setattr(np, name, value, raising=False)
    before = _run(OLD)
    monkeypatch.undo()

    result = transform_source(OLD, [registry.get("TM401")])
    assert result.changed and not result.findings
    after = _run(result.code)
    assert after == before
    assert after[6:9] == ["float64", "int64", "object"]


def test_the_tables_match_installed_python_and_numpy():
    for name in COLLECTIONS_ABCS:
        assert not hasattr(collections, name), name
        assert hasattr(collections.abc, name) or name == "ByteString", name
    for name, target in NUMPY.items():
        assert name not in np.__dict__, f"np.{name} exists again: drop it from the table"
        dotted = target.lstrip("-")
        if dotted.startswith("numpy."):
            assert hasattr(np, dotted.split(".", 1)[1]), target
