"""TM015 era-defaults: its declaration (SPEC) and trigger regexes, its table and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan
from codemods.versions import Version


@dataclass(frozen=True)
class Default:
    """A callable whose `align_corners` default changed at `changed`."""

    positional: tuple[str, ...]  # its parameters up to `align_corners`, in order
    changed: Version  # the first release with today's default (False); before it, True
    by_mode: bool  # the default only matters for the linear modes (`mode=` decides)
    warns: bool  # today's torch warns when it is left out (then it is written out for newer code)


LINEAR_MODES = frozenset({"linear", "bilinear", "bicubic", "trilinear"})

DEFAULTS: dict[str, Default] = {
    # grid_sample/affine_grid: align_corners added in 1.3.0 with default False; up to 1.2 they
    # computed what align_corners=True computes (torch's docs and warning: "changed ... since 1.3.0")
    "torch.nn.functional.grid_sample": Default(("input", "grid", "mode", "padding_mode", "align_corners"), (1, 3), False, True),
    "torch.nn.functional.affine_grid": Default(("theta", "size", "align_corners"), (1, 3), False, True),
    # upsample and nn.Upsample: align_corners added in 0.4.0 with default False; "the default
    # behavior for these modes up to version 0.3.1" was True (torch's docs). `interpolate` is not
    # here: it is upsample's 0.4.1 name, so code that calls it ran on 0.4.1 or newer, whose
    # default is today's (TM015 runs before TM006 renames upsample to interpolate).
    "torch.nn.functional.upsample": Default(("input", "size", "scale_factor", "mode", "align_corners"), (0, 4), True, False),
    "torch.nn.Upsample": Default(("size", "scale_factor", "mode", "align_corners"), (0, 4), True, False),
    "torch.nn.modules.upsampling.Upsample": Default(("size", "scale_factor", "mode", "align_corners"), (0, 4), True, False),
}


def triggers() -> tuple[str, ...]:
    return (r"\b(?:grid_sample|affine_grid|upsample|Upsample)\b",)


def _lacks_align_corners(call: ast.Call, default: Default) -> bool:
    if any(k.arg == "align_corners" for k in call.keywords):
        return False
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    return starred or len(call.args) < len(default.positional)


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of the codemod's decisions: a call of one of DEFAULTS without `align_corners`."""
    for node in scan.nodes(words):
        if isinstance(node, ast.Call):
            for name in scan.qualified(node.func) & DEFAULTS.keys():
                if _lacks_align_corners(node, DEFAULTS[name]):
                    return True
    return False


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM015",
    name="era-defaults",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.era_defaults:EraDefaults",
    triggers=triggers(),
    facts=("era",),
    intended=(
        "it writes the align_corners default of the torch the code was written for, so the migrated "
        "code computes what the original computed then, not what it computes on today's torch"
    ),
    summary="F.grid_sample(x, g) in code for torch < 1.3 -> align_corners=True (the old default); >= 1.3: False written out",
    gate=GATE,
    emits=(
        "torch.nn.functional.grid_sample(align_corners)",
        "torch.nn.functional.affine_grid(align_corners)",
    ),
)
