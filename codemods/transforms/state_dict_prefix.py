"""TM104: checkpoints without the `module.` prefix of DataParallel/DDP wrappers, and loads that strip it."""

from __future__ import annotations

import libcst as cst

from codemods.gates.state_dict_prefix import NOT_MODELS, PREFIX, _WRAP_WORDS, WRAPPERS
from codemods.helpers import ddp
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted
from codemods.helpers.patterns import Words
from codemods.helpers.sites import Pruner
from codemods.helpers.spelling import import_forms, retire



CONSUME = "consume_prefix_in_state_dict_if_present"
CONSUME_MODULE = "torch.nn.modules.utils"


_PREFIX_WORD = Words(r"module\.")
# A name assigned from `torch.load` is on a line that says `load` (or an alias of it: Sites.hits).
_LOAD_WORD = Words(r"\bload\b")


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _is_prefix(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == PREFIX


def _is_name(node: cst.CSTNode | None, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def _is_int(node: cst.CSTNode | None, value: str) -> bool:
    return isinstance(node, cst.Integer) and node.value == value


def _is_dot(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.SimpleString) and node.value in ('"."', "'.'")


def _attribute(node: cst.CSTNode, attr: str, value: str | None = None) -> bool:
    """`<anything>.attr`, or `value.attr` when `value` is given."""
    return isinstance(node, cst.Attribute) and _is_name(node.attr, attr) and (value is None or _is_name(node.value, value))


def _method_call(node: cst.CSTNode, method: str, key: str | None = None) -> bool:
    """`<anything>.method(...)` (`key.method(...)` when `key` is given), any arguments."""
    return isinstance(node, cst.Call) and _attribute(node.func, method, key)


def _one_slice(node: cst.CSTNode) -> cst.Slice | None:
    """The slice of `x[a:b]` (one element, a slice); None for anything else."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
        return node.slice[0].slice
    return None


def _len_prefix(node: cst.CSTNode | None) -> bool:
    """`len("module.")`."""
    return (
        isinstance(node, cst.Call) and _is_name(node.func, "len") and len(node.args) == 1 and _is_prefix(node.args[0].value)
    )


def _strips(expr: cst.BaseExpression, key: str, generic: bool = False) -> bool:
    """True when `expr` is one of the hand-written ways to drop `module.` from the key `key`.

    `'.'.join(k.split('.')[1:])` drops *any* first component, so it counts only when `generic`
    (the repository wraps models: the prefix it drops is `module.`)."""
    # k[7:] / k[len("module."):]
    cut = _one_slice(expr)
    if cut is not None and _is_name(expr.value, key) and (_is_int(cut.lower, "7") or _len_prefix(cut.lower)):
        if cut.upper is None and cut.step is None:
            return True
    # k.replace("module.", "") / k.replace("module.", "", 1)
    if (
        _method_call(expr, "replace", key)
        and len(expr.args) >= 2
        and _is_prefix(expr.args[0].value)
        and isinstance(expr.args[1].value, cst.SimpleString)
    ):
        args = expr.args
        if args[1].value.evaluated_value != "" or len(args) > 3:
            return False
        return len(args) == 2 or _is_int(args[2].value, "1")
    # ".".join(k.split(".")[1:])
    if generic and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and _is_dot(expr.func.value):
        if _is_name(expr.func.attr, "join") and len(expr.args) == 1:
            cut = _one_slice(expr.args[0].value)
            split = expr.args[0].value.value if cut is not None else None
            if (
                cut is not None
                and _is_int(cut.lower, "1")
                and cut.upper is None
                and _method_call(split, "split", key)
                and len(split.args) == 1
                and _is_dot(split.args[0].value)
            ):
                return True
    # k[7:] if k.startswith("module.") else k
    if isinstance(expr, cst.IfExp) and _is_name(expr.orelse, key) and _startswith(expr.test, key):
        return _strips(expr.body, key, generic)
    return False


def _startswith(expr: cst.BaseExpression, key: str) -> bool:
    """`key.startswith("module.")`."""
    return _method_call(expr, "startswith", key) and len(expr.args) == 1 and _is_prefix(expr.args[0].value)


def _no_argument_call(node: cst.CSTNode, method: str) -> bool:
    """`<anything>.method()`."""
    return _method_call(node, method) and not node.args


def _single(stmt: cst.CSTNode) -> cst.BaseSmallStatement | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        return stmt.body[0]
    return None


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
            and _no_argument_call(it, "items")
        ):
            return k.value, v.value, it.func.value
    if isinstance(target, cst.Name):
        if _no_argument_call(it, "keys"):
            return target.value, None, it.func.value
        return target.value, None, it
    return None


def _new_key_store(stmt: cst.CSTNode, new: str, key_expr, value_ok) -> bool:
    """`new[<key_expr>] = <value>`."""
    small = _single(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return False
    t = small.targets[0].target
    if not (isinstance(t, cst.Subscript) and _is_name(t.value, new) and len(t.slice) == 1):
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
    small = _single(init)
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
        value_ok = lambda e: _is_name(e, value)  # noqa: E731
    else:
        # source[key]
        value_ok = lambda e: (  # noqa: E731
            isinstance(e, cst.Subscript)
            and _code(e.value) == _code(source)
            and len(e.slice) == 1
            and isinstance(e.slice[0].slice, cst.Index)
            and _is_name(e.slice[0].slice.value, key)
        )
    body = list(loop.body.body)
    names = {key} | ({value} if value else set())
    if len(body) == 1 and _new_key_store(body[0], new, lambda e: _strips(e, key, generic), value_ok):
        return new, ctor, source, names
    if len(body) != 2:
        return None
    first = body[0]
    small = _single(first)
    # name = <strip>(k); new[name] = v    |    k = <strip>(k); new[k] = v
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        temp = small.targets[0].target.value
        if _strips(small.value, key, generic) and _new_key_store(
            body[1], new, lambda e: _is_name(e, temp), value_ok
        ):
            return new, ctor, source, names | {temp}
    # if k.startswith("module."): k = k[7:]    then    new[k] = v
    if (
        isinstance(first, cst.If)
        and first.orelse is None
        and _startswith(first.test, key)
        and isinstance(first.body, cst.IndentedBlock)
        and len(first.body.body) == 1
    ):
        inner = _single(first.body.body[0])
        if (
            isinstance(inner, cst.Assign)
            and len(inner.targets) == 1
            and _is_name(inner.targets[0].target, key)
            and _strips(inner.value, key, generic)
            and _new_key_store(body[1], new, lambda e: _is_name(e, key), value_ok)
        ):
            return new, ctor, source, names
    return None


def strip_comprehension(
    stmt: cst.CSTNode, resolve, generic: bool = False
) -> tuple[str, cst.BaseExpression, cst.BaseExpression] | None:
    """(name, constructor, source) for `n = {strip(k): v for k, v in S.items()}` or the
    `OrderedDict((strip(k), v) for k, v in S.items())` form."""
    small = _single(stmt)
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
    if not _no_argument_call(comp.iter, "items"):
        return None
    if not (_strips(key_expr, k.value, generic) and _is_name(val_expr, v.value)):
        return None
    return name, ctor, comp.iter.func.value


def _line(code: str) -> cst.SimpleStatementLine:
    stmt = cst.parse_statement(code)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


class StateDictPrefix(MigrationCodemod):
    """Save the unwrapped model's state dict; strip a `module.` prefix with torch's own function.

    ## What it does
    `torch.save(model.state_dict(), ...)` where `model` is wrapped by `DataParallel`/DDP (or
    TM103's `ddp_wrap`) in this file becomes `torch.save(unwrap_model(model).state_dict(), ...)`;
    the same inside the arguments of a project's `save_checkpoint(...)`-like function.
    In a repository that wraps models, `model.load_state_dict(torch.load(...))` (or a checkpoint
    loaded with `torch.load` and subscripted) first strips a `module.` prefix with
    `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present` and loads into
    `unwrap_model(model)`. The hand-written stripping idioms (`k[7:]`, `k.replace('module.', '')`,
    `'.'.join(k.split('.')[1:])`, an `OrderedDict` loop, a dict comprehension, a
    `try: load / except: strip and retry`) become that call when they are exactly that.

    ## Why is this bad?
    A wrapped model's state dict has every key prefixed with `module.`; such checkpoints fail to
    load into the plain model (`Missing key(s) in state_dict`). The hand-written fixes cut seven
    characters off every key, so they corrupt a checkpoint saved without the prefix — which is
    what every checkpoint becomes once training moves to DDP with an unwrapped save.

    ## Example
    ```python
    torch.save(model.state_dict(), path)          # model = nn.DataParallel(net)
    new_state_dict = OrderedDict()
    for k, v in state_dict.items():
        new_state_dict[k[7:]] = v
    ```

    ## Use instead
    ```python
    torch.save(unwrap_model(model).state_dict(), path)
    new_state_dict = OrderedDict(state_dict)
    consume_prefix_in_state_dict_if_present(new_state_dict, "module.")
    ```

    ## Fix safety
    Safe. The library call removes `module.` only where a key starts with it, so checkpoints
    with and without the prefix both load; the hand-written idioms gave the same keys whenever
    they worked. Loading into `unwrap_model(model)` works whether or not `model` is wrapped.
    `k.replace('module.', '')` also removed `module.` inside a key (a submodule named `module`);
    the library call does not.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.modules.utils.consume_prefix_in_state_dict_if_present.html
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-torch-nn-dataparallel-models
    """

    CODE = "TM104"
    # Its sites are on trigger lines, and on the `save`/`state_dict` lines of a wrapped model; its
    # other passes read the wrapper assignments and the hand-written strips (see visit_Module).
    PRUNE = True
    SAFETY = "safe"

    def transform_module(self, tree: cst.Module) -> cst.Module:
        result = super().transform_module(tree)
        # An import removed from the top leaves the blank lines that followed it at the top.
        if result.body and tree.body and not tree.body[0].leading_lines and result.body[0].leading_lines:
            first = result.body[0]
            kept = [line for line in first.leading_lines if line.comment is not None]
            result = result.with_changes(body=[first.with_changes(leading_lines=kept), *result.body[1:]])
        return result

    def visit_Module(self, node: cst.Module) -> bool:
        self.needed: set[str] = set()
        self.consume = False
        self.wrapped: set[str] = set()
        self.saved: set[cst.Call] = set()
        self.loaded: dict[int, set[str]] = {}  # scope -> names assigned only from torch.load, on demand
        self.bound: dict[int, set[str]] = {}  # scope -> names it assigns, on demand
        defs = ddp.top_level_defs(node)
        self.has_wrap_helper = defs.get("ddp_wrap", False)
        self.helpers_ok = not ddp.clashes(node, {"unwrap_model"})
        self.visit_where(node, _Wrapped(self), _WRAP_WORDS)
        self.wrapped |= {f"self.{name}" for name in self.file.facts.wrapped_attributes}
        self.repo_wraps = bool(self.wrapped) or bool(self.file.facts.dataparallel_files)
        self.scopes: list[cst.CSTNode] = [node]
        self._module = node
        self._taken: set[str] | None = None  # every name in the module, when a new one is needed
        self.replaced: list[cst.CSTNode] = []
        collector = _HandStrips()
        self.visit_where(node, collector, _PREFIX_WORD)
        self.hand_strips = collector.found
        tests = _PrefixTests()
        self.visit_where(node, tests, _PREFIX_WORD)
        self.hand_strips += tests.found
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        return updated_node

    def visit_Call(self, node: cst.Call) -> None:
        # torch.save, or a project's own `save_checkpoint(...)` / `save_model(...)` around it
        name = dotted(node.func) or ""
        if self.qualified_name(node.func) != "torch.save" and "save" not in name.rsplit(".", 1)[-1].lower():
            return
        for arg in node.args:
            arg.value.visit(_StateDictCalls(self))

    # -- saving: unwrap first ---------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node not in self.saved:
            return updated_node
        if not self.helpers_ok:
            self.finding(
                original_node, "this module defines its own `unwrap_model`: save `model.module.state_dict()` by hand"
            )
            return updated_node
        self.needed.add("unwrap_model")
        owner = updated_node.func.value
        unwrapped = cst.Call(func=cst.Name("unwrap_model"), args=[cst.Arg(owner)])
        return self.rewrite(
            original_node, updated_node, updated_node.with_changes(func=updated_node.func.with_changes(value=unwrapped))
        )

    # -- a conditional whose branches this rewrite made the same ----------------------------------

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.BaseStatement | cst.FlattenSentinel:
        """`if isinstance(model, DataParallel): save(model.module...) else: save(model...)` saves
        `unwrap_model(model)` in both branches once migrated: keep one copy, not the test."""
        before, after = original_node.orelse, updated_node.orelse
        if not (isinstance(before, cst.Else) and isinstance(after, cst.Else)):
            return updated_node
        if not (isinstance(updated_node.body, cst.IndentedBlock) and isinstance(after.body, cst.IndentedBlock)):
            return updated_node
        body, other = list(updated_node.body.body), list(after.body.body)
        if [_code(x) for x in body] != [_code(x) for x in other] or _code(original_node.body) == _code(before.body):
            return updated_node  # not the same, or the same already (the user's, not ours)
        if after.leading_lines or after.body.header.comment or not _pure_test(updated_node.test):
            # a comment would be lost, or the test does something that must still happen
            self.finding(
                original_node,
                f"both branches of `if {_code(updated_node.test)}:` are the same once unwrapped; "
                "the test is kept (it calls something, or a comment is on its `else:`): drop one branch by hand",
            )
            return updated_node
        body[0] = body[0].with_changes(leading_lines=[*updated_node.leading_lines, *body[0].leading_lines])
        forms = import_forms(self._module)
        for name in _all_names(updated_node.test):  # `nn` of `nn.DataParallel`, if used nowhere else
            retire(self, forms, name)
        return self.rewrite(
            original_node,
            updated_node,
            cst.FlattenSentinel(body),
            review=f"both branches of `if {_code(updated_node.test)}:` are the same once unwrapped: one kept",
        )

    # -- loading: statement rewrites, block by block -------------------------------------------------

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = self._block(list(original_node.body), list(updated_node.body))
        return updated_node if body is None else updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._block(list(original_node.body), list(updated_node.body))
        module = updated_node if body is None else updated_node.with_changes(body=body)
        for strip in self.hand_strips:
            if not any(_contains(done, strip) for done in self.replaced):
                self.finding(
                    strip,
                    "hand-written `module.` stripping that is not one of the recognised idioms: strip the "
                    f'prefix with `{CONSUME_MODULE}.{CONSUME}(state_dict, "module.")`',
                )
        if not self.rewrites:
            return updated_node
        if self.consume:
            self.add_needed_import(CONSUME_MODULE, CONSUME)
        if self.needed:
            bound = ddp.top_level_defs(module)
            for name in ddp.imports_for(self.needed):
                if name not in bound:
                    self.add_needed_import(name)
            module = ddp.with_helpers(module, self.needed)
        return module

    def _block(self, original: list, updated: list) -> list | None:
        if len(original) != len(updated):
            return None
        out: list = []
        changed = False
        i = 0
        while i < len(updated):
            orig, new = original[i], updated[i]
            nxt = original[i + 1] if i + 1 < len(original) else None
            replaced = None
            if nxt is not None:
                replaced = self._loop(orig, nxt, updated[i], updated[i + 1], original[i + 2 :]) or self._in_place_copy(
                    orig, nxt, updated[i], updated[i + 1], original[i + 2 :]
                )
                if replaced is not None:
                    out.extend(replaced)
                    i += 2
                    changed = True
                    continue
            replaced = (
                self._comprehension(orig, new)
                or self._in_place(orig, new, original[i + 1 :])
                or self._retry(orig, new)
                or self._load(orig, new, out)
            )
            if replaced is not None:
                out.extend(replaced)
                changed = True
            else:
                out.append(new)
            i += 1
        return out if changed else None

    def _consume(self, name: str) -> cst.SimpleStatementLine:
        self.consume = True
        return _line(f'{CONSUME}({name}, "{PREFIX}")\n')

    def _loop(self, init, loop, new_init, new_loop, rest) -> list | None:
        found = strip_loop(init, loop, self.qualified_name, self.repo_wraps)
        if found is None and isinstance(loop, cst.For):
            # `if k.startswith("module."): new[k[7:]] = v  else: new[k] = v`: the one-store form
            found = strip_loop(init, one_store(loop), self.qualified_name, self.repo_wraps)
        if found is None:
            return None
        name, ctor, source, loop_names = found
        if any(_uses(stmt, loop_names) for stmt in rest):
            return None  # the loop variables are read afterwards: not exactly the idiom
        first = _line(f"{name} = {_code(ctor)}({_code(source)})\n").with_changes(leading_lines=new_init.leading_lines)
        second = self._consume(name).with_changes(leading_lines=new_loop.leading_lines)
        result = self.rewrite(loop, new_loop, cst.FlattenSentinel([first, second]))
        if result is new_loop:
            return None
        return [first, second]

    def _in_place(self, orig, new, rest, copy=None) -> list | None:
        """`for k in list(sd.keys()): if k.startswith("module."): sd[k[7:]] = sd.pop(k)`; with
        `copy`, the loop runs over a name that the statement before it filled with sd's keys."""
        found = in_place_strip(orig, self.repo_wraps, copy)
        if found is None:
            return None
        source, loop_names = found
        if any(_uses(stmt, loop_names | ({copy[0]} if copy else set())) for stmt in rest):
            return None  # the loop variables are read afterwards: not exactly the idiom
        line = self._consume(_code(source)).with_changes(leading_lines=new.leading_lines)
        result = self.rewrite(orig, new, line)
        return None if result is new else [line]

    def _in_place_copy(self, init, loop, new_init, new_loop, rest) -> list | None:
        """`all_keys = {k for k in sd.keys()}` then the in-place loop over `all_keys`."""
        copy = keys_copy(init)
        if copy is None:
            return None
        replaced = self._in_place(loop, new_loop, rest, copy)
        if replaced is None:
            return None
        return [replaced[0].with_changes(leading_lines=[*new_init.leading_lines, *replaced[0].leading_lines])]

    def _comprehension(self, orig, new) -> list | None:
        found = strip_comprehension(orig, self.qualified_name, self.repo_wraps)
        if found is None:
            return None
        name, ctor, source = found
        first = new.with_changes(
            body=[_single(new).with_changes(value=cst.parse_expression(f"{_code(ctor)}({_code(source)})"))]
        )
        result = self.rewrite(orig, new, first)
        if result is new:
            return None
        return [first, self._consume(name)]

    def _retry(self, orig, new) -> list | None:
        """try: m.load_state_dict(sd)  except ...: <strip sd into n>; m.load_state_dict(n)"""
        if not isinstance(orig, cst.Try) or orig.orelse is not None or orig.finalbody is not None:
            return None
        if len(orig.handlers) != 1 or not isinstance(orig.body, cst.IndentedBlock) or len(orig.body.body) != 1:
            return None
        handler = orig.handlers[0]
        if handler.type is not None and (dotted(handler.type) or "") not in {"RuntimeError", "Exception", "KeyError"}:
            return None
        first = _load_call(_single(orig.body.body[0]))
        if first is None:
            return None
        receiver, call = first
        if len(call.args) < 1 or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.Name):
            return None
        source = call.args[0].value.value
        steps = list(handler.body.body) if isinstance(handler.body, cst.IndentedBlock) else []
        if not steps:
            return None
        last = _load_call(_single(steps[-1]))
        if last is None or _code(last[0]) != _code(receiver) or not last[1].args:
            return None
        stripped = last[1].args[0].value
        if not isinstance(stripped, cst.Name):
            return None
        strip = steps[:-1]
        ok = False
        if len(strip) == 2:
            found = strip_loop(strip[0], strip[1], self.qualified_name, self.repo_wraps)
            ok = found is not None and found[0] == stripped.value and _code(found[2]) == source
        elif len(strip) == 1:
            found = strip_comprehension(strip[0], self.qualified_name, self.repo_wraps)
            ok = found is not None and found[0] == stripped.value and _code(found[2]) == source
        if not ok or [_code(a) for a in last[1].args[1:]] != [_code(a) for a in call.args[1:]]:
            return None
        ctor = self.qualified_name(found[1])
        if ctor is not None and "." in ctor:
            module, _, obj = ctor.rpartition(".")
            self.remove_unused_import(module, obj)  # only if nothing else uses it
        if not self.helpers_ok:
            return None
        # the retry says the model may be wrapped (a wrapped model loads the prefixed keys first
        # time): load into the unwrapped module, whatever this file shows of the model
        self.needed.add("unwrap_model")
        load = _line(f"unwrap_model({_code(receiver)}).{_code(call.with_changes(func=call.func.attr))}\n")
        replacement = [self._consume(source).with_changes(leading_lines=new.leading_lines), load]
        result = self.rewrite(orig, new, cst.FlattenSentinel(replacement))
        return None if result is new else replacement

    def _load(self, orig, new, before: list) -> list | None:
        """m.load_state_dict(torch.load(p)) / m.load_state_dict(ckpt["model"]) in a repo that wraps."""
        if not self.repo_wraps or not self.helpers_ok:
            return None
        found = _load_call(_single(orig))
        if found is None:
            return None
        receiver, call = found
        owner = dotted(receiver) or ""
        if owner in {"self", ""} or any(w in owner.lower() for w in NOT_MODELS) or not self._touched(receiver):
            return None
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        arg = call.args[0].value
        if self._from_load(arg, direct=True):
            name = "state_dict"
            if self._taken is None:
                self._taken = _all_names(self._module)
            while name in self._taken:
                name += "_"
            self._taken.add(name)
            self.needed.add("unwrap_model")
            hoist = _line(f"{name} = {_code(arg)}\n").with_changes(leading_lines=new.leading_lines)
            args_code = ", ".join(
                [name] + [_code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in call.args[1:]]
            )
            load = _line(f"unwrap_model({_code(receiver)}).load_state_dict({args_code})\n")
            replacement = [hoist, self._consume(name), load]
        elif self._from_load(arg, direct=False):
            text = _code(arg)
            prev = before[-1] if before else None
            if prev is not None and _code(prev).strip() == f'{CONSUME}({text}, "{PREFIX}")':
                return None  # already done (idempotence)
            self.needed.add("unwrap_model")
            load = new.with_changes(
                body=[
                    _single(new).with_changes(
                        value=cst.parse_expression(
                            f"unwrap_model({_code(receiver)}).{_code(call.with_changes(func=call.func.attr))}"
                        )
                    )
                ],
                leading_lines=[],
            )
            replacement = [self._consume(text).with_changes(leading_lines=new.leading_lines), load]
        else:
            return None
        result = self.rewrite(orig, new, cst.FlattenSentinel(replacement))
        return None if result is new else replacement

    def rewrite(self, original, updated, replacement, *, review=None):
        result = super().rewrite(original, updated, replacement, review=review)
        if result is replacement:
            self.replaced.append(original)
        return result

    def _touched(self, receiver: cst.BaseExpression) -> bool:
        """A DataParallel/DDP wrapper may hold `receiver`: it is wrapped in this file (or, for
        `self.x`, anywhere in the repository), or it is a name this scope does not bind (a
        parameter: the caller may pass a wrapped model) in a repository that wraps. A model built
        here and never wrapped needs no unwrap_model and no prefix strip."""
        owner = dotted(receiver)
        if owner is None:
            return False
        if owner in self.wrapped:
            return True
        if "." in owner:
            return False
        return self.repo_wraps and owner not in self._bound(self.scopes[-1])

    def _bound(self, scope: cst.Module | cst.FunctionDef) -> set[str]:
        """Names this scope's own statements assign (not its parameters)."""
        found = self.bound.get(id(scope))
        if found is None:
            body = scope.body if isinstance(scope, cst.Module) else scope.body.body
            found = self.bound[id(scope)] = _assigned_names(body)
        return found

    def _from_load(self, expr: cst.BaseExpression, direct: bool) -> bool:
        """`torch.load(...)` (subscripted by literals) when direct; else a name assigned only from it."""
        while isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            if not isinstance(expr.slice[0].slice.value, cst.SimpleString):
                return False
            expr = expr.value
        if direct:
            return isinstance(expr, cst.Call) and self.qualified_name(expr.func) == "torch.load"
        return isinstance(expr, cst.Name) and expr.value in self._loaded(self.scopes[-1])

    def _loaded(self, scope: cst.Module | cst.FunctionDef) -> set[str]:
        """Names of this scope assigned only from `torch.load` (a scope whose lines never say
        `load` has none, and is not walked)."""
        found = self.loaded.get(id(scope))
        if found is None:
            if isinstance(scope, cst.Module):
                body = scope.body
            else:
                body = scope.body.body if isinstance(scope.body, cst.IndentedBlock) else ()
            if self.sites is not None and body:
                lines = self.sites.hits([_LOAD_WORD])
                if not lines or Pruner(self.sites, lines).skips(scope):
                    body = ()
            found = self.loaded[id(scope)] = _loaded_names(self, body)
        return found


class _HandStrips(cst.CSTVisitor):
    """`x.replace("module.", ...)` and `x[len("module."):]`: stripping written by hand."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        if _method_call(node, "replace") and node.args and _is_prefix(node.args[0].value):
            self.found.append(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        cut = _one_slice(node)
        if cut is not None and _len_prefix(cut.lower):
            self.found.append(node)


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found = False

        def on_visit(self, n: cst.CSTNode) -> bool:
            self.found = self.found or n is target
            return not self.found

    finder = Finder()
    node.visit(finder)
    return finder.found


def _load_call(small) -> tuple[cst.BaseExpression, cst.Call] | None:
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    call = small.value
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"):
        return None
    return call.func.value, call


def _uses(node: cst.CSTNode, names: set[str]) -> bool:
    return any(n in names for n in _all_names(node))


def _all_names(node: cst.CSTNode) -> set[str]:
    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: set[str] = set()
            self.skip: set[int] = set()

        def visit_Attribute(self, n: cst.Attribute) -> None:
            self.skip.add(id(n.attr))

        def visit_Arg(self, n: cst.Arg) -> None:
            if n.keyword is not None:
                self.skip.add(id(n.keyword))

        def visit_Name(self, n: cst.Name) -> None:
            if id(n) not in self.skip:
                self.found.add(n.value)

    v = Names()
    node.visit(v)
    return v.found


_PURE_CALLS = frozenset({"isinstance", "hasattr", "len", "getattr", "torch.cuda.device_count", "torch.cuda.is_available"})


def _pure_test(test: cst.BaseExpression) -> bool:
    """A condition whose evaluation has no effect worth keeping: names, attributes, literals,
    comparisons and `isinstance`/`hasattr`/`len`/GPU-count calls of those."""

    class Check(cst.CSTVisitor):
        pure = True

        def visit_Call(self, node: cst.Call) -> None:
            self.pure = self.pure and (dotted(node.func) or "") in _PURE_CALLS

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            self.pure = False
            return False

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self.pure = False

        def visit_Await(self, node: cst.Await) -> None:
            self.pure = False

    check = Check()
    test.visit(check)
    return check.pure


def _assigned_names(body) -> set[str]:
    """Plain names bound by assignment, `for` or `with ... as` in these statements (nested
    functions and classes left out)."""

    class Targets(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: set[str] = set()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self.found |= _target_names(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self.found |= _target_names(node.target)

        def visit_For(self, node: cst.For) -> None:
            self.found |= _target_names(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self.found |= _target_names(node.name)

    v = Targets()
    for stmt in body:
        stmt.visit(v)
    return v.found


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _target_names(e.value)}
    return set()


def _loaded_names(cm: StateDictPrefix, body) -> set[str]:
    """Names in this scope's own statements assigned from `torch.load(...)` and nothing else."""

    class Assigns(cst.CSTVisitor):
        def __init__(self) -> None:
            self.good: set[str] = set()
            self.bad: set[str] = set()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            while isinstance(value, cst.Subscript):
                value = value.value
            ok = isinstance(value, cst.Call) and cm.qualified_name(value.func) == "torch.load"
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    (self.good if ok else self.bad).add(t.target.value)

        def visit_For(self, node: cst.For) -> None:
            self.bad |= _all_names(node.target)

    v = Assigns()
    for stmt in body:
        stmt.visit(v)
    return v.good - v.bad


class _Wrapped(cst.CSTVisitor):
    """Names (`model`, `self.model`) assigned a DataParallel/DDP wrapper (or TM103's ddp_wrap)."""

    def __init__(self, cm: StateDictPrefix) -> None:
        self.cm = cm

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in {"cuda", "to"}
            and isinstance(value.func.value, cst.Call)
        ):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return
        wraps = self.cm.qualified_name(value.func) in WRAPPERS or (
            self.cm.has_wrap_helper and isinstance(value.func, cst.Name) and value.func.value == "ddp_wrap"
        )
        if wraps:
            for t in node.targets:
                name = dotted(t.target)
                if name:
                    self.cm.wrapped.add(name)


class _StateDictCalls(cst.CSTVisitor):
    """`<wrapped>.state_dict()` inside an argument of torch.save or of a `save...()` function."""

    def __init__(self, cm: StateDictPrefix) -> None:
        self.cm = cm

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "state_dict"
            and dotted(node.func.value) in self.cm.wrapped
        ):
            self.cm.saved.add(node)


# -- `module.` strips written against the keys themselves ----------------------------------------


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
    small = _single(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
        return None
    source = _copied_keys(small.value, {"list", "tuple", "set", "sorted"})
    return None if source is None else (small.targets[0].target.value, source)


def _store(stmt: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression] | None:
    """(D, index, value) for the statement `D[index] = value`."""
    small = _single(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target = small.targets[0].target
    if not (isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
        return None
    return target.value, target.slice[0].slice.value, small.value


def _is_key_of(expr: cst.BaseExpression, source: cst.BaseExpression, key: str, method: str | None) -> bool:
    """`S.pop(k)` (method "pop") or `S[k]` (method None)."""
    if method is None:
        return (
            isinstance(expr, cst.Subscript)
            and _code(expr.value) == _code(source)
            and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Index)
            and _code(expr.slice[0].slice.value) == key
        )
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == method
        and _code(expr.func.value) == _code(source)
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and _code(expr.args[0].value) == key
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
        if guard.orelse is not None or not _startswith(guard.test, key) or not isinstance(guard.body, cst.IndentedBlock):
            return None
        body = list(guard.body.body)
    names = {key}
    if len(body) == 2 and isinstance(_single(body[1]), cst.Del):
        body = [body[1], body[0]]  # `S[strip(k)] = S[k]; del S[k]`: checked below with the store last
    last = _store(body[-1]) if body else None
    if last is None or _code(last[0]) != _code(source) or not _strips(last[1], key, generic):
        return None
    value = last[2]
    if len(body) == 1:
        return (source, names) if _is_key_of(value, source, key, "pop") else None
    if len(body) != 2:
        return None
    first = _single(body[0])
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
    stripped, kept = _store(then[0]), _store(other[0])
    if stripped is None or kept is None or not isinstance(kept[1], cst.Name):
        return loop
    if _code(stripped[0]) != _code(kept[0]) or _code(stripped[2]) != _code(kept[2]):
        return loop
    if not _startswith(guard.test, kept[1].value):
        return loop
    index = cst.IfExp(test=guard.test, body=stripped[1], orelse=kept[1])
    store = cst.parse_statement(f"{_code(stripped[0])}[{_code(index)}] = {_code(stripped[2])}\n")
    return loop.with_changes(body=loop.body.with_changes(body=[store]))


class _PrefixTests(cst.CSTVisitor):
    """`x.startswith("module.")`: a test for the prefix, where a strip written by hand may follow."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "startswith"
            and node.args
            and _is_prefix(node.args[0].value)
        ):
            self.found.append(node)
