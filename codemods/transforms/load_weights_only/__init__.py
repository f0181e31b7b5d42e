"""TM301: `torch.load` without `weights_only=`: `True` where only tensors are loaded, else a
security finding with the way to keep the load safe (TM302 writes `weights_only=False`, opt-in)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from codemods.gates.load_weights_only import LOADS
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.load_flows import LOAD_WORD, Flows
from codemods.helpers.checkpoints import _Checkpoints
from codemods.helpers.state_holders import StateHolders
from codemods.base import traverse

POSITIONAL = ("f", "map_location", "pickle_module")


@dataclass(frozen=True)
class Decision:
    """What a load without `weights_only=` holds: `proven` when it is only tensors (a state dict),
    `why` (the reason, either way) and the classes a matching save writes, where known."""

    proven: bool
    why: str
    classes: tuple[str, ...] = ()


class LoadWeightsOnly(MigrationCodemod):
    """Make `torch.load` weights-only where it loads state dicts; report the loads that may not.

    ## What it does
    Adds `weights_only=True` to every `torch.load(...)` without `weights_only=` whose result is
    provably only tensors: the loaded object itself flows into `load_state_dict` (as the
    argument, or through a name assigned from `torch.load` in the same function), or only an
    entry of it does (`model.load_state_dict(ckpt["model"])`) and the `torch.save` in the same
    file whose dict has every key the loader reads (a dict literal, `dict(...)`, a name assigned
    one, or a parameter filled by the file's calls) holds only state dicts, tensors, numbers and
    strings. "Goes into `x.load_state_dict`" proves nothing when `x`'s state dict holds objects:
    apex's `FP16_Optimizer` keeps its loss scaler object there, so a load into (or a save of) the
    state of anything from apex, or of a name the file assigns a class named like an FP16
    optimizer or loss scaler, is not made weights-only. Every other such load is left as it is, with a security finding that says why it
    may hold more and how to load it: the classes to allow with
    `torch.serialization.add_safe_globals([...])` (named when the matching save shows them), or
    `weights_only=False` for a file you trust. It never writes `weights_only=False` itself: that
    is TM302 (`load-trusted-pickles`), which runs only with `--unsafe`.

    ## Why is this bad?
    `torch.load` unpickles: a malicious checkpoint runs arbitrary code. PyTorch 2.6 changed the
    default to `weights_only=True`, which only allows tensors, primitive types, containers and the
    classes allowed with `add_safe_globals`. Code that loads state dicts should say so (it then
    loads the same on every torch). Code that pickles whole models, optimisers' extra objects or
    `argparse.Namespace` now fails with an `UnpicklingError` that names each refused class; the
    load stays safe, and the finding says how to make it work without turning the check off.

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
    model = torch.load("whole_model.pt")
    ```

    The second load is unchanged, and reported: on torch 2.6 or newer it refuses a pickled
    module. Allow its classes (`torch.serialization.add_safe_globals([Net])` before the load, or
    `with torch.serialization.safe_globals([Net]):` around it), or save a state dict instead;
    pass `weights_only=False` only for a file you trust (`--unsafe` runs TM302, which writes it).

    ## Fix safety
    Review. `weights_only=True` is written only where every loaded value is a tensor, a number, a
    string or a container of those, so it loads the same file the same way on every torch that
    has the keyword: a load that goes into `load_state_dict`, or of a path (an attribute, a call
    or a literal, spelled alike; not a local name) that this file's own `torch.save` writes, with
    or without `open()` around it, only tensors and plain values to (a dataset's processed
    tensors). A checkpoint with a NumPy scalar, an `argparse.Namespace` or a project's
    own object next to the state dict, a checkpoint saved elsewhere (whose contents this file
    cannot show) and a whole pickled model are never made unsafe: they keep torch's default,
    which is the safe load on torch 2.6 and newer. A call with `pickle_module=` (torch then
    defaults to full unpickling) or `**kwargs` is reported, not changed.

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
        self._holders: StateHolders | None = None

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
            self._checkpoints.holders = self.holders
            traverse(self._module, self._checkpoints)
        return self._checkpoints

    @property
    def holders(self) -> StateHolders:
        """Whose state dicts may hold objects (state_holders.py): made only for a load that asks."""
        if self._holders is None:
            self._holders = StateHolders(self.imports, self.module_code(self._module))
        return self._holders

    def _name_call(self, node: cst.Call, bound: dict) -> str:
        """`torch.load("model.pth")`, or `torch.load(...)` when the file argument is long."""
        source = self.code_for(bound["f"].arg.value) if "f" in bound else "..."
        if len(source) > 40 or "\n" in source:
            source = "..."
        return f"{self.code_for(node.func)}({source})"

    def decide(self, original_node: cst.Call, bound: dict) -> Decision:
        """Whether this load (no `weights_only=`, no `**kwargs`) provably loads only tensors."""
        if "pickle_module" in bound:
            return Decision(False, "pickle_module= rules out weights_only=True")
        if id(original_node) not in self.flows.feeds:
            weights, why = self.checkpoints.saved_to(bound["f"].arg.value) if "f" in bound else (False, "")
            return Decision(weights, why or "nothing shows it is a state dict")
        for receiver in self.flows.receivers.get(id(original_node), ()):
            why = self.holders.holds_objects(receiver)
            if why is not None:  # "goes into load_state_dict" is no proof: what that state dict holds is
                return Decision(False, f"it goes into `{self.code_for(receiver)}.load_state_dict`, and {why}")
        if id(original_node) in self.flows.partial or self._entries_read(self.flows.names.get(id(original_node))):
            # Only an entry is a state dict: the rest of the file must be weights-only too.
            weights, because, classes = self.checkpoints.verdict(original_node)
            return Decision(weights, f"an entry goes into load_state_dict and {because}", classes)
        return Decision(True, "the loaded object goes into load_state_dict")

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        """The sites TM301 and TM302 share: a `torch.load` without `weights_only=`; each says what
        it does with a load whose **kwargs may set it (`with_kwargs`) and with a decision (`decided`)."""
        if self.qualified_name(original_node.func) not in LOADS:
            return updated_node
        bound = arguments.bind(updated_node, POSITIONAL)
        if "weights_only" in bound:
            return updated_node
        if any(a.star == "**" for a in updated_node.args):
            self.with_kwargs(original_node, bound)
            return updated_node
        return self.decided(original_node, updated_node, bound, self.decide(original_node, bound))

    def with_kwargs(self, original_node: cst.Call, bound: dict) -> None:
        call = self._name_call(original_node, bound)
        self.finding(original_node, f"`{call}` with **kwargs: make sure they set `weights_only=`")

    def decided(self, original_node: cst.Call, updated_node: cst.Call, bound: dict, decision: Decision) -> cst.BaseExpression:
        if decision.proven:
            new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("True"))])
            return self.rewrite(original_node, updated_node, new, review=f"weights_only=True: {decision.why}")
        self._report(original_node, self._name_call(original_node, bound), bound, decision)
        return updated_node

    def _report(self, node: cst.Call, call: str, bound: dict, decision: Decision) -> None:
        """The security finding for a load left as it is: why, and the ways to load the file."""
        if "pickle_module" in bound:
            self.finding(
                node,
                f"security: `{call}` with pickle_module= unpickles arbitrary objects (torch then defaults"
                " to weights_only=False): load only trusted files, or save a state_dict and load it"
                " with weights_only=True and no pickle_module",
                suggestion="weights_only=True without pickle_module=",
            )
            return
        allow = f"torch.serialization.add_safe_globals([{', '.join(decision.classes)}])"
        classes = f"allow its classes with `{allow}` before it" if decision.classes else "allow the classes torch's error names with `torch.serialization.add_safe_globals([...])`"
        self.finding(
            node,
            f"security: `{call}` may hold more than tensors ({decision.why}): torch >= 2.6 loads it with"
            f" weights_only=True, which refuses pickled objects (UnpicklingError). To keep it safe, {classes}"
            " or save a state_dict; only for a file you trust, weights_only=False (TM302, with --unsafe)",
            suggestion=allow if decision.classes else "weights_only=False, for a trusted file only",
        )
