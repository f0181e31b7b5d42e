"""TM005: `torch.utils.checkpoint.checkpoint(...)` without `use_reentrant` -> `use_reentrant=True`."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod

# Qualified name -> how many leading positional parameters come before `use_reentrant`
# (None: `use_reentrant` is keyword-only, after `*args`).
CHECKPOINTS = {
    "torch.utils.checkpoint.checkpoint": None,
    "torch.utils.checkpoint.checkpoint_sequential": 3,  # (functions, segments, input, use_reentrant)
}


class CheckpointReentrant(MigrationCodemod):
    """Pass `use_reentrant=True` explicitly to activation checkpointing.

    ## What it does
    Adds `use_reentrant=True` to calls of `torch.utils.checkpoint.checkpoint` and
    `checkpoint_sequential` that do not pass `use_reentrant`, in every import form
    (`from torch.utils.checkpoint import checkpoint as cp`, `import torch.utils.checkpoint as ckpt`).

    ## Why is this bad?
    Since PyTorch 2.1 a call without `use_reentrant` warns on every forward pass, and the
    documentation announces that omitting it will become an error. `True` is what such a call
    has always done.

    ## Example
    ```python
    from torch.utils.checkpoint import checkpoint

    h = checkpoint(self.block, h)
    ```

    ## Use instead
    ```python
    from torch.utils.checkpoint import checkpoint

    h = checkpoint(self.block, h, use_reentrant=True)
    ```

    ## Fix safety
    Safe: `True` is the value torch uses when the argument is missing, so behaviour is unchanged
    and only the warning goes. Consider `use_reentrant=False` yourself: it is what PyTorch
    recommends. It supports inputs that do not require grad (with reentrant checkpointing the
    gradients of the parameters in the block are silently `None` when no input requires grad),
    keyword arguments to the function, nested checkpoints, `torch.autograd.grad` and
    `backward(inputs=...)`, and it does not need `retain_graph` tricks. Its recomputation differs
    (it stops early and raises on mismatched recomputed tensors), so change it with a test run.
    A call with `**kwargs` (which may already carry `use_reentrant`) is a finding; a user function
    called `checkpoint` is never touched.

    ## References
    - https://pytorch.org/docs/stable/checkpoint.html
    """

    PRUNE = True  # its sites are `checkpoint(...)` calls on trigger lines

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.qualified_name(original_node.func)
        if name not in CHECKPOINTS:
            return updated_node
        if arguments.keyword(updated_node, "use_reentrant") is not None:
            return updated_node
        if any(a.star == "**" for a in updated_node.args):
            self.finding(
                original_node,
                "`**kwargs` may or may not carry `use_reentrant`: pass it explicitly",
                suggestion="use_reentrant=True",
            )
            return updated_node
        before = CHECKPOINTS[name]
        positional = [a for a in updated_node.args if a.keyword is None and not a.star]
        if before is not None and (len(positional) > before or any(a.star == "*" for a in updated_node.args)):
            if len(positional) > before:
                return updated_node  # `use_reentrant` given by position
            self.finding(original_node, "`*args` may fill `use_reentrant` by position: pass it by keyword")
            return updated_node
        return self.rewrite(original_node, updated_node, _with_keyword(updated_node))


def _with_keyword(call: cst.Call) -> cst.Call:
    """`call` with `use_reentrant=True` appended, following the call's own layout."""
    return arguments.append_as_listed(call, [arguments.keyword_arg("use_reentrant", cst.Name("True"))])
