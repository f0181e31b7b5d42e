"""TM014: torch APIs that moved (functorch, weight_norm, sdp_kernel, pytree, Upsampling*) and the `require_grad` typo.

This module holds the codemod: renamed references and import lines, the dispatch of calls
rewritten whole (in `calls`), and the `require_grad` typo; `survey` reads the whole file first."""

from __future__ import annotations

import libcst as cst

from codemods.gates.moved_apis import table
from codemods.helpers import arguments
from codemods.helpers import from_imports
from codemods.helpers.names import attribute_chain, dotted, every_name
from codemods.helpers.references import ReferenceCodemod
from codemods.helpers.spelling import ImportForm, head, import_forms, reference
from codemods.transforms.moved_apis.calls import PYTREE, REMOVAL_REVIEW, REMOVE_PARAMETRIZATIONS, SDP_KERNEL, WEIGHT_NORM, WholeCalls
from codemods.transforms.moved_apis.survey import _Survey
from codemods.base import traverse


_WEIGHT_NORM_PARTS = {"weight_g": "original0", "weight_v": "original1"}
_TYPO = "require_grad"
_TYPO_REVIEW = (
    "`require_grad` was a plain attribute torch never read, so this assignment had no effect;"
    " as `requires_grad` it now takes effect (parameters frozen or unfrozen, gradients computed):"
    " training changes to what the code says"
)


class MovedApis(WholeCalls, ReferenceCodemod):
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
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
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
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.func import vmap
    from torch.nn.attention import SDPBackend, sdpa_kernel

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
        traverse(node, survey)
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

    # -- the require_grad typo ------------------------------------------------------------------

    def _keyword_typo(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        typo = arguments.keyword(call, _TYPO)
        if typo is None or arguments.keyword(call, "requires_grad") is not None:
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
