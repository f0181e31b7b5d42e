"""TM104 state-dict-prefix: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
import bisect

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.patterns import Words
from codemods.helpers.scan import _BLOCKS, Scan, ast_dotted, ast_statements
from codemods.helpers.wrapped import ast_wraps


PREFIX = "module."
NOT_MODELS = ("optim", "sched", "scaler")  # their state dicts have no `module.` keys


# What the extra passes of visit_Module look at: wrapper assignments (DataParallel, DDP, TM103's
# ddp_wrap) and strings holding the `module.` prefix (not every `nn.Module` line: that would be
# most classes of a model file).
_WRAP_WORDS = Words(r"DataParallel|ddp_wrap")


def triggers() -> tuple[str, ...]:
    """A wrapper (TM103's helpers name DistributedDataParallel), a load, or a hand-written strip."""
    return (
        r"DataParallel\b",
        r"\bload_state_dict\b",
        r"\bself\.\w+\.state_dict\(",  # a `self.model` wrapped in another file of the repo
        r"""["']module\.["']""",
        r"\[7:\]",
        r"""\.split\(["']\.["']\)""",
    )


def _ast_wraps(value: ast.AST, scan: Scan) -> bool:
    """The codemod's test on the ast, loosened: DataParallel/DDP/ddp_wrap(...), maybe `.cuda()`/`.to()`."""
    return ast_wraps(value, scan.qualified)


def applies(text: str, facts) -> bool:
    # Nothing to unwrap or strip in a file of a repository that wraps no model and has no
    # `module.` handling of its own: decline before parsing (this codemod walks the tree four
    # times, and `load_state_dict` alone is in a sixth of real files).
    return bool(facts.dataparallel_files or facts.wrapped_attributes) or "DataParallel" in text or "module." in text


# -- the codemod's decisions on the ast, each loosened -------------------------------------------

_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HAND_STRIP_METHODS = ("replace", "startswith")


def _is_prefix(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == PREFIX


def _hand_strip(call: ast.Call) -> bool:
    """`x.replace("module.", ...)`, `x.startswith("module.")` or `len("module.")` (of `x[len("module."):]`):
    a strip written by hand, which the codemod rewrites or reports wherever it is (survey.py's
    `_HandStrips`, `_PrefixTests`); every idiom that names "module." (idioms.py) is one of them.
    Loosened: "module." as any argument, `len(...)` anywhere."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _HAND_STRIP_METHODS) and not (
        isinstance(func, ast.Name) and func.id == "len"
    ):
        return False
    return any(_is_prefix(a) for a in call.args) or any(_is_prefix(k.value) for k in call.keywords)


def _one_slice(node: ast.Subscript) -> ast.Slice | None:
    """The slice of `x[a:b]` (nodes.one_slice; `x[a:b,]` is one element for libcst too)."""
    cut = node.slice
    if isinstance(cut, ast.Tuple) and len(cut.elts) == 1:
        cut = cut.elts[0]
    return cut if isinstance(cut, ast.Slice) else None


def _is_int(node: ast.AST | None, value: int) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def _only_value(call: ast.Call) -> ast.expr | None:
    """The value of a call's one argument, whatever its kind (libcst's `args` holds keyword and
    starred arguments too, and `.value` is what follows the `*` or the `=`)."""
    values = [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]
    return values[0] if len(values) == 1 else None


def _cut_key(node: ast.Subscript) -> str | None:
    """`k` of `k[7:]` (idioms.strips_prefix: a name, the literal 7, no upper bound or step)."""
    cut = _one_slice(node)
    if cut is None or cut.upper is not None or cut.step is not None or not _is_int(cut.lower, 7):
        return None
    return node.value.id if isinstance(node.value, ast.Name) else None


def _split_join_key(call: ast.Call) -> str | None:
    """`k` of `".".join(k.split(".")[1:])` (idioms.strips_prefix's generic form)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "join" and _is_dot(func.value)):
        return None
    part = _only_value(call)
    cut = _one_slice(part) if isinstance(part, ast.Subscript) else None
    if cut is None or cut.upper is not None or not _is_int(cut.lower, 1):
        return None
    split = part.value
    if not (isinstance(split, ast.Call) and isinstance(split.func, ast.Attribute) and split.func.attr == "split"):
        return None
    if not (isinstance(split.func.value, ast.Name) and _is_dot(_only_value(split))):
        return None
    return split.func.value.id


def _is_dot(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "."


def _saves_wrapped(call: ast.Call, wrapped: set[str], scan: Scan) -> bool:
    """transform.visit_Call: `torch.save(...)` or a `...save...(...)` of the project's whose
    arguments hold a wrapped model's `state_dict()`."""
    name = ast_dotted(call.func) or ""
    if "torch.save" not in scan.qualified(call.func) and "save" not in name.rsplit(".", 1)[-1].lower():
        return False
    for value in (*call.args, *(k.value for k in call.keywords)):
        for node in ast.walk(value):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "state_dict"
                and ast_dotted(node.func.value) in wrapped
            ):
                return True
    return False


def _load_statement(node: ast.Expr) -> tuple[str, ast.expr] | None:
    """(owner, first argument) of the statement `owner.load_state_dict(arg, ...)` that plan._load
    may rewrite: the owner a dotted name, not `self`, not an optimizer's, scheduler's or scaler's."""
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "load_state_dict"):
        return None
    owner = ast_dotted(call.func.value)
    if owner is None or owner == "self" or any(w in owner.lower() for w in NOT_MODELS):
        return None
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    return owner, call.args[0]


def _unsubscripted(expr: ast.expr) -> ast.expr | None:
    """`expr` without its subscripts by string literals (plan._from_load); None when another
    subscript is in the way."""
    while isinstance(expr, ast.Subscript):
        index = expr.slice
        if isinstance(index, ast.Tuple) and len(index.elts) == 1:  # `x["a",]`: one element for libcst too
            index = index.elts[0]
        if not (isinstance(index, ast.Constant) and isinstance(index.value, (str, bytes))):
            return None
        expr = expr.value
    return expr


def _target_names(target: ast.AST) -> set[str]:
    """The names a target binds: `a`, `(a, [b, *c])` (survey._target_names)."""
    if isinstance(target, ast.Starred):
        target = target.value
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for e in target.elts for n in _target_names(e)}
    return set()


def _own_nodes(scope: ast.AST):
    """The nodes of a scope's own statements (a function's body, a module's), not those of the
    functions and classes in it (their decorators and defaults neither), as survey.py walks them."""
    stack = list(reversed(scope.body))
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _bound(scope: ast.AST) -> set[str]:
    """survey.assigned_names of a scope: names its own statements bind by assignment (`x: T`
    too), `for`, and `as` (import, with, except)."""
    found: set[str] = set()
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                found |= _target_names(target)
        elif isinstance(node, (ast.AnnAssign, ast.For, ast.AsyncFor)):
            found |= _target_names(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found |= _target_names(node.optional_vars)
        elif isinstance(node, ast.alias) and node.asname:
            found.add(node.asname)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return found


def _loaded(scope: ast.AST, scan: Scan) -> set[str]:
    """A superset of survey.loaded_names: names of the scope assigned from a call that may be
    `torch.load` (maybe subscripted) and from nothing that surely is not, nor a loop's."""
    good: set[str] = set()
    bad: set[str] = set()
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            value = node.value
            while isinstance(value, ast.Subscript):
                value = value.value
            ok = isinstance(value, ast.Call) and "torch.load" in scan.qualified(value.func)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    (good if ok else bad).add(target.id)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            bad |= _target_names(node.target)
    return good - bad


class _Tree:
    """What the questions about a site's surroundings read, each made on its first question
    (only files with a candidate site ask): the scope of each statement, each node's parent."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self._parents: dict[int, ast.AST] | None = None
        self._scopes: dict[int, ast.AST] | None = None
        self._bound: dict[int, set[str]] = {}
        self._loaded: dict[int, set[str]] = {}

    def ancestors(self, node: ast.AST):
        if self._parents is None:
            self._parents = {id(child): parent for parent in ast.walk(self.module) for child in ast.iter_child_nodes(parent)}
        parent = self._parents.get(id(node))
        while parent is not None:
            yield parent
            parent = self._parents.get(id(parent))

    def scope(self, statement: ast.stmt) -> ast.AST:
        """The function a statement is in (the codemod's scope for its block), else the module;
        read from the statements alone."""
        if self._scopes is None:
            self._scopes = {}
            stack: list[tuple[ast.AST, ast.AST]] = [(s, self.module) for s in self.module.body]
            while stack:
                node, scope = stack.pop()
                self._scopes[id(node)] = scope
                inner = node if isinstance(node, _FUNCTION_DEFS) else scope
                for field in _BLOCKS:
                    children = getattr(node, field, None)
                    if isinstance(children, list):
                        stack.extend((child, inner) for child in children)
        return self._scopes.get(id(statement), self.module)

    def bound(self, scope: ast.AST) -> set[str]:
        if id(scope) not in self._bound:
            self._bound[id(scope)] = _bound(scope)
        return self._bound[id(scope)]

    def loaded(self, scope: ast.AST, scan: Scan) -> set[str]:
        if id(scope) not in self._loaded:
            self._loaded[id(scope)] = _loaded(scope, scan)
        return self._loaded[id(scope)]

    def in_key_loop(self, node: ast.AST, key: str) -> bool:
        """Whether `node` (a strip of the key `key`) is in a loop or comprehension over `key`, as
        every idiom that strips a key is (idioms.strip_loop, strip_comprehension, in_place):
        a `for` with `key` in its target, no `else` and its body on lines of its own (an indented
        block: `for k, v in sd.items(): new[k[7:]] = v` on one line is no idiom), or a dict
        comprehension or generator with `key` in a target."""
        for a in self.ancestors(node):
            if isinstance(a, ast.For):
                if not a.orelse and a.body[0].lineno > a.lineno and key in _target_names(a.target):
                    return True
            elif isinstance(a, (ast.DictComp, ast.GeneratorExp)):
                if any(key in _target_names(g.target) for g in a.generators):
                    return True
        return False


def _may_load(node: ast.Expr, found: tuple[str, ast.expr], wrapped: set[str], tree: _Tree, scan: Scan) -> bool:
    """plan._load on the ast (in a repository that wraps): a receiver that may hold a wrapper
    (wrapped here or by the facts, or a name its scope does not bind) loading `torch.load(...)`
    (maybe subscripted by strings) or a name its scope assigns only from that."""
    owner, arg = found
    scope = tree.scope(node)
    if owner not in wrapped and ("." in owner or owner in tree.bound(scope)):
        return False
    source = _unsubscripted(arg)
    if isinstance(source, ast.Call):
        return "torch.load" in scan.qualified(source.func)
    return isinstance(source, ast.Name) and source.id in tree.loaded(scope, scan)


def _same_branches(scan: Scan, words) -> bool:
    """plan.merged_branches without a rewrite before it: an `if`/`else` the codemod visits (a
    site line in it) whose branches hold the same statements, in blocks that differ (a comment on
    the `if` line): it merges them, or reports them. Loosened: statements equal as the ast sees
    them (equal text makes an equal ast), `elif` and one-line suites taken too."""
    lines = scan.hits(words)
    for node in ast_statements(scan.module):
        if not isinstance(node, ast.If) or len(node.body) != len(node.orelse):
            continue
        at = bisect.bisect_left(lines, node.lineno)
        if at == len(lines) or lines[at] > (node.end_lineno or node.lineno):
            continue  # the codemod's walk skips it
        if all(ast.dump(a) == ast.dump(b) for a, b in zip(node.body, node.orelse)):
            return True
    return False


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of this codemod's rewrites and findings, from the ast: a hand-written strip
    naming "module." (`.replace`, `.startswith`, `len`); a `k[7:]` (or, in a repo that wraps,
    `".".join(k.split(".")[1:])`) in a loop or comprehension over `k`; a wrapped model's
    `state_dict()` inside a save's arguments; or, in a repo that wraps, the statement
    `m.load_state_dict(...)` of a model that may be wrapped, given `torch.load(...)` or a name
    assigned only from it; or an `if`/`else` with the same statements in both branches."""
    wrapped = {f"self.{name}" for name in facts.wrapped_attributes}
    for node in scan.nodes([_WRAP_WORDS]):
        if isinstance(node, ast.Assign) and _ast_wraps(node.value, scan):
            wrapped |= {name for t in node.targets if (name := ast_dotted(t))}
    wraps = bool(wrapped or facts.dataparallel_files)
    strips: list[tuple[ast.AST, str]] = []  # (a strip of a key, the key): is it in a loop over it?
    loads: list[tuple[ast.Expr, tuple[str, ast.expr]]] = []
    for node in scan.nodes(words):
        if isinstance(node, ast.Call):
            if _hand_strip(node) or (wrapped and _saves_wrapped(node, wrapped, scan)):
                return True
            if wraps and (key := _split_join_key(node)) is not None:
                strips.append((node, key))
        elif isinstance(node, ast.Subscript):
            if (key := _cut_key(node)) is not None:
                strips.append((node, key))
        elif isinstance(node, ast.Expr) and wraps:
            if (found := _load_statement(node)) is not None:
                loads.append((node, found))
    if strips or loads:
        tree = _Tree(scan.module)
        if any(tree.in_key_loop(node, key) for node, key in strips):
            return True
        if any(_may_load(node, found, wrapped, tree, scan) for node, found in loads):
            return True
    return _same_branches(scan, words)


GATE = Gate(sites=(r"save", r"state_dict"), applies=applies, may_act=may_act)


SPEC = Spec(
    code="TM104",
    name="state-dict-prefix",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.state_dict_prefix:StateDictPrefix",
    triggers=triggers(),
    facts=("wrapped_attributes", "dataparallel_files"),
    summary="torch.save(dp_model.state_dict()) -> unwrap first; strip `module.` with consume_prefix_in_state_dict_if_present",
    gate=GATE,
    emits=(
        "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present",
    ),
)
