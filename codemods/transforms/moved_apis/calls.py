"""TM014's calls rewritten whole: `sdp_kernel(...)` -> `sdpa_kernel([...])`, `UpsamplingNearest2d`
& co. -> `nn.Upsample(mode=...)`, `remove_weight_norm` -> `remove_parametrizations`, and
`_register_pytree_node` -> `register_pytree_node`."""

from __future__ import annotations

import libcst as cst

from codemods.gates.moved_apis import table
from codemods.helpers import arguments
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.versions import needed


SDP_KERNEL = "torch.backends.cuda.sdp_kernel"
PYTREE = "torch.utils._pytree._register_pytree_node"
WEIGHT_NORM = "torch.nn.utils.parametrizations.weight_norm"
REMOVE_PARAMETRIZATIONS = "torch.nn.utils.parametrize.remove_parametrizations"
_PYTREE_PARAMS = ("cls", "flatten_fn", "unflatten_fn", "to_str_fn", "maybe_from_str_fn")
REMOVAL_REVIEW = (
    "weight_norm in this file is now a parametrization: remove_parametrizations keeps the current"
    " weight, as remove_weight_norm did (a module weight-normed elsewhere the old way would now fail)"
)


class WholeCalls:
    """The rewrites `MovedApis.leave_Call` dispatches to (a part of that codemod: `self` is the codemod)."""

    def _sdp_kernel(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        spec = table()["sdp_kernel"]
        flags = spec["flags"]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        bound = arguments.bind(call, flags)
        if arguments.has_star_args(call) or len(positional) > len(flags) or set(bound) - set(flags):
            self.finding(original, "`sdp_kernel` with arguments that cannot be read: spell the backends by hand")
            return call
        enabled: dict[str, bool] = {}
        for flag in flags:
            value = arguments.literal(bound[flag].arg.value) if flag in bound else True
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
        if arguments.keyword(call, "mode") is not None or arguments.keyword(call, "align_corners") is not None:
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
        bound = arguments.bind(call, ["module", "name"])
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
        if arguments.has_star_args(call) or "module" not in bound or set(bound) - {"module", "name"}:
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
        if arguments.has_star_args(call):
            self.finding(original, "`_register_pytree_node` is deprecated; `*args` may carry the to_str_fn arguments register_pytree_node lacks")
            return call
        bound = arguments.bind(call, _PYTREE_PARAMS)
        dropped = {bound[p].index for p in ("to_str_fn", "maybe_from_str_fn") if p in bound}
        func = self._renamed(PYTREE, entry, original.func) or call.func
        args = arguments.remove_args(call.args, dropped) if dropped else call.args
        if func is call.func and not dropped:
            return call  # a local alias of the moved import: the import line changed
        review = entry["review"]
        if dropped:
            review += "; to_str_fn/maybe_from_str_fn dropped (torch ignored them)"
        return self.rewrite(original, call, call.with_changes(func=func, args=args), review=review)
