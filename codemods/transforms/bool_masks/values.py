"""What TM011 can show of a value: that it holds only 0 and 1, that it is a bool tensor, that it is
a torch tensor (not a NumPy array, which reads a uint8 index as indices)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.names import dotted
from codemods.transforms.bool_masks.makers import _is_byte_literal
from codemods.transforms.bool_masks.scope import _Scope
from codemods.transforms.bool_masks.tables import (
    BOOL_METHODS,
    COMPARISONS,
    FACTORIES,
    SHAPE_FUNCTIONS,
    SHAPE_METHODS,
    TENSOR_METHODS,
    VALUE_METHODS,
    ZERO_ONE_FUNCTIONS,
    ZERO_ONE_METHODS,
)


class MaskValues:
    """Which values are 0/1, bool or torch tensors (a part of `BoolMasks`: `self` is the codemod, `self._scope` the scope it plans)."""

    def _zero_one(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        """Whether every value of `expr` is 0 or 1 (or bool): then `.byte()` and `.bool()` of it
        select the same elements."""
        if isinstance(expr, cst.Comparison):
            return all(isinstance(t.operator, COMPARISONS) for t in expr.comparisons)
        if _is_byte_literal(expr):
            return arguments.literal(expr) in (0, 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool(expr.expression, assuming)
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Multiply)):
                return self._zero_one(expr.left, assuming) and self._zero_one(expr.right, assuming)
            if isinstance(op, cst.Subtract) and arguments.literal(expr.left) == 1 and not isinstance(arguments.literal(expr.left), bool):
                return self._zero_one(expr.right, assuming)
            return False
        if isinstance(expr, cst.IfExp):
            return self._zero_one(expr.body, assuming) and self._zero_one(expr.orelse, assuming)
        if isinstance(expr, cst.Subscript):
            return self._zero_one(expr.value, assuming)
        if isinstance(expr, cst.Call):
            name = self.qualified_name(expr.func)
            if name is not None:
                short = name[len("torch."):] if name.startswith("torch.") else None
                if name in ZERO_ONE_FUNCTIONS or short in BOOL_METHODS:
                    return arguments.keyword(expr, "out") is None
                if name in SHAPE_FUNCTIONS and expr.args:
                    return self._zero_one(expr.args[0].value, assuming)
                return False
            if isinstance(expr.func, cst.Attribute):
                method = expr.func.attr.value
                if method in BOOL_METHODS or method in ZERO_ONE_METHODS:
                    return True
                if method in VALUE_METHODS and not (method == "view" and self._has_dtype(expr)):
                    return self._zero_one(expr.func.value, assuming)
            return False
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._zero_one)
        return False

    def _is_bool(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is a bool tensor (`~` is a logical not on it)."""
        if isinstance(expr, cst.Comparison):
            return all(isinstance(t.operator, COMPARISONS) for t in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool(expr.expression, assuming)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self._is_bool(expr.left, assuming) and self._is_bool(expr.right, assuming)
        if isinstance(expr, cst.Subscript):
            return self._is_bool(expr.value, assuming)
        if isinstance(expr, cst.Call):
            name = self.qualified_name(expr.func)
            if name is not None:
                return name.startswith("torch.") and name[len("torch."):] in BOOL_METHODS
            if isinstance(expr.func, cst.Attribute):
                method = expr.func.attr.value
                if method in BOOL_METHODS:
                    return True
                if method in SHAPE_METHODS and not self._has_dtype(expr):
                    return self._is_bool(expr.func.value, assuming)
            return False
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._is_bool)
        return False

    def _name_is(self, name: str, assuming: frozenset[str], test) -> bool:
        """A local name all of whose `name = value` bindings pass `test` (assuming it of itself)."""
        scope = self._scope
        if scope is None or name in assuming:
            return name in assuming
        if name in scope.opaque or name in scope.escaped or name not in scope.values:
            return False
        return all(test(value, assuming | {name}) for value in scope.values[name])

    # -- which values are torch tensors --------------------------------------------------------------

    def _tensor_names(self, scope: _Scope, makers) -> set[str]:
        """Dotted names this scope shows to be tensors: receivers of tensor-only methods, the one
        non-literal side of a comparison a mask is made of, parameters annotated as tensors."""
        found = set(scope.annotated)
        for node in scope.nodes.nodes:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSOR_METHODS:
                if (name := dotted(node.func.value)) is not None and self.qualified_name(node.func.value) is None:
                    found.add(name)
        for call, _ in makers:
            receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
            if isinstance(receiver, cst.Comparison) and len(receiver.comparisons) == 1:
                sides = [receiver.left, receiver.comparisons[0].comparator]
                named = [dotted(s) for s in sides if not arguments.is_literal(arguments.literal(s)) and not isinstance(s, cst.Float)]
                if len(named) == 1 and named[0] is not None:
                    found.add(named[0])
        return found

    def _is_tensor(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        while True:
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and self.qualified_name(expr.func) is None:
                if expr.func.attr.value in TENSOR_METHODS:
                    return True
                if expr.func.attr.value not in SHAPE_METHODS:
                    return False
                expr = expr.func.value
            else:
                break
        name = dotted(expr)
        if name is not None and name in self._evidence:
            return True
        if isinstance(expr, cst.Call):
            called = self.qualified_name(expr.func) or ""
            return called.startswith("torch.") and called[len("torch."):] in (*FACTORIES, "randn", "rand", "arange")
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._is_tensor)
        return False
