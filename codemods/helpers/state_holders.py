"""Which objects' state dicts may hold more than tensors, for TM301.

A load that goes into `x.load_state_dict(...)` (or a save of `x.state_dict()`) holds whatever
`x.state_dict()` returns. For torch's modules and optimizers that is tensors, numbers and
containers; for a wrapper it need not be: apex's `FP16_Optimizer` keeps its `LossScaler`
object under "loss_scaler", and `weights_only=True` refuses it (UnpicklingError). So
"goes into load_state_dict" proves plain tensors only when `x` is not such a wrapper: neither
something from a package whose state dicts hold objects (apex: its `amp` module, its
optimizers) nor a name this file ever assigns such a wrapper or a class named like one (a
project's own `FP16_Optimizer`, `DynamicLossScaler`). A wrapper made in another file is not
seen: the receiver's own name is all this file shows.
"""

from __future__ import annotations

import re

import libcst as cst

from codemods.helpers.names import Imports

# Packages whose objects' state dicts pickle their own objects (apex's loss scalers).
OBJECT_STATE_PACKAGES = frozenset({"apex"})
# Classes named like a mixed-precision wrapper: they keep a loss scaler object in their state.
_WRAPPER_CLASS = re.compile(r"fp16_?optimi[sz]er|loss_?scaler|mixed_?precision", re.IGNORECASE)
_CALLEE = r"\s*=\s*(?P<callee>[A-Za-z_][\w.]*)\s*\("


class StateHolders:
    """Answers `holds_objects(x)` for the receivers of one module's `load_state_dict`/`state_dict`
    calls, from the module's imports and text."""

    def __init__(self, imports: Imports, code: str) -> None:
        self.imports = imports
        self.code = code
        self._memo: dict[str, str | None] = {}

    def holds_objects(self, receiver: cst.BaseExpression) -> str | None:
        """Why `receiver.state_dict()` may hold objects `weights_only=True` refuses; None when
        nothing shows it does."""
        spelled = cst.Module([]).code_for_node(receiver)
        if spelled not in self._memo:
            self._memo[spelled] = self._why(receiver, spelled)
        return self._memo[spelled]

    def _why(self, receiver: cst.BaseExpression, spelled: str) -> str | None:
        qualified = self.imports.resolve(receiver)
        if qualified is not None and self._holder(qualified):
            return f"`{spelled}` is `{qualified}`, whose state dict holds objects"
        # every assignment of the receiver's spelling in this file: `optimizer = FP16_Optimizer(...)`
        for match in re.finditer(rf"(?<![\w.]){re.escape(spelled)}{_CALLEE}", self.code):
            callee = match.group("callee")
            try:
                resolved = self.imports.resolve(cst.parse_expression(callee)) or callee
            except cst.ParserSyntaxError:
                continue
            leaf = resolved.rpartition(".")[2]
            # a class: `amp.initialize(model, optimizer)` hands back the caller's own optimizer
            if leaf[:1].isupper() and self._holder(resolved):
                return f"`{spelled}` may be an instance of `{callee}`, whose state dict holds objects (a loss scaler)"
        return None

    @staticmethod
    def _holder(qualified: str) -> bool:
        return qualified.partition(".")[0] in OBJECT_STATE_PACKAGES or _WRAPPER_CLASS.search(qualified.rpartition(".")[2]) is not None
