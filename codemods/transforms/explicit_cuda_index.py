"""TM904: `.cuda(i)` with an explicit device index (findings only)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted


class ExplicitCudaIndex(MigrationCodemod):
    """Report `.cuda(i)`, `.cuda(args.gpu)` and `.cuda(device=...)`: an explicit CUDA device.

    ## What it does
    Reports calls of `.cuda()` given a device (positionally or as `device=`). TM101 rewrites the
    plain `.cuda()` and leaves these alone: which device the index means, and what should happen
    without CUDA, is the author's decision.

    ## Why is this bad?
    The call crashes on a machine without CUDA (so the code's tests cannot run on CPU), and a
    hard-coded index crashes on a machine with fewer GPUs.

    ## Example
    ```python
    import torch

    model = model.cuda(args.gpu)
    ```

    ## Use instead
    ```python
    import torch

    device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    ```

    ## Fix safety
    Findings only. Not reported inside a method named `cuda` (an override passing its own argument on).

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code
    """

    PRUNE = True  # its sites are `.cuda(i)` calls on trigger lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._functions: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._functions.pop()
        return updated_node

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda" or "cuda" in self._functions:
            return
        if self.qualified_name(func.value) == "torch" or (
            isinstance(func.value, cst.Call) and dotted(func.value.func) == "super"
        ):
            return
        device = arguments.bind(node, ["device"]).get("device")
        if device is None or arguments.literal(device.arg.value) is None:
            return
        index = self.code_for(device.arg.value)
        receiver = self.code_for(func.value)
        self.finding(
            node,
            f"`.cuda({index})` names a CUDA device: it fails without CUDA",
            suggestion=(
                f'device = torch.device(f"cuda:{{{index}}}" if torch.cuda.is_available() else "cpu"); '
                f"{receiver}.to(device)"
            ),
        )
