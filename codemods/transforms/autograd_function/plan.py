"""TM010's plan of one conversion: why a class (or a call site) is declined, what the class
becomes, and what each direct call site passes to `apply`."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


class Declined(Exception):
    """Why a class (or one of its call sites) is not converted: the finding's message."""

    def __init__(self, node: cst.CSTNode, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.node, self.message, self.suggestion = node, message, suggestion


@dataclass
class _Plan:
    name: str
    new_name: str | None  # the Function's new name when a wrapper takes the old one
    init_params: list[cst.Param]
    init_assigns: list[int]  # indices in `__init__`'s body of the `self.x = ...` it moves into forward
    forward_params: list[cst.Param]
    self_names: dict[str, str]  # method -> its first parameter's name
    returns: dict[int, list[cst.BaseExpression]] = field(default_factory=dict)  # id(Return) -> the gradients it adds
    reason: str = ""
    star_inputs: bool = False  # forward takes more than plain positional parameters


@dataclass
class _Site:
    plan: _Plan
    init_values: list[int | cst.BaseExpression]  # per __init__ parameter: an index into the constructor's args, or a default
    fill: list[cst.BaseExpression]  # forward defaults the call left out
