"""The replacement nodes TM103's transform builds: calls of the generated helpers, and the
edited type tests and DataLoaders (pure functions of the nodes they are given)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.names import dotted

from .symbols import LOADER_POSITIONAL


def helper_call(name: str, *args: cst.BaseExpression, **kwargs: cst.BaseExpression) -> cst.Call:
    """`name(arg, ..., keyword=value, ...)`: a call of a generated helper."""
    return cst.Call(
        func=cst.Name(name),
        args=[cst.Arg(a) for a in args] + [arguments.keyword_arg(k, v) for k, v in kwargs.items()],
    )


def with_condition(call: cst.Call, test: cst.BaseExpression) -> cst.Call:
    """`ddp_wrap(m, ...)` -> `ddp_wrap(m, data_parallel=<test>, ...)`: in a plain run the model is
    wrapped in DataParallel exactly when the original's condition holds."""
    args = list(call.args)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    last = args[-1].comma if len(args) == 1 else comma  # `ddp_wrap(m)`: nothing follows the new one
    arg = arguments.as_keyword(cst.Arg(test.with_changes(lpar=[], rpar=[]), comma=last), "data_parallel")
    return call.with_changes(args=[args[0].with_changes(comma=comma), arg, *args[1:]])


def keep_condition(stmt: cst.BaseStatement, test: cst.BaseExpression) -> cst.BaseStatement:
    """The moved `x = ddp_wrap(m)` line, its wrap given the condition it was under."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not (isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and dotted(small.value.func) == "ddp_wrap"):
        return stmt
    return stmt.with_changes(body=[small.with_changes(value=with_condition(small.value, test))])


def accepting(kinds: cst.BaseExpression, ddp_type: cst.BaseExpression) -> cst.BaseExpression:
    """The second argument of `isinstance(m, kinds)`, with `ddp_type` added to it."""
    if isinstance(kinds, cst.Tuple):
        elements = list(kinds.elements)
        last = elements[-1]
        if isinstance(last.comma, cst.Comma) and len(elements) > 1:
            elements.append(cst.Element(ddp_type, comma=last.comma))
            elements[-2] = last.with_changes(comma=elements[-3].comma if len(elements) > 2 else last.comma)
        else:
            elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            elements.append(cst.Element(ddp_type))
        return kinds.with_changes(elements=elements)
    return cst.Tuple([cst.Element(kinds), cst.Element(ddp_type)])


def with_sampler(
    updated: cst.SimpleStatementLine, assign: cst.Assign, sampler: str
) -> tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]:
    """`loader = DataLoader(dataset, shuffle=s)` -> `sampler = ddp_sampler(dataset, shuffle=s)` and
    `loader = DataLoader(dataset, shuffle=s and sampler is None, sampler=sampler)`."""
    call = assign.value
    bound = arguments.bind(call, LOADER_POSITIONAL)
    shuffle = bound["shuffle"]
    dataset = bound["dataset"].arg.value
    is_none = cst.Comparison(cst.Name(sampler), [cst.ComparisonTarget(cst.Is(), cst.Name("None"))])
    literal = isinstance(shuffle.arg.value, cst.Name) and shuffle.arg.value.value == "True"
    value = is_none if literal else cst.BooleanOperation(shuffle.arg.value, cst.And(), is_none)
    args = list(call.args)
    args[shuffle.index] = args[shuffle.index].with_changes(value=value)
    new = arguments.as_keyword(cst.Arg(cst.Name(sampler)), "sampler")
    loader = arguments.append_args(call.with_changes(args=args), [new])  # in the call's own layout
    make = cst.SimpleStatementLine(
        body=[
            cst.Assign(
                targets=[cst.AssignTarget(cst.Name(sampler))],
                value=helper_call("ddp_sampler", dataset, shuffle=cst.Name("True") if literal else shuffle.arg.value),
            )
        ],
        leading_lines=updated.leading_lines,
    )
    line = updated.with_changes(body=[assign.with_changes(value=loader)], leading_lines=[])
    return make, line
