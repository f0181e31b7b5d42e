"""TM103's plan: from the survey and the file's facts to the edits to make and the findings.

`plan_module` is a pure function: it reads the frozen `ModuleSurvey` (survey.py) and a few facts
about the file (`PlanInputs`) and returns a frozen `DDPPlan` — whether the file is restructured,
which sites each rewrite of the transform (transform.py) applies to, which helpers it needs, and
the findings for what is left as it is, in the order they are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, NamedTuple

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers import ddp
from codemods.helpers.names import dotted

from .survey import LoaderSite, ModuleSurvey, Scope
from .symbols import CALLED_HELPERS, DP_ARGS, LOADER_POSITIONAL
from .syntax import all_nodes, assigned_name, binds, chained_on, contains, is_submodule, references, self_calls

# A condition that decides "several GPUs, so wrap": under torchrun every process must wrap.
GPU_WORDS = ("device_count", "gpu")
# Words of a loader or dataset name that say it is for evaluation, not training.
EVAL_WORDS = ("val", "test", "eval", "dev")
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


@dataclass(frozen=True)
class PlanInputs:
    """What the plan needs to know about the file beyond its survey."""

    launch: str = "train.py"  # the script's name, as the review messages spell its launch
    torchrun_available: bool = True  # the target torch has `torchrun` (symbols.LAUNCHER)
    wrap_kept_by_noqa: bool = False  # a `# noqa: TM103` keeps one of the DataParallel calls
    module_classes: frozenset[str] = frozenset()  # the repository's nn.Module subclasses
    companion_taken: bool = False  # a user's file has the name of the helpers' module beside this one
    notebook: bool = False  # a notebook's cells cannot import a module written beside it reliably


class PlannedFinding(NamedTuple):
    node: cst.CSTNode
    message: str
    suggestion: str | None = None


@dataclass(frozen=True)
class DDPPlan:
    """What the transform does; every node is the original tree's."""

    walk: bool  # whether the transform walks the module at all
    restructure: bool = False  # the DDP scaffolding is generated (else only type tests change)
    walk_only_wraps: bool = False  # the walk reads only the statements naming DataParallel
    held_back: tuple[cst.Call, ...] = ()  # wraps left as they are: the target has no torchrun
    findings: tuple[PlannedFinding, ...] = ()
    wraps: Mapping[cst.Call, cst.BaseExpression] = field(default_factory=dict)  # DataParallel -> its model
    site_reviews: Mapping[cst.Call, str] = field(default_factory=dict)  # DataParallel -> its review
    chains: Mapping[cst.Call, cst.Call] = field(default_factory=dict)  # `DataParallel(m).cuda()` -> the wrap
    gpu_ifexps: frozenset[cst.IfExp] = frozenset()  # `DataParallel(m) if <GPU test> else m`
    moved_ifs: Mapping[cst.If, tuple[int, ...]] = field(default_factory=dict)  # GPU test -> its wraps' indices
    samplers: Mapping[cst.SimpleStatementLine, str] = field(default_factory=dict)  # loader line -> sampler name
    epoch_loops: Mapping[cst.For, tuple[str, ...]] = field(default_factory=dict)  # loop -> loaders to set_epoch
    guarded_lines: frozenset[cst.BaseStatement] = frozenset()  # checkpoint writes: on rank 0 only
    helpers_needed: frozenset[str] = frozenset()  # before the walk adds what its rewrites call


def plan_module(survey: ModuleSurvey, inputs: PlanInputs) -> DDPPlan:
    """The plan for one module: restructured all at once, or each reason it is not as a finding."""
    findings: list[PlannedFinding] = []

    def finding(node: cst.CSTNode, message: str, suggestion: str | None = None) -> None:
        findings.append(PlannedFinding(node, message, suggestion))

    def declined() -> DDPPlan:
        return DDPPlan(walk=True, walk_only_wraps=survey.lean, findings=tuple(findings))

    if inputs.wrap_kept_by_noqa:
        # A DataParallel kept by `# noqa` with a sharded loader would train unsynchronised
        # copies under torchrun: the file is restructured all at once or not at all.
        return DDPPlan(walk=False)
    if not inputs.torchrun_available:
        # The scaffolding is launched with torchrun, which the target torch does not have.
        return DDPPlan(walk=False, held_back=tuple(site.call for site in survey.wraps))
    wraps: dict[cst.Call, cst.BaseExpression] = {}
    parts: list[cst.Call] = []
    for call, line, scope in survey.wraps:
        model = _model_arg(call)
        if model is None:
            finding(
                call,
                "DataParallel with *args/**kwargs or no module: replace it by hand with "
                "DistributedDataParallel under torchrun",
            )
            continue
        target = assigned_name(line, call)
        in_model = scope.klass is not None and _is_module_class(survey, scope.klass, inputs) and dotted(model) != "self"
        if in_model or is_submodule(model) or is_submodule(cst.parse_expression(target) if target else None):
            parts.append(call)
            continue
        wraps[call] = model
    if parts:
        # DDP around part of a model syncs only that part's gradients, and a DataParallel left
        # inside a DDP model cannot run under torchrun: the file is restructured by hand.
        for call in parts:
            finding(
                call,
                "DataParallel on a submodule (part of a model): under DDP the whole model must be "
                "wrapped once; drop this wrapper and wrap the model where it is built",
            )
        for call in wraps:
            finding(
                call,
                "not restructured for DDP: this file also wraps a submodule in DataParallel "
                "(see that finding); wrap the whole model once, then run torch-migrate again",
            )
        wraps = {}
    if not wraps:
        return declined()
    if survey.distributed:
        for call in wraps:
            finding(
                call,
                "this file already has a distributed path (init_process_group/DistributedDataParallel/"
                "DistributedSampler): DataParallel is its single-process branch; not restructured",
                suggestion="launch the distributed path with torchrun, or remove the DataParallel branch by hand",
            )
        return DDPPlan(walk=False, findings=tuple(findings))
    clash = ddp.clashes(survey.module, set(CALLED_HELPERS))
    if clash:
        for call in wraps:
            finding(
                call,
                f"cannot generate the DDP helpers: this module already defines {', '.join(clash)}",
                suggestion="rename them, then run torch-migrate again",
            )
        return DDPPlan(walk=False, findings=tuple(findings))
    if inputs.companion_taken or inputs.notebook:
        where = (
            "a notebook: its kernel may run anywhere, so it cannot rely on a module written beside it"
            if inputs.notebook
            else f"`{ddp.COMPANION}.py` beside this file is not torch-migrate's"
        )
        for call in wraps:
            finding(
                call,
                f"not restructured for DDP: the helpers are imported from a module `{ddp.COMPANION}.py` "
                f"written beside the training script, and this is {where}",
                suggestion="rename that file and run torch-migrate again, or wrap the model with "
                "DistributedDataParallel by hand",
            )
        return declined()
    if not survey.trains:
        for call in wraps:
            finding(
                call,
                "DataParallel outside a training script: DDP scaffolding (a process group, samplers) "
                "belongs only in the entry point that trains (a `__main__` guard or top-level argument "
                "parsing, with backward() and an optimizer step); left as it is",
                suggestion="wrap the model with DistributedDataParallel in the training script under "
                "torchrun; a model that is only loaded or converted needs no wrapper "
                "(strip the `module.` prefix with torch.nn.modules.utils."
                "consume_prefix_in_state_dict_if_present)",
            )
        return declined()
    moved_ifs = _conditional_wraps(survey)
    loaders = _LoaderPlan(survey, finding)
    loaders.plan(next(iter(wraps)))
    return DDPPlan(
        walk=True,
        restructure=True,
        findings=tuple(findings),
        wraps=MappingProxyType(wraps),
        site_reviews=MappingProxyType({call: _site_review(call, survey, moved_ifs, inputs.launch) for call in wraps}),
        chains=MappingProxyType(_chains(survey, wraps)),
        gpu_ifexps=_gpu_ifexps(survey, wraps),
        moved_ifs=MappingProxyType(moved_ifs),
        samplers=MappingProxyType(loaders.samplers),
        epoch_loops=MappingProxyType({loop: tuple(names) for loop, names in loaders.epoch_loops.items()}),
        guarded_lines=frozenset(survey.saves),
        helpers_needed=frozenset(loaders.needed),
    )


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _is_module_class(survey: ModuleSurvey, klass: cst.ClassDef, inputs: PlanInputs) -> bool:
    for base in survey.class_bases.get(id(klass), ()):
        if base.qualified in MODULE_BASES:
            return True
        if base.last in inputs.module_classes:
            return True
    return False


def _model_arg(call: cst.Call) -> cst.BaseExpression | None:
    if arguments.has_star_args(call):
        return None
    bound = arguments.bind(call, DP_ARGS)
    return bound["module"].arg.value if "module" in bound else None


def _evaluates(name: str | None) -> bool:
    """`valid_loader`, `self.testloader`, `eval_set`: named for evaluation."""
    last = (name or "").rsplit(".", 1)[-1].lower()
    words = [w for w in re.split(r"[^a-z]+", last) if w]
    return any(w.startswith(EVAL_WORDS) and not w.startswith("device") for w in words)


def _chains(survey: ModuleSurvey, wraps: Mapping[cst.Call, cst.BaseExpression]) -> dict[cst.Call, cst.Call]:
    """`DataParallel(m).cuda()` / `.to(d)`: the move goes inside, `ddp_wrap(m.cuda())`."""
    chains = {}
    for _, line, _ in survey.wraps:
        for node in all_nodes(line) if line is not None else ():
            under = chained_on(node) if isinstance(node, cst.Call) else None
            if under is not None and under in wraps:
                chains[node] = under
    return chains


def _gpu_ifexps(survey: ModuleSurvey, wraps: Mapping[cst.Call, cst.BaseExpression]) -> frozenset[cst.IfExp]:
    """`DataParallel(m) if <a GPU test> else m`: the wrap takes the test as its condition."""
    found = set()
    for node in survey.ifexps:
        test = _code(node.test).lower()
        if (
            node.body in wraps
            and any(word in test for word in GPU_WORDS)
            and _code(node.orelse).strip() == _code(wraps[node.body]).strip()
        ):
            found.add(node)
    return frozenset(found)


def _conditional_wraps(survey: ModuleSurvey) -> dict[cst.If, tuple[int, ...]]:
    """`if <a GPU test>:` blocks (no else) holding wraps -> the indices of those statements."""
    moved: dict[cst.If, tuple[int, ...]] = {}
    for node in survey.ifs:
        if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
            continue
        test = _code(node.test).lower()
        if not any(word in test for word in GPU_WORDS):
            continue
        indices = tuple(i for i, stmt in enumerate(node.body.body) if stmt in survey.wrap_lines)
        if indices:
            moved[node] = indices
    return moved


def _site_review(call: cst.Call, survey: ModuleSurvey, moved_ifs: Mapping[cst.If, tuple[int, ...]], launch: str) -> str:
    bound = arguments.bind(call, DP_ARGS)
    kept = [k for k in DP_ARGS[1:] if k in bound]
    note = (
        f" `{'`, `'.join(kept)}` apply to the plain run's DataParallel only (under torchrun choose GPUs "
        "with CUDA_VISIBLE_DEVICES)."
        if kept
        else ""
    )
    branch = survey.conditions.get(call)
    if branch is not None and branch not in moved_ifs:
        note += (
            f" The wrap stays under `if {_code(branch.test)}:`; under torchrun every process must take"
            " that branch, or their gradients are not synchronised."
        )
    return (
        "DataParallel -> DDP scaffolding. `python "
        f"{launch}` runs one process as before (DataParallel over the GPUs when there are several); launch "
        f"`torchrun --nproc_per_node=N {launch}` to train with DDP. batch_size is now per process "
        "(the global batch is N times larger); the builtin print is silenced on ranks other than 0 (logging,"
        " sys.stdout.write and a `print` the file rebinds still write on every rank)." + note
    )


class _LoaderPlan:
    """Which training DataLoaders get a DistributedSampler, and which epoch loops reshuffle them."""

    def __init__(self, survey: ModuleSurvey, finding) -> None:
        self.survey = survey
        self.finding = finding
        self.samplers: dict[cst.SimpleStatementLine, str] = {}
        self.epoch_loops: dict[cst.For, list[str]] = {}
        self.needed: set[str] = set()

    def plan(self, first_wrap: cst.Call) -> None:
        training = []
        for loader in self.survey.loaders:
            bound = arguments.bind(loader.call, LOADER_POSITIONAL)
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
            if _evaluates(loader.target) or _evaluates(dotted(bound["dataset"].arg.value) if "dataset" in bound else None):
                continue  # a shuffled validation loader: sharding it would report one rank's share
            training.append(loader)
            why = _cannot_shard(loader, bound)
            if why:
                self.finding(
                    loader.call,
                    f"{why}: give the training DataLoader `sampler=DistributedSampler(dataset)` under torchrun "
                    "(shuffle=False in the DataLoader, shuffle in the sampler) and call "
                    "`sampler.set_epoch(epoch)` at the top of each epoch",
                )
                continue
            self.samplers[loader.line] = self._sampler_name(loader.target)
            self.needed.add("ddp_sampler")
            loops = self._epoch_loops_for(loader)
            if not loops:
                self.finding(
                    loader.call,
                    f"no `for epoch in range(...)` loop uses `{loader.target}` here: call "
                    f"`ddp_set_epoch({loader.target}, epoch)` (from {ddp.COMPANION}) at the top of each "
                    "epoch by hand, or every epoch sees the same shuffle under torchrun",
                )
            for loop in loops:
                self.epoch_loops.setdefault(loop, []).append(loader.target)
                self.needed.add("ddp_set_epoch")
        if not training:
            self.finding(
                first_wrap,
                "no shuffled training DataLoader is built in this file: under torchrun give the training "
                "DataLoader `sampler=DistributedSampler(dataset)` (shuffle moved into the sampler) and call "
                "`sampler.set_epoch(epoch)` each epoch, or every process trains on all the data",
            )

    def _sampler_name(self, target: str) -> str:
        last = target.rsplit(".", 1)[-1]
        base = last.replace("loader", "sampler") if "loader" in last else f"{last}_sampler"
        name = base
        while name in self.survey.names or name in set(self.samplers.values()):
            name += "_"
        return name

    def _epoch_loops_for(self, loader: LoaderSite) -> list[cst.For]:
        found = []
        for loop, scope in self.survey.epoch_loops:
            if loop in loader.inside or not self._uses_loader(loop, scope, loader.target):
                continue
            if not isinstance(loop.body, cst.IndentedBlock):
                continue
            if "." in loader.target:
                if scope.klass is not loader.scope.klass:
                    continue
            elif scope.func is not loader.scope.func:
                continue
            if any(contains(outer, loop) for outer in found):
                continue
            found = [f for f in found if not contains(loop, f)] + [loop]
        return found

    def _uses_loader(self, loop: cst.For, scope: Scope, target: str) -> bool:
        """The epoch loop names the loader, or (for `self.x`) calls a method of its class that does."""
        if references(loop.body, target):
            return True
        functions, methods = self.survey.functions, self.survey.methods
        if "." not in target and scope.func is None:
            # `for epoch in range(n): train(epoch)` where the module's `def train` reads the global loader
            called = {n.func.value for n in all_nodes(loop.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}
            return any(
                references(functions[name].body, target) and not binds(functions[name], target)
                for name in called
                if name in functions
            )
        if not target.startswith("self.") or scope.klass is None:
            return False
        called = self_calls(loop.body)
        return any(
            references(methods[(id(scope.klass), name)].body, target)
            for name in called
            if (id(scope.klass), name) in methods
        )


def _cannot_shard(loader: LoaderSite, bound: dict) -> str | None:
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
