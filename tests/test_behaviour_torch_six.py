"""TM007 behaviour: code importing `torch._six` crashes on torch 2.13; migrated, it runs and
returns what it returned with the old module (rebuilt here from its Python 3 definitions)."""

from __future__ import annotations

import collections.abc
import io
import math
import queue
import sys
import textwrap
import types

import pytest

from codemods import registry
from codemods.api import transform_source

torch = pytest.importorskip("torch")

OLD = textwrap.dedent(
    '''
    import torch
    from torch._six import string_classes, int_classes, container_abcs, inf, nan, PY2, PY3
    from torch._six import istuple, with_metaclass, raise_from, get_function_from_type, imap, StringIO
    from torch._six import FileNotFoundError as FNF


    class Meta(type):
        def __new__(mcs, name, bases, namespace):
            namespace["tagged"] = name
            return super().__new__(mcs, name, bases, namespace)


    class Base:
        pass


    class Tagged(with_metaclass(Meta, Base)):
        pass


    def classify(x):
        if torch.is_tensor(x):
            return "tensor"
        if isinstance(x, string_classes):
            return "text"
        if isinstance(x, int_classes):
            return "int"
        if isinstance(x, container_abcs.Mapping):
            return "mapping"
        if istuple(x):
            return "tuple"
        if x == inf:
            return "inf"
        if x != x and not PY2 and PY3:
            return "nan"
        return "other"


    def fail(error):
        raise_from(ValueError("wrapped"), error)


    def run():
        out = [classify(v) for v in ["a", b"b", 3, {"k": 1}, (1, 2), torch.zeros(2).max(0), float("inf"), nan, 1.5]]
        try:
            fail(KeyError("k"))
        except ValueError as e:
            out.append(type(e.__cause__).__name__)
        out.append(list(imap(abs, [-1, 2])))
        out.append(get_function_from_type(dict, "keys") is dict.keys)
        out.append(StringIO("x").read())
        out.append(issubclass(FNF, OSError))
        out.append((type(Tagged).__name__, Tagged.tagged, Tagged.__bases__ == (Base,)))
        return out
    '''
)


def _old_six() -> types.ModuleType:
    """`torch._six` as torch 1.x defined it on Python 3."""
    six = types.ModuleType("torch._six")

    def with_metaclass(meta, *bases):
        class metaclass(meta):
            def __new__(cls, name, this_bases, d):
                return meta(name, bases, d)

        return type.__new__(metaclass, "temporary_class", (), {})

    def raise_from(value, from_value):
        raise value from from_value

    six.__dict__.update(
        PY2=False, PY3=True, PY37=True, inf=math.inf, nan=math.nan, string_classes=(str, bytes),
        int_classes=int, container_abcs=collections.abc, FileNotFoundError=FileNotFoundError,
        queue=queue, imap=map, exec_=exec, StringIO=io.StringIO, with_metaclass=with_metaclass,
        raise_from=raise_from, get_function_from_type=lambda cls, name: getattr(cls, name, None),
        istuple=lambda obj: isinstance(obj, tuple) or type(obj).__module__ == "torch.return_types",
    )
    return six


def _run(code: str):
    namespace: dict = {}
    exec(compile(code, "<migrated>", "exec"), namespace)
    return namespace["run"]()


def test_old_code_fails_to_import_on_current_torch():
    with pytest.raises(ModuleNotFoundError):
        _run(OLD)


def test_migrated_code_returns_what_the_old_module_gave(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch._six", _old_six())
    before = _run(OLD)
    monkeypatch.delitem(sys.modules, "torch._six")

    result = transform_source(OLD, [registry.get("TM007")])
    assert "_six" not in result.code
    assert not [f for f in result.findings if f.kind == "finding"]
    after = _run(result.code)
    assert after == before
    assert after[:6] == ["text", "text", "int", "mapping", "tuple", "tuple"]  # return_types are tuples
