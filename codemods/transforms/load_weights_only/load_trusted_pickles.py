"""TM302: `weights_only=False` on the loads TM301 cannot show to be weights-only (opt-in)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers.arguments import append_args, keyword_arg
from codemods.transforms.load_weights_only import Decision, LoadWeightsOnly


class LoadTrustedPickles(LoadWeightsOnly):
    """Keep full unpickling where a load may hold more than tensors: `weights_only=False` (`--unsafe`).

    ## What it does
    Adds `weights_only=False` to every `torch.load(...)` without `weights_only=` that TM301
    (`load-weights-only`) cannot show to load only tensors: a whole pickled model, a checkpoint
    whose matching `torch.save` writes other objects or is not in the file, a load with
    `pickle_module=`. A load that is provably a state dict is TM301's (`weights_only=True`), and
    this codemod leaves it alone, whether TM301 runs or not. It runs only with `--unsafe` (or
    `unsafe = true` in the configuration), and only on code whose files you trust.

    ## Why is this bad?
    PyTorch 2.6 made `weights_only=True` the default of `torch.load`: a file holding a pickled
    `nn.Module`, an `argparse.Namespace` or a project's own object now fails to load with an
    `UnpicklingError`. When every file the code loads is one you made yourself, full unpickling
    is what the code was written for, and `weights_only=False` says so.

    ## Example
    ```python
    import torch

    model = torch.load("whole_model.pt")
    ```

    ## Use instead
    ```python
    import torch

    model = torch.load("whole_model.pt", weights_only=False)
    ```

    ## Fix safety
    Unsafe. `weights_only=False` turns off the check that keeps a malicious file from running
    code as it loads: it restores the behaviour of torch before 2.6 and its risk. The safe ways
    are TM301's finding (allow the file's classes with `torch.serialization.add_safe_globals`,
    or save a state dict); use this codemod only where no file the code loads can come from
    someone else. TM301's security finding stays on each call it changes.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    """

    def with_kwargs(self, original_node: cst.Call, bound: dict) -> None:
        # The keywords may set weights_only themselves: adding it could be a TypeError.
        self.finding(
            original_node,
            "`torch.load` with **kwargs: this codemod cannot tell whether they set `weights_only=`",
            suggestion="pass weights_only=False in those keywords if every file loaded here is trusted",
        )

    def decided(self, original_node: cst.Call, updated_node: cst.Call, bound: dict, decision: Decision) -> cst.BaseExpression:
        if decision.proven:
            return updated_node  # a state dict: TM301's weights_only=True
        new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("False"))])
        return self.rewrite(
            original_node, updated_node, new, review=f"weights_only=False: full unpickling, for trusted files only ({decision.why})"
        )
