"""TM102 load-map-location: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.gates.load_weights_only import triggers as torch_load
from codemods.helpers.scan import Scan


def triggers() -> tuple[str, ...]:
    """`torch.load(` in any spelling: the same calls TM301 looks at (a bare `\bload\b` also fired
    on every `json.load`/`pickle.load` file)."""
    return torch_load()


def may_act(scan: Scan, words, facts) -> bool:
    return scan.calls(words, {"torch.load"})  # its every site; `import torch as th` alone is none


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM102",
    name="load-map-location",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.load_map_location:LoadMapLocation",
    triggers=triggers(),
    summary='torch.load(f) -> torch.load(f, map_location="cpu") for state dicts, else the CPU fallback only',
    gate=GATE,
)
