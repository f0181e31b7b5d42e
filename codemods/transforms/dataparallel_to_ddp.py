"""TM103: `nn.DataParallel(model)` -> DistributedDataParallel scaffolding that also runs as one process."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import libcst as cst

from codemods.helpers import args as A
from codemods.helpers import ddp
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted

DATAPARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)
DDP_NAME = "torch.nn.parallel.DistributedDataParallel"
DDP = frozenset({DDP_NAME, "torch.nn.parallel.distributed.DistributedDataParallel"})
DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")
# A condition that decides "several GPUs, so wrap": under torchrun every process must wrap.
GPU_WORDS = ("device_count", "gpu")
# Calls that may appear in a print/log statement we move under `if is_main_process():` (skipping
# anything else on the other ranks could skip a side effect).
PURE_METHODS = frozenset({"item", "format", "size", "dim", "numel", "tolist", "keys", "values", "items", "join"})
PURE_FUNCTIONS = frozenset({"str", "len", "round", "float", "int", "repr", "abs", "min", "max", "sum", "type"})
PURE_QUALIFIED = frozenset({"time.time", "torch.cuda.device_count", "torch.cuda.is_available"})
LOG_LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})


def triggers() -> tuple[str, ...]:
    return (r"\bDataParallel\b",)


@dataclass
class _Scope:
    func: cst.CSTNode | None = None
    klass: cst.ClassDef | None = None


@dataclass
class _Loader:
    call: cst.Call
    line: cst.SimpleStatementLine | None
    target: str | None
    scope: _Scope
    shuffle: cst.BaseExpression | None = None
    inside: list[cst.For] = field(default_factory=list)


class _Survey(cst.CSTVisitor):
    """One read of the original tree: every site TM103 may touch, with its enclosing scope."""

    def __init__(self, codemod: "DataParallelToDDP") -> None:
        self.cm = codemod
        self.scopes: list[_Scope] = [_Scope()]
        self.lines: list[cst.SimpleStatementLine] = []
        self.fors: list[cst.For] = []
        self.dp_calls: list[tuple[cst.Call, cst.SimpleStatementLine | None, _Scope]] = []
        self.wrapped: set[str] = set()
        self.wrap_lines: dict[cst.SimpleStatementLine, cst.Call] = {}
        self.loaders: list[_Loader] = []
        self.epoch_loops: list[tuple[cst.For, _Scope]] = []
        self.saves: list[cst.SimpleStatementLine] = []
        self.prints: list[cst.SimpleStatementLine] = []
        self.ifs: list[cst.If] = []
        self.names: set[str] = set()
        self.not_names: set[int] = set()
        self.methods: dict[tuple[int, str], cst.FunctionDef] = {}
        self.loggers: set[str] = set()

    # scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        klass = self.scopes[-1].klass
        if klass is not None and self.scopes[-1].func is None:
            self.methods[(id(klass), node.name.value)] = node
        self.scopes.append(_Scope(node, klass))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(_Scope(None, node))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.lines.append(node)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            call = node.body[0].value
            name = self.cm.qualified_name(call.func)
            if name == "torch.save":
                self.saves.append(node)
            elif self._is_log(call) and self._pure(call):
                self.prints.append(node)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
            assign = node.body[0]
            value = assign.value
            if isinstance(value, cst.Call) and self.cm.qualified_name(value.func) == "logging.getLogger":
                for t in assign.targets:
                    if dotted(t.target):
                        self.loggers.add(dotted(t.target))

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.lines.pop()

    def visit_For(self, node: cst.For) -> None:
        self.fors.append(node)
        if isinstance(node.target, cst.Name) and self._counts_epochs(node.iter):
            self.epoch_loops.append((node, self.scopes[-1]))

    def leave_For(self, original_node: cst.For) -> None:
        self.fors.pop()

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_names.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_names.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_names:
            self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.cm.qualified_name(node.func)
        line = self.lines[-1] if self.lines else None
        if name in DATAPARALLEL:
            self.dp_calls.append((node, line, self.scopes[-1]))
            target = _assigned(line, node)
            if target is not None:
                self.wrapped.add(target)
                self.wrap_lines[line] = node
        elif name in DATALOADER:
            target = _assigned(line, node, chain=False)
            bound = A.bind(node, LOADER_POSITIONAL)
            shuffle = bound["shuffle"].arg.value if "shuffle" in bound else None
            self.loaders.append(
                _Loader(node, line if target else None, target, self.scopes[-1], shuffle, list(self.fors))
            )

    # predicates
    def _counts_epochs(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = dotted(expr.func) or ""
        if func in {"range", "trange"} or func.endswith(".trange"):
            return True
        if (func == "tqdm" or func.endswith(".tqdm")) and expr.args:
            return self._counts_epochs(expr.args[0].value)
        return False

    def _is_log(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name) and call.func.value == "print":
            return "print" not in self.cm.imports.shadowed
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in LOG_LEVELS:
            owner = dotted(call.func.value)
            return owner in self.loggers or self.cm.qualified_name(call.func.value) == "logging"
        return False

    def _pure(self, call: cst.Call) -> bool:
        checker = _PureCheck(self.cm)
        for arg in call.args:
            arg.value.visit(checker)
        return checker.pure


class _PureCheck(cst.CSTVisitor):
    def __init__(self, codemod: MigrationCodemod) -> None:
        self.cm = codemod
        self.pure = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in PURE_FUNCTIONS:
            return
        if self.cm.qualified_name(func) in PURE_QUALIFIED:
            return
        if isinstance(func, cst.Attribute) and func.attr.value in PURE_METHODS:
            return
        self.pure = False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _assigned(line: cst.SimpleStatementLine | None, call: cst.Call, chain: bool = True) -> str | None:
    """`x` / `self.x` when `line` is `x = call` (or `x = call.cuda()/.to(...)` with chain)."""
    if line is None or len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return None
    assign = line.body[0]
    if len(assign.targets) != 1:
        return None
    value = assign.value
    if chain and _chained_on(value) is call:
        value = call
    if value is not call:
        return None
    return dotted(assign.targets[0].target)


def _chained_on(expr: cst.BaseExpression) -> cst.Call | None:
    """The call under `call.cuda(...)` / `call.to(...)`."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in {"cuda", "to"}
        and isinstance(expr.func.value, cst.Call)
    ):
        return expr.func.value
    return None


def _references(node: cst.CSTNode, name: str) -> bool:
    class Finder(cst.CSTVisitor):
        found = False

        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                Finder.found = True

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if dotted(n) == name:
                Finder.found = True
            return True

    Finder.found = False
    node.visit(Finder())
    return Finder.found


def _self_calls(node: cst.CSTNode) -> set[str]:
    """Names of `self.method(...)` calls in `node`."""

    class Finder(cst.CSTVisitor):
        found: set[str] = set()

        def visit_Call(self, n: cst.Call) -> None:
            if isinstance(n.func, cst.Attribute) and m_self(n.func.value):
                Finder.found.add(n.func.attr.value)

    def m_self(e: cst.BaseExpression) -> bool:
        return isinstance(e, cst.Name) and e.value == "self"

    Finder.found = set()
    node.visit(Finder())
    return Finder.found


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    class Finder(cst.CSTVisitor):
        found = False

        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is target:
                Finder.found = True
            return not Finder.found

    Finder.found = False
    node.visit(Finder())
    return Finder.found


def _call(name: str, *args: cst.BaseExpression, **kwargs: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Name(name),
        args=[cst.Arg(a) for a in args]
        + [
            cst.Arg(
                v,
                keyword=cst.Name(k),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            for k, v in kwargs.items()
        ],
    )


class DataParallelToDDP(MigrationCodemod):
    """Replace `nn.DataParallel` with DistributedDataParallel scaffolding that still runs as one process.

    ## What it does
    Rewrites `nn.DataParallel(model, ...)` (any import form, also `DataParallel(m).cuda()` /
    `.to(device)`, `device_ids=`, `self.model = ...`, a wrap under `if torch.cuda.device_count() > 1:`)
    into `ddp_wrap(model)` and generates small helpers into the file itself. As `python train.py`
    the script runs one process with no process group and an unwrapped model, as before on one
    device. As `torchrun --nproc_per_node=N train.py` it joins the process group from the
    environment (`nccl` with CUDA, `gloo` without; `torch.cuda.set_device(LOCAL_RANK)`), moves the
    model to its device before wrapping it in `DistributedDataParallel`, gives the shuffled
    training `DataLoader` a `DistributedSampler` (shuffle moved into it, `set_epoch(epoch)` at the
    top of the epoch loop), runs `torch.save` and simple `print`/logging only on rank 0, replaces
    `model.module` by `unwrap_model(model)` (works wrapped or not) and leaves the process group at
    exit.

    ## Why is this bad?
    `DataParallel` is single-process multi-thread: it re-scatters the model every step, is slower
    than `DistributedDataParallel` even on one machine, does not work across machines and is
    documented as not recommended.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = nn.DataParallel(Net()).cuda()
    for epoch in range(10):
        for x, y in loader:
            ...
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    loader_sampler = ddp_sampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=32, shuffle=loader_sampler is None, sampler=loader_sampler)
    model = ddp_wrap(Net().cuda())
    for epoch in range(10):
        ddp_set_epoch(loader, epoch)
        for x, y in loader:
            ...
    if is_main_process():
        torch.save(unwrap_model(model).state_dict(), "model.pt")
    ```

    ## Fix safety
    Review. As one process the script behaves as before on one device, but no longer splits
    batches over several GPUs; launch with `torchrun` for that, and note that `batch_size` is then
    per process (the global batch is N times larger: scale the learning rate or the batch size).
    `device_ids=`/`output_device=` are dropped (choose GPUs with `CUDA_VISIBLE_DEVICES`).
    What cannot be restructured (a DataLoader built in another file or inline, a sampler already
    set, no `for epoch in range(...)` loop) is reported as a finding with what to add by hand.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
    - https://pytorch.org/docs/stable/elastic/run.html (torchrun)
    """

    CODE = "TM103"
    SAFETY = "review"
    DESCRIPTION = "nn.DataParallel(model) -> DDP scaffolding that runs as one process or under torchrun"

    def visit_Module(self, node: cst.Module) -> bool:
        survey = _Survey(self)
        node.visit(survey)
        self.s = survey
        self.active = False
        self.needed: set[str] = set()
        self.dp_sites: dict[cst.Call, cst.BaseExpression] = {}
        self.chains: dict[cst.Call, cst.Call] = {}
        self.loader_sites: dict[cst.SimpleStatementLine, tuple[_Loader, str]] = {}
        self.epoch_sites: dict[cst.For, list[str]] = {}
        self.guard_lines: set[cst.SimpleStatementLine] = set()
        self.moved_ifs: dict[cst.If, list[int]] = {}
        self.guards: set[int] = set()
        self.save_paths: dict[int, str] = {}
        self.prints_reviewed = False
        self.launch = os.path.basename(self.file.path) if self.file.path != "<string>" else "train.py"

        for call, line, _ in survey.dp_calls:
            model = self._model_arg(call)
            if model is None:
                self.finding(
                    call,
                    "DataParallel with *args/**kwargs or no module: replace it by hand with "
                    "DistributedDataParallel under torchrun",
                )
                continue
            self.dp_sites[call] = model
        if not self.dp_sites:
            return True  # only `isinstance(m, DataParallel)` tests may change here
        clash = ddp.clashes(node, {"ddp_wrap", "ddp_sampler", "ddp_set_epoch", "is_main_process", "unwrap_model"})
        if clash:
            for call in self.dp_sites:
                self.finding(
                    call,
                    f"cannot generate the DDP helpers: this module already defines {', '.join(clash)}",
                    suggestion="rename them, then run torch-migrate again",
                )
            return False
        self.active = True
        self._plan_chains(survey)
        self._plan_conditional_wraps(survey)
        self._plan_loaders(survey)
        self.guard_lines = set(survey.saves) | set(survey.prints)
        return True

    # -- planning ------------------------------------------------------------------------------

    def _model_arg(self, call: cst.Call) -> cst.BaseExpression | None:
        if A.has_star_args(call):
            return None
        bound = A.bind(call, ("module", "device_ids", "output_device", "dim"))
        return bound["module"].arg.value if "module" in bound else None

    def _plan_chains(self, survey: _Survey) -> None:
        """`DataParallel(m).cuda()` / `.to(d)`: the move goes inside, `ddp_wrap(m.cuda())`."""
        sites = self.dp_sites

        class Chains(cst.CSTVisitor):
            found: dict[cst.Call, cst.Call] = {}

            def visit_Call(inner, node: cst.Call) -> None:
                under = _chained_on(node)
                if under is not None and under in sites:
                    Chains.found[node] = under

        Chains.found = {}
        for call, line, _ in survey.dp_calls:
            if line is not None:
                line.visit(Chains())
        self.chains = Chains.found

    def _plan_conditional_wraps(self, survey: _Survey) -> None:
        for node in survey.ifs:
            if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
                continue
            test = cst.Module(body=[]).code_for_node(node.test).lower()
            if not any(word in test for word in GPU_WORDS):
                continue
            indices = [i for i, stmt in enumerate(node.body.body) if stmt in survey.wrap_lines]
            if indices:
                self.moved_ifs[node] = indices

    def _plan_loaders(self, survey: _Survey) -> None:
        training = []
        for loader in survey.loaders:
            bound = A.bind(loader.call, LOADER_POSITIONAL)
            has_sampler = any(
                k in bound and not (isinstance(bound[k].arg.value, cst.Name) and bound[k].arg.value.value == "None")
                for k in ("sampler", "batch_sampler")
            )
            if has_sampler:
                self.finding(
                    loader.call,
                    "this DataLoader has its own sampler: under torchrun every process iterates all of it; "
                    "shard it by hand (e.g. a DistributedSampler, or the sampler's indices split by rank)",
                )
                continue
            shuffle = loader.shuffle
            if shuffle is None or (isinstance(shuffle, cst.Name) and shuffle.value in {"False", "None"}):
                continue  # not a training loader: every process reads all of it, as before
            training.append(loader)
            why = self._cannot_shard(loader, bound)
            if why:
                self.finding(
                    loader.call,
                    f"{why}: give the training DataLoader `sampler=DistributedSampler(dataset)` under torchrun "
                    "(shuffle=False in the DataLoader, shuffle in the sampler) and call "
                    "`sampler.set_epoch(epoch)` at the top of each epoch",
                )
                continue
            sampler = self._sampler_name(loader.target)
            self.loader_sites[loader.line] = (loader, sampler)
            self.needed.add("ddp_sampler")
            loops = self._epoch_loops_for(loader, survey)
            if not loops:
                self.finding(
                    loader.call,
                    f"no `for epoch in range(...)` loop uses `{loader.target}` here: call "
                    f"`ddp_set_epoch({loader.target}, epoch)` at the top of each epoch by hand, "
                    "or every epoch sees the same shuffle under torchrun",
                )
            for loop in loops:
                self.epoch_sites.setdefault(loop, []).append(loader.target)
                self.needed.add("ddp_set_epoch")
        if not training:
            first = next(iter(self.dp_sites))
            self.finding(
                first,
                "no shuffled DataLoader is built in this file: under torchrun give the training "
                "DataLoader `sampler=DistributedSampler(dataset)` (shuffle moved into the sampler) and call "
                "`sampler.set_epoch(epoch)` each epoch, or every process trains on all the data",
            )

    def _cannot_shard(self, loader: _Loader, bound: dict) -> str | None:
        if loader.target is None or loader.line is None:
            return "this DataLoader is not assigned to a name"
        if any(a.star == "**" for a in loader.call.args):
            return "this DataLoader takes **kwargs"
        if "dataset" not in bound or dotted(bound["dataset"].arg.value) is None:
            return "this DataLoader's dataset is not a plain name"
        shuffle = loader.shuffle
        literal = isinstance(shuffle, cst.Name) and shuffle.value == "True"
        if not literal and dotted(shuffle) is None:
            return "its `shuffle=` is not True or a plain name"
        return None

    def _sampler_name(self, target: str) -> str:
        last = target.rsplit(".", 1)[-1]
        base = last.replace("loader", "sampler") if "loader" in last else f"{last}_sampler"
        name = base
        while name in self.s.names or name in {s for _, s in self.loader_sites.values()}:
            name += "_"
        return name

    def _epoch_loops_for(self, loader: _Loader, survey: _Survey) -> list[cst.For]:
        found = []
        for loop, scope in survey.epoch_loops:
            if loop in loader.inside or not self._uses_loader(loop, scope, loader.target, survey):
                continue
            if not isinstance(loop.body, cst.IndentedBlock):
                continue
            if "." in loader.target:
                if scope.klass is not loader.scope.klass:
                    continue
            elif scope.func is not loader.scope.func:
                continue
            if any(_contains(outer, loop) for outer in found):
                continue
            found = [f for f in found if not _contains(loop, f)] + [loop]
        return found

    def _uses_loader(self, loop: cst.For, scope: _Scope, target: str, survey: _Survey) -> bool:
        """The epoch loop names the loader, or (for `self.x`) calls a method of its class that does."""
        if _references(loop.body, target):
            return True
        if not target.startswith("self.") or scope.klass is None:
            return False
        called = _self_calls(loop.body)
        return any(
            _references(survey.methods[(id(scope.klass), name)].body, target)
            for name in called
            if (id(scope.klass), name) in survey.methods
        )

    # -- rewriting -------------------------------------------------------------------------------

    def _site_review(self, call: cst.Call) -> str:
        bound = A.bind(call, ("module", "device_ids", "output_device", "dim"))
        dropped = [k for k in ("device_ids", "output_device", "dim") if k in bound]
        note = f" `{'`, `'.join(dropped)}` dropped (choose GPUs with CUDA_VISIBLE_DEVICES)." if dropped else ""
        return (
            "DataParallel -> DDP scaffolding. `python "
            f"{self.launch}` runs one process as before, on one device; launch "
            f"`torchrun --nproc_per_node=N {self.launch}` to train with DDP. batch_size is now per process "
            "(the global batch is N times larger)." + note
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node in self.dp_sites and self.active:
            self.needed.add("ddp_wrap")
            model = A.bind(updated_node, ("module",))["module"].arg.value
            replacement = _call("ddp_wrap", model)
            return self.rewrite(original_node, updated_node, replacement, review=self._site_review(original_node))
        if original_node in self.chains and self.active:
            inner = updated_node.func.value
            if not (isinstance(inner, cst.Call) and dotted(inner.func) == "ddp_wrap"):
                return updated_node  # the wrap itself was kept (noqa)
            model = inner.args[0].value
            moved = updated_node.with_changes(func=updated_node.func.with_changes(value=model))
            return self.rewrite(
                original_node,
                updated_node,
                _call("ddp_wrap", moved),
                review="the model is moved to its device before it is wrapped (DDP needs that order)",
            )
        if (
            isinstance(original_node.func, cst.Name)
            and original_node.func.value == "isinstance"
            and len(original_node.args) == 2
            and not A.has_star_args(original_node)
        ):
            return self._isinstance(original_node, updated_node)
        return updated_node

    def _isinstance(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """`isinstance(m, DataParallel)` (or a tuple holding it) also accepts DDP."""
        kinds = updated.args[1].value
        names = [self.qualified_name(e.value) for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [
            self.qualified_name(kinds)
        ]
        if not any(n in DATAPARALLEL for n in names) or any(n in DDP for n in names):
            return updated
        spelled = self.imports.local_name_for(DDP_NAME)
        if spelled is None:
            spelled = DDP_NAME
            self.add_needed_import("torch")
        ddp_type = cst.parse_expression(spelled)
        if isinstance(kinds, cst.Tuple):
            elements = list(kinds.elements)
            last = elements[-1]
            if isinstance(last.comma, cst.Comma) and len(elements) > 1:
                elements.append(cst.Element(ddp_type, comma=last.comma))
                elements[-2] = last.with_changes(comma=elements[-3].comma if len(elements) > 2 else last.comma)
            else:
                elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                elements.append(cst.Element(ddp_type))
            new_kinds = kinds.with_changes(elements=elements)
        else:
            new_kinds = cst.Tuple([cst.Element(kinds), cst.Element(ddp_type)])
        args = [updated.args[0], updated.args[1].with_changes(value=new_kinds)]
        return self.rewrite(
            original,
            updated,
            updated.with_changes(args=args),
            review="a DataParallel type test now also accepts DistributedDataParallel",
        )

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if not self.active or original_node.attr.value != "module":
            return updated_node
        owner = dotted(original_node.value)
        if owner is None or owner not in self.s.wrapped or self._in_target:
            return updated_node
        self.needed.add("unwrap_model")
        return self.rewrite(
            original_node,
            updated_node,
            _call("unwrap_model", updated_node.value),
            review="`.module` works only on a wrapped model; unwrap_model() works wrapped or not",
        )

    _in_target = 0

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._in_target += 1

    def leave_AssignTarget(self, original_node: cst.AssignTarget, updated_node: cst.AssignTarget) -> cst.AssignTarget:
        self._in_target -= 1
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ):
        if not self.active:
            return updated_node
        if original_node in self.loader_sites:
            return self._shard(original_node, updated_node)
        if original_node in self.guard_lines:
            self.needed.add("is_main_process")
            guarded = cst.If(
                test=_call("is_main_process"),
                body=cst.IndentedBlock(body=[updated_node.with_changes(leading_lines=[])]),
                leading_lines=updated_node.leading_lines,
            )
            if original_node in self.s.saves:
                review = "torch.save (and a use of its file right after it) runs on rank 0 only under torchrun"
            elif not self.prints_reviewed:
                # one review item for all the output, not one per print
                self.prints_reviewed = True
                count = len(self.s.prints)
                review = f"print/logging runs on rank 0 only under torchrun ({count} statement(s) in this file)"
            else:
                review = None
            result = self.rewrite(original_node, updated_node, guarded, review=review)
            if result is guarded:
                self.guards.add(id(guarded))
                path = self._saved_path(original_node)
                if path is not None:
                    self.save_paths[id(guarded)] = path
            return result
        return updated_node

    def _shard(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        loader, sampler = self.loader_sites[original]
        assign = updated.body[0]
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
            return updated
        call = assign.value
        bound = A.bind(call, LOADER_POSITIONAL)
        shuffle = bound["shuffle"]
        dataset = bound["dataset"].arg.value
        is_none = cst.Comparison(
            cst.Name(sampler), [cst.ComparisonTarget(cst.Is(), cst.Name("None"))]
        )
        literal = isinstance(shuffle.arg.value, cst.Name) and shuffle.arg.value.value == "True"
        value = is_none if literal else cst.BooleanOperation(shuffle.arg.value, cst.And(), is_none)
        args = list(call.args)
        args[shuffle.index] = args[shuffle.index].with_changes(value=value)
        last = args[-1]
        new = A.as_keyword(cst.Arg(cst.Name(sampler)), "sampler")
        if "\n" in cst.Module(body=[]).code_for_node(last.comma) if isinstance(last.comma, cst.Comma) else False:
            # one argument per line: the new one goes on its own line, after the last
            between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else last.comma
            args[-1] = last.with_changes(comma=between)
            args.append(new.with_changes(comma=last.comma))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(new)
        make = cst.SimpleStatementLine(
            body=[
                cst.Assign(
                    targets=[cst.AssignTarget(cst.Name(sampler))],
                    value=_call("ddp_sampler", dataset, shuffle=cst.Name("True") if literal else shuffle.arg.value),
                )
            ],
            leading_lines=updated.leading_lines,
        )
        line = updated.with_changes(body=[assign.with_changes(value=call.with_changes(args=args))], leading_lines=[])
        return self.rewrite(
            original,
            updated,
            cst.FlattenSentinel([make, line]),
            review="under torchrun this DataLoader gets a DistributedSampler (shuffle moved into it); "
            "a plain run samples exactly as before",
        )

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if not self.active or original_node not in self.epoch_sites or not isinstance(updated_node.target, cst.Name):
            return updated_node
        body = updated_node.body
        calls = [
            cst.SimpleStatementLine([cst.Expr(_call("ddp_set_epoch", cst.parse_expression(t), updated_node.target))])
            for t in self.epoch_sites[original_node]
        ]
        return self.rewrite(
            original_node,
            updated_node,
            updated_node.with_changes(body=body.with_changes(body=[*calls, *body.body])),
            review="the DistributedSampler reshuffles each epoch (set_epoch); a no-op in a plain run",
        )

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        if not self.active or original_node not in self.moved_ifs:
            return updated_node
        body = list(updated_node.body.body)
        if len(body) != len(original_node.body.body):
            return updated_node
        indices = self.moved_ifs[original_node]
        moved = [body[i].with_changes(leading_lines=[]) for i in indices]
        kept = [s for i, s in enumerate(body) if i not in indices]
        review = "the wrap no longer depends on the GPU count: under torchrun every process must wrap"
        if not kept:
            moved[0] = moved[0].with_changes(leading_lines=updated_node.leading_lines)
            return self.rewrite(original_node, updated_node, cst.FlattenSentinel(moved), review=review)
        head = updated_node.with_changes(body=updated_node.body.with_changes(body=kept))
        return self.rewrite(original_node, updated_node, cst.FlattenSentinel([head, *moved]), review=review)

    def _saved_path(self, line: cst.SimpleStatementLine) -> str | None:
        """The file a `torch.save(obj, path)` line writes, when `path` is a plain name."""
        if line not in self.s.saves:
            return None
        call = line.body[0].value
        positional = [a for a in call.args if a.keyword is None and not a.star]
        f = positional[1] if len(positional) > 1 else next((a for a in call.args if a.keyword and a.keyword.value == "f"), None)
        return dotted(f.value) if f is not None else None

    def _merge(self, body: list) -> list:
        """Consecutive `if is_main_process():` blocks made here become one; statements right after a
        guarded `torch.save(obj, path)` that use `path` (copying the best checkpoint) join it: on
        other ranks the file may not exist."""
        out: list = []
        for stmt in body:
            prev = out[-1] if out else None
            joins = prev is not None and not any(l.comment for l in stmt.leading_lines) and id(prev) in self.guards
            if joins and id(stmt) in self.guards:
                merged = prev.with_changes(body=prev.body.with_changes(body=[*prev.body.body, *stmt.body.body]))
            elif joins and id(prev) in self.save_paths and _references(stmt, self.save_paths[id(prev)]):
                merged = prev.with_changes(body=prev.body.with_changes(body=[*prev.body.body, stmt]))
            else:
                out.append(stmt)
                continue
            self.guards.add(id(merged))
            path = self.save_paths.get(id(prev)) or self.save_paths.get(id(stmt))
            if path is not None:
                self.save_paths[id(merged)] = path
            out[-1] = merged
        return out

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not self.active or not self.guards:
            return updated_node
        return updated_node.with_changes(body=self._merge(list(updated_node.body)))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.active or not self.rewrites:
            return updated_node  # (isinstance rewrites need no helpers)
        module = updated_node.with_changes(body=self._merge(list(updated_node.body))) if self.guards else updated_node
        bound = ddp.top_level_defs(module)
        for name in ddp.imports_for(self.needed | {"ddp_setup"}):
            if name not in bound:  # an `import os` below a sys.path tweak counts
                self.add_needed_import(name)
        return ddp.with_helpers(module, self.needed, setup_call=True)
