"""TM014: torch APIs that moved (functorch, weight_norm, sdp_kernel, pytree, Upsampling*) and the `require_grad` typo."""

from __future__ import annotations

import libcst as cst

from codemods.helpers.names import every_name

from codemods.gates.moved_apis import table
from codemods.helpers import args as A
from codemods.helpers import from_imports
from codemods.helpers.keywords import append_args, keyword_arg
from codemods.helpers.names import attribute_chain, dotted
from codemods.helpers.references import ReferenceCodemod
from codemods.helpers.spelling import ImportForm, head, import_forms, reference
from codemods.versions import needed

SDP_KERNEL = "torch.backends.cuda.sdp_kernel"
PYTREE = "torch.utils._pytree._register_pytree_node"
WEIGHT_NORM = "torch.nn.utils.parametrizations.weight_norm"
REMOVE_PARAMETRIZATIONS = "torch.nn.utils.parametrize.remove_parametrizations"
_PYTREE_PARAMS = ("cls", "flatten_fn", "unflatten_fn", "to_str_fn", "maybe_from_str_fn")
_WEIGHT_NORM_PARTS = {"weight_g": "original0", "weight_v": "original1"}
REMOVAL_REVIEW = (
    "weight_norm in this file is now a parametrization: remove_parametrizations keeps the current"
    " weight, as remove_weight_norm did (a module weight-normed elsewhere the old way would now fail)"
)
_TYPO = "require_grad"
_TYPO_REVIEW = (
    "`require_grad` was a plain attribute torch never read, so this assignment had no effect;"
    " as `requires_grad` it now takes effect (parameters frozen or unfrozen, gradients computed):"
    " training changes to what the code says"
)


class MovedApis(ReferenceCodemod):
    """Move calls of APIs torch moved or replaced to their current homes, and fix `require_grad`.

    ## What it does
    - `functorch.vmap/grad/grad_and_value/vjp/jvp/jacrev/jacfwd/hessian/functionalize` ->
      `torch.func.*`, as calls, references and imports (`from functorch import vmap`);
    - `torch.nn.utils.weight_norm(m, ...)` -> `torch.nn.utils.parametrizations.weight_norm(m, ...)`,
      and in a file that does so, `remove_weight_norm(m)` ->
      `torch.nn.utils.parametrize.remove_parametrizations(m, "weight")`;
    - `torch.backends.cuda.sdp_kernel(enable_flash=..., enable_math=..., enable_mem_efficient=...,
      enable_cudnn=...)` -> `sdpa_kernel([SDPBackend...])` with the backends it enabled, in its order;
    - `torch.utils._pytree._register_pytree_node` -> `register_pytree_node` (dropping the
      `to_str_fn`/`maybe_from_str_fn` arguments torch ignored);
    - `nn.UpsamplingNearest2d(...)` -> `nn.Upsample(..., mode="nearest")`,
      `nn.UpsamplingBilinear2d(...)` -> `nn.Upsample(..., mode="bilinear", align_corners=True)`;
    - the `require_grad` typo: `x.require_grad = True` -> `x.requires_grad = True` where `x` is
      provably a tensor or parameter in that function (every binding of it is a torch tensor factory,
      `nn.Parameter(...)`, or the loop variable over `.parameters()`/`.named_parameters()`), and
      `torch.zeros(n, require_grad=True)` -> `requires_grad=True` on torch's factories.
    `functorch.make_functional` & co., `remove_weight_norm` in a file that does not apply
    `weight_norm`, non-literal `sdp_kernel` flags and `require_grad` on anything else are findings.

    ## Why is this bad?
    `functorch.*`, `weight_norm`, `sdp_kernel` and `_register_pytree_node` warn on every call
    (FutureWarning or deprecation) and are announced for removal; `UpsamplingNearest2d` and
    `UpsamplingBilinear2d` are documented as deprecated in favour of `Upsample`/`interpolate`.
    `x.require_grad = True` silently sets an attribute torch never reads: the tensor does not
    require grad, and parameters meant to be frozen keep training. `require_grad=` as a keyword
    is a `TypeError`.

    ## Example
    ```python
    from functorch import vmap
    conv = torch.nn.utils.weight_norm(nn.Conv1d(80, 256, 3))
    with torch.backends.cuda.sdp_kernel(enable_flash=False):
        out = F.scaled_dot_product_attention(q, k, v)
    up = nn.UpsamplingBilinear2d(scale_factor=2)
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Use instead
    ```python
    from torch.func import vmap
    conv = torch.nn.utils.parametrizations.weight_norm(nn.Conv1d(80, 256, 3))
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]):
        out = F.scaled_dot_product_attention(q, k, v)
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    Per rule. `functorch` -> `torch.func`, `sdp_kernel` -> `sdpa_kernel` (torch 2.13's
    `sdp_kernel` itself calls `sdpa_kernel` with that list) and `Upsampling*2d` -> `Upsample` (their
    constructors only call `Upsample`'s with these arguments) are safe; a module so built is an
    `Upsample` but no longer an `UpsamplingBilinear2d`, so `isinstance` tests against the old
    classes are findings. A `require_grad=` keyword was a `TypeError`: safe. Listed for review:
    `weight_norm` (the weight becomes a parametrization: a checkpoint saved after the change has the
    keys `parametrizations.weight.original0/1` instead of `weight_g`/`weight_v`; old checkpoints still
    load, torch renames their keys with a load hook; `.weight_g` reads in the file are findings;
    `torch.jit.script` does not support parametrized modules), `remove_weight_norm`,
    `register_pytree_node` (it raises `ValueError` for a class already registered, where the
    private one warned and overwrote) and `require_grad =` assignments (they change training: the
    line now does what it says).

    ## References
    - https://pytorch.org/docs/stable/func.migrating.html
    - https://pytorch.org/docs/stable/generated/torch.nn.utils.parametrizations.weight_norm.html
    - https://pytorch.org/docs/stable/generated/torch.nn.attention.sdpa_kernel.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Upsample.html
    - https://github.com/pytorch-labs/torchfix (TOR002, TOR101, TOR103)
    """

    CODE = "TM014"
    SAFETY = "safe"
    # Its sites are on trigger lines (and `.weight_g` lines: the gate's sites); what decides them
    # off those lines (the bindings of `x` in `x.require_grad`, whether the file applies
    # weight_norm) is read by the survey in visit_Module, over the whole tree.
    PRUNE = True

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._tree = tree
        self._forms: dict[str, ImportForm] | None = None
        self._names: set[str] | None = None
        self._scopes: list[cst.CSTNode] = [tree]
        self._bindings: dict[tuple[int, str], bool] = {}
        self._weight_norm_here = False
        self._removal_moves = False
        self._line_review: list[str] = []
        return super().transform_module_impl(tree)

    # -- what the whole file says ------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        survey = _Survey(self.qualified_name, node)
        node.visit(survey)
        self._bindings = survey.bindings
        self._weight_norm_here = survey.weight_norm and self.available(WEIGHT_NORM)
        # `from torch.nn.utils import remove_weight_norm` moves in place when every use is a call
        # this rewrites (a `def remove_weight_norm(self)` method would keep the old import alive)
        self._removal_moves = self._weight_norm_here and not survey.removal_other_uses

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._scopes.append(node)

    def leave_FunctionDef(self, original_node, updated_node):
        self._scopes.pop()
        return updated_node

    # A comprehension is a scope of its own (its loop variable is not the function's).
    def _enter_comprehension(self, node: cst.CSTNode) -> None:
        self._scopes.append(node)

    def _leave_comprehension(self, original_node, updated_node):
        self._scopes.pop()
        return updated_node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def _forms_of(self) -> dict[str, ImportForm]:
        if self._forms is None:
            self._forms = import_forms(self._tree)
        return self._forms

    def _module_names(self) -> set[str]:
        if self._names is None:
            self._names = every_name(self._tree)
        return self._names

    def _taken(self, name: str) -> bool:
        return name in self.imports.aliases or name in self.imports.shadowed or name in self._module_names()

    def _retire(self, expr: cst.BaseExpression) -> None:
        """Queue removal of the import that bound `expr`'s head (done only if nothing uses it)."""
        local = head(expr)
        form = self._forms_of().get(local) if local else None
        if form is None:
            return
        # `import functorch`, or `import torch` when `torch.backends.cuda.sdp_kernel` was its only use
        self.remove_unused_import(form.module, form.obj, form.asname)

    def _spell_like(self, original: cst.BaseExpression, qualified: str) -> cst.BaseExpression:
        """`qualified` spelled through the head of `original` where that import is a prefix of it
        (`nn.utils.weight_norm` -> `nn.utils.parametrizations.weight_norm`), else as `reference()` does."""
        local = head(original)
        target = self.imports.aliases.get(local) if local and local not in self.imports.shadowed else None
        if target is not None and qualified.startswith(target + "."):
            return attribute_chain(local + qualified[len(target) :])
        return reference(self, qualified, self._forms_of())

    def _spell(self, qualified: str, short: bool) -> cst.BaseExpression:
        """`qualified` as `from module import name` when `short` and the name is free here, else
        through the module's imports (helpers/spelling.reference)."""
        module, _, name = qualified.rpartition(".")
        if short and not self._taken(name):
            self.add_needed_import(module, name)
            return cst.Name(name)
        return reference(self, qualified, self._forms_of())

    # -- renamed references (functorch, weight_norm, _register_pytree_node) ---------------------

    def replace_reference(self, qualified, original, updated):
        t = table()
        if qualified in t["removed"]:
            if isinstance(original, cst.Attribute):  # a from-import is reported at the import
                self.finding(original, f"`{qualified}`: {t['removed'][qualified]}")
            return None
        if qualified in t["upsampling"]:
            if id(original) in self.type_tests:
                self.finding(
                    original,
                    f"`{qualified.rsplit('.', 1)[1]}(...)` calls are rewritten to `nn.Upsample`, which this"
                    " isinstance test does not match",
                    suggestion=f"isinstance(m, nn.Upsample) and m.mode == {t['upsampling'][qualified]['mode']!r}",
                )
            return None
        entry = t["renames"].get(qualified)
        if entry is None or (qualified == PYTREE and id(original) in self.called):
            return None  # a `_register_pytree_node(...)` call is rewritten whole, in leave_Call
        return self._renamed(qualified, entry, original)

    def review_for(self, qualified, original):
        entry = table()["renames"].get(qualified)
        return entry.get("review") if entry else None

    def _renamed(self, qualified: str, entry: dict, original: cst.BaseExpression) -> cst.BaseExpression | None:
        target = entry["to"]
        if not self.available(target):
            if isinstance(original, cst.Attribute):  # a from-import is held back at the import
                self.hold_back(original, target)
            return None
        module, _, name = target.rpartition(".")
        if isinstance(original, cst.Name):
            # From `from M import old`: the import line is rewritten; rename if it renamed.
            old_name = qualified.rsplit(".", 1)[1]
            if original.value != old_name or name == old_name or self._taken(name):
                return None
            return cst.Name(name)
        local = head(original)
        target_of_head = self.imports.aliases.get(local) if local else None
        if target_of_head is not None and target.startswith(target_of_head + "."):
            return self._spell_like(original, target)  # the module's own spelling: `nn.utils....`
        spelled = self.module_spelling(module)
        if spelled is None:
            self.finding(original, f"`{qualified}` moved to `{target}`, whose module name is taken here")
            return None
        self._retire(original)
        return cst.parse_expression(f"{spelled}.{name}")

    def _decide(self, module: str, name: str, local: str) -> from_imports.Move | None:
        if f"{module}.{name}" in table()["weight_norm_removal"] and self._removal_moves:
            self._line_review.append(REMOVAL_REVIEW)
            return from_imports.Move(*REMOVE_PARAMETRIZATIONS.rsplit(".", 1))
        entry = table()["renames"].get(f"{module}.{name}")
        if entry is None or not self.available(entry["to"]):
            return None
        if entry.get("review") and entry["review"] not in self._line_review:
            self._line_review.append(entry["review"])
        new_module, _, new_name = entry["to"].rpartition(".")
        return from_imports.Move(new_module, new_name)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        self._line_review = []
        moved = from_imports.move_names(updated_node, self._decide, taken=self._taken)
        if not moved.changed:
            return updated_node
        review = "; ".join(self._line_review) or None
        return self.rewrite(original_node, updated_node, from_imports.replace_line(moved), review=review)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative or isinstance(node.names, cst.ImportStar):
            return False
        module = dotted(node.module)
        t = table()
        for alias in node.names:
            qualified = f"{module}.{dotted(alias.name)}"
            if qualified in t["removed"]:
                self.finding(node, f"`{qualified}`: {t['removed'][qualified]}")
            entry = t["renames"].get(qualified)
            if entry is not None and not self.available(entry["to"]):
                self.hold_back(node, entry["to"])
        return False

    # -- calls rewritten whole ------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.qualified_name(original_node.func)
        if name is None:
            return updated_node
        t = table()
        if name == SDP_KERNEL:
            return self._sdp_kernel(original_node, updated_node)
        if name in t["upsampling"]:
            return self._upsampling(name, original_node, updated_node)
        if name in t["weight_norm_removal"]:
            return self._remove_weight_norm(original_node, updated_node)
        if name == PYTREE:
            return self._pytree(original_node, updated_node)
        if name in t["requires_grad_keyword"]:
            return self._keyword_typo(original_node, updated_node)
        return updated_node

    def _sdp_kernel(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        spec = table()["sdp_kernel"]
        flags = spec["flags"]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        bound = A.bind(call, flags)
        if A.has_star_args(call) or len(positional) > len(flags) or set(bound) - set(flags):
            self.finding(original, "`sdp_kernel` with arguments that cannot be read: spell the backends by hand")
            return call
        enabled: dict[str, bool] = {}
        for flag in flags:
            value = A.literal(bound[flag].arg.value) if flag in bound else True
            if not isinstance(value, (bool, int)):
                given = {f: self.code_for(bound[f].arg.value) if f in bound else "True" for f in flags}
                pairs = ", ".join(f"({given[f]}, SDPBackend.{member})" for f, member in spec["backends"])
                self.finding(
                    original,
                    "`torch.backends.cuda.sdp_kernel` is deprecated; its flags are not literals",
                    suggestion=f"sdpa_kernel([backend for on, backend in ({pairs}) if on])",
                )
                return call
            enabled[flag] = bool(value)
        members = [member for flag, member in spec["backends"] if enabled[flag]]
        # Checked before any import is queued: a held-back rewrite must not leave one behind.
        needs = ["torch.nn.attention.sdpa_kernel", *(f"torch.nn.attention.SDPBackend.{m}" for m in members)]
        missing = [symbol for symbol in needs if not self.available(symbol)]
        if missing:
            if not self.suppressed(original):
                self.hold_back(original, max(missing, key=lambda symbol: needed(symbol)))
            return call
        short = not self._taken("sdpa_kernel") and not self._taken("SDPBackend")
        kernel = self._spell("torch.nn.attention.sdpa_kernel", short)
        backend = self._spell("torch.nn.attention.SDPBackend", short)
        elements = [
            cst.Element(
                value=cst.Attribute(value=backend, attr=cst.Name(member)),
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(members) - 1 else cst.MaybeSentinel.DEFAULT,
            )
            for i, member in enumerate(members)
        ]
        self._retire(original.func)
        new = cst.Call(func=kernel, args=[cst.Arg(value=cst.List(elements=elements))])
        return self.rewrite(original, call, new.with_changes(lpar=call.lpar, rpar=call.rpar))

    def _upsampling(self, name: str, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        entry = table()["upsampling"][name]
        if A.keyword(call, "mode") is not None or A.keyword(call, "align_corners") is not None:
            return call  # a TypeError today: not ours to guess
        extra = [keyword_arg("mode", cst.SimpleString(f'"{entry["mode"]}"'))]
        if entry["align_corners"] is not None:
            extra.append(keyword_arg("align_corners", cst.Name(str(entry["align_corners"]))))
        if isinstance(original.func, cst.Name):
            func = self._spell("torch.nn.Upsample", True)
        else:
            func = self._spell_like(original.func, "torch.nn.Upsample")
        self._retire(original.func)
        return self.rewrite(original, call, append_args(call.with_changes(func=func), extra))

    def _remove_weight_norm(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        bound = A.bind(call, ["module", "name"])
        if not self.available(WEIGHT_NORM):
            return call  # the target keeps the old weight_norm: so does its removal
        if not self._weight_norm_here:
            # The module was weight-normed in another file (or not at all): which form, this file
            # cannot tell. Both forms raise ValueError on a module without weight norm.
            self.finding(
                original,
                "`remove_weight_norm` raises ValueError on a module whose weight_norm is a parametrization"
                " (torch.nn.utils.parametrizations.weight_norm, what TM014 writes where weight_norm is applied)",
                suggestion='if torch.nn.utils.parametrize.is_parametrized(module, "weight"):'
                ' torch.nn.utils.parametrize.remove_parametrizations(module, "weight")',
            )
            return call
        if A.has_star_args(call) or "module" not in bound or set(bound) - {"module", "name"}:
            self.finding(original, "`remove_weight_norm` with arguments that cannot be read: use remove_parametrizations(module, name)")
            return call
        name = bound["name"].arg.value if "name" in bound else cst.SimpleString('"weight"')
        if isinstance(original.func, cst.Name) and self._removal_moves:
            # its import line now binds remove_parametrizations (leave_SimpleStatementLine)
            short = REMOVE_PARAMETRIZATIONS.rsplit(".", 1)[1]
            renames = original.func.value == "remove_weight_norm" and not self._taken(short)
            func = cst.Name(short) if renames else call.func
        else:
            func = self._spell_like(original.func, REMOVE_PARAMETRIZATIONS)
            self._retire(original.func)
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new = cst.Call(func=func, args=[cst.Arg(value=bound["module"].arg.value, comma=comma), cst.Arg(value=name)])
        return self.rewrite(
            original,
            call,
            new.with_changes(lpar=call.lpar, rpar=call.rpar),
            review=REMOVAL_REVIEW,
        )

    def _pytree(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        entry = table()["renames"][PYTREE]
        if not self.available(entry["to"]):
            if isinstance(original.func, cst.Attribute):
                self.hold_back(original, entry["to"])
            return call
        if A.has_star_args(call):
            self.finding(original, "`_register_pytree_node` is deprecated; `*args` may carry the to_str_fn arguments register_pytree_node lacks")
            return call
        bound = A.bind(call, _PYTREE_PARAMS)
        dropped = {bound[p].index for p in ("to_str_fn", "maybe_from_str_fn") if p in bound}
        func = self._renamed(PYTREE, entry, original.func) or call.func
        args = A.remove_args(call.args, dropped) if dropped else call.args
        if func is call.func and not dropped:
            return call  # a local alias of the moved import: the import line changed
        review = entry["review"]
        if dropped:
            review += "; to_str_fn/maybe_from_str_fn dropped (torch ignored them)"
        return self.rewrite(original, call, call.with_changes(func=func, args=args), review=review)

    # -- the require_grad typo ------------------------------------------------------------------

    def _keyword_typo(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        typo = A.keyword(call, _TYPO)
        if typo is None or A.keyword(call, "requires_grad") is not None:
            return call
        args = [a.with_changes(keyword=cst.Name("requires_grad")) if a is typo else a for a in call.args]
        return self.rewrite(original, call, call.with_changes(args=args))

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        attr = original_node.attr.value
        if attr == _TYPO:
            return self._attribute_typo(original_node, updated_node)
        if attr in _WEIGHT_NORM_PARTS and self._weight_norm_here:
            owner = self.code_for(original_node.value)
            self.finding(
                original_node,
                f"`.{attr}` does not exist on a module with parametrized weight_norm",
                suggestion=f"{owner}.parametrizations.weight.{_WEIGHT_NORM_PARTS[attr]}",
            )
        return super().leave_Attribute(original_node, updated_node)

    def _attribute_typo(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        owner = original.value
        scope = self._scopes[-1]
        if isinstance(owner, cst.Name) and self._bindings.get((id(scope), owner.value)) is True:
            review = _TYPO_REVIEW if not self.is_read(original) else None
            return self.rewrite(original, updated, updated.with_changes(attr=cst.Name("requires_grad")), review=review)
        self.finding(
            original,
            "`require_grad` is no attribute torch reads: on a tensor or parameter this line does nothing",
            suggestion=f"{self.code_for(owner)}.requires_grad",
        )
        return updated


_PARAMETER_LOOPS = {"parameters": 0, "named_parameters": 1}  # method -> index of the parameter in the target


class _Survey(cst.CSTVisitor):
    """One pass over the file: whether it refers to torch's weight_norm, and per function (the
    module is one too) which names are bound only to tensors and parameters."""

    def __init__(self, resolve, module: cst.Module) -> None:
        self.resolve = resolve
        self.factories = frozenset(table()["tensor_factories"])
        self.weight_norm = False
        self.removal_other_uses = False  # a read of remove_weight_norm that is not a call
        self.removal = frozenset(table()["weight_norm_removal"])
        self.called: set[int] = set()
        self.not_refs: set[int] = set()  # `.attr`, `kw=`, def/class/parameter names
        self.bindings: dict[tuple[int, str], bool] = {}
        self.scopes: list[cst.CSTNode] = [module]

    def _record(self, name: str, provable: bool) -> None:
        key = (id(self.scopes[-1]), name)
        self.bindings[key] = self.bindings.get(key, True) and provable

    def _record_target(self, target: cst.BaseExpression, provable: bool) -> None:
        if isinstance(target, cst.Name):
            self._record(target.value, provable)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._record_target(element.value, False)
        elif isinstance(target, cst.StarredElement):
            self._record_target(target.value, False)

    def _tensor(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and self.resolve(value.func) in self.factories

    # references
    def _reference(self, node: cst.BaseExpression, last: str) -> None:
        if last == "weight_norm" and not self.weight_norm and self.resolve(node) in table()["renames"]:
            self.weight_norm = True
        if last == "remove_weight_norm" and id(node) not in self.called and self.resolve(node) in self.removal:
            self.removal_other_uses = True

    def visit_Call(self, node: cst.Call) -> None:
        self.called.add(id(node.func))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_refs.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_refs:
            self._reference(node, node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_refs.add(id(node.attr))
        self._reference(node, node.attr.value)

    # scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)
        self.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def _enter(self, node: cst.CSTNode) -> None:
        self.scopes.append(node)

    def _exit(self, node: cst.CSTNode) -> None:
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _exit

    def visit_Param(self, node: cst.Param) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)

    # bindings
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._record_target(target.target, self._tensor(node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record_target(node.target, self._tensor(node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._record_target(node.target, False)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._record_target(node.target, False)

    def visit_For(self, node: cst.For) -> None:
        self._loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop(node.target, node.iter)  # into the comprehension's own scope

    def _loop(self, target: cst.BaseExpression, loop: cst.BaseExpression) -> None:
        index = None
        if isinstance(loop, cst.Call) and isinstance(loop.func, cst.Attribute):
            index = _PARAMETER_LOOPS.get(loop.func.attr.value)
        if index == 0 and isinstance(target, cst.Name):
            self._record(target.value, True)
        elif index == 1 and isinstance(target, cst.Tuple) and len(target.elements) == 2:
            name, parameter = (e.value for e in target.elements)
            self._record_target(name, False)
            if isinstance(parameter, cst.Name):
                self._record(parameter.value, True)
            else:
                self._record_target(parameter, False)
        else:
            self._record_target(target, False)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._record_target(node.name, False)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name if alias.asname else None
            if isinstance(local, cst.Name):
                self._record(local.value, False)
            elif name:
                self._record(name.split(".")[0], False)
        return False  # an import names no value

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                local = alias.asname.name if alias.asname else alias.name
                if isinstance(local, cst.Name):
                    self._record(local.value, False)
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._record(item.name.value, False)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._record(item.name.value, False)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        for param in node.params.params:
            self._record(param.name.value, False)
