"""A walk of a libcst tree that rebuilds only what changed and never enters tokens.

`node.visit(visitor)` in libcst rebuilds every node it passes, changed or not (a `CSTVisitor`'s
walk too), and visits every token on the way: the whitespace, commas, brackets and operators that
are most of a tree's nodes. A codemod's walk costs about a parse for that reason. `traverse`
calls the same callbacks in the same order with the same arguments, except that:

- tokens (TOKENS) are not visited: a visitor whose class handles none (`visit_Comma`,
  `leave_LeftParen`, `visit_Name_lpar`... see `handles_tokens`) cannot tell;
- a node none of whose children changed is returned as it is, not as an equal copy, so unchanged
  statements keep their identity from one codemod's walk to the next.

The children of a node type, their order and how each may be removed are read once per type
from libcst's own `_visit_and_replace_children` (its source names them, in source order, in
`visit_required(self, "attr", ...)` calls), so the walk follows libcst's order exactly;
tests/test_traverse.py compares both walks' callbacks and outputs.

A visitor whose class handles tokens gets libcst's own walk.
"""

from __future__ import annotations

import inspect
import linecache
import re
import weakref
from functools import lru_cache
from typing import Callable

import libcst as cst
from libcst import CSTNode, CSTVisitor, FlattenSentinel, MaybeSentinel, RemovalSentinel


def _token_types() -> frozenset[type]:
    """libcst's token nodes: whitespace, comments, brackets, punctuation and operators. Their
    children are tokens again, and none of them is a site of any codemod."""
    operators = {cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp}
    named = (
        cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.EmptyLine,
        cst.Comment, cst.Newline, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket,
        cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Dot,
        cst.Colon, cst.Semicolon, cst.AssignEqual, cst.ImportStar, cst.Asynchronous,
    )  # fmt: skip
    found = set(named)
    # Read from each class's MRO: `issubclass` on libcst's abstract bases runs the ABC machinery
    # for every pair (10 ms of each start that walks a tree), and these are plain subclasses.
    for value in vars(cst).values():
        if isinstance(value, type) and value not in operators and not operators.isdisjoint(value.__mro__):
            found.add(value)
    return frozenset(found)


TOKENS: frozenset[type] = _token_types()
_TOKEN_NAMES = frozenset(t.__name__ for t in TOKENS)
_HANDLER = re.compile(r"(?:visit|leave)_([A-Z][A-Za-z]*?)(?:_([a-z][a-z_]*))?")


def _per_class(function: Callable[[type], bool]) -> Callable[[type], bool]:
    """`function(cls)` computed once per class, remembered only while the class lives: surveys
    define visitor classes inside functions, a new class at every call."""
    known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def cached(cls: type) -> bool:
        try:
            return known[cls]
        except KeyError:
            answer = known[cls] = function(cls)
            return answer

    cached.__doc__ = function.__doc__
    return cached


def _handlers(cls: type):
    """(node type name, attribute or None) of each visit_/leave_ method of `cls` and its bases
    outside libcst (libcst's own typed stubs are no-ops)."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("libcst."):
            for name in vars(klass):
                match = _HANDLER.fullmatch(name)
                if match is not None:
                    yield match.groups()


@_per_class
def handles_tokens(cls: type) -> bool:
    """Whether `cls` has a visit_/leave_ method of a token type (a `visit_Comma`, a
    `leave_LeftParen_whitespace_after`). Attribute callbacks of other nodes (`visit_Name_lpar`)
    are still made, in order, with the token left unvisited."""
    return any(kind in _TOKEN_NAMES for kind, _ in _handlers(cls))


@_per_class
def attribute_handlers(cls: type) -> bool:
    """Whether `cls` defines a `visit_X_attr`/`leave_X_attr` method: without one, the
    per-attribute callbacks (several per node) are not made."""
    return any(attribute and isinstance(getattr(cst, kind, None), type) for kind, attribute in _handlers(cls))


_VISIT_CALL = re.compile(r"\b(visit_required|visit_optional|visit_sentinel|visit_sequence|visit_body_sequence)\(\s*self,\s*\"(\w+)\"")


@lru_cache(maxsize=None)
def _children(node_type: type) -> tuple[tuple[str, frozenset[str]], ...]:
    """(attribute, the libcst visit helpers used for it) in the order libcst visits them."""
    for klass in node_type.__mro__:
        method = vars(klass).get("_visit_and_replace_children")
        if method is not None:
            break
    else:
        return ()
    order: dict[str, set[str]] = {}
    for helper, attribute in _VISIT_CALL.findall(_source(method)):
        order.setdefault(attribute, set()).add(helper)
    return tuple((attribute, frozenset(helpers)) for attribute, helpers in order.items())


def _source(function) -> str:
    """A function's source lines, found from its code object's line table (inspect.getsource
    tokenizes to find the end: many times slower, and this runs for each node type a run meets)."""
    code = function.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return inspect.getsource(function)
    last = max((line for _, _, line in code.co_lines() if line is not None), default=code.co_firstlineno)
    return "".join(lines[code.co_firstlineno - 1 : last])


def traverse(node: CSTNode, visitor: cst.CSTVisitor | cst.CSTTransformer):
    """`node.visit(visitor)`, without entering tokens and without rebuilding unchanged nodes."""
    if handles_tokens(type(visitor)):
        return node.visit(visitor)
    return _Traversal(visitor).visit(node)


class _Traversal:
    __slots__ = ("on_visit", "on_leave", "is_visitor", "attributes", "visit_attribute", "leave_attribute")

    def __init__(self, visitor) -> None:
        self.on_visit: Callable = visitor.on_visit
        self.on_leave: Callable = visitor.on_leave
        self.is_visitor = isinstance(visitor, CSTVisitor)
        self.attributes = attribute_handlers(type(visitor))
        self.visit_attribute = visitor.on_visit_attribute
        self.leave_attribute = visitor.on_leave_attribute

    def visit(self, node: CSTNode):
        if self.on_visit(node):
            updated = self._children(node)
        else:
            updated = node
        if self.is_visitor:
            self.on_leave(node)
            return node
        result = self.on_leave(node, updated)
        if not isinstance(result, (CSTNode, RemovalSentinel, FlattenSentinel)):
            raise cst.CSTValidationError(
                f"Expected a node of type CSTNode or a RemovalSentinel, but got a return value of {type(result).__name__}"
            )
        return result

    def _children(self, node: CSTNode) -> CSTNode:
        changes = None
        attributes = self.attributes
        for attribute, helpers in _children(type(node)):
            value = getattr(node, attribute)
            if attributes:
                self.visit_attribute(node, attribute)
            if isinstance(value, CSTNode):
                if type(value) not in TOKENS:
                    new = self._one(value, helpers)
                    if new is not value:
                        changes = changes or {}
                        changes[attribute] = new
            elif isinstance(value, (tuple, list)):
                if value and type(value[0]) not in TOKENS:
                    new = self._many(value, "visit_body_sequence" in helpers)
                    if new is not None:
                        changes = changes or {}
                        changes[attribute] = new
            if attributes:
                self.leave_attribute(node, attribute)
        if changes is None:
            return node
        return node.with_changes(**changes)

    def _one(self, value: CSTNode, helpers: frozenset[str]):
        result = self.visit(value)
        if isinstance(result, FlattenSentinel):
            raise TypeError(
                f"We got a FlattenSentinel while visiting a {type(value).__name__}. This node's parent "
                "does not allow for it to be it to be replaced with a sequence."
            )
        if isinstance(result, RemovalSentinel):
            if "visit_optional" in helpers:
                return None
            if "visit_sentinel" in helpers:
                return MaybeSentinel.DEFAULT
            raise TypeError(
                f"We got a RemovalSentinel while visiting a {type(value).__name__}. This node's parent "
                "does not allow it to be removed."
            )
        return result

    def _many(self, children, body: bool) -> tuple | None:
        """The visited sequence as a tuple, or None when every child came back as it was."""
        out: list = []
        changed = False
        for child in children:
            new = self.visit(child)
            if new is child:
                out.append(child)
                continue
            changed = True
            if isinstance(new, RemovalSentinel):
                continue
            if isinstance(new, FlattenSentinel):
                if body:
                    out.extend(n for n in new if child._is_removable() or not n._is_removable())
                else:
                    out.extend(new)
            elif not body or child._is_removable() or not new._is_removable():
                out.append(new)
        return tuple(out) if changed else None
