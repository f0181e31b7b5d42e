"""TM001 loss-reduction: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
from functools import lru_cache

from codemods.gates import Gate, Safety, Spec, Stage, data_table
from codemods.helpers.scan import Scan


LEGACY = ("size_average", "reduce")


@lru_cache(maxsize=None)
def losses() -> dict[str, dict]:
    """Qualified name (and every alias) -> signature entry, from codemods/data/losses.json."""
    table = data_table("losses.json")
    by_name = {}
    for name, entry in table.items():
        by_name[name] = entry
        for alias in entry["aliases"]:
            by_name[alias] = entry
    return by_name


def triggers() -> tuple[str, ...]:
    """Keyword use anywhere, or a call of a loss that may pass the flags by position."""
    short = sorted({name.rsplit(".", 1)[-1] for name in losses()})
    return (r"\bsize_average\b", r"\breduce\s*=", rf"\b(?:{'|'.join(short)})\s*\(")


def may_act(scan: Scan, words, facts) -> bool:
    """A call of a loss with `size_average`/`reduce`, by keyword or by position (leave_Call's
    sites); most loss calls on the trigger lines pass neither."""
    for node in scan.nodes(words):
        if not isinstance(node, ast.Call):
            continue
        for name in scan.qualified(node.func) & losses().keys():
            if any(k.arg in LEGACY for k in node.keywords):
                return True
            plain = [a for a in node.args if not isinstance(a, ast.Starred)]
            if any(p in LEGACY for p in losses()[name]["positional"][: len(plain)]):
                return True
    return False


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM001",
    name="loss-reduction",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.loss_reduction:LossReduction",
    triggers=triggers(),
    summary="nn.MSELoss(reduce=False) -> nn.MSELoss(reduction='none')",
    gate=GATE,
)
