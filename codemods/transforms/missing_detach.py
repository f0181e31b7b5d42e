"""TM901: one model's output feeds the loss of another model's optimizer without `.detach()`."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from codemods.base import MigrationCodemod
from codemods.gates.missing_detach import MODEL_METHODS as _MODEL_METHODS
from codemods.helpers.names import dotted
from codemods.helpers.patterns import Words

# Calls and attributes that cut the autograd graph.
_CUTS = {"detach", "detach_", "item", "tolist", "numpy", "data"}


@dataclass
class _Assignment:
    line: int
    value: cst.BaseExpression
    no_grad: bool


@dataclass
class _Body:
    """What one function (or the module) does, in source order."""

    assignments: dict[str, list[_Assignment]] = field(default_factory=dict)
    backwards: list[tuple[int, cst.BaseExpression]] = field(default_factory=list)
    steps: list[tuple[int, str]] = field(default_factory=list)
    zeros: list[tuple[int, str]] = field(default_factory=list)  # `x.zero_grad()`: an optimizer's or a model's
    calls: list[tuple[int, str]] = field(default_factory=list)  # `f()`: a function of the file may zero them


class _Facts(cst.CSTVisitor):
    """Models, optimizers (and the models they update), frozen models, and each body's statements."""

    def __init__(self, codemod: MissingDetach) -> None:
        self.codemod = codemod
        self.models: set[str] = set()
        self.optimizers: dict[str, set[str]] = {}
        self.frozen: set[str] = set()
        self.bodies: list[_Body] = [_Body()]
        self.done: list[_Body] = []
        self.no_grad = 0

    @property
    def body(self) -> _Body:
        return self.bodies[-1]

    def line(self, node: cst.CSTNode) -> int:
        return self.codemod.first_line(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bodies.append(_Body())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.done.append(self.bodies.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self.done.append(self.bodies.pop())

    def visit_With(self, node: cst.With) -> None:
        if any(self.codemod.qualified_name(_callee(i.item)) in _NO_GRAD for i in node.items):
            self.no_grad += 1

    def leave_With(self, original_node: cst.With) -> None:
        if any(self.codemod.qualified_name(_callee(i.item)) in _NO_GRAD for i in original_node.items):
            self.no_grad -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            names = [target.target] if not isinstance(target.target, (cst.Tuple, cst.List)) else [
                e.value for e in target.target.elements
            ]
            for t in names:
                name = dotted(t)
                if name is None:
                    continue
                self.body.assignments.setdefault(name, []).append(_Assignment(self.line(node), node.value, self.no_grad > 0))
                if self.codemod.is_model_value(node.value):
                    self.models.add(name)
                optimized = self._optimized(node.value)
                if optimized:
                    self.optimizers[name] = optimized

    def _optimized(self, value: cst.BaseExpression) -> set[str]:
        if not isinstance(value, cst.Call):
            return set()
        name = self.codemod.qualified_name(value.func) or ""
        if not name.startswith("torch.optim.") or name.startswith("torch.optim.lr_scheduler."):
            return set()
        found: set[str] = set()
        sources: list[cst.CSTNode] = [value]
        for arg in value.args:  # `params = chain(g.parameters(), e.parameters()); Adam(params)`
            name = dotted(arg.value) if isinstance(arg.value, (cst.Name, cst.Attribute)) else None
            for body in self.bodies if name else ():
                sources += [a.value for a in body.assignments.get(name, ())]
        for source in sources:
            for call in _calls(source):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters"):
                    receiver = dotted(func.value)
                    if receiver:
                        found.add(receiver)
        return found or {ANY_MODEL}  # it updates models not known here: any of them

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self.body.calls.append((self.line(node), func.value))
        if not isinstance(func, cst.Attribute):
            return
        receiver = dotted(func.value)
        method = func.attr.value
        if receiver and method in _MODEL_METHODS:
            self.models.add(receiver)
        if receiver and method == "requires_grad_" and node.args and _is_false(node.args[0].value):
            self.frozen.add(receiver)
        if method == "backward":
            loss = func.value
            if isinstance(loss, cst.Call) and isinstance(loss.func, cst.Attribute) and loss.func.attr.value == "scale":
                loss = loss.args[0].value if loss.args else loss  # scaler.scale(loss).backward()
            self.body.backwards.append((self.line(node), loss))
        elif method == "zero_grad" and receiver:
            self.body.zeros.append((self.line(node), receiver))
        elif method == "step":
            if receiver in self.optimizers or not node.args:
                if receiver:
                    self.body.steps.append((self.line(node), receiver))
            if node.args:  # scaler.step(optimizer)
                optimizer = dotted(node.args[0].value)
                if optimizer:
                    self.body.steps.append((self.line(node), optimizer))

    def visit_For(self, node: cst.For) -> None:
        # for p in model.parameters(): p.requires_grad = False
        it = node.iter
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "parameters":
            model = dotted(it.func.value)
            text = cst.Module(body=[]).code_for_node(node.body).replace(" ", "")
            if model and "requires_grad=False" in text:
                self.frozen.add(model)


_NO_GRAD = {"torch.no_grad", "torch.inference_mode"}
ANY_MODEL = "*"  # what an optimizer updates when its parameters' models are not known

_BACKWARD = Words(r"\bbackward\b")
# Outside the functions that call backward(), what _Facts learns is on lines with these words
# (or names an import on such a line binds: `from torch.optim import Adam`): model methods,
# optimizers, steps, freezing, no_grad blocks, torchvision models.
_SURVEY_WORDS = Words(
    r"\b(?:%s)\b"
    % "|".join(
        sorted(
            {*_MODEL_METHODS, "backward", "step", "optim", "requires_grad_", "no_grad", "inference_mode", "torchvision"}
        )
    )
)
_WORD = re.compile(r"\w+")


def _callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if isinstance(expr, cst.Call) else expr


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _calls(node: cst.CSTNode):
    if isinstance(node, cst.Call):
        yield node
    for child in node.children:
        yield from _calls(child)


@dataclass
class _Flow:
    trainable: bool = False
    offenders: list[tuple[cst.Call, str]] = field(default_factory=list)

    def __or__(self, other: _Flow) -> _Flow:
        return _Flow(self.trainable or other.trainable, self.offenders + other.offenders)


class MissingDetach(MigrationCodemod):
    """Report one model's output feeding another model's loss without `.detach()` (GAN, distillation).

    ## What it does
    For each `loss.backward()` followed by `optimizer.step()`, follows `loss` back through the
    assignments before it. A model whose parameters that optimizer does not update, called on
    inputs that no updated model produced, and whose output reaches `loss` without `.detach()` (or
    `torch.no_grad()`) is reported: the generator's output in a discriminator step, the teacher's
    output in distillation. The generator step of a GAN (gradients must flow *through* the
    discriminator into the generator) is not reported. The loss trains the models of every
    optimizer that steps after it before the next backward() (dualgan's `D_loss.backward();
    opt_D_A.step(); opt_D_B.step()` trains both); an optimizer whose parameters' models are not
    known here (built from a name it cannot follow) may train any. A model whose gradients from
    this loss survive (no `zero_grad()` between) until its own optimizer steps after a later
    backward() gets a different finding: those gradients are applied with the next loss's, which
    is intended only if this loss should train it too (bicyclegan's `loss_GE`), or a leak.

    ## Why is this bad?
    `backward()` runs through the other model too: wasted time and memory, and its gradients pile
    up in its parameters and leak into its next update (unless something zeroes them first). With
    a shared `fake` in a GAN it can also raise "Trying to backward through the graph a second time".

    ## Example
    ```python
    import torch.optim as optim

    opt_g = optim.Adam(G.parameters(), lr=2e-4)
    opt_d = optim.Adam(D.parameters(), lr=2e-4)

    fake = G(z)
    loss_d = bce(D(real), ones) + bce(D(fake), zeros)
    loss_d.backward()
    opt_d.step()
    ```

    ## Use instead
    ```python
    import torch.optim as optim

    opt_g = optim.Adam(G.parameters(), lr=2e-4)
    opt_d = optim.Adam(D.parameters(), lr=2e-4)

    fake = G(z)
    loss_d = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()
    ```

    ## Fix safety
    Findings only; the right place to detach is the author's choice. Models are names whose
    `.parameters()`/`.eval()`/`.state_dict()` are used or that are bound to a model class;
    a model frozen with `requires_grad_(False)` (or a `requires_grad = False` loop) is not reported.

    ## References
    - https://pytorch.org/tutorials/beginner/dcgan_faces_tutorial.html (training loop, `fake.detach()`)
    - https://pytorch.org/docs/stable/notes/autograd.html
    """

    # Its survey reads the functions that call backward() whole, and elsewhere only the
    # statements that say what makes a model, an optimizer or a frozen model (_SURVEY_WORDS).
    PRUNE = True

    def is_model_value(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to", "eval", "train"):
            return self.is_model_value(func.value)
        qualified = self.qualified_name(func) or ""
        if qualified.startswith("torchvision.models."):
            return True
        name = dotted(func)
        return bool(name) and name.rsplit(".", 1)[-1] in self.file.facts.module_classes

    def visit_Module(self, node: cst.Module) -> bool:
        facts = _Facts(self)
        self._module = node
        self._zeroing_functions: frozenset[str] | None = None
        whole = self._backward_bodies() if self.walked_lines is not None else None
        if whole is None:
            self.visit_where(node, facts)  # every statement, with cheap positions for `line()`
        else:
            self.visit_where(node, facts, _SURVEY_WORDS, *self._model_classes(), whole=whole)
        reported: set[int] = set()
        for body in facts.done:
            for line, loss in body.backwards:
                steps = [(l, o) for l, o in sorted(body.steps) if l > line and o in facts.optimizers]
                if not steps:
                    continue
                step = steps[0]
                after = min((b for b, _ in body.backwards if b > line), default=None)  # the next backward()
                own = [s for s in steps if after is None or s[0] < after]
                updated, carried = self._updated(line, own, body, facts), self._updated(line, steps, body, facts, self._zeroing())
                flow = self._flow(loss, line, body, facts, updated, 0)
                if not flow.trainable:
                    continue
                for call, model in flow.offenders:
                    if id(call) in reported:
                        continue
                    reported.add(id(call))
                    later = next((s for s in steps if model in facts.optimizers[s[1]] or ANY_MODEL in facts.optimizers[s[1]]), None)
                    if later is not None and (model in carried or ANY_MODEL in carried):
                        # its gradients survive to its own optimizer's step, after another backward():
                        # a loss that trains it on purpose (bicyclegan's loss_GE) or a leak
                        self.finding(
                            call,
                            f"`{model}`'s output reaches this loss without `.detach()`, and the gradients it gets here"
                            f" are applied by `{later[1]}.step()` (line {later[0]}) with those of the next backward():"
                            f" intended only if this loss should train `{model}` too",
                            suggestion=f"if it should not: `{self.code_for(call)}.detach()` in this loss",
                        )
                        continue
                    suggestion = f"use `{self.code_for(call)}.detach()` in this loss (or compute it under torch.no_grad())"
                    if "grad(" in self._text():  # a gradient penalty differentiates with respect to it
                        suggestion += f"; where autograd.grad takes it as an input: `{self.code_for(call)}.detach().requires_grad_()`"
                    self.finding(
                        call,
                        f"`{model}`'s output reaches the loss that `{step[1]}.step()` (line {step[0]}) updates, "
                        f"without `.detach()`: backward() also runs through `{model}` and fills its gradients",
                        suggestion=suggestion,
                    )
        return False

    @staticmethod
    def _updated(line: int, steps: list[tuple[int, str]], body: _Body, facts: _Facts, zeroing: frozenset[str] = frozenset()) -> set[str]:
        """The models the backward() on `line` trains: those of every optimizer that steps after
        it before their gradients are zeroed again (`loss_GE.backward(); optimizer_E.step();
        ...; optimizer_G.step()` trains G too; dualgan's two steps after one backward both do).
        A call of one of the file's functions in `zeroing` (`reset_grad()`) zeroes them all."""
        updated: set[str] = set()
        for at, optimizer in steps:
            models = facts.optimizers[optimizer]
            if any(line < zero < at and (who == optimizer or who in models) for zero, who in body.zeros):
                continue
            if any(line < call < at and name in zeroing for call, name in body.calls):
                continue
            updated |= models
        return updated

    def _text(self) -> str:
        return self.source if self.source is not None else self.module_code(self._module)

    def _zeroing(self) -> frozenset[str]:
        """The functions of this file that call `zero_grad()` (a GAN tutorial's `reset_grad()`)."""
        if self._zeroing_functions is None:
            source = self._text()
            found: set[str] = set()
            if "zero_grad" in source:
                for node in ast.walk(ast.parse(source)):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                        isinstance(n, ast.Attribute) and n.attr == "zero_grad" for n in ast.walk(node)
                    ):
                        found.add(node.name)
            self._zeroing_functions = frozenset(found)
        return self._zeroing_functions

    def _backward_bodies(self) -> list[cst.FunctionDef] | None:
        """The functions with a `.backward(` of their own: every statement of them is read (a
        loss flows through any assignment before it). None when one is at module level."""
        functions = [
            (first, last, statement)
            for statement, first, last in self.statements()
            if isinstance(statement, cst.FunctionDef)
        ]
        found: dict[int, cst.FunctionDef] = {}
        for line in self.lines_matching(_BACKWARD):
            around = [(last - first, f) for first, last, f in functions if first <= line <= last]
            if not around:
                return None
            innermost = min(around, key=lambda pair: pair[0])[1]
            found[id(innermost)] = innermost
        return list(found.values())

    def _model_classes(self) -> tuple[Words, ...]:
        """The repo's nn.Module classes this file names: `G = Generator()` makes a model."""
        names = self.file.facts.module_classes & set(_WORD.findall(self.source or ""))
        return (Words(r"\b(?:%s)\b" % "|".join(sorted(names))),) if names else ()

    def _flow(
        self, node: cst.CSTNode, line: int, body: _Body, facts: _Facts, updated: set[str], depth: int
    ) -> _Flow:
        if isinstance(node, cst.Attribute) and node.attr.value in _CUTS:
            return _Flow()
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _CUTS:
                return _Flow()
            model = dotted(func)
            if model in facts.models:
                inner = _Flow()
                for arg in node.args:
                    inner = inner | self._flow(arg.value, line, body, facts, updated, depth)
                if model in updated or ANY_MODEL in updated:
                    return _Flow(True, inner.offenders)
                if inner.trainable or model in facts.frozen:
                    return inner
                return _Flow(False, inner.offenders + [(node, model)])
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node)
            if name is not None and name not in facts.models:
                earlier = [a for a in body.assignments.get(name, []) if a.line < line]
                if earlier and depth < 64:  # each step goes to an earlier line: this ends
                    last = max(earlier, key=lambda a: a.line)
                    if last.no_grad:
                        return _Flow()
                    return self._flow(last.value, last.line, body, facts, updated, depth + 1)
                if earlier or isinstance(node, cst.Name):
                    return _Flow()
        flow = _Flow()
        for child in node.children:
            if isinstance(child, (cst.Lambda, cst.FunctionDef)):
                continue
            flow = flow | self._flow(child, line, body, facts, updated, depth)
        return flow
