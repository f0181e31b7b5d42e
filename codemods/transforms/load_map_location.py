"""TM102: `torch.load(f)` without `map_location` -> a CPU fallback that keeps CUDA machines' behaviour."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import attribute_chain
from codemods.transforms.load_weights_only import LOAD_WORD, Flows

# torch.load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args)
POSITIONAL = ("f", "map_location", "pickle_module")


class LoadMapLocation(MigrationCodemod):
    """Give `torch.load` a `map_location`, so that a checkpoint saved on a GPU loads anywhere.

    ## What it does
    Adds a `map_location` to every `torch.load(...)` call that has none. When the loaded object
    goes straight into `load_state_dict` (as the argument, or through a name assigned from
    `torch.load` in the same function), where the tensors are copied into the model's own
    parameters wherever they live, it adds `map_location="cpu"`. Every other load keeps what it
    does on a CUDA machine and only gains the CPU fallback:
    `map_location=None if torch.cuda.is_available() else "cpu"`.

    ## Why is this bad?
    Without `map_location`, `torch.load` puts every tensor back on the device it was saved from. A
    checkpoint saved on a GPU then fails to load on a machine without CUDA ("Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False"), so the code
    cannot be tested on a CPU machine.

    ## Example
    ```python
    model.load_state_dict(torch.load("model.pt"))
    features = torch.load("features.pt")
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location="cpu"))
    features = torch.load("features.pt", map_location=None if torch.cuda.is_available() else "cpu")
    ```

    ## Fix safety
    Review. With CUDA, the fallback is `None`: tensors land where they were saved, as before (data
    a `Dataset` keeps on the CPU stays there, GPU tensors go back to their GPU). Without CUDA they
    load onto the CPU instead of failing. A state dict loaded onto the CPU is copied into the model
    by `load_state_dict` exactly as one loaded onto the GPU. Calls with `*args`/`**kwargs` (which
    may already carry a `map_location`) yield a finding.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-model-across-devices
    """

    CODE = "TM102"
    PRUNE = True  # its sites are `torch.load` calls on trigger lines; Flows reads `load...` lines
    SAFETY = "review"

    def visit_Module(self, node: cst.Module) -> None:
        self.flows = Flows(self.imports)
        self.visit_where(node, self.flows, LOAD_WORD)

    def _fallback(self) -> cst.BaseExpression:
        """`None if torch.cuda.is_available() else "cpu"`, queuing `import torch` when the module
        cannot spell it (`from torch import load` alone)."""
        is_available = self.imports.local_name_for("torch.cuda.is_available")
        if is_available is None:
            self.add_needed_import("torch")
            is_available = "torch.cuda.is_available"
        return cst.IfExp(
            test=cst.Call(attribute_chain(is_available)),
            body=cst.Name("None"),
            orelse=cst.SimpleString('"cpu"'),
        )

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
                suggestion='pass map_location=None if torch.cuda.is_available() else "cpu"',
            )
            return updated_node
        if "f" not in bound:
            return updated_node
        at = bound["f"].index + 1
        whole_state_dict = id(original_node) in self.flows.feeds and id(original_node) not in self.flows.partial
        if whole_state_dict:
            location: cst.BaseExpression = cst.SimpleString('"cpu"')
            review = 'map_location="cpu": the state dict is copied into the model wherever its parameters are'
        else:
            location = self._fallback()
            review = "map_location falls back to the CPU without CUDA; with CUDA tensors load where they were saved, as before"
        return self.rewrite(original_node, updated_node, _with_location(updated_node, at, location), review=review)


def _with_location(call: cst.Call, at: int, location: cst.BaseExpression) -> cst.Call:
    """`call` with `map_location=location` inserted as argument number `at`, laid out like its neighbours."""
    args = list(call.args)
    new = cst.Arg(
        location,
        keyword=cst.Name("map_location"),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    before = args[at - 1]
    if isinstance(before.comma, cst.Comma):
        # Multi-line calls: the new argument takes the comma (and line break) that ended
        # `f`; `f` gets the break-and-indent the other arguments start with.
        new = new.with_changes(comma=before.comma)
        indent = call.whitespace_before_args
        if at == len(args) and isinstance(indent, cst.ParenthesizedWhitespace):
            before = before.with_changes(comma=before.comma.with_changes(whitespace_after=indent))
    else:
        before = before.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        if at < len(args):
            new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args[at - 1] = before
    args.insert(at, new)
    return call.with_changes(args=args)
