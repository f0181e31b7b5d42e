"""TM010's rewriting pieces: the static `forward`/`backward`, the callable wrapper that keeps the
old constructor, arguments appended to a call, and the `self` -> `ctx` renamers."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.statements import is_docstring
from codemods.transforms.autograd_function.plan import _Plan
from codemods.base import traverse


class Rewrites:
    """The parts of `AutogradFunction` that build the converted class (`self` is the codemod)."""

    def _static(self, method: cst.FunctionDef, plan: _Plan, name: str, assigns: list[cst.BaseStatement]) -> cst.FunctionDef:
        me = plan.self_names[name]
        method = method.with_changes(body=traverse(method.body, _Renamer(me)))
        params = list(method.params.params)
        params[0] = params[0].with_changes(name=cst.Name("ctx"))
        if name == "forward" and plan.init_params:
            params[1:] = [p.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT) for p in params[1:]]
            params[-1] = params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            params += [cst.Param(name=cst.Name(p.name.value)) for p in plan.init_params]
        block = method.body
        if assigns and isinstance(block, cst.SimpleStatementSuite):  # `def forward(self, x): return x`
            block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=block.body)])
        body = list(block.body)
        if assigns:
            at = 1 if body and is_docstring(body[0]) else 0
            body[at:at] = assigns
        decorators = [cst.Decorator(decorator=cst.Name("staticmethod")), *method.decorators]
        if method.decorators:
            decorators[0] = decorators[0].with_changes(leading_lines=method.decorators[0].leading_lines)
            decorators[1] = decorators[1].with_changes(leading_lines=())
        return method.with_changes(
            decorators=decorators,
            params=method.params.with_changes(params=params),
            body=block.with_changes(body=body),
        )

    def _wrapper(self, plan: _Plan) -> cst.BaseStatement:
        indent = self._default_indent
        init = [self.code_for(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in plan.init_params]
        inputs = [self.code_for(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in plan.forward_params]
        passed = [p.name.value for p in plan.forward_params] + [f"self.{p.name.value}" for p in plan.init_params]
        if plan.star_inputs:  # forward(self, *inputs): no `__init__` arguments (see _plan)
            inputs, passed = ["*inputs"], ["*inputs"]
        built = [p.name.value for p in plan.init_params]
        given = ["*inputs"] if plan.star_inputs else [p.name.value for p in plan.forward_params]
        lines = [
            f"class {plan.name}:",
            f'{indent}"""`{plan.name}({", ".join(built)})({", ".join(given)})` as before: calls `{plan.new_name}.apply({", ".join(given + built)})`."""',
        ]
        if init:
            lines += ["", f"{indent}def __init__(self, {', '.join(init)}):"]
            lines += [f"{indent * 2}self.{p.name.value} = {p.name.value}" for p in plan.init_params]
        lines += ["", f"{indent}def __call__(self{''.join(', ' + i for i in inputs)}):"]
        lines += [f"{indent * 2}return {plan.new_name}.apply({', '.join(passed)})"]
        wrapper = cst.parse_statement("\n".join(lines) + "\n", config=cst.PartialParserConfig())
        return wrapper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])


def _append(call: cst.Call, values: list[cst.BaseExpression]) -> cst.Call:
    """`call` with `values` appended as positional arguments, following the call's own layout."""
    return arguments.append_as_listed(call, [cst.Arg(value=v) for v in values])


def _elements(values: list[cst.BaseExpression]) -> list[cst.Element]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    elements = [cst.Element(value=v, comma=comma) for v in values]
    elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return elements


class _Renamer(cst.CSTTransformer):
    """`self` -> `ctx` (references only) and `self.saved_variables` -> `ctx.saved_tensors`."""

    def __init__(self, me: str) -> None:
        super().__init__()
        self.me = me
        self._skip: set[int] = set()

    def visit_statement(self, statement: cst.BaseStatement) -> cst.BaseStatement:
        return traverse(statement, self)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == self.me and id(original_node) not in self._skip:
            return updated_node.with_changes(value="ctx")
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        value = original_node.value
        if isinstance(value, cst.Name) and value.value == self.me and original_node.attr.value == "saved_variables":
            return updated_node.with_changes(attr=cst.Name("saved_tensors"))
        return updated_node


class _ClassRenamer(_Renamer):
    """References to the class's old name, inside its own body, -> its new name."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(old)
        self.new = new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == self.me and id(original_node) not in self._skip:
            return updated_node.with_changes(value=self.new)
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node
