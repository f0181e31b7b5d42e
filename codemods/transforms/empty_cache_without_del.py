"""TM902: `torch.cuda.empty_cache()` with no `del` before it in the same scope (findings only)."""

from __future__ import annotations

import libcst as cst

from codemods.base import MigrationCodemod


class EmptyCacheWithoutDel(MigrationCodemod):
    """Report `torch.cuda.empty_cache()` in a scope that deletes nothing before calling it.

    ## What it does
    Reports a call of `torch.cuda.empty_cache()` when no `del` statement comes before it in the same
    function (or at module level, for module-level calls).

    ## Why is this bad?
    `empty_cache()` only hands back to the driver the cached blocks that no tensor uses. While the
    tensors (activations, losses, a model) are still referenced, it frees nothing — it does not
    cure an out-of-memory error — and it makes the next allocations slower, since the caching
    allocator must ask the driver again. It is usually cargo cult next to a real leak.

    ## Example
    ```python
    import torch

    output = model(batch)
    loss = criterion(output, target)
    torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    import torch

    output = model(batch)
    loss = criterion(output, target)
    del output, loss  # drop the references first (or let them go out of scope)
    torch.cuda.empty_cache()  # only if another process needs the memory
    ```

    ## Fix safety
    Findings only. Any earlier `del` in the scope counts: whether it deleted a tensor is not checked.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#memory-management
    """

    PRUNE = True  # its sites are `empty_cache()` calls; what decides them is a `del` in the function

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._deletes = [0]  # per open scope: how many `del` statements seen so far

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._deletes.append(0)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._deletes.pop()
        return updated_node

    def visit_Del(self, node: cst.Del) -> None:
        self._deletes[-1] += 1

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != "torch.cuda.empty_cache" or self._deletes[-1]:
            return
        self.finding(
            node,
            "empty_cache() with no `del` before it: memory still referenced is not freed, and later allocations get slower",
            suggestion="`del` the tensors/models you are done with first, or drop the call",
        )
