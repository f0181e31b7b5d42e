"""TM009 torchvision-weights: its declaration (SPEC) and triggers, its gate and its table (no libcst).

The table (codemods/data/torchvision_weights.json) is generated from torchvision's source by
scripts/gen_torchvision_weights.py and read on first use, by the AST gate of a file that names
torchvision or by the codemod; `emits()` reads only the torchvision entries of
torch_minimums.json, which the same script derives from the table (tests check they agree).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from codemods.gates import Gate, Safety, Spec, Stage, data_table
from codemods.helpers.scan import Scan

LEGACY = ("pretrained", "pretrained_backbone")
PACKAGE = "torchvision.models"
GET_MODEL = "torchvision.models.get_model"


def triggers() -> tuple[str, ...]:
    # `pretrained=` is the common form; a positional `resnet18(True)` (or `resnet18(flag)`) has no
    # such word, but its file names torchvision, and the AST gate declines the many files that
    # only use its transforms or datasets.
    return (r"\bpretrained(?:_backbone)?\b", r"\btorchvision\b")


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("torchvision_weights.json")


@lru_cache(maxsize=None)
def builders() -> dict[str, dict]:
    """Every qualified name of a builder with legacy handling -> its table entry (with `name`,
    its public qualified name)."""
    found: dict[str, dict] = {}
    for public, entry in table()["builders"].items():
        entry = {**entry, "name": public}
        for spelled in (public, *entry["spellings"]):
            found[spelled] = entry
    return found


def emits() -> tuple[str, ...]:
    """What TM009 may write that needs more than torch 1.0: the `*_Weights` enums and members it
    writes and every builder's `weights=`/`weights_backbone=` keyword, each at the torch release
    paired with torchvision 0.13 (codemods/data/torch_minimums.json)."""
    return tuple(key for key in data_table("torch_minimums.json")["minimums"] if key.startswith("torchvision."))


def is_dynamic(func: ast.AST, qualified) -> bool:
    """`models.__dict__[name]`, `getattr(models, name)` or `get_model`: a builder chosen at run time."""
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__":
        return any(q.startswith(PACKAGE) for q in qualified(func.value.value))
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr" and func.args:
        return any(q.startswith(PACKAGE) for q in qualified(func.args[0]))
    return GET_MODEL in qualified(func)


def _may_be_site(call: ast.Call, scan: Scan) -> bool:
    legacy = any(k.arg in LEGACY or k.arg is None for k in call.keywords)
    if is_dynamic(call.func, scan.qualified):
        return legacy
    if scan.qualified(call.func).isdisjoint(builders()):
        return False
    return legacy or bool(call.args)


def applies(text: str, facts) -> bool:
    return "torchvision" in text


def may_act(scan: Scan, words, facts) -> bool:
    return any(isinstance(node, ast.Call) and _may_be_site(node, scan) for node in scan.nodes(words))


GATE = Gate(applies=applies, may_act=may_act)


SPEC = Spec(
    code="TM009",
    name="torchvision-weights",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.torchvision_weights:TorchvisionWeights",
    triggers=triggers(),
    summary="models.resnet50(pretrained=True) -> models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V1)",
    gate=GATE,
    emits=emits(),
)
