"""TM102: `torch.load(f)` without `map_location` -> `torch.load(f, map_location=device)`."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import args as A
from codemods.helpers.device import DeviceCodemod

# torch.load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args)
POSITIONAL = ("f", "map_location", "pickle_module")


class LoadMapLocation(DeviceCodemod):
    """Give `torch.load` a `map_location`, so that a checkpoint saved on a GPU loads anywhere.

    ## What it does
    Adds `map_location=device` to every `torch.load(...)` call that has no `map_location`, using the
    `device` in scope or the module-level one TM101 defines (defined the same way here when TM101
    did not run: `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`).

    ## Why is this bad?
    Without `map_location`, `torch.load` puts every tensor back on the device it was saved from. A
    checkpoint saved on a GPU then fails to load on a machine without CUDA ("Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False"), so the code
    cannot be tested on a CPU machine; on a machine with fewer GPUs it fails with an invalid device.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    state = torch.load("model.pt", map_location=device)
    ```

    ## Fix safety
    Review: tensors now land on `device` (the current CUDA device, or the CPU) instead of the
    device recorded in the file. That is what single-GPU and CPU code wants; code that relies on a
    checkpoint restoring tensors onto several different GPUs should pass its own `map_location`.
    Calls with `*args`/`**kwargs` (which may already carry a `map_location`) yield a finding.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-model-across-devices
    """

    CODE = "TM102"
    PRUNE = True  # its sites are `torch.load` calls on trigger lines
    SAFETY = "review"

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) != "torch.load":
            return updated_node
        bound = A.bind(original_node, POSITIONAL)
        if "map_location" in bound:
            return updated_node
        if A.has_star_args(original_node):
            self.finding(
                original_node,
                "torch.load with *args/**kwargs: cannot tell whether map_location is given",
                suggestion="pass map_location=device explicitly",
            )
            return updated_node
        if "f" not in bound:
            return updated_node
        at = bound["f"].index + 1

        def build(device: cst.Name) -> cst.Call:
            args = list(updated_node.args)
            new = cst.Arg(
                device,
                keyword=cst.Name("map_location"),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            before = args[at - 1]
            if isinstance(before.comma, cst.Comma):
                # Multi-line calls: the new argument takes the comma (and line break) that ended
                # `f`; `f` gets the break-and-indent the other arguments start with.
                new = new.with_changes(comma=before.comma)
                indent = updated_node.whitespace_before_args
                if at == len(args) and isinstance(indent, cst.ParenthesizedWhitespace):
                    before = before.with_changes(comma=before.comma.with_changes(whitespace_after=indent))
            else:
                before = before.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                if at < len(args):
                    new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args[at - 1] = before
            args.insert(at, new)
            return updated_node.with_changes(args=args)

        return self.with_device(
            original_node,
            updated_node,
            build,
            review="tensors now load onto `device` (CPU without CUDA) instead of the device they were saved from",
        )
