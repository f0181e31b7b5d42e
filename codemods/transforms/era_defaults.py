"""TM015: `align_corners` left out, in code written for a torch whose default was another -> written out."""

from __future__ import annotations

import libcst as cst

from codemods.era import Era, era_of_text
from codemods.gates.era_defaults import DEFAULTS, LINEAR_MODES
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.versions import format_version

_UNSET = object()


class EraDefaults(MigrationCodemod):
    """Keep the numbers old code computed where a default changed: write `align_corners` out.

    ## What it does
    Adds `align_corners=` to `F.grid_sample`, `F.affine_grid`, `F.upsample` and `nn.Upsample`
    calls that leave it out, with the value the torch the code was written for used:

    - `grid_sample`/`affine_grid` in code written for torch < 1.3: `align_corners=True` (the
      behaviour of every release up to 1.2); in code for 1.3 or newer: `align_corners=False`
      (today's default, written out: the numbers stay, the warning torch prints on every call goes).
    - `F.upsample`/`nn.Upsample` with a linear mode (`linear`, `bilinear`, `bicubic`,
      `trilinear`) in code written for torch < 0.4: `align_corners=True` (the behaviour up to
      0.3.1). Code for 0.4 or newer computes today's default already, and torch no longer warns.

    The era is the repository's (codemods/era.py): the lowest release its torch pin allows
    (`torch>=0.4` was written against 0.4), else what its idioms imply (`Variable`, `volatile=`,
    `loss.data[0]`: older than 0.4; `size_average=`: 0.4 or older; `torch.no_grad`: 0.4 or newer,
    `torch.cuda.amp`: 1.6 or newer). Where the run gives no repository era (one file through
    the Python API), the file's own idioms decide; this codemod runs right after TM000, so it
    reads them as the author wrote them, before other codemods remove `Variable` & co.

    ## Why is this bad?
    torch 0.4.0 changed what `upsample` computes for the linear modes, and 1.3.0 changed what
    `grid_sample` and `affine_grid` compute, both to `align_corners=False`. Old code that relied on
    the old default still runs, silently computing other numbers: shifted sampling grids in
    spatial transformers and optical-flow warps, other upsampled feature maps in a network whose
    weights were trained with the old ones.

    ## Example
    ```python
    import torch.nn.functional as F
    from torch.autograd import Variable

    x = Variable(x)  # `Variable`: code written for torch < 0.4
    grid = F.affine_grid(theta, x.size())
    out = F.grid_sample(x, grid)
    ```

    In a repository the era comes from its torch pin first (`torch>=0.4` in requirements.txt: code
    written for 0.4); a single file, as here, gives it by its own idioms.

    ## Use instead
    ```python
    import torch.nn.functional as F
    from torch.autograd import Variable

    x = Variable(x)  # `Variable`: code written for torch < 0.4
    grid = F.affine_grid(theta, x.size(), align_corners=True)
    out = F.grid_sample(x, grid, align_corners=True)
    ```

    ## Fix safety
    Review: each rewrite is listed with the era it relied on and where that came from. The
    numbers are those of the era's torch when the era is right; an era read from idioms is
    evidence, not proof (code written for 1.0 may still wrap tensors in `Variable`), so check it.
    Where the era is unknown, or cannot decide the call (`mode` not a literal, `*args` or `**kwargs`
    that may carry `align_corners`), the call stays as it is and a finding says which value each
    era needs. `F.interpolate` is never touched: it appeared in 0.4.1, so code calling it computed
    today's default (TM006 renames `F.upsample` to it after this codemod has run). For a target torch older than 1.3, `grid_sample` and `affine_grid` keep their
    default (it is the old one there) and a finding says so. One difference remains under
    `align_corners=True`: `affine_grid` on a unit-size spatial dimension put the grid at -1 up to
    1.2 and at 0 since 1.3 (torch's docs: "not an intended use case").

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.affine_grid.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Upsample.html
    - https://github.com/pytorch/pytorch/releases/tag/v1.3.0
    """

    PRUNE = True  # its sites are calls on trigger lines; the era is the repository's or the whole module's

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._module: cst.Module | None = None
        self._era: object = _UNSET

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def era(self) -> Era | None:
        """The repository's era from the engine, else the one this module's idioms imply."""
        if self.file.era is not None:
            return self.file.era
        if self._era is _UNSET:
            self._era = era_of_text(self.module_code(self._module), self.file.path) if self._module is not None else None
        return self._era  # type: ignore[return-value]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.qualified_name(original_node.func)
        default = DEFAULTS.get(name) if name else None
        if default is None:
            return updated_node
        bound = arguments.bind(updated_node, default.positional)
        if "align_corners" in bound:
            return updated_node
        starred = [a.star for a in updated_node.args if a.star]
        mode_known = True
        if default.by_mode:
            mode = bound.get("mode")
            if mode is None and not starred:
                return updated_node  # the default mode, "nearest", has no align_corners
            value = arguments.literal(mode.arg.value) if mode is not None else None
            if isinstance(value, str) and value not in LINEAR_MODES:
                return updated_node  # nearest, area: no align_corners (passing one is an error)
            mode_known = isinstance(value, str)
        era = self.era()
        before = era.before(default.changed) if era is not None else None
        short = name.rpartition(".")[2]
        changed = format_version(default.changed)
        if before is False:
            # written for today's default: numbers are not at stake; write it out where torch warns
            if not default.warns or starred:
                return updated_node
            return self.rewrite(
                original_node,
                updated_node,
                _with_keyword(updated_node, "False"),
                review=f"align_corners=False: today's default, written out (no warning, same numbers); the code was written for {era}",
            )
        modes = " for the linear modes" if default.by_mode else ""
        if before is None:
            self.finding(
                original_node,
                f"`{short}` without `align_corners`: torch < {changed} computed align_corners=True{modes},"
                f" torch >= {changed} computes False, and the torch this code was written for is unknown"
                + (f" (and {_undecided(starred, mode_known)})" if starred or not mode_known else ""),
                suggestion=f"align_corners=True if it was written for torch < {changed}, else align_corners=False;"
                " a torch pin (requirements.txt, setup.py) lets torch-migrate decide",
            )
            return updated_node
        if starred or not mode_known:
            self.finding(
                original_node,
                f"`{short}` without `align_corners` in code written for {era}: torch < {changed} computed"
                f" align_corners=True{modes}, and {_undecided(starred, mode_known)}",
                suggestion=f"align_corners=True{' (for a linear mode)' if default.by_mode else ''}",
            )
            return updated_node
        return self.rewrite(
            original_node,
            updated_node,
            _with_keyword(updated_node, "True"),
            review=f"align_corners=True: the default of torch < {changed}; the code was written for {era}",
        )


def _undecided(starred: list[str], mode_known: bool) -> str:
    """Why the call cannot be rewritten, for the finding."""
    if "**" in starred:
        return "`**kwargs` may carry `align_corners`"
    if starred:
        return "`*args` may fill `align_corners` by position"
    return "`mode` is not a literal (`align_corners` is an error for the other modes)" if not mode_known else "?"


def _with_keyword(call: cst.Call, value: str) -> cst.Call:
    """`call` with `align_corners=<value>` appended, in the call's own layout."""
    return append_args(call, [keyword_arg("align_corners", cst.Name(value))])
