"""TM009: torchvision `pretrained=True` -> `weights=<the weights the legacy handling picks>`."""

from __future__ import annotations

import libcst as cst

from codemods.gates.torchvision_weights import LEGACY, builders, table
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import attribute_chain
from codemods.helpers.spelling import head, import_forms
from codemods.versions import format_version, needed

# Test expressions that need parentheses inside `W if test else None`.
_LOOSE = (cst.IfExp, cst.Lambda, cst.NamedExpr, cst.Yield)


class Undecided(Exception):
    """A legacy argument this codemod will not rewrite; the message says why."""

    def __init__(self, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.suggestion = suggestion


class TorchvisionWeights(MigrationCodemod):
    """Replace torchvision's `pretrained=` / `pretrained_backbone=` with the `weights=` they mean.

    ## What it does
    Rewrites calls of every model builder of `torchvision.models` and its sub-packages
    (`detection`, `segmentation`, `video`, `quantization`, `optical_flow`) that pass the legacy
    `pretrained` or `pretrained_backbone`, by keyword or by position (`resnet18(True)`), to the
    `weights=` / `weights_backbone=` torchvision's own legacy handling resolves them to:
    `True` becomes the exact enum member that builder's `@handle_legacy_interface` names (for
    most classifiers `ResNet18_Weights.IMAGENET1K_V1`, not `DEFAULT`), `False` becomes `None`, a
    non-literal flag becomes `ResNet18_Weights.IMAGENET1K_V1 if flag else None`. The enum is
    spelled through the file's own `torchvision` imports, or imported
    (`from torchvision.models import ResNet18_Weights`). The table of builders and weights is
    generated from torchvision's source (scripts/gen_torchvision_weights.py); torchvision itself is
    never imported.

    ## Why is this bad?
    `pretrained` has been deprecated since torchvision 0.13: every such call warns twice
    ("The parameter 'pretrained' is deprecated", "Arguments other than a weight enum or `None`
    for 'weights' are deprecated") and the parameters may be removed.

    ## Example
    ```python
    from torchvision import models

    backbone = models.resnet50(pretrained=True)
    detector = models.detection.fasterrcnn_resnet50_fpn(pretrained=False, pretrained_backbone=use_imagenet)
    ```

    ## Use instead
    ```python
    from torchvision import models

    backbone = models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V1)
    detector = models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=models.ResNet50_Weights.IMAGENET1K_V1 if use_imagenet else None)
    ```

    ## Fix safety
    Safe: the weights written are the ones the legacy call loads today, so the model and its
    numbers are unchanged (`DEFAULT` would pick newer weights for ResNet-50 and others: choose it
    yourself, with a check of your accuracy). Positional arguments after the first are turned into
    the keywords torchvision binds them to. Reported, not rewritten: builders whose legacy choice
    depends on other arguments (the quantized models choose by `quantize`, Keypoint R-CNN by
    `num_keypoints`, the backbone utilities by `backbone_name`), builders with no legacy weights
    (`vit_h_14`, `regnet_y_128gf`: `pretrained=True` raises there), a positional value that is not a
    literal (it may be new-style weights), `*args`, both `pretrained` and `weights` given, and
    builders chosen at run time (`models.__dict__[arch](pretrained=True)`,
    `getattr(models, name)(...)`, `get_model(name, pretrained=...)`). The output needs
    torchvision 0.13 (torch 1.12): under an older `--target-torch` it is held back.

    ## References
    - https://pytorch.org/vision/stable/models.html
    - `torchvision/models/_utils.py` (`handle_legacy_interface`, `kwonly_to_pos_or_kw`)
    """

    PRUNE = True  # its sites are builder calls on trigger lines (or lines using names imported there)

    def hold_back(self, node: cst.CSTNode, symbol: str) -> None:
        """The finding for a rewrite the target lacks, in torchvision's terms."""
        if not symbol.startswith("torchvision."):
            super().hold_back(node, symbol)
            return
        torch = format_version(needed(symbol) or self.file.target_torch)
        since = table()["weights_since"]["torchvision"]
        self._record(
            node,
            f"not rewritten: the rewrite uses `{symbol}`, which needs torchvision {since} (torch {torch});"
            f" the target is torch {format_version(self.file.target_torch)}",
            suggestion=f"rewrite it once the project runs on torchvision {since} (--target-torch {torch})",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.forms = import_forms(tree)
        return super().transform_module_impl(tree)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        if _dynamic(self, func):
            if any(a.keyword is not None and a.keyword.value in LEGACY for a in original_node.args):
                self.finding(
                    original_node,
                    "a builder chosen at run time: which weights `pretrained` means depends on the builder",
                    suggestion='weights="IMAGENET1K_V1" if pretrained else None (the legacy choice of every classifier'
                    " in torchvision.models that has weights; detection, segmentation and video builders differ:"
                    " see torchvision_weights.json)",
                )
            return updated_node
        entry = builders().get(self.qualified_name(func) or "")
        if entry is None:
            return updated_node
        try:
            legacy = _legacy_arguments(updated_node, entry)
            if not legacy:
                return updated_node
            if self.suppressed(original_node):
                return updated_node
            values = {new: self._value(entry, new, arg, positional, func) for new, (arg, positional) in legacy.items()}
        except Undecided as why:
            self.finding(original_node, str(why), suggestion=why.suggestion)
            return updated_node
        return self.rewrite(original_node, updated_node, _rewritten(updated_node, entry, values))

    def _value(self, entry: dict, new: str, arg: cst.Arg, positional: bool, func: cst.BaseExpression) -> cst.BaseExpression:
        """What `weights=` (or `weights_backbone=`) must be for the legacy argument `arg`."""
        info = entry["legacy"][new]
        old = info["from"]
        value = arguments.literal(arg.value)
        if positional and value not in (True, False):
            raise Undecided(
                f"the positional argument that fills `{new}` is not a literal bool: it may already be new-style weights",
                suggestion=f"pass {new}= by keyword",
            )
        if arguments.is_literal(value) and not value:
            return cst.Name("None")
        if "chooser" in info:
            raise Undecided(
                f"torchvision chooses the weights of a legacy `{old}=` here by other arguments: `{info['chooser']}`",
                suggestion=f"{new}=<the member that lambda picks for this call> (or None)",
            )
        if info.get("value") is None:
            raise Undecided(
                f"`{entry['name'].rpartition('.')[2]}` has no legacy weights: `{old}=True` raises ValueError in torchvision",
                suggestion=f"{new}=None, or choose weights from its enum",
            )
        weights = self._spell(info["enum"], info["value"], head(func))
        if arguments.is_literal(value):
            return weights
        test = arg.value
        if isinstance(test, _LOOSE):
            test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.IfExp(test=test, body=weights, orelse=cst.Name("None"))

    def _spell(self, enum: str, member: str, called: str | None) -> cst.BaseExpression:
        """`Enum.MEMBER` through the module-level imports (`models.ResNet18_Weights`; through the
        name the builder was called with when that can spell it), else with
        `from <package> import Enum` added (an import inside a function binds nothing elsewhere)."""
        spellings = {}
        for local, target in self.imports.aliases.items():
            form = self.forms.get(local)
            if local in self.imports.shadowed or form is None or not form.module_level:
                continue
            if enum == target or enum.startswith(target + "."):
                spellings[local] = local + enum[len(target) :]
        if spellings:
            best = spellings.get(called or "") or min(spellings.values(), key=lambda s: (len(s), s))
            return attribute_chain(f"{best}.{member}")
        package, _, name = enum.rpartition(".")
        if self.imports.aliases.get(name, enum) != enum or name in self.imports.shadowed:
            self.add_needed_import(enum.partition(".")[0])  # the name means something else here
            return attribute_chain(f"{enum}.{member}")
        self.add_needed_import(package, name)
        return attribute_chain(f"{name}.{member}")


def _dynamic(codemod: MigrationCodemod, func: cst.BaseExpression) -> bool:
    """`models.__dict__[arch]`, `getattr(models, name)`, `get_model`: the builder is chosen at run time."""
    def in_package(expr: cst.BaseExpression) -> bool:
        return (codemod.qualified_name(expr) or "").startswith("torchvision.models")

    if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute) and func.value.attr.value == "__dict__":
        return in_package(func.value.value)
    if isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr" and func.args:
        return in_package(func.args[0].value)
    return codemod.qualified_name(func) == "torchvision.models.get_model"


def _legacy_arguments(call: cst.Call, entry: dict) -> dict[str, tuple[cst.Arg, bool]]:
    """New parameter -> (the argument that gives its legacy value, whether by position)."""
    params = [*entry["positional"], *entry["keywords"]]
    renames = {info["from"]: new for new, info in entry["legacy"].items()}
    found: dict[str, tuple[cst.Arg, bool]] = {}
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    position = 0
    for arg in call.args:
        if arg.star == "*":
            if any(k in renames for k in keywords) or position < len(params):
                raise Undecided("`*args` may fill the weights by position: pass them by keyword")
            continue
        if arg.star:
            continue
        if arg.keyword is None:
            if position >= len(params):
                return {}  # more arguments than parameters: a TypeError either way
            name = params[position]
            position += 1
            value = arguments.literal(arg.value)
            new_style = arguments.is_literal(value) and (value is None or isinstance(value, str))  # weights=None, "IMAGENET1K_V1"
            if name in entry["legacy"] and position > len(entry["positional"]) and not new_style:
                _add(found, name, arg, True, entry)
        elif arg.keyword.value in renames:
            _add(found, renames[arg.keyword.value], arg, False, entry)
    for new in found:
        if new in keywords:
            old = entry["legacy"][new]["from"]
            raise Undecided(f"both `{old}` and `{new}` are given: torchvision passes the legacy one on to the model")
    return found


def _add(found: dict, new: str, arg: cst.Arg, positional: bool, entry: dict) -> None:
    if new in found:
        raise Undecided(f"`{new}` is given twice (by position and as `{entry['legacy'][new]['from']}=`): a TypeError today")
    found[new] = (arg, positional)


def _rewritten(call: cst.Call, entry: dict, values: dict[str, cst.BaseExpression]) -> cst.Call:
    """`call` with each legacy argument replaced by its `weights` keyword, and every positional
    argument torchvision binds to a keyword-only parameter turned into that keyword."""
    params = [*entry["positional"], *entry["keywords"]]
    renames = {info["from"]: new for new, info in entry["legacy"].items()}
    args = []
    position = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            name = params[position]
            position += 1
            if position > len(entry["positional"]):
                arg = arguments.as_keyword(arg, name)
                if name in values:
                    arg = arg.with_changes(value=values[name])
        elif arg.keyword is not None and arg.keyword.value in renames:
            new = renames[arg.keyword.value]
            arg = arg.with_changes(keyword=cst.Name(new), value=values[new])
        args.append(arg)
    return call.with_changes(args=args)
