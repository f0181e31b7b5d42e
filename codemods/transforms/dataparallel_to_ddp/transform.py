"""TM103's transform: the libcst transformer that applies the plan (plan.py) to the module.

`visit_Module` surveys the module (survey.py) and plans it; every `leave_` method below then
rewrites only the sites the plan names, and `leave_Module` adds the generated helpers
(codemods/helpers/ddp.py) that the rewrites call.
"""

from __future__ import annotations

import os

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers import ddp
from codemods.base import MigrationCodemod
from codemods.helpers.facts.gpu_selectors import selectors
from codemods.helpers.gpu_selection import gpu_selection
from codemods.helpers.names import dotted
from codemods.helpers.spelling import head, import_forms, retire

from .edits import accepting, helper_call, keep_condition, with_condition, with_sampler
from .plan import DDPPlan, PlanInputs, plan_module
from .survey import ModuleSurvey, survey_module
from .symbols import DATAPARALLEL, DDP, DDP_NAME, DP_ARGS, LAUNCHER, WRAP_WORDS
from .syntax import contains, creates_directory, references, saved_path


class DataParallelToDDP(MigrationCodemod):
    """Replace `nn.DataParallel` with DistributedDataParallel scaffolding that still runs as one process.

    ## What it does
    Rewrites `nn.DataParallel(model, ...)` (any import form, also `DataParallel(m).cuda()` /
    `.to(device)`, `device_ids=`, `self.model = ...`, a wrap under `if torch.cuda.device_count() > 1:`)
    into `ddp_wrap(model)`, in a training entry point only: a file with a `__main__` guard, top-level
    argument parsing or a training loop at module level, whose own code reaches a `backward()` and
    an optimizer `step()`. The helpers it calls are imported from `ddp_helpers.py`, one small module
    written beside the script (shared by the scripts of that folder, never pasted into each). As
    `python train.py` the script runs one process with no process group: DataParallel (with its
    `device_ids=`/`output_device=`) when several GPUs are visible, as before, else the unwrapped
    model. As `torchrun --nproc_per_node=N train.py` it joins the process group from the environment
    (`nccl` with CUDA, `gloo` without; `torch.cuda.set_device(LOCAL_RANK)`), moves the model to its
    device before wrapping it in `DistributedDataParallel`, gives the shuffled training `DataLoader`
    a `DistributedSampler` (shuffle moved into it, `set_epoch(epoch)` at the top of the epoch loop),
    prints on rank 0 only, writes each checkpoint on rank 0 only (the whole write: the
    `with open(...)` around a `torch.save`, the directory made right before it, a copy of the file
    right after it), replaces `model.module` by `unwrap_model(model)` (works wrapped or not) and
    leaves the process group at exit.

    ## Why is this bad?
    `DataParallel` is single-process multi-thread: it re-scatters the model every step, is slower
    than `DistributedDataParallel` even on one machine, does not work across machines and is
    documented as not recommended.

    ## Example
    ```python
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    if __name__ == "__main__":
        loader = DataLoader(dataset, batch_size=32, shuffle=True)
        model = nn.DataParallel(Net()).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
        torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.data import DataLoader

    from ddp_helpers import ddp_sampler, ddp_set_epoch, ddp_setup, ddp_wrap, is_main_process, unwrap_model

    ddp_setup()  # joins the process group under torchrun; a no-op in a plain run


    if __name__ == "__main__":
        sampler = ddp_sampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=32, shuffle=sampler is None, sampler=sampler)
        model = ddp_wrap(Net().cuda())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            ddp_set_epoch(loader, epoch)
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
        if is_main_process():
            torch.save(unwrap_model(model).state_dict(), "model.pt")
    ```

    ## Fix safety
    Review. As one process the script behaves as before (DataParallel over several GPUs); launch
    with `torchrun` for DDP, and note that `batch_size` is then per process (the global batch is N
    times larger: scale the learning rate or the batch size). Under torchrun `device_ids=` and
    `output_device=` are ignored (choose GPUs with `CUDA_VISIBLE_DEVICES`).
    What cannot be restructured (a DataLoader built in another file or inline, a sampler already
    set, no `for epoch in range(...)` loop) is reported as a finding with what to add by hand.
    Left as they are, with a finding: a DataParallel outside a training entry point (a library
    module, a model base class, metrics, an inference or conversion script whose wrapper only adds
    the `module.` prefix: importing it under torchrun must start no process group), a file that
    wraps a submodule (`model.features = DataParallel(model.features)`, or one inside an
    `nn.Module`: DDP must wrap the whole model once), a file that already has its own distributed path (`init_process_group`, DDP), and a file where
    one DataParallel carries `# noqa: TM103` (a half-migrated file would train unsynchronised
    copies), a notebook, and a file beside which a file of the user's is named `ddp_helpers.py`.
    `ddp_setup()` runs right after the imports, so this rank's GPU is current before any tensor is
    made (after the script's own GPU selection, `os.environ["CUDA_VISIBLE_DEVICES"] = ...` or a
    helper that sets it, where it has one at the top; where it selects in `main()` or in a block that
    also uses CUDA, no call is added and a finding says where to put it); under torchrun it silences `print` on the other ranks (`print(..., force=True)` still
    prints); logging is left as it is.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
    - https://pytorch.org/docs/stable/elastic/run.html (torchrun)
    """

    survey: ModuleSurvey
    plan: DDPPlan

    def visit_Module(self, node: cst.Module) -> bool:
        self._module = node  # its imports, read when a rewrite may retire one
        self.survey = survey = survey_module(self, node)
        inputs = PlanInputs(
            launch=os.path.basename(self.file.path) if self.file.path != "<string>" else "train.py",
            wrap_kept_by_noqa=any(self.suppressed(site.call) for site in survey.wraps),
            torchrun_available=self.available(LAUNCHER),
            module_classes=self.file.facts.module_classes,
            companion_taken=ddp.companion_taken(self.file.path),
            notebook=self.file.path.endswith(".ipynb"),
        )
        self.plan = plan = plan_module(survey, inputs)
        for call in plan.held_back:
            self.hold_back(call, LAUNCHER)
        for found in plan.findings:
            self.finding(found.node, found.message, suggestion=found.suggestion)
        if plan.walk_only_wraps:
            # only `isinstance(m, DataParallel)` tests can change: the statements that spell it
            self.walk_only(WRAP_WORDS)
        # what the walk adds up as it rewrites
        self.needed: set[str] = set(plan.helpers_needed)
        # The `if is_main_process():` blocks made here -> the file their torch.save writes (or
        # None). Keyed by the nodes themselves, which the dict keeps alive: an id() of a block
        # discarded later could be the id of any node made after it.
        self.guards: dict[cst.If, str | None] = {}
        self._enclosing: list = []  # the functions and classes the walk is in
        self._in_target = 0
        return plan.walk

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node in self.plan.wraps and self.plan.restructure:
            self.needed.add("ddp_wrap")
            bound = arguments.bind(updated_node, DP_ARGS)
            model = bound["module"].arg.value
            options = {k: bound[k].arg.value for k in DP_ARGS[1:] if k in bound}
            replacement = helper_call("ddp_wrap", model, **options)
            review = self.plan.site_reviews[original_node]
            result = self.rewrite(original_node, updated_node, replacement, review=review)
            if result is replacement:  # `import torch.nn as nn` may have served DataParallel only
                retire(self, import_forms(self._module), head(original_node.func))
            return result
        if original_node in self.plan.chains and self.plan.restructure:
            inner = updated_node.func.value
            if not (isinstance(inner, cst.Call) and dotted(inner.func) == "ddp_wrap"):
                return updated_node  # the wrap itself was kept (noqa)
            model = inner.args[0].value
            moved = updated_node.with_changes(func=updated_node.func.with_changes(value=model))
            return self.rewrite(
                original_node,
                updated_node,
                inner.with_changes(args=[inner.args[0].with_changes(value=moved), *inner.args[1:]]),
                review="the model is moved to its device before it is wrapped (DDP needs that order)",
            )
        if (
            isinstance(original_node.func, cst.Name)
            and original_node.func.value == "isinstance"
            and len(original_node.args) == 2
            and not arguments.has_star_args(original_node)
        ):
            return self._isinstance(original_node, updated_node)
        return updated_node

    def _isinstance(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """`isinstance(m, DataParallel)` (or a tuple holding it) also accepts DDP."""
        kinds = updated.args[1].value
        names = (
            [self.qualified_name(e.value) for e in kinds.elements]
            if isinstance(kinds, cst.Tuple)
            else [self.qualified_name(kinds)]
        )
        if not any(n in DATAPARALLEL for n in names) or any(n in DDP for n in names):
            return updated
        spelled = self._beside(kinds.elements if isinstance(kinds, cst.Tuple) else [cst.Element(kinds)])
        if spelled is None:
            spelled = self.imports.local_name_for(DDP_NAME)
        if spelled is None:
            spelled = DDP_NAME
            self.add_needed_import("torch")
        new_kinds = accepting(kinds, cst.parse_expression(spelled))
        args = [updated.args[0], updated.args[1].with_changes(value=new_kinds)]
        return self.rewrite(
            original,
            updated,
            updated.with_changes(args=args),
            review="a DataParallel type test now also accepts DistributedDataParallel",
        )

    def _beside(self, elements) -> str | None:
        """DistributedDataParallel spelled through the module the type test's own DataParallel is
        spelled through (`torch.nn.DataParallel` -> `torch.nn.parallel.DistributedDataParallel`),
        which the test's scope surely binds; None for a bare `DataParallel`."""
        for element in elements:
            qualified = self.qualified_name(element.value) or ""
            if qualified in DATAPARALLEL and isinstance(element.value, cst.Attribute):
                prefix = self.code_for(element.value.value)
                module = qualified.rpartition(".")[0]
                if module == "torch.nn":
                    return f"{prefix}.parallel.DistributedDataParallel"
                if module == "torch.nn.parallel":
                    return f"{prefix}.DistributedDataParallel"
        return None

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if not self.plan.restructure or original_node.attr.value != "module":
            return updated_node
        owner = dotted(original_node.value)
        if owner is None or not self._wrapped_here(owner) or self._in_target:
            return updated_node
        self.needed.add("unwrap_model")
        return self.rewrite(
            original_node,
            updated_node,
            helper_call("unwrap_model", updated_node.value),
            review="`.module` works only on a wrapped model; unwrap_model() works wrapped or not",
        )

    def _wrapped_here(self, owner: str) -> bool:
        """`owner` is wrapped in this scope: the same class (`self.x`), an enclosing function, or
        the module (a global). Elsewhere the same name may be another object with a `.module`."""
        where = self.survey.wrapped_where.get(owner, set())
        if owner.startswith("self."):
            return any(id(k) in where for k in self._enclosing if isinstance(k, cst.ClassDef))
        return "module" in where or any(id(f) in where for f in self._enclosing if isinstance(f, cst.FunctionDef))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enclosing = [*self._enclosing, node]

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._enclosing = self._enclosing[:-1]
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enclosing = [*self._enclosing, node]

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._enclosing = self._enclosing[:-1]
        return updated_node

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._in_target += 1

    def leave_AssignTarget(self, original_node: cst.AssignTarget, updated_node: cst.AssignTarget) -> cst.AssignTarget:
        self._in_target -= 1
        return updated_node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        if not self.plan.restructure:
            return updated_node
        if original_node in self.plan.samplers:
            return self._shard(original_node, updated_node)
        return self._guarded(original_node, updated_node)

    def leave_With(self, original_node: cst.With, updated_node: cst.With):
        return self._guarded(original_node, updated_node) if self.plan.restructure else updated_node

    def _guarded(self, original: cst.BaseStatement, updated: cst.BaseStatement):
        """A whole write (a `torch.save` line, or the `with open(...)` around one) under
        `if is_main_process():`: under torchrun every rank would write the same file, and a rank
        opening it for writing empties what another has written."""
        if original not in self.plan.guarded_lines:
            return updated
        self.needed.add("is_main_process")
        guarded = cst.If(
            test=helper_call("is_main_process"),
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines,
        )
        review = "the checkpoint is written by rank 0 only under torchrun (its file opened, its directory made there too)"
        result = self.rewrite(original, updated, guarded, review=review)
        if result is guarded:
            self.guards[guarded] = saved_path(original)
        return result

    def _shard(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        sampler = self.plan.samplers[original]
        assign = updated.body[0]
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
            return updated
        make, line = with_sampler(updated, assign, sampler)
        return self.rewrite(
            original,
            updated,
            cst.FlattenSentinel([make, line]),
            review="under torchrun this DataLoader gets a DistributedSampler (shuffle moved into it); "
            "a plain run samples exactly as before",
        )

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        loaders = self.plan.epoch_loops.get(original_node) if self.plan.restructure else None
        if loaders is None or not isinstance(updated_node.target, cst.Name):
            return updated_node
        body = updated_node.body
        calls = [
            cst.SimpleStatementLine([cst.Expr(helper_call("ddp_set_epoch", cst.parse_expression(t), updated_node.target))])
            for t in loaders
        ]
        return self.rewrite(
            original_node,
            updated_node,
            updated_node.with_changes(body=body.with_changes(body=[*calls, *body.body])),
            review="the DistributedSampler reshuffles each epoch (set_epoch); a no-op in a plain run",
        )

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        if not self.plan.restructure or original_node not in self.plan.moved_ifs:
            return updated_node
        body = list(updated_node.body.body)
        if len(body) != len(original_node.body.body):
            return updated_node
        indices = self.plan.moved_ifs[original_node]
        # a moved statement keeps the comments above it (they describe the wrap)
        moved = [keep_condition(body[i], updated_node.test).with_changes(leading_lines=_comments(body[i])) for i in indices]
        kept = [s for i, s in enumerate(body) if i not in indices]
        review = (
            "the wrap no longer sits under the GPU test: under torchrun every process must wrap; a plain run "
            "still uses DataParallel exactly when the test holds (data_parallel=)"
        )
        if not kept:
            moved[0] = moved[0].with_changes(leading_lines=[*updated_node.leading_lines, *moved[0].leading_lines])
            return self.rewrite(original_node, updated_node, cst.FlattenSentinel(moved), review=review)
        left = updated_node.with_changes(body=updated_node.body.with_changes(body=kept))
        return self.rewrite(original_node, updated_node, cst.FlattenSentinel([left, *moved]), review=review)

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        """`DataParallel(m) if torch.cuda.device_count() > 1 else m` -> `ddp_wrap(m)`."""
        if not self.plan.restructure or original_node not in self.plan.gpu_ifexps:
            return updated_node
        body = updated_node.body
        if not (isinstance(body, cst.Call) and dotted(body.func) == "ddp_wrap"):
            return updated_node
        return self.rewrite(
            original_node,
            updated_node,
            with_condition(body, updated_node.test).with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar),
            review="the wrap no longer sits under the GPU test: under torchrun every process must wrap; a plain "
            "run still uses DataParallel exactly when the test holds (data_parallel=)",
        )

    def _merge(self, body: list) -> list:
        """Consecutive `if is_main_process():` blocks made here become one; a directory made right
        before a guarded checkpoint, and statements right after it that use its file (copying the
        best checkpoint), join it: on other ranks the file may not exist."""
        out: list = []
        for stmt in body:
            prev = out[-1] if out else None
            joins = prev is not None and not any(l.comment for l in stmt.leading_lines)
            if joins and prev in self.guards and stmt in self.guards:
                merged = _joined(prev, prev.body.body, stmt.body.body)
            elif joins and self.guards.get(prev) is not None and references(stmt, self.guards[prev]):
                merged = _joined(prev, prev.body.body, [stmt])
            elif joins and stmt in self.guards and creates_directory(prev):
                merged = _joined(stmt, [prev.with_changes(leading_lines=[])], stmt.body.body, prev.leading_lines)
            else:
                out.append(stmt)
                continue
            paths = [self.guards.get(prev), self.guards.get(stmt)]
            self.guards[merged] = next((p for p in paths if p is not None), None)
            out[-1] = merged
        return out

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not self.plan.restructure or not self.guards:
            return updated_node
        return updated_node.with_changes(body=self._merge(list(updated_node.body)))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.plan.restructure or not self.rewrites:
            return updated_node  # (isinstance rewrites need no helpers)
        module = updated_node.with_changes(body=self._merge(list(updated_node.body))) if self.guards else updated_node
        facts = getattr(self.file.facts, "gpu_selectors", frozenset())
        selection = gpu_selection(self.module_code(original_node), selectors(facts))
        late = self._selected_late(original_node, selection) if selection is not None else None
        if late is not None:
            self.finding(
                late,
                "this statement selects the GPU (CUDA_VISIBLE_DEVICES) and also uses CUDA or the model: under "
                "torchrun `ddp_setup()` initialises CUDA, so it must run after the selection; call `ddp_setup()` "
                "right after the line that selects (until then the helpers join the process group when first used)",
            )
        return ddp.with_companion(module, self.needed, setup_call=late is None, selection=selection)

    def _selected_late(self, module: cst.Module, selection) -> cst.BaseStatement | None:
        """The top-level statement that selects the GPU where a module-level `ddp_setup()` cannot
        follow: it also uses CUDA (`main()`, helpers/gpu_selection.py), or wraps the model or shards
        a loader itself."""
        late = selection.late(module.body, self.code_for)
        if late is not None:
            return late
        sites = [site.call for site in self.survey.wraps] + list(self.plan.samplers)
        functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        reach = {name for name, f in functions.items() if any(contains(f, site) for site in sites)}
        while more := {n for n, f in functions.items() if n not in reach and any(references(f, r) for r in reach)}:
            reach |= more  # a function that calls one that wraps, wraps
        for statement in module.body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) or not selection.selects(self.code_for(statement)):
                continue
            if any(contains(statement, site) for site in sites) or any(references(statement, r) for r in reach):
                return statement
        return None


def _comments(statement: cst.BaseStatement) -> list[cst.EmptyLine]:
    return [line for line in statement.leading_lines if line.comment is not None]


def _joined(guard: cst.If, first: list, second: list, leading_lines=None) -> cst.If:
    """`guard` holding the statements `first` then `second`."""
    merged = guard.with_changes(body=guard.body.with_changes(body=[*first, *second]))
    return merged if leading_lines is None else merged.with_changes(leading_lines=leading_lines)
