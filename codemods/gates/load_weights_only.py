"""TM301 load-weights-only: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


LOADS = frozenset({"torch.load", "torch.serialization.load"})


def triggers() -> tuple[str, ...]:
    return (
        r"\btorch\s*\.\s*load\s*\(",
        r"\bimport\s+torch\s+as\b",  # `th.load(...)`
        r"\bserialization\b",
        r"\bfrom\s+torch\s+import\s+(?:\([^)]*|[^\n]*)\bload\b",
    )


def may_act(scan: Scan, words, facts) -> bool:
    return scan.calls(words, LOADS)  # leave_Call's every site (the flows only inform them)


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM301",
    name="load-weights-only",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.load_weights_only:LoadWeightsOnly",
    triggers=triggers(),
    summary="torch.load(f) -> torch.load(f, weights_only=True) for state dicts, else a security finding",
    gate=GATE,
    emits=(
        "torch.load(weights_only)",
        "torch.serialization.load(weights_only)",
    ),
)
