"""Where a uint8 mask's value goes, for TM011: through local names, reshapes and moves, into a
mask argument, an index or `~`, or into a use as data."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.transforms.bool_masks.makers import _is_byte_literal
from codemods.transforms.bool_masks.tables import (
    NEUTRAL_ATTRIBUTES,
    NEUTRAL_METHODS,
    SHAPE_FUNCTIONS,
    SHAPE_METHODS,
    SINK_FUNCTIONS,
    SINK_METHODS,
)


class MaskFlow:
    """Where a value goes (a part of `BoolMasks`: `self` is the codemod, `self._scope` the scope it plans)."""

    def _reach(self, call: cst.Call) -> tuple[set[str], cst.CSTNode | str | None, cst.CSTNode | None, list[cst.CSTNode]]:
        """Where the maker's value ends up, through local names: the kinds of use (see
        `_destination`), the first data use (or why one is assumed), the first mask use, and
        where it leaves the scope (an argument of a call, `self.x = ...`)."""
        return self._follow([call])

    def _follow(self, starts: list[cst.CSTNode]) -> tuple[set[str], cst.CSTNode | str | None, cst.CSTNode | None, list[cst.CSTNode]]:
        kinds: set[str] = set()
        data: list[cst.CSTNode | str] = []
        sinks: list[cst.CSTNode] = []
        escapes: list[cst.CSTNode] = []
        seen: set[str] = set()
        pending: list[cst.CSTNode] = list(starts)
        scope = self._scope
        while pending:
            node = pending.pop()
            kind, where = self._destination(node)
            if kind == "name":
                if where in seen:
                    continue
                seen.add(where)
                if not scope.local(where):  # read where this scope cannot see: data, as far as it knows
                    kinds.add("data")
                    data.append(f"`{where}` is also read by a nested function or as a global")
                pending.extend(scope.loads.get(where, []))
                continue
            if kind == "arith":  # `1 - mask`, `a.byte() + b.byte()`: data, whose result may still be a mask
                pending.append(where)
                kind = "data"
            elif kind in ("pass", "store"):
                escapes.append(where)
                kind = "data"
            kinds.add(kind)
            if kind == "data":
                data.append(where)
            elif kind in ("sink", "maybe", "invert"):
                sinks.append(where)
        return kinds, (data[0] if data else None), (sinks[0] if sinks else None), escapes

    def _destination(self, node: cst.CSTNode, inverted: bool = False) -> tuple[str, object]:
        """Where the value of `node` goes: ("sink"|"maybe", the mask use), ("name", a local it is
        bound to), ("invert", the mask use it reaches through `~`), ("neutral"|"data", the use)."""
        parents = self._scope.parents
        if id(node) in self._scope.assigned_in_place:
            return "data", parents.get(node, node)
        while True:
            parent = parents.get(node)
            if parent is None:
                return "data", node
            if isinstance(parent, cst.Attribute) and parent.value is node:
                call = parents.get(parent)
                method = parent.attr.value
                if not (isinstance(call, cst.Call) and call.func is parent):
                    return ("neutral" if method in NEUTRAL_ATTRIBUTES else "data"), parent
                if method in NEUTRAL_METHODS:
                    return "neutral", call
                refill = method == "zero_" and not call.args or method == "fill_" and len(call.args) == 1 and _is_byte_literal(call.args[0].value)
                if refill or self._keeps_mask(call, method) or self._maker(call) is not None:
                    node = call
                    continue
                return "data", call
            if isinstance(parent, cst.Arg) and parent.value is node:
                call = parents.get(parent)
                if isinstance(call, cst.Call):
                    if self._is_mask_argument(call, parent):
                        return "sink", call
                    if self.qualified_name(call.func) in SHAPE_FUNCTIONS and call.args and call.args[0] is parent:
                        node = call
                        continue
                    return "pass", parent  # an argument: where it goes, `escapes.py` may tell
                return "data", call
            if isinstance(parent, cst.Index) and parent.value is node:
                subscript = parents.get(parents.get(parent))
                if isinstance(subscript, cst.Subscript):
                    return ("sink" if self._is_tensor(subscript.value) else "maybe"), subscript
                return "data", parent
            if isinstance(parent, cst.Subscript) and parent.value is node:
                target = parents.get(parent)
                if isinstance(target, cst.AssignTarget):
                    assign = parents.get(target)
                    stored = isinstance(assign, cst.Assign) and _is_byte_literal(assign.value)
                    return ("neutral" if stored else "data"), parent
                node = parent
                continue
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.BitInvert) and not inverted:
                kind, where = self._destination(parent, inverted=True)
                if kind == "name":
                    return "invert", parent
                return ("invert" if kind in ("sink", "maybe") else kind), where
            if isinstance(parent, cst.BinaryOperation):
                # `a.byte() & b.byte()`, `a.byte() * b.byte()`: bool with bool is the same mask
                # (`*` of bools is their `and`); with anything else, data that may go on to a mask
                other = parent.right if parent.left is node else parent.left
                logical = isinstance(parent.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Multiply))
                if not logical or not (isinstance(other, cst.Call) and self._maker(other) is not None) and not self._is_bool(other):
                    return "arith", parent
                node = parent
                continue
            if isinstance(parent, cst.IfExp) and parent.test is not node:
                node = parent
                continue
            if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1:
                operator = parent.comparisons[0].operator
                other = parent.comparisons[0].comparator if parent.left is node else parent.left
                if isinstance(operator, (cst.Is, cst.IsNot)) and arguments.literal(other) is None and isinstance(other, cst.Name):
                    return "neutral", parent
                return "data", parent
            if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
                targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
                if len(targets) == 1 and isinstance(targets[0], cst.Name):
                    return "name", targets[0].value
                if len(targets) == 1 and isinstance(targets[0], cst.Attribute):
                    return "store", targets[0]  # `self.mask = ...`
                return "data", targets[0]
            if isinstance(parent, cst.Expr):
                return "neutral", parent
            return "data", parent

    def _keeps_mask(self, call: cst.Call, method: str) -> bool:
        """A method call on a mask whose result is the same mask, reshaped or moved."""
        if method == "to":
            return bool(call.args) and all(self._is_device(a) for a in call.args)
        return method in SHAPE_METHODS and not self._has_dtype(call)

    def _has_dtype(self, call: cst.Call) -> bool:
        """Whether an argument may be a dtype: `.view(torch.uint8)` reinterprets the bytes."""
        return any(self.qualified_name(a.value) is not None for a in call.args)

    def _is_device(self, arg: cst.Arg) -> bool:
        if arg.keyword is not None:
            return arg.keyword.value in ("device", "non_blocking", "copy")
        value = arg.value
        if isinstance(value, cst.SimpleString):
            return True
        if isinstance(value, cst.Attribute) and value.attr.value == "device":
            return True
        if isinstance(value, cst.Call) and self.qualified_name(value.func) == "torch.device":
            return True
        return isinstance(value, cst.Name) and value.value == "device"

    def _is_mask_argument(self, call: cst.Call, arg: cst.Arg) -> bool:
        if arguments.has_star_args(call):
            return False
        name = self.qualified_name(call.func)
        if name is not None:
            if name not in SINK_FUNCTIONS:
                return False
            position, keyword = SINK_FUNCTIONS[name]
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value in SINK_METHODS:
            position, keyword = SINK_METHODS[call.func.attr.value], "mask"
        else:
            return False
        if arg.keyword is not None:
            return arg.keyword.value == keyword
        positional = [a for a in call.args if a.keyword is None]
        return len(positional) > position and positional[position] is arg
