"""Whole-repository facts from a cheap first pass with Python's own `ast` (11x faster than libcst).

Per-file codemods cannot see other files; some decisions need to (is `Net` an `nn.Module`? is this
class a `Dataset`?). `collect_facts` reads every candidate file once, and the resulting frozen
`RepoFacts` is handed to every codemod.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Iterator

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
    idioms: frozenset[str] = field(default_factory=frozenset)
    """`idiom\tpath\tline` for the first use of each era-telling idiom in each file
    (codemods/era.py): the era a run reports comes from these, not from reading the files again."""
    imported_names: frozenset[str] = field(default_factory=frozenset)
    """Names that files get from other files of the repo: star imports of repo modules and
    re-exports (`from mypkg.torch_utils import Variable`); see `imported_names_entries`."""


def import_aliases(statements: Iterable[ast.AST]) -> dict[str, str]:
    """Local name -> the dotted name its import binds, over the import statements among
    `statements` (relative imports left out; a star import under the key `*`)."""
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
    top: TopNames | None = None  # what it binds at the top level (star imports, re-exports)
    idioms: tuple[tuple[str, int], ...] = ()  # (idiom, line) of the era-telling idioms it uses


def file_facts(text: str) -> FileFacts | None:
    """One file's part of the facts; None when it does not parse (it simply adds nothing)."""
    try:
        tree = ast.parse(text)
        return _file_facts(text, tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # too deeply nested for the ast, or its walks: the file adds nothing


def _file_facts(text: str, tree: ast.Module) -> FileFacts:
    statements = _statements(tree)
    aliases = import_aliases(statements)
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
    cuda_classes = _cuda_classes(tree) if "cuda" in text else frozenset()
    top = top_names(tree) if "import" in text else None
    from codemods.era import idiom_lines  # era reads pins' tables: only once a file is read

    return FileFacts(tuple(bases), parallel, frozenset(loaded), frozenset(attributes), cuda_classes, top, idiom_lines(text))


def merge(parts: Iterable[tuple[str, FileFacts | None]]) -> RepoFacts:
    """The repo's facts from its files' `(path, file_facts(text))`."""
    bases: dict[str, set[str]] = {}
    parallel: set[str] = set()
    loaded: set[str] = set()
    attributes: set[str] = set()
    cuda_classes: set[str] = set()
    tops: dict[str, TopNames] = {}
    idioms: set[str] = set()
    for path, part in parts:
        if part is None:
            continue
        idioms.update(f"{name}\t{path}\t{line}" for name, line in part.idioms)
        if part.top is not None:
            tops[os.path.abspath(path)] = part.top
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
        imported_names=imported_names_entries(tops),
        idioms=frozenset(idioms),
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


def _cuda_classes(tree: ast.Module) -> frozenset[str]:
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
    return frozenset(found)


def _binds_cuda(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return statement.name == "cuda"
    return isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "cuda" for t in statement.targets)


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


# -- names that arrive by a star import or a re-export (issue 15 §3) ------------------------------
#
# A module that does `from utils import *` (or `from mypkg.torch_utils import Variable`) gets
# torch's names through another file of the repository. The first pass records what each file
# binds at its top level and which repository modules it imports; `merge_imported_names` follows
# those links (transitively, cycles cut) into `RepoFacts.imported_names`, which
# helpers/names.py reads for one file (`FileNames`). Entries are strings, like every fact:
#   "E\t<module path>\t<name>\t<qualified>\t<'*' if a star import sees it>"  what a module exports
#   "S\t<file path>\t<module path>"                  the file star-imports that repository module
#   "M\t<file path>\t<spelling>\t<module path>"      the file names that module `spelling`
# Paths are absolute (os.path.abspath), so the engine's display paths and the first pass's agree.


@dataclass(frozen=True)
class TopNames:
    """What one file binds at its top level, in source order: ("import", local, level, module,
    name) for `from module import name as local` (name "" for `import module as local`),
    ("module", "pkg.mod") beside the import of `pkg` for `import pkg.mod`, ("star", level,
    module) and ("define", name); plus its literal `__all__`, if any."""

    events: tuple[tuple, ...] = ()
    all_names: tuple[str, ...] | None = None


def top_names(tree: ast.Module) -> TopNames:
    events: list[tuple] = []
    all_names: tuple[str, ...] | None = None
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    events.append(("import", a.asname, 0, a.name, ""))
                else:
                    head = a.name.split(".")[0]
                    events.append(("import", head, 0, head, ""))
                    if head != a.name:  # `import pkg.mod` binds `pkg`, and loads pkg.mod for it
                        events.append(("module", a.name))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "*":
                    events.append(("star", node.level, node.module or ""))
                else:
                    events.append(("import", a.asname or a.name, node.level, node.module or "", a.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            events.append(("define", node.name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        if name.id == "__all__" and isinstance(node, ast.Assign):
                            all_names = _literal_names(node.value)
                        events.append(("define", name.id))
    return TopNames(tuple(events), all_names)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements outside functions and classes (inside if/try/with/for blocks too)."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                yield from _top_level(children)
        for handler in getattr(node, "handlers", ()):
            yield from _top_level(handler.body)


def _literal_names(value: ast.AST) -> tuple[str, ...] | None:
    if isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return tuple(e.value for e in value.elts)
    return None


_ROUNDS = 8  # import cycles settle in a round or two; a bound, in case one never does


class _Modules:
    """The repository's modules by path, and what each exports (followed through the repo)."""

    def __init__(self, tops: dict[str, TopNames]) -> None:
        self.tops = tops
        self._exports: dict[str, dict[str, str | None]] = {}
        self._open: set[str] = set()
        self._previous: dict[str, dict[str, str | None]] = {}  # the last round's, for cycles

    def settle(self, paths: Iterable[str]) -> None:
        """Compute every module's exports; modules in an import cycle see each other's names
        from the previous round until nothing changes (whatever the order of the files)."""
        paths = sorted(paths)
        for _ in range(_ROUNDS):
            for path in paths:
                self.exports(path)
            if self._exports == self._previous:
                return
            self._previous, self._exports = self._exports, {}
        self._exports = self._previous

    def find(self, level: int, module: str, importer: str) -> str | None:
        """The repository file `from <level dots><module> import ...` in `importer` names, if any:
        relative to its package, else the nearest folder above it that holds the module."""
        parts = [p for p in module.split(".") if p]
        folder = os.path.dirname(importer)
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            return self._file(folder, parts)
        while True:
            found = self._file(folder, parts)
            if found is not None or os.path.dirname(folder) == folder:
                return found
            folder = os.path.dirname(folder)

    def _file(self, folder: str, parts: list[str]) -> str | None:
        base = os.path.join(folder, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if candidate in self.tops:
                return candidate
        return None

    def exports(self, path: str) -> dict[str, str | None]:
        """Every name the module binds at its top level -> the qualified name of what it is
        outside the repository (None: the repository's own, or not known)."""
        if path in self._exports:
            return self._exports[path]
        if path in self._open:
            return self._previous.get(path, {})  # an import cycle: what it bound last round
        self._open.add(path)
        bound: dict[str, str | None] = {}
        for event in self.tops[path].events:
            if event[0] == "define":
                bound[event[1]] = None
            elif event[0] == "star":
                bound.update(self.star(event[1], event[2], path))
            elif event[0] == "import":
                _, local, level, module, name = event
                bound[local] = self.target(level, module, name, path)
        self._open.discard(path)
        self._exports[path] = bound
        return bound

    def star(self, level: int, module: str, importer: str) -> dict[str, str | None]:
        """What `from <module> import *` binds in `importer`."""
        found = self.find(level, module, importer)
        if found is not None:
            names = self.exports(found)
            visible = self.tops[found].all_names
            return {n: q for n, q in names.items() if (n in visible if visible is not None else not n.startswith("_"))}
        if level == 0 and module in torch_star_exports():
            return {n: f"{module}.{n}" for n in torch_star_exports()[module]}
        return {}

    def target(self, level: int, module: str, name: str, importer: str) -> str | None:
        """What `from module import name` (or `import module`, name "") binds in `importer`."""
        found = self.find(level, module, importer)
        if found is None:
            if level:
                return None
            return f"{module}.{name}" if name else module
        if not name:
            return None  # a repository module itself
        return self.exports(found).get(name)


def imported_names_entries(tops: dict[str, TopNames]) -> frozenset[str]:
    """The `RepoFacts.imported_names` entries of a repository's files (their `top_names`), one
    string each: `S importer module` (a star import), `M importer spelling module` (how an import
    spells a repository module), `T module name` (a name other files take from a module: `*` for
    a star import, `**` for the module itself), `E module name qualified star` (what a module
    exports from outside the repository; star: whether `import *` gives it)."""
    modules = _Modules(tops)
    entries: set[str] = set()
    linked: set[str] = set()
    for path, top in tops.items():
        for event in top.events:
            if event[0] == "star":
                found = modules.find(event[1], event[2], path)
                if found is not None:
                    entries.add(f"S\t{path}\t{found}")
                    entries.add(f"T\t{found}\t*")
                    linked.add(found)
            elif event[0] == "import":
                _, local, level, module, name = event
                spelled = "." * level + module
                found = modules.find(level, module, path)
                if found is not None:
                    entries.add(f"M\t{path}\t{spelled}\t{found}")
                    entries.add(f"T\t{found}\t{name or '**'}")  # `import m`: any attribute of m
                    linked.add(found)
                sub = modules.find(level, f"{module}.{name}", path) if name else None
                if sub is not None:  # `from pkg import mod`: a module of the package
                    entries.add(f"M\t{path}\t{spelled + '.' if module else spelled}{name}\t{sub}")
                    entries.add(f"T\t{sub}\t**")
                    linked.add(sub)
            elif event[0] == "module":
                found = modules.find(0, event[1], path)
                if found is not None:
                    entries.add(f"T\t{found}\t**")
                    linked.add(found)
    modules.settle(linked)
    for path in linked:
        visible = tops[path].all_names
        for name, qualified in modules.exports(path).items():
            if qualified is not None:
                star = "*" if (name in visible if visible is not None else not name.startswith("_")) else ""
                entries.add(f"E\t{path}\t{name}\t{qualified}\t{star}")
    return frozenset(entries)


@lru_cache(maxsize=1)
def torch_star_exports() -> dict[str, frozenset[str]]:
    """What `from torch.X import *` binds, for the torch modules old code star-imports
    (codemods/data/torch_star_exports.json, made by scripts/gen_star_exports.py)."""
    from codemods.gates import data_table  # read as a file: importlib.resources costs imports per run

    table = data_table("torch_star_exports.json")
    return {module: frozenset(names) for module, names in table.items()}
