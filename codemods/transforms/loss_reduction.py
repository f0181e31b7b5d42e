"""TM001: legacy `size_average=`/`reduce=` loss arguments -> `reduction=`."""

from __future__ import annotations

import libcst as cst

from codemods.gates.loss_reduction import LEGACY, losses
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.losses import legacy_reduction


def suggest(size_average: str | None, reduce: str | None) -> str:
    """A reduction expression for non-literal legacy arguments (assuming booleans)."""
    by_average = f'"mean" if {size_average} else "sum"' if size_average else '"mean"'
    if reduce is None:
        return f"reduction={by_average}"
    inner = f"({by_average})" if size_average else by_average
    return f'reduction={inner} if {reduce} else "none"'


class LossReduction(MigrationCodemod):
    """Replace the legacy `size_average=`/`reduce=` loss arguments with `reduction=`.

    ## What it does
    Rewrites `size_average` and `reduce`, given by keyword or by position, on every `torch.nn` loss
    class and `torch.nn.functional` loss function that still accepts them, into the one
    `reduction=` argument, with torch's own mapping: `reduce=False` gives `'none'`; otherwise
    `size_average=False` gives `'sum'`; otherwise `'mean'`. As in torch, a legacy argument
    overrides an existing `reduction=`.

    ## Why is this bad?
    The two flags were deprecated in PyTorch 0.4.1. Every call emits a deprecation warning today,
    the pair is easy to misread (`reduce=False` wins over `size_average`), and code that treats
    warnings as errors stops.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    criterion = nn.CrossEntropyLoss(size_average=False)
    per_item = F.mse_loss(pred, target, reduce=False)
    ```

    ## Use instead
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    criterion = nn.CrossEntropyLoss(reduction="sum")
    per_item = F.mse_loss(pred, target, reduction="none")
    ```

    ## Fix safety
    Safe: the mapping is exactly the one torch applies, so the loss object (or value) is the same.
    Values that are not literals (`size_average=args.avg`) are not rewritten; a finding suggests
    the expression. User-defined and third-party classes with the same names are never touched.

    ## References
    - https://pytorch.org/docs/stable/nn.html#loss-functions
    - `torch/nn/_reduction.py` (`legacy_get_string`)
    """

    PRUNE = True  # its sites are the loss calls and constructors its triggers name

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.qualified_name(original_node.func)
        entry = losses().get(name) if name else None
        if entry is None:
            return updated_node
        bound = arguments.bind(updated_node, entry["positional"])
        legacy = {p: bound[p] for p in LEGACY if p in bound}
        if not legacy:
            return updated_node
        if arguments.has_star_args(updated_node):
            self.finding(original_node, "legacy loss arguments next to *args/**kwargs: set `reduction=` by hand")
            return updated_node

        values = {p: arguments.literal(b.arg.value) for p, b in legacy.items()}
        if not all(arguments.is_literal(v) for v in values.values()):
            text = {p: self.code_for(b.arg.value) for p, b in legacy.items()}
            suggestion = suggest(text.get("size_average"), text.get("reduce"))
            self.finding(
                original_node,
                f"`{'`/`'.join(legacy)}` is not a literal; replace with `{suggestion}`"
                " (None counts as True)",
                suggestion=suggestion,
            )
            return updated_node

        all_none = all(v is None for v in values.values())
        mode = legacy_reduction(values.get("size_average"), values.get("reduce"))
        return self.rewrite(original_node, updated_node, self._rewritten(updated_node, entry, legacy, bound, None if all_none else mode))

    def _rewritten(self, call: cst.Call, entry: dict, legacy: dict, bound: dict, mode: str | None) -> cst.Call:
        args = list(call.args)
        # A positional legacy argument: everything from it on becomes a keyword, so that removing
        # it does not shift the arguments after it into the wrong parameters.
        first_positional = min((b.index for b in legacy.values() if b.positional), default=None)
        if first_positional is not None:
            names = {b.index: p for p, b in bound.items() if b.positional}
            for index in range(first_positional, len(args)):
                if index in names:
                    args[index] = arguments.as_keyword(args[index], names[index])

        drop = {b.index for b in legacy.values()}
        if mode is not None:
            value = cst.SimpleString(f'"{mode}"')
            if "reduction" in bound:
                at = bound["reduction"].index
                args[at] = args[at].with_changes(value=value)
            else:
                at = min(drop)
                args[at] = args[at].with_changes(keyword=cst.Name("reduction"), value=value)
                if args[at].equal is cst.MaybeSentinel.DEFAULT:
                    args[at] = arguments.as_keyword(args[at], "reduction")
                drop.discard(at)
        return call.with_changes(args=arguments.remove_args(args, drop))
