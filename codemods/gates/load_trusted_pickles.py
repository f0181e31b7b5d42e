"""TM302 load-trusted-pickles: its declaration (SPEC); its triggers and gate are TM301's, whose
sites it shares (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage
from codemods.gates.load_weights_only import GATE, SPEC as WEIGHTS_ONLY, triggers

SPEC = Spec(
    code="TM302",
    name="load-trusted-pickles",
    stage=Stage.REWRITE,
    # Only with --unsafe: weights_only=False turns off the safe loading torch >= 2.6 gives the call.
    safety=Safety.UNSAFE,
    target="codemods.transforms.load_weights_only.load_trusted_pickles:LoadTrustedPickles",
    triggers=triggers(),
    summary="torch.load(f) -> torch.load(f, weights_only=False) where f may hold more than tensors (trusted files only)",
    gate=GATE,
    emits=WEIGHTS_ONLY.emits,
)
