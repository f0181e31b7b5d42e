"""The collectors of facts about the repository's classes: which are `nn.Module`s or `Dataset`s
(through any chain of repository classes), which define their own `cuda`, which are handed to a
`DataLoader`. Classes are known by their bare name, repository-wide: a file that subclasses
`Net` rarely says from which module `Net` came in a way an `ast` pass could follow.
"""

from __future__ import annotations

import ast
from typing import Sequence

from codemods.helpers.facts.collector import Collector, ParsedFile, Part, bases_by_class, closure, mentions

# Bases that make a class an nn.Module / a Dataset, by their imported dotted name.
_MODULE_ROOTS = ("torch.nn.", "torch.nn.Module")
_DATASET_ROOTS = ("torch.utils.data.Dataset", "torch.utils.data.dataset.", "torch.utils.data.IterableDataset")
DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

_DEFINES_A_CLASS = mentions("class")  # a file without the keyword defines no class


def is_dataset_base(qualified: str) -> bool:
    """Whether a base class's qualified name makes a class a torch Dataset."""
    return qualified.startswith(_DATASET_ROOTS)


def _is_module_base(qualified: str) -> bool:
    return qualified.startswith(_MODULE_ROOTS) and not is_dataset_base(qualified)


def _class_bases(file: ParsedFile) -> Part:
    return file.class_bases


MODULE_CLASSES = Collector(
    name="module_classes",
    summary="Names of classes (bare, repo-wide) that subclass `torch.nn.Module`, directly or not.",
    reads=_DEFINES_A_CLASS,
    collect=_class_bases,
    merge=lambda parts: frozenset(closure(bases_by_class(parts), _is_module_base)),
)

DATASET_CLASSES = Collector(
    name="dataset_classes",
    summary="Names of classes that subclass `torch.utils.data.Dataset`, directly or not.",
    reads=_DEFINES_A_CLASS,
    collect=_class_bases,
    merge=lambda parts: frozenset(closure(bases_by_class(parts), is_dataset_base)),
)


# -- classes with their own `cuda` ------------------------------------------------------------


def _cuda_part(file: ParsedFile) -> Part:
    """The file's classes with their bases (a subclass elsewhere inherits `cuda`), and those of
    its importable classes whose own body binds `cuda`."""
    own = _own_cuda(file.tree) if "cuda" in file.text else []
    return {"bases": file.class_bases, "cuda": own}


def _own_cuda(tree: ast.Module) -> list[str]:
    """Importable classes (not those local to a function, which no other file can make) whose own
    body defines `cuda` (a method, or a name bound in the class body)."""
    found = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.ClassDef) and any(_binds_cuda(item) for item in node.body):
            found.add(node.name)
        for name in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(getattr(node, name, None) or [])
    return sorted(found)


def _binds_cuda(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return statement.name == "cuda"
    return isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "cuda" for t in statement.targets)


def _merge_cuda(parts: Sequence[tuple[str, Part]]) -> frozenset[str]:
    """The classes that define `cuda` and every repo class that inherits from one (by bare name)."""
    direct = {name for _, part in parts for name in part["cuda"]}
    bases = bases_by_class([(path, part["bases"]) for path, part in parts])
    return frozenset(direct | closure(bases, lambda base: base.rsplit(".", 1)[-1] in direct))


CUDA_CLASSES = Collector(
    name="cuda_classes",
    summary="Names of classes anywhere in the repo that define their own `cuda` method (trainers,"
    " wrappers, data holders), and their subclasses: where one exists, `x.cuda()` may not be torch's.",
    reads=_DEFINES_A_CLASS,
    collect=_cuda_part,
    merge=_merge_cuda,
)


# -- classes handed to a DataLoader -----------------------------------------------------------


def _loader_classes(file: ParsedFile) -> Part:
    """`DataLoader(C(...))`, `DataLoader(dataset=C(...))`, or `ds = C(...)` ... `DataLoader(ds)`."""
    made_by: dict[str, set[str]] = {}
    given: list[ast.expr] = []
    for node in ast.walk(file.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    made_by.setdefault(target.id, set()).add(node.value.func.id)
        elif isinstance(node, ast.Call):
            if file.qualified(node.func) not in DATALOADERS:
                continue
            if node.args and not isinstance(node.args[0], ast.Starred):
                given.append(node.args[0])
            given.extend(k.value for k in node.keywords if k.arg == "dataset")
    names: set[str] = set()
    for expr in given:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            names.add(expr.func.id)
        elif isinstance(expr, ast.Name):
            names |= made_by.get(expr.id, set())
    return sorted(names)


LOADER_CLASSES = Collector(
    name="loader_classes",
    summary="Names of classes whose instances are handed to a `DataLoader` (directly or through a"
    " variable assigned in the same file), whatever their bases.",
    reads=mentions("DataLoader"),
    collect=_loader_classes,
    merge=lambda parts: frozenset(name for _, names in parts for name in names),
)
