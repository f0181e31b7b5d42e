"""What makes a uint8 mask, for TM011 (`.byte()`, `.type(torch.uint8)`, `torch.ByteTensor(...)`,
a factory with `dtype=torch.uint8`), what to rewrite in it, and whether bool gives the same mask."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.gates.bool_masks import BOOL_OF
from codemods.helpers import arguments
from codemods.transforms.bool_masks.tables import FACTORIES, FACTORY_METHODS


@dataclass(frozen=True)
class Maker:
    """A uint8 mask's making: what to rewrite (`part`: the `.byte` name, the dtype/type argument's
    value, or the callee) and whether bool gives the same mask (`exact`; else `why` not)."""

    part: cst.CSTNode
    exact: bool
    why: str = ""
    fix: str = "`.bool()` if the values are 0 and 1 (`.byte().bool()` keeps uint8's wrap-around)"


def _is_byte_literal(expr: cst.BaseExpression) -> bool:
    value = arguments.literal(expr)
    return isinstance(value, bool) or (type(value) is int and 0 <= value <= 255)


def _is_literal_data(expr: cst.BaseExpression) -> bool:
    """Nested lists/tuples of 0..255 integers and booleans (a nonzero value is True either way)."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and _is_literal_data(e.value) for e in expr.elements)
    return _is_byte_literal(expr)


def _is_size(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size":
        return True
    return isinstance(expr, cst.Attribute) and expr.attr.value == "shape"


class UintMakers:
    """Which calls make a uint8 mask (a part of `BoolMasks`: `self` is the codemod, `self._scope` the scope it plans)."""

    def _maker(self, call: cst.Call) -> Maker | None:
        func = call.func
        name = self.qualified_name(func)
        if name in ("torch.ByteTensor", "torch.cuda.ByteTensor"):
            args = [a.value for a in call.args]
            exact = not arguments.has_star_args(call) and (
                all(_is_size(a) for a in args) or (len(args) == 1 and _is_literal_data(args[0]))
            )
            why = "its argument may be data a bool tensor reads differently (0.5 is 0 as uint8, True as bool)"
            return Maker(func, exact, why, "`BoolTensor(...)` if the argument is a size or integers 0..255")
        dtype = arguments.keyword(call, "dtype")
        if dtype is not None and self.qualified_name(dtype.value) == "torch.uint8":
            kind = None
            if name is not None and name.startswith("torch."):
                kind = FACTORIES.get(name[len("torch."):])
            elif name is None and isinstance(func, cst.Attribute):
                kind = FACTORY_METHODS.get(func.attr.value)
                if kind is None and func.attr.value == "to":
                    return Maker(dtype.value, self._zero_one(func.value), "its values may be other than 0 and 1")
            if kind is None:
                return None
            why = "its values may be other than 0 and 1"
            return Maker(dtype.value, self._factory_exact(call, kind), why, "`dtype=torch.bool` if the values are 0 and 1")
        if name is not None or not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method == "byte" and not call.args:
            return Maker(func.attr, self._zero_one(func.value), f"`{self.code_for(func.value)}` may hold values other than 0 and 1")
        if method in ("type", "to") and call.args and not arguments.has_star_args(call):
            positional = [a for a in call.args if a.keyword is None]
            for arg in positional[:2]:
                if self._is_uint8_spelling(arg.value):
                    return Maker(arg.value, self._zero_one(func.value), f"`{self.code_for(func.value)}` may hold values other than 0 and 1")
        return None

    def _is_uint8_spelling(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.SimpleString):
            return expr.evaluated_value in ("torch.ByteTensor", "torch.cuda.ByteTensor")
        return self.qualified_name(expr) in BOOL_OF

    def _factory_exact(self, call: cst.Call, kind: str) -> bool:
        if arguments.has_star_args(call):
            return False
        if kind == "fixed":
            return True
        positional = [a.value for a in call.args if a.keyword is None]
        method = self.qualified_name(call.func) is None
        if kind == "fill":
            fill = arguments.keyword(call, "fill_value")
            value = fill.value if fill is not None else positional[0 if method else 1] if len(positional) > (0 if method else 1) else None
            return value is not None and _is_byte_literal(value)
        data = arguments.keyword(call, "data")
        value = data.value if data is not None else positional[0] if positional else None
        return value is not None and _is_literal_data(value)
