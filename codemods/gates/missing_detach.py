"""TM901 missing-detach: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_dotted


def triggers() -> tuple[str, ...]:
    return (r"\.backward\s*\(",)


# Calls that mark their receiver as a model (the codemod's survey reads this table too).
MODEL_METHODS = {"parameters", "named_parameters", "state_dict", "load_state_dict", "train", "eval", "zero_grad"}
_MOVES = ("cuda", "to", "eval", "train")  # `Net().cuda()` is still a model


def _targets(node: ast.Assign) -> list[str]:
    """The dotted names an assignment binds (a tuple or list target's elements one by one)."""
    names = []
    for target in node.targets:
        for t in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            name = ast_dotted(t.value if isinstance(t, ast.Starred) else t)
            if name is not None:
                names.append(name)
    return names


def _optimized(value: ast.expr, scan: Scan) -> set[str]:
    """The codemod's `_optimized`: for a torch.optim optimizer (not a scheduler) built in place,
    the dotted receivers of the `.parameters()`/`.named_parameters()` calls in its arguments."""
    if not isinstance(value, ast.Call) or not any(
        q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler.") for q in scan.qualified(value.func)
    ):
        return set()
    found = set()
    for call in ast.walk(value):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("parameters", "named_parameters"):
            receiver = ast_dotted(call.func.value)
            if receiver:
                found.add(receiver)
    return found


def _model_value(value: ast.expr, scan: Scan, classes) -> bool:
    """The codemod's `is_model_value`: a torchvision model or a call of a repository nn.Module
    class (any call when the facts do not say which those are), through `.cuda()`/`.to()`/..."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _MOVES:
        return _model_value(func.value, scan, classes)
    if any(q.startswith("torchvision.models.") for q in scan.qualified(func)):
        return True
    name = ast_dotted(func)
    return bool(name) and (classes is None or name.rsplit(".", 1)[-1] in classes)


def _bodies(module: ast.Module) -> list[list[ast.AST]]:
    """The nodes of each body the codemod reads on its own: the module's (outside every function)
    and each function's (outside the functions nested in it; a lambda's and a class's nodes are
    their enclosing body's). A function's decorators, defaults and annotations count in both
    bodies. Iterative: a long chain of `+` is deeper than Python's recursion limit."""
    bodies: list[list[ast.AST]] = [[]]
    stack: list[tuple[ast.AST, int]] = [(module, 0)]
    while stack:
        node, body = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies.append([child])
                stack.append((child, len(bodies) - 1))
                header = [*child.decorator_list, child.args, *([child.returns] if child.returns else [])]
                bodies[body].extend(header)
                stack.extend((part, body) for part in header)
            else:
                bodies[body].append(child)
                stack.append((child, body))
    return bodies


def may_act(scan: Scan, words, facts) -> bool:
    """A report needs, in one function (or at module level): a `.backward()`; a `.step()` that
    names an optimizer of torch.optim assigned in this file over some models' `.parameters()`;
    a call of one of those models (what makes the loss trainable through that optimizer); and
    a call of another model, one that optimizer does not update (the offender). Most files that
    call backward() train one model, or receive their optimizer from elsewhere."""
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" for n in scan.nodes(words)):
        return False
    classes = getattr(facts, "module_classes", None)
    optimizers: list[tuple[list[str], set[str]]] = []  # each optimizer assignment: its names, the models it updates
    models: set[str] = set()  # what the codemod's survey may take for a model, file-wide
    trained = []  # (called, stepped) of each body with a backward() and a step() call
    for body in _bodies(scan.module):
        called: set[str] = set()  # the dotted names called
        stepped: set[str] = set()  # what a `.step()` call may name as its optimizer
        backward = False
        for node in body:
            if isinstance(node, ast.Assign):
                updated = _optimized(node.value, scan)
                if updated:
                    optimizers.append((_targets(node), updated))
                if _model_value(node.value, scan, classes):
                    models.update(_targets(node))
            elif isinstance(node, ast.Call):
                func = node.func
                name = ast_dotted(func)
                if name is not None:
                    called.add(name)
                if not isinstance(func, ast.Attribute):
                    continue
                receiver = ast_dotted(func.value)
                if receiver and func.attr in MODEL_METHODS:
                    models.add(receiver)
                if func.attr == "backward":
                    backward = True
                elif func.attr == "step":  # `optimizer.step()`, `scaler.step(optimizer)`
                    passed = [a.value if isinstance(a, ast.Starred) else a for a in node.args] + [k.value for k in node.keywords]
                    stepped.update(n for n in [receiver, *map(ast_dotted, passed)] if n)
        if backward and stepped:
            trained.append((called, stepped))
    return any(
        not stepped.isdisjoint(names) and not called.isdisjoint(updated) and bool((called & models) - updated)
        for called, stepped in trained
        for names, updated in optimizers
    )


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM901",
    name="missing-detach",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.missing_detach:MissingDetach",
    triggers=triggers(),
    facts=("module_classes",),
    summary="a model's output feeds another model's loss without .detach() (GAN, teacher-student)",
    gate=GATE,
)
