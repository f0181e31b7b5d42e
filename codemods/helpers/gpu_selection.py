"""Where a script selects its GPU, so that the device it gets is defined after that.

`torch.cuda.is_available()` initialises CUDA, and CUDA reads `CUDA_VISIBLE_DEVICES` (and
`CUDA_DEVICE_ORDER`) once, when it initialises: a script that sets them after the device is
defined (`os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu`, `os.environ.setdefault(...)`,
`os.environ.update(...)`, `os.putenv(...)`, directly or in a helper of its own) then runs on
the wrong GPU of a multi-GPU machine. (`torch.cuda.set_device` is no such selection: it works
after CUDA is initialised.)

A statement selects when its text both names one of those variables and writes the environment
(`environ`/`putenv`), or calls a function of this module that selects. Reading the variable
counts too: the device then goes after the line that reads it, which is never wrong.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:  # the facts pass imports this module: it must not pay for libcst (tests/test_startup.py)
    import libcst as cst

_VARIABLE = re.compile(r"\bCUDA_(?:VISIBLE_DEVICES|DEVICE_ORDER)\b")
_ENVIRONMENT = re.compile(r"\b(?:environ|putenv)\b")
_CUDA_WORD = re.compile(r"\bcuda\b|\bdevice\b")
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_][\w.]*)[ \t]*=(?!=)", re.MULTILINE)  # `args.gpu = ...`


def _direct(code: str) -> bool:
    return _VARIABLE.search(code) is not None and _ENVIRONMENT.search(code) is not None


def _calls(code: str, names: frozenset[str]) -> set[str]:
    if not names:
        return set()
    pattern = r"(?<![\w])(%s)\s*\(" % "|".join(map(re.escape, sorted(names)))
    return set(re.findall(pattern, code))


@dataclass(frozen=True)
class GpuSelection:
    """The functions of one module that select the GPU (directly, or through a call of one that
    does) and, of those, the ones that do nothing else with CUDA (`pure`): calling one of them at
    the top of the script is a selection the module's device can simply follow."""

    selecting: frozenset[str]
    pure: frozenset[str]

    def selects(self, code: str) -> bool:
        return _direct(code) or bool(_calls(code, self.selecting))

    def placeable(self, code: str) -> bool:
        """Whether a module-level statement that selects does nothing else with CUDA: it neither
        calls a function of the module that selects and also uses CUDA (`main()`) nor uses CUDA
        itself (an `if __name__ == "__main__":` block that selects, then moves a model)."""
        return _calls(code, self.selecting) <= self.pure and _CUDA_WORD.search(_VARIABLE.sub("", code)) is None

    def late(self, body: Sequence[cst.BaseStatement], code_for: Callable[[cst.CSTNode], str]) -> cst.BaseStatement | None:
        """The first top-level statement of `body` that selects where code placed after it cannot
        follow (`main()`, which also uses CUDA, or a block that selects and then moves a model);
        None when there is none."""
        import libcst as cst  # only the transforms call this; the facts pass must not import libcst

        for statement in body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            code = code_for(statement)
            if self.selects(code) and not self.placeable(code):
                return statement
        return None

    def after(self, body: Sequence[cst.BaseStatement], limit: int | None, code_for: Callable[[cst.CSTNode], str]) -> int:
        """The index after the last statement of `body[:limit]` that selects (0: none), and after
        the statements right under it (no blank line or comment between) that read what it
        assigned, without a word of CUDA: `args.gpu = auto_select_gpu(...)` then
        `args.ngpu = len(args.gpu)` stay together."""
        stop = len(body) if limit is None else limit
        for index in reversed(range(stop)):
            code = code_for(body[index])
            if self.selects(code):
                end = index + 1
                assigned = _ASSIGNED.search(code)
                reads = re.compile(rf"\b{re.escape(assigned.group(1))}\b") if assigned else None
                while end < stop and reads is not None and _same_paragraph(body[end]):
                    following = code_for(body[end])
                    if _CUDA_WORD.search(following) is not None or reads.search(following) is None:
                        break
                    end += 1
                return end
        return 0


def _same_paragraph(statement: cst.BaseStatement) -> bool:
    """A one-line statement right under the one before it (no blank line or comment between)."""
    import libcst  # loaded already: only the codemods, which walk libcst trees, ask

    return isinstance(statement, libcst.SimpleStatementLine) and not statement.leading_lines


def selecting_functions(code: str, tree: ast.Module | None = None) -> dict[str, bool]:
    """The functions a module defines that select the GPU (directly, or by calling one of its
    own that does), each with whether it is pure (does nothing else with CUDA)."""
    if tree is None:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return {}
    functions: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_source_segment(code, node) or ""
            functions[node.name] = functions.get(node.name, "") + text
    selecting = {name for name, text in functions.items() if _direct(text)}
    while True:  # a function that calls one that selects, selects
        more = {name for name, text in functions.items() if name not in selecting and _calls(text, frozenset(selecting))}
        if not more:
            break
        selecting |= more
    pure = {name for name in selecting if _CUDA_WORD.search(_VARIABLE.sub("", functions[name])) is None}
    pure = {name for name in pure if _calls(functions[name], frozenset(selecting)) <= pure | {name}}
    return {name: name in pure for name in selecting}


def gpu_selection(code: str, elsewhere: dict[str, bool] | None = None) -> GpuSelection | None:
    """The module's GPU selection, with the selecting functions of the repository's other files
    (`elsewhere`: name -> pure, from the `gpu_selectors` fact); None when it selects nowhere
    (most modules: one regex)."""
    elsewhere = elsewhere or {}
    called = _calls(code, frozenset(elsewhere))
    if not called and (_VARIABLE.search(code) is None or _ENVIRONMENT.search(code) is None):
        return None
    own = selecting_functions(code) if _VARIABLE.search(code) is not None else {}
    selecting = {**{name: elsewhere[name] for name in called}, **own}
    return GpuSelection(frozenset(selecting), frozenset(name for name, pure in selecting.items() if pure))
