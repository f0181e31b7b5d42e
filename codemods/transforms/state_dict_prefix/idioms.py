"""Recognisers for the hand-written ways to drop `module.` into a *new* dict: the key
expressions (`k[7:]`, `k.replace("module.", "")`, ...), the copy loop and the comprehension.

Each recogniser is a pure function over libcst nodes: it returns what the idiom is made of, or
None when the statements are anything but exactly that idiom.
"""

from __future__ import annotations

import libcst as cst

from codemods.transforms.state_dict_prefix.nodes import (
    is_dot_string,
    is_int,
    is_len_prefix,
    is_method_call,
    is_name,
    is_no_argument_call,
    is_prefix_string,
    is_prefix_test,
    one_slice,
    single_small,
    source_of,
    store_parts,
)


def strips_prefix(expr: cst.BaseExpression, key: str, generic: bool = False) -> bool:
    """True when `expr` is one of the hand-written ways to drop `module.` from the key `key`.

    `'.'.join(k.split('.')[1:])` drops *any* first component, so it counts only when `generic`
    (the repository wraps models: the prefix it drops is `module.`)."""
    # k[7:] / k[len("module."):]
    cut = one_slice(expr)
    if cut is not None and is_name(expr.value, key) and (is_int(cut.lower, "7") or is_len_prefix(cut.lower)):
        if cut.upper is None and cut.step is None:
            return True
    # k.replace("module.", "") / k.replace("module.", "", 1)
    if (
        is_method_call(expr, "replace", key)
        and len(expr.args) >= 2
        and is_prefix_string(expr.args[0].value)
        and isinstance(expr.args[1].value, cst.SimpleString)
    ):
        args = expr.args
        if args[1].value.evaluated_value != "" or len(args) > 3:
            return False
        return len(args) == 2 or is_int(args[2].value, "1")
    # ".".join(k.split(".")[1:])
    if generic and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and is_dot_string(expr.func.value):
        if is_name(expr.func.attr, "join") and len(expr.args) == 1:
            cut = one_slice(expr.args[0].value)
            split = expr.args[0].value.value if cut is not None else None
            if (
                cut is not None
                and is_int(cut.lower, "1")
                and cut.upper is None
                and is_method_call(split, "split", key)
                and len(split.args) == 1
                and is_dot_string(split.args[0].value)
            ):
                return True
    # k[7:] if k.startswith("module.") else k
    if isinstance(expr, cst.IfExp) and is_name(expr.orelse, key) and is_prefix_test(expr.test, key):
        return strips_prefix(expr.body, key, generic)
    return False


def _items_loop(loop: cst.For) -> tuple[str, str | None, cst.BaseExpression] | None:
    """(key, value or None, source) for `for k, v in S.items()` / `for k in S` / `for k in S.keys()`."""
    if loop.orelse is not None or loop.asynchronous is not None:
        return None
    target, it = loop.target, loop.iter
    if isinstance(target, cst.Tuple) and len(target.elements) == 2:
        k, v = (e.value for e in target.elements)
        if (
            isinstance(k, cst.Name)
            and isinstance(v, cst.Name)
            and is_no_argument_call(it, "items")
        ):
            return k.value, v.value, it.func.value
    if isinstance(target, cst.Name):
        if is_no_argument_call(it, "keys"):
            return target.value, None, it.func.value
        return target.value, None, it
    return None


def _new_key_store(stmt: cst.CSTNode, new: str, key_expr, value_ok) -> bool:
    """`new[<key_expr>] = <value>`."""
    small = single_small(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return False
    t = small.targets[0].target
    if not (isinstance(t, cst.Subscript) and is_name(t.value, new) and len(t.slice) == 1):
        return False
    index = t.slice[0].slice
    return isinstance(index, cst.Index) and key_expr(index.value) and value_ok(small.value)


def _dict_type(expr: cst.BaseExpression, resolve) -> bool:
    """`dict` or `collections.OrderedDict`, however imported."""
    if isinstance(expr, cst.Name) and expr.value == "dict":
        return True
    return resolve(expr) in {"collections.OrderedDict", "typing.OrderedDict"}


def strip_loop(
    init: cst.CSTNode, loop: cst.CSTNode, resolve, generic: bool = False
) -> tuple[str, cst.BaseExpression, cst.BaseExpression, set[str]] | None:
    """(new dict name, constructor, source, loop names) when `init; loop` is exactly a prefix strip."""
    small = single_small(init)
    if (
        not isinstance(small, cst.Assign)
        or len(small.targets) != 1
        or not isinstance(small.targets[0].target, cst.Name)
    ):
        return None
    new = small.targets[0].target.value
    ctor = small.value
    if isinstance(ctor, cst.Dict) and not ctor.elements:
        ctor = cst.Name("dict")
    elif isinstance(ctor, cst.Call) and not ctor.args and _dict_type(ctor.func, resolve):
        ctor = ctor.func
    else:
        return None
    if not isinstance(loop, cst.For) or not isinstance(loop.body, cst.IndentedBlock):
        return None
    parts = _items_loop(loop)
    if parts is None:
        return None
    key, value, source = parts
    if value is not None:
        value_ok = lambda e: is_name(e, value)  # noqa: E731
    else:
        # source[key]
        value_ok = lambda e: (  # noqa: E731
            isinstance(e, cst.Subscript)
            and source_of(e.value) == source_of(source)
            and len(e.slice) == 1
            and isinstance(e.slice[0].slice, cst.Index)
            and is_name(e.slice[0].slice.value, key)
        )
    body = list(loop.body.body)
    names = {key} | ({value} if value else set())
    if len(body) == 1 and _new_key_store(body[0], new, lambda e: strips_prefix(e, key, generic), value_ok):
        return new, ctor, source, names
    if len(body) != 2:
        return None
    first = body[0]
    small = single_small(first)
    # name = <strip>(k); new[name] = v    |    k = <strip>(k); new[k] = v
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        temp = small.targets[0].target.value
        if strips_prefix(small.value, key, generic) and _new_key_store(
            body[1], new, lambda e: is_name(e, temp), value_ok
        ):
            return new, ctor, source, names | {temp}
    # if k.startswith("module."): k = k[7:]    then    new[k] = v
    if (
        isinstance(first, cst.If)
        and first.orelse is None
        and is_prefix_test(first.test, key)
        and isinstance(first.body, cst.IndentedBlock)
        and len(first.body.body) == 1
    ):
        inner = single_small(first.body.body[0])
        if (
            isinstance(inner, cst.Assign)
            and len(inner.targets) == 1
            and is_name(inner.targets[0].target, key)
            and strips_prefix(inner.value, key, generic)
            and _new_key_store(body[1], new, lambda e: is_name(e, key), value_ok)
        ):
            return new, ctor, source, names
    return None


def strip_comprehension(
    stmt: cst.CSTNode, resolve, generic: bool = False
) -> tuple[str, cst.BaseExpression, cst.BaseExpression] | None:
    """(name, constructor, source) for `n = {strip(k): v for k, v in S.items()}` or the
    `OrderedDict((strip(k), v) for k, v in S.items())` form."""
    small = single_small(stmt)
    if (
        not isinstance(small, cst.Assign)
        or len(small.targets) != 1
        or not isinstance(small.targets[0].target, cst.Name)
    ):
        return None
    name = small.targets[0].target.value
    value = small.value
    ctor: cst.BaseExpression = cst.Name("dict")
    if isinstance(value, cst.DictComp):
        key_expr, val_expr, comp = value.key, value.value, value.for_in
    elif (
        isinstance(value, cst.Call)
        and len(value.args) == 1
        and _dict_type(value.func, resolve)
        and isinstance(value.args[0].value, cst.GeneratorExp)
        and isinstance(value.args[0].value.elt, cst.Tuple)
        and len(value.args[0].value.elt.elements) == 2
    ):
        ctor = value.func
        gen = value.args[0].value
        key_expr, val_expr = (e.value for e in gen.elt.elements)
        comp = gen.for_in
    else:
        return None
    if comp.inner_for_in is not None or comp.ifs or comp.asynchronous is not None:
        return None
    target = comp.target
    if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
        return None
    k, v = (e.value for e in target.elements)
    if not (isinstance(k, cst.Name) and isinstance(v, cst.Name)):
        return None
    if not is_no_argument_call(comp.iter, "items"):
        return None
    if not (strips_prefix(key_expr, k.value, generic) and is_name(val_expr, v.value)):
        return None
    return name, ctor, comp.iter.func.value


def one_store(loop: cst.For) -> cst.For:
    """`if k.startswith("module."): new[strip(k)] = v  else: new[k] = v` as the single store
    `new[strip(k) if k.startswith("module.") else k] = v` that strip_loop knows; other loops as
    they are."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
    if len(body) != 1 or not isinstance(body[0], cst.If) or not isinstance(body[0].orelse, cst.Else):
        return loop
    guard = body[0]
    then = guard.body.body if isinstance(guard.body, cst.IndentedBlock) else ()
    other = guard.orelse.body.body if isinstance(guard.orelse.body, cst.IndentedBlock) else ()
    if len(then) != 1 or len(other) != 1:
        return loop
    stripped, kept = store_parts(then[0]), store_parts(other[0])
    if stripped is None or kept is None or not isinstance(kept[1], cst.Name):
        return loop
    if source_of(stripped[0]) != source_of(kept[0]) or source_of(stripped[2]) != source_of(kept[2]):
        return loop
    if not is_prefix_test(guard.test, kept[1].value):
        return loop
    index = cst.IfExp(test=guard.test, body=stripped[1], orelse=kept[1])
    store = cst.parse_statement(f"{source_of(stripped[0])}[{source_of(index)}] = {source_of(stripped[2])}\n")
    return loop.with_changes(body=loop.body.with_changes(body=[store]))
