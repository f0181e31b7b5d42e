"""TM103 dataparallel-to-ddp: `nn.DataParallel(model)` -> DistributedDataParallel scaffolding
that also runs as one process.

The codemod in four steps, one module each: survey.py reads the module once (a frozen
`ModuleSurvey`); plan.py decides from it what to rewrite and what to report (a pure function,
`plan_module`); transform.py is the libcst transformer that applies the plan, building its
replacements with edits.py; the helpers it writes into the file are
codemods/runtime/ddp_helpers.py, placed by codemods/helpers/ddp.py.
"""

from .transform import DataParallelToDDP

__all__ = ["DataParallelToDDP"]
