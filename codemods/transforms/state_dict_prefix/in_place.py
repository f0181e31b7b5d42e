"""Recognisers for the hand-written ways to drop `module.` from a dict's keys *in place*:
`for k in list(sd): sd[k[7:]] = sd.pop(k)` and its variants, with the keys copied first.

Pure functions over libcst nodes, like the ones in idioms.py.
"""

from __future__ import annotations

import libcst as cst

from codemods.helpers.names import dotted
from codemods.transforms.state_dict_prefix.idioms import strips_prefix
from codemods.transforms.state_dict_prefix.nodes import is_prefix_test, single_small, source_of, store_parts


def _key_loop(loop: cst.CSTNode, copy: tuple[str, cst.BaseExpression] | None = None):
    """(key, S) for `for k in list(S)` / `for k in list(S.keys())` (or `tuple(...)`), or for
    `for k in N` where `copy` says N holds a copy of S's keys: a loop that may change S as it goes."""
    if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
        return None
    if not (isinstance(loop.target, cst.Name) and isinstance(loop.body, cst.IndentedBlock)):
        return None
    if copy is not None:
        named = isinstance(loop.iter, cst.Name) and loop.iter.value == copy[0]
        return (loop.target.value, copy[1]) if named else None
    source = _copied_keys(loop.iter, {"list", "tuple"})
    return None if source is None else (loop.target.value, source)


def _copied_keys(expr: cst.BaseExpression, copies: set[str]) -> cst.BaseExpression | None:
    """S for `list(S)` / `list(S.keys())` (the calls in `copies`) and `{k for k in S.keys()}` /
    `[k for k in S]`: a new collection of S's keys, S a plain or dotted name."""
    if isinstance(expr, (cst.SetComp, cst.ListComp)):
        comp = expr.for_in
        if comp.ifs or comp.inner_for_in is not None or comp.asynchronous is not None:
            return None
        if not (isinstance(comp.target, cst.Name) and isinstance(expr.elt, cst.Name)):
            return None
        if comp.target.value != expr.elt.value:
            return None
        source = comp.iter
    elif (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value in copies
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and not expr.args[0].star
    ):
        source = expr.args[0].value
    else:
        return None
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and source.func.attr.value == "keys":
        source = source.func.value if not source.args else None
    return source if source is not None and dotted(source) is not None else None


def keys_copy(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """(N, S) for `N = {k for k in S.keys()}` / `N = list(S.keys())` / `N = set(S)` and the like."""
    small = single_small(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
        return None
    source = _copied_keys(small.value, {"list", "tuple", "set", "sorted"})
    return None if source is None else (small.targets[0].target.value, source)


def _is_key_of(expr: cst.BaseExpression, source: cst.BaseExpression, key: str, method: str | None) -> bool:
    """`S.pop(k)` (method "pop") or `S[k]` (method None)."""
    if method is None:
        return (
            isinstance(expr, cst.Subscript)
            and source_of(expr.value) == source_of(source)
            and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Index)
            and source_of(expr.slice[0].slice.value) == key
        )
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == method
        and source_of(expr.func.value) == source_of(source)
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and source_of(expr.args[0].value) == key
    )


def in_place_strip(
    loop: cst.CSTNode, generic: bool = False, copy: tuple[str, cst.BaseExpression] | None = None
) -> tuple[cst.BaseExpression, set[str]] | None:
    """(S, loop names) when `loop` renames S's keys in place, exactly a prefix strip:
    `S[strip(k)] = S.pop(k)`, `v = S.pop(k); S[strip(k)] = v` or `S[strip(k)] = S[k]; del S[k]`,
    alone or under `if k.startswith("module."):`."""
    found = _key_loop(loop, copy)
    if found is None:
        return None
    key, source = found
    body = list(loop.body.body)
    if len(body) == 1 and isinstance(body[0], cst.If):
        guard = body[0]
        if guard.orelse is not None or not is_prefix_test(guard.test, key) or not isinstance(guard.body, cst.IndentedBlock):
            return None
        body = list(guard.body.body)
    names = {key}
    if len(body) == 2 and isinstance(single_small(body[1]), cst.Del):
        body = [body[1], body[0]]  # `S[strip(k)] = S[k]; del S[k]`: checked below with the store last
    last = store_parts(body[-1]) if body else None
    if last is None or source_of(last[0]) != source_of(source) or not strips_prefix(last[1], key, generic):
        return None
    value = last[2]
    if len(body) == 1:
        return (source, names) if _is_key_of(value, source, key, "pop") else None
    if len(body) != 2:
        return None
    first = single_small(body[0])
    # del S[k] (after the copy)
    if isinstance(first, cst.Del) and _is_key_of(first.target, source, key, None) and _is_key_of(value, source, key, None):
        return source, names
    # v = S.pop(k); S[strip(k)] = v
    if (
        isinstance(first, cst.Assign)
        and len(first.targets) == 1
        and isinstance(first.targets[0].target, cst.Name)
        and _is_key_of(first.value, source, key, "pop")
        and isinstance(value, cst.Name)
        and value.value == first.targets[0].target.value != key
    ):
        return source, names | {value.value}
    return None
