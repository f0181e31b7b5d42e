"""TM907: training-loop settings that leave speed on the table (findings only)."""

from __future__ import annotations

import libcst as cst

from codemods.gates.performance_hints import DATALOADERS, LOADER_POSITIONAL
from codemods.helpers import arguments
from codemods.base import MigrationCodemod


class PerformanceHints(MigrationCodemod):
    """Report a `DataLoader` that loads in the training process and `zero_grad(set_to_none=False)`.

    ## What it does
    - `torch.utils.data.DataLoader(...)` with no `num_workers` or `num_workers=0`: every batch
      is loaded and collated in the main process, between the training steps;
    - `optimizer.zero_grad(set_to_none=False)` / `model.zero_grad(False)`: gradients are
      zero-filled instead of freed.
    A `num_workers` that is not a literal (read from a config) and a `**kwargs` call are left
    alone. It rewrites nothing.

    ## Why is this bad?
    With `num_workers=0`, the GPU waits while each batch is read and augmented; worker processes
    (`num_workers > 0`, usually with `pin_memory=True`) prepare the next batches meanwhile.
    `set_to_none=False` writes zeros into every gradient on every step and keeps their memory;
    since torch 2.0 `zero_grad()` sets them to `None` by default, which is faster and which the
    optimizers treat as "no gradient" (a parameter without one is skipped, not decayed).

    ## Example
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(train_set, batch_size=64, shuffle=True)
    optimizer.zero_grad(set_to_none=False)
    ```

    ## Use instead
    ```python
    from torch.utils.data import DataLoader

    loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
    optimizer.zero_grad()
    ```

    ## Fix safety
    Findings only. Workers change where the dataset code runs: it must pickle (a `spawn` start
    method), open files per process (see TM201) and seed its random augmentations per worker
    (`worker_init_fn`); a container needs shared memory (`--shm-size`, see `torch-migrate
    doctor`). After `zero_grad()` the gradients are `None`: code that reads `p.grad` before the
    next `backward()`, or `optim.SGD` with momentum on parameters that get no gradient in some
    steps, behaves differently, so keep `set_to_none=False` where that is intended.

    ## References
    - https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading
    - https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
    """

    PRUNE = True  # its sites are DataLoader and zero_grad calls on trigger lines

    def visit_Call(self, node: cst.Call) -> None:
        if arguments.has_star_args(node):
            return
        if self.qualified_name(node.func) in DATALOADERS:
            self._loader(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "zero_grad":
            self._zero_grad(node)

    def _loader(self, node: cst.Call) -> None:
        workers = arguments.bind(node, LOADER_POSITIONAL).get("num_workers")
        if workers is not None and arguments.literal(workers.arg.value) != 0:
            return
        said = "num_workers=0" if workers is not None else "no num_workers"
        self.finding(
            node,
            f"DataLoader with {said}: every batch is loaded in the training process, between the steps",
            suggestion="num_workers=4 (or os.cpu_count() per GPU) and pin_memory=True for a GPU, once the dataset pickles",
        )

    def _zero_grad(self, node: cst.Call) -> None:
        flag = arguments.bind(node, ("set_to_none",)).get("set_to_none")
        if flag is None or arguments.literal(flag.arg.value) is not False:
            return
        self.finding(
            node,
            "zero_grad(set_to_none=False) zero-fills every gradient; torch >= 2.0 frees them by default",
            suggestion=f"{self.code_for(node.func)}() unless code reads .grad before the next backward()",
        )
