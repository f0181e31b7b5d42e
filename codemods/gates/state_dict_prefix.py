"""TM104 state-dict-prefix: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.patterns import Words
from codemods.helpers.scan import Scan, ast_dotted
from codemods.helpers.wrapped import ast_wraps


PREFIX = "module."
NOT_MODELS = ("optim", "sched", "scaler")  # their state dicts have no `module.` keys


# What the extra passes of visit_Module look at: wrapper assignments (DataParallel, DDP, TM103's
# ddp_wrap) and strings holding the `module.` prefix (not every `nn.Module` line: that would be
# most classes of a model file).
_WRAP_WORDS = Words(r"DataParallel|ddp_wrap")


def triggers() -> tuple[str, ...]:
    """A wrapper (TM103's helpers name DistributedDataParallel), a load, or a hand-written strip."""
    return (
        r"DataParallel\b",
        r"\bload_state_dict\b",
        r"\bself\.\w+\.state_dict\(",  # a `self.model` wrapped in another file of the repo
        r"""["']module\.["']""",
        r"\[7:\]",
        r"""\.split\(["']\.["']\)""",
    )


def _ast_wraps(value: ast.AST, scan: Scan) -> bool:
    """The codemod's test on the ast, loosened: DataParallel/DDP/ddp_wrap(...), maybe `.cuda()`/`.to()`."""
    return ast_wraps(value, scan.qualified)


def _ast_loads(call: ast.Call, receiver: str | None, scan: Scan) -> bool:
    """_load's test on the ast, loosened: a model's `load_state_dict(torch.load(...)[...])` or of a name."""
    if receiver in {"self", None} or any(w in receiver.lower() for w in NOT_MODELS):
        return False
    if not call.args or isinstance(call.args[0], ast.Starred):
        return False
    arg = call.args[0]
    while isinstance(arg, ast.Subscript):
        arg = arg.value
    if isinstance(arg, ast.Name):
        return True
    return isinstance(arg, ast.Call) and "torch.load" in scan.qualified(arg.func)


def applies(text: str, facts) -> bool:
    # Nothing to unwrap or strip in a file of a repository that wraps no model and has no
    # `module.` handling of its own: decline before parsing (this codemod walks the tree four
    # times, and `load_state_dict` alone is in a sixth of real files).
    return bool(facts.dataparallel_files or facts.wrapped_attributes) or "DataParallel" in text or "module." in text


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of this codemod's sites, from the ast: a hand-written strip (`[7:]`,
    "module.", `.split(".")`), a `load_state_dict` of a loaded or named state dict in a repo
    that wraps, or a wrapped model's `state_dict()`."""
    wrapped = {f"self.{name}" for name in facts.wrapped_attributes}
    for node in scan.nodes([_WRAP_WORDS]):
        if isinstance(node, ast.Assign) and _ast_wraps(node.value, scan):
            wrapped |= {name for t in node.targets if (name := ast_dotted(t))}
    wraps = bool(wrapped or facts.dataparallel_files)
    for node in scan.nodes(words):
        if isinstance(node, ast.Constant) and node.value == PREFIX:
            return True
        if isinstance(node, ast.Slice) and isinstance(node.lower, ast.Constant) and node.lower.value == 7:
            return True
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method, receiver = node.func.attr, ast_dotted(node.func.value)
        if method == "split" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == ".":
            return True
        if method == "state_dict" and receiver in wrapped:
            return True
        if method == "load_state_dict" and wraps and _ast_loads(node, receiver, scan):
            return True
    return False


GATE = Gate(sites=(r"save", r"state_dict"), applies=applies, may_act=may_act)


SPEC = Spec(
    code="TM104",
    name="state-dict-prefix",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.state_dict_prefix:StateDictPrefix",
    triggers=triggers(),
    facts=("wrapped_attributes", "dataparallel_files"),
    summary="torch.save(dp_model.state_dict()) -> unwrap first; strip `module.` with consume_prefix_in_state_dict_if_present",
    gate=GATE,
    emits=(
        "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present",
    ),
)
