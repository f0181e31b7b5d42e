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
from codemods.helpers.names import dotted
from codemods.helpers.spelling import head, import_forms, retire

from .edits import accepting, helper_call, keep_condition, with_condition, with_sampler
from .plan import DDPPlan, PlanInputs, plan_module
from .survey import ModuleSurvey, survey_module
from .symbols import DATAPARALLEL, DDP, DDP_NAME, DP_ARGS, LAUNCHER, WRAP_WORDS
from .syntax import references


class DataParallelToDDP(MigrationCodemod):
    """Replace `nn.DataParallel` with DistributedDataParallel scaffolding that still runs as one process.

    ## What it does
    Rewrites `nn.DataParallel(model, ...)` (any import form, also `DataParallel(m).cuda()` /
    `.to(device)`, `device_ids=`, `self.model = ...`, a wrap under `if torch.cuda.device_count() > 1:`)
    into `ddp_wrap(model)` and generates small helpers into the file itself, in a training entry
    point only: a file with a `__main__` guard or top-level argument parsing, a `backward()` and an
    optimizer `step()`. As `python train.py` the script runs one process with no process group:
    DataParallel (with its `device_ids=`/`output_device=`) when several GPUs are visible, as before,
    else the unwrapped model. As `torchrun --nproc_per_node=N train.py` it joins the process group from the
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
    import atexit
    import os

    # ... generated helpers, written in full: ddp_cleanup, ddp_setup, ddp_wrap, ddp_sampler, ddp_set_epoch, is_main_process, unwrap_model


    ddp_setup()  # joins the process group under torchrun; no-op otherwise


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
    copies). Only `print`/logging calls whose arguments make no calls with side effects are moved
    under `is_main_process()`. The helpers join the process group when the module is imported
    under torchrun (`WORLD_SIZE` > 1), so this rank's GPU is current before any tensor is made.

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
        self.guards: set[int] = set()  # ids of the `if is_main_process():` blocks made here
        self.save_paths: dict[int, str] = {}  # id of such a block -> the file its torch.save writes
        self.prints_reviewed = False
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
        if original_node in self.plan.guarded_lines:
            self.needed.add("is_main_process")
            guarded = cst.If(
                test=helper_call("is_main_process"),
                body=cst.IndentedBlock(body=[updated_node.with_changes(leading_lines=[])]),
                leading_lines=updated_node.leading_lines,
            )
            if original_node in self.survey.saves:
                review = "torch.save (and a use of its file right after it) runs on rank 0 only under torchrun"
            elif not self.prints_reviewed:
                # one review item for all the output, not one per print
                self.prints_reviewed = True
                count = len(self.survey.prints)
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
        moved = [keep_condition(body[i], updated_node.test).with_changes(leading_lines=[]) for i in indices]
        kept = [s for i, s in enumerate(body) if i not in indices]
        review = (
            "the wrap no longer sits under the GPU test: under torchrun every process must wrap; a plain run "
            "still uses DataParallel exactly when the test holds (data_parallel=)"
        )
        if not kept:
            moved[0] = moved[0].with_changes(leading_lines=updated_node.leading_lines)
            return self.rewrite(original_node, updated_node, cst.FlattenSentinel(moved), review=review)
        left = updated_node.with_changes(body=updated_node.body.with_changes(body=kept))
        return self.rewrite(original_node, updated_node, cst.FlattenSentinel([left, *moved]), review=review)

    def _saved_path(self, line: cst.SimpleStatementLine) -> str | None:
        """The file a `torch.save(obj, path)` line writes, when `path` is a plain name."""
        if line not in self.survey.saves:
            return None
        call = line.body[0].value
        positional = [a for a in call.args if a.keyword is None and not a.star]
        f = (
            positional[1]
            if len(positional) > 1
            else next((a for a in call.args if a.keyword and a.keyword.value == "f"), None)
        )
        return dotted(f.value) if f is not None else None

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
        """Consecutive `if is_main_process():` blocks made here become one; statements right after a
        guarded `torch.save(obj, path)` that use `path` (copying the best checkpoint) join it: on
        other ranks the file may not exist."""
        out: list = []
        for stmt in body:
            prev = out[-1] if out else None
            joins = prev is not None and not any(l.comment for l in stmt.leading_lines) and id(prev) in self.guards
            if joins and id(stmt) in self.guards:
                merged = prev.with_changes(body=prev.body.with_changes(body=[*prev.body.body, *stmt.body.body]))
            elif joins and id(prev) in self.save_paths and references(stmt, self.save_paths[id(prev)]):
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
        bound = ddp.top_level_defs(module)
        for name in ddp.imports_for(self.needed | {"ddp_setup"}):
            if name not in bound:  # an `import os` below a sys.path tweak counts
                self.add_needed_import(name)
        return ddp.with_helpers(module, self.needed, setup_call=True)
