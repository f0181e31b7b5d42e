"""Whole-repository facts from a cheap first pass with Python's own `ast` (11x faster than libcst).

Per-file codemods cannot see other files; some decisions need to (is `Net` an `nn.Module`? is this
class a `Dataset`?). `collect_facts` reads every candidate file once, and the resulting frozen
`RepoFacts` is handed to every codemod.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterable

from codemods.helpers.scan import ast_dotted as _dotted
from codemods.helpers.scan import ast_statements as _statements

# Bases that make a class an nn.Module / a Dataset, by their imported dotted name.
_MODULE_ROOTS = ("torch.nn.", "torch.nn.Module")
_DATASET_ROOTS = ("torch.utils.data.Dataset", "torch.utils.data.dataset.", "torch.utils.data.IterableDataset")
DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


@dataclass(frozen=True)
class RepoFacts:
    module_classes: frozenset[str] = field(default_factory=frozenset)
    """Names of classes (bare, repo-wide) that subclass `torch.nn.Module`, directly or not."""
    dataset_classes: frozenset[str] = field(default_factory=frozenset)
    """Names of classes that subclass `torch.utils.data.Dataset`, directly or not."""
    dataparallel_files: frozenset[str] = field(default_factory=frozenset)
    """Files (as given to the codemods) that wrap a model in DataParallel/DDP."""
    loader_classes: frozenset[str] = field(default_factory=frozenset)
    """Names of classes whose instances are handed to a `DataLoader` (directly or through a
    variable assigned in the same file), whatever their bases."""
    wrapped_attributes: frozenset[str] = field(default_factory=frozenset)
    """Attribute names `x` of `self.x = DataParallel(...)`/DDP anywhere in the repo (a trainer's
    `self.model` is often wrapped in one file and saved in another)."""
    cuda_classes: frozenset[str] = field(default_factory=frozenset)
    """Names of classes anywhere in the repo that define their own `cuda` method (trainers,
    wrappers, data holders): where one exists, `x.cuda()` may not be torch's (TM101)."""


def _imports(statements: list[ast.AST]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


@dataclass(frozen=True)
class FileFacts:
    """What one file contributes to the repo's facts (made in parallel, merged by `merge`)."""

    bases: tuple[tuple[str, frozenset[str]], ...] = ()  # class name -> the dotted bases it names
    parallel: bool = False
    loaded: frozenset[str] = frozenset()
    attributes: frozenset[str] = frozenset()
    cuda_classes: frozenset[str] = frozenset()


def file_facts(text: str) -> FileFacts | None:
    """One file's part of the facts; None when it does not parse (it simply adds nothing)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    statements = _statements(tree)
    aliases = _imports(statements)
    loaded = _loader_classes(tree, aliases) if "DataLoader" in text else set()
    bases = []
    for node in statements:
        if isinstance(node, ast.ClassDef):
            named = (_dotted(base) for base in node.bases)
            bases.append((node.name, frozenset(_resolve(d, aliases) for d in named if d is not None)))
    parallel = "DataParallel" in text and any(  # the whole walk, calls and all, only where it can find one
        isinstance(node, ast.Call)
        and (d := _dotted(node.func)) is not None
        and _resolve(d, aliases).rsplit(".", 1)[-1] in {"DataParallel", "DistributedDataParallel"}
        for node in ast.walk(tree)
    )
    attributes = _wrapped_attributes(tree, aliases) if parallel else set()
    cuda_classes = _cuda_classes(statements) if "cuda" in text else frozenset()
    return FileFacts(tuple(bases), parallel, frozenset(loaded), frozenset(attributes), cuda_classes)


def merge(parts: Iterable[tuple[str, FileFacts | None]]) -> RepoFacts:
    """The repo's facts from its files' `(path, file_facts(text))`."""
    bases: dict[str, set[str]] = {}
    parallel: set[str] = set()
    loaded: set[str] = set()
    attributes: set[str] = set()
    cuda_classes: set[str] = set()
    for path, part in parts:
        if part is None:
            continue
        for name, named in part.bases:
            bases.setdefault(name, set()).update(named)
        if part.parallel:
            parallel.add(path)
        loaded |= part.loaded
        attributes |= part.attributes
        cuda_classes |= part.cuda_classes
    return RepoFacts(
        module_classes=frozenset(_closure(bases, lambda b: b.startswith(_MODULE_ROOTS) and not _is_dataset(b))),
        dataset_classes=frozenset(_closure(bases, _is_dataset)),
        dataparallel_files=frozenset(parallel),
        loader_classes=frozenset(loaded),
        wrapped_attributes=frozenset(attributes),
        cuda_classes=frozenset(_with_subclasses(cuda_classes, bases)),
    )


def collect_facts(sources: Iterable[tuple[str, str]]) -> RepoFacts:
    """Facts from `(path, text)` pairs; files that do not parse are simply skipped here."""
    return merge((path, file_facts(text)) for path, text in sources)


def _loader_classes(tree: ast.Module, aliases: dict[str, str]) -> set[str]:
    """`DataLoader(C(...))`, `DataLoader(dataset=C(...))`, or `ds = C(...)` ... `DataLoader(ds)`."""
    made_by: dict[str, set[str]] = {}
    given: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    made_by.setdefault(target.id, set()).add(node.value.func.id)
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name is None or _resolve(name, aliases) not in DATALOADERS:
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
    return names


def is_dataset_base(qualified: str) -> bool:
    """Whether a base class's qualified name makes a class a torch Dataset."""
    return _is_dataset(qualified)


def _wrapped_attributes(tree: ast.Module, aliases: dict[str, str]) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        call = node.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in {"cuda", "to"} and isinstance(call.func.value, ast.Call):
            call = call.func.value
        d = _dotted(call.func)
        if not d or _resolve(d, aliases).rsplit(".", 1)[-1] not in {"DataParallel", "DistributedDataParallel"}:
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.add(target.attr)
    return found


def _cuda_classes(statements: list[ast.AST]) -> frozenset[str]:
    """Classes whose own body defines `cuda` (a method, or a name bound in the class body)."""
    found = set()
    for node in statements:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "cuda":
                    found.add(node.name)
                elif isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "cuda" for t in item.targets):
                    found.add(node.name)
    return frozenset(found)


def _with_subclasses(direct: set[str], bases: dict[str, set[str]]) -> set[str]:
    """`direct` and every repo class that inherits from one of them (by bare name)."""
    return direct | _closure(bases, lambda b: b.rsplit(".", 1)[-1] in direct)


def _is_dataset(base: str) -> bool:
    return base.startswith(_DATASET_ROOTS)


def _closure(bases: dict[str, set[str]], is_root) -> set[str]:
    """Classes whose bases reach a root, through any chain of repo classes (by bare name)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name in found:
                continue
            if any(is_root(p) or p.rsplit(".", 1)[-1] in found for p in parents):
                found.add(name)
                changed = True
    return found
