"""TM301: `torch.load` without `weights_only=` -> an explicit choice, with a security finding."""

from __future__ import annotations

import re

import libcst as cst

from codemods.gates.load_weights_only import LOADS
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.load_flows import LOAD_WORD, Flows
from codemods.transforms.load_weights_only.checkpoints import _Checkpoints
from codemods.base import traverse

POSITIONAL = ("f", "map_location", "pickle_module")


class LoadWeightsOnly(MigrationCodemod):
    """Make `torch.load`'s `weights_only=` explicit: `True` for state dicts, else `False` and a finding.

    ## What it does
    Adds `weights_only=` to every `torch.load(...)` that does not pass it. When the loaded object
    itself flows into `load_state_dict` (as the argument, or through a name assigned from
    `torch.load` in the same function) it adds `weights_only=True`. When only an entry of it does
    (`model.load_state_dict(ckpt["model"])`), the rest of the checkpoint decides: the `torch.save`
    in the same file whose dict has every key the loader reads (a dict literal, `dict(...)`, a name
    assigned one, or a parameter filled by the file's calls) must hold only state dicts, tensors,
    numbers and strings for `True`. Otherwise, or when no such save is found, it adds
    `weights_only=False`, which keeps what the code did before PyTorch 2.6, and reports the call
    as a security finding that says why.

    ## Why is this bad?
    `torch.load` unpickles: a malicious checkpoint runs arbitrary code. PyTorch 2.6 changed the
    default to `weights_only=True`, which only allows tensors, primitive types and containers, so
    legacy code that pickles whole models, optimisers or argparse namespaces fails with an
    `UnpicklingError` on current torch, while code that only loads state dicts should say so.

    ## Example
    ```python
    import torch

    model.load_state_dict(torch.load("weights.pt"))
    model = torch.load("whole_model.pt")
    ```

    ## Use instead
    ```python
    import torch

    model.load_state_dict(torch.load("weights.pt", weights_only=True))
    model = torch.load("whole_model.pt", weights_only=False)
    ```

    The second load also gets a finding: a whole pickled object runs code from the file as it
    loads, so keep `weights_only=False` for files you trust.

    ## Fix safety
    Review. `weights_only=True` is right for plain state dicts, and for checkpoint dicts whose
    every saved entry is provably one; a NumPy scalar, an `argparse.Namespace` or a project's own
    object next to the state dict would fail to load with it, so those, and checkpoints saved
    elsewhere (whose contents this file cannot show), get `weights_only=False`.
    `weights_only=False` keeps the pre-2.6 behaviour and its risk: load only trusted files. A call
    with `pickle_module=` gets `False` (torch refuses `True` with it); calls with `**kwargs` are
    reported, not changed.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    """

    PRUNE = True  # its sites are `load` calls; what it learns (Flows) is on `load...` lines too

    def visit_Module(self, node: cst.Module) -> None:
        self.flows = Flows(self.imports)
        self.visit_where(node, self.flows, LOAD_WORD)
        self._module = node
        self._checkpoints: _Checkpoints | None = None

    def _entries_read(self, fed: tuple[str, cst.CSTNode | None] | None) -> bool:
        """Whether the load's scope reads entries or attributes of the name it is bound to
        (`ckpt["model"]`, `ckpt.get`): a load that goes whole into load_state_dict on one path is
        then more than a state dict on another (a fairseq checkpoint: {"model": ..., "args":
        Namespace}). Read from the scope's text, so a comment naming it errs on the safe side."""
        if fed is None:
            return False
        name, scope = fed
        code = self._module.code_for_node(scope) if scope is not None else self.module_code(self._module)
        return re.search(rf"\b{re.escape(name)}\s*(?:\[|\.(?!load_state_dict\b))", code) is not None

    @property
    def checkpoints(self) -> _Checkpoints:
        """The module's saves and key reads: a full walk, made only for a load that needs it."""
        if self._checkpoints is None:
            self._checkpoints = _Checkpoints(self.imports)
            traverse(self._module, self._checkpoints)
        return self._checkpoints

    def _name_call(self, node: cst.Call, bound: dict) -> str:
        """`torch.load("model.pth")`, or `torch.load(...)` when the file argument is long."""
        source = self.code_for(bound["f"].arg.value) if "f" in bound else "..."
        if len(source) > 40 or "\n" in source:
            source = "..."
        return f"{self.code_for(node.func)}({source})"

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) not in LOADS:
            return updated_node
        bound = arguments.bind(updated_node, POSITIONAL)
        if "weights_only" in bound:
            return updated_node
        call = self._name_call(original_node, bound)
        if any(a.star == "**" for a in updated_node.args):
            self.finding(original_node, f"`{call}` with **kwargs: make sure they set `weights_only=`")
            return updated_node

        why_not = ""
        if id(original_node) in self.flows.feeds and "pickle_module" not in bound:
            reason = "the loaded object goes into load_state_dict"
            weights = True
            if id(original_node) in self.flows.partial or self._entries_read(self.flows.names.get(id(original_node))):
                # Only an entry is a state dict: the rest of the file must be weights-only too.
                weights, because = self.checkpoints.verdict(original_node)
                reason = f"an entry goes into load_state_dict and {because}"
                why_not = f"; {because}"
            if weights:
                new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("True"))])
                return self.rewrite(original_node, updated_node, new, review=f"weights_only=True: {reason}")

        new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("False"))])
        result = self.rewrite(
            original_node, updated_node, new, review="weights_only=False keeps the pre-2.6 full unpickling"
        )
        if result is new:
            self.finding(
                original_node,
                f"security: `{call}` unpickles arbitrary objects (weights_only=False{why_not}); load only"
                " trusted files, or save a state_dict and load it with weights_only=True"
                + (" (pickle_module= rules out weights_only=True)" if "pickle_module" in bound else ""),
                suggestion="weights_only=True",
            )
        return result
