"""TM903: `F.softmax(x)` / `nn.Softmax()` without `dim` (findings only)."""

from __future__ import annotations

import libcst as cst

from codemods.gates.softmax_without_dim import DIM_POSITION
from codemods.helpers import arguments
from codemods.base import MigrationCodemod


class SoftmaxWithoutDim(MigrationCodemod):
    """Report softmax, log-softmax and softmin calls and modules that leave `dim` to PyTorch.

    ## What it does
    Reports `F.softmax(x)`, `F.log_softmax(x)`, `F.softmin(x)`, `nn.Softmax()`, `nn.LogSoftmax()`
    and `nn.Softmin()` with no `dim` (or `dim=None`). It rewrites nothing: the right `dim` depends
    on the shape of the input, which the code does not say.

    ## Why is this bad?
    Without `dim`, PyTorch picks one from the input's number of dimensions (0 for 0-, 1- and 3-D
    input, 1 otherwise) and warns "Implicit dimension choice ... has been deprecated". For a 3-D
    input such as `(batch, seq, classes)` that normalises across the batch: a silent wrong result.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    probs = F.softmax(logits)
    self.act = nn.LogSoftmax()
    ```

    ## Use instead
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    probs = F.softmax(logits, dim=1)  # or dim=-1: the class dimension
    self.act = nn.LogSoftmax(dim=1)
    ```

    ## Fix safety
    Findings only. `dim=1` keeps today's behaviour for 2-D and 4-D input; `dim=0` for 1-D and 3-D.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html
    """

    PRUNE = True  # its sites are softmax calls on trigger lines

    def visit_Call(self, node: cst.Call) -> None:
        name = self.qualified_name(node.func)
        position = DIM_POSITION.get(name or "")
        if position is None or arguments.has_star_args(node):
            return
        params = ["input", "dim"] if position == 1 else ["dim"]
        dim = arguments.bind(node, params).get("dim")
        if dim is not None and arguments.literal(dim.arg.value) is not None:
            return
        short = self.code_for(node.func)
        self.finding(
            node,
            f"`{short}` without `dim`: PyTorch guesses it from the input's rank (0 for 1-D/3-D input, else 1)",
            suggestion=f"pass dim= explicitly, e.g. {short}({'..., ' if position else ''}dim=-1)",
        )
