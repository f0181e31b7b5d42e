"""The collector of the names that files get from other files of the repository: star imports
of repository modules and re-exports (`from mypkg.torch_utils import Variable`), so that torch's
names reached that way are known as torch's, in every codemod (helpers/scan.py reads them).

A module that does `from utils import *` (or `from mypkg.torch_utils import Variable`) gets
torch's names through another file of the repository. Each file's part is what it binds at its
top level and which modules it imports (`top_names`); the merge follows those links
(transitively, cycles cut) into `RepoFacts.imported_names`, which helpers/scan.py reads for one
file (`FileNames`). Entries are strings, like every fact:
  "E\t<module path>\t<name>\t<qualified>\t<'*' if a star import sees it>"  what a module exports
  "S\t<file path>\t<module path>"                  the file star-imports that repository module
  "M\t<file path>\t<spelling>\t<module path>"      the file names that module `spelling`
  "T\t<module path>\t<name>"                       a name other files take from the module
Paths are absolute (os.path.abspath), so the engine's display paths and the first pass's agree.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from codemods.helpers.facts.collector import Collector, ParsedFile, Part
from codemods.helpers.star_exports import torch_star_exports

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
        # Every folder and module name a repository path has: an absolute import whose first
        # name is none of them (`import torch`, `os`, `numpy`: most imports) names no file here,
        # and is answered without walking up the importer's folders.
        self._segments = {
            segment[:-3] if segment.endswith(".py") else segment for path in tops for segment in path.split(os.sep)
        }
        self._exports: dict[str, dict[str, str | None]] = {}
        self._open: set[str] = set()
        self._previous: dict[str, dict[str, str | None]] = {}  # the last round's, for cycles
        self._found: dict[tuple[int, str, str], str | None] = {}  # find's answers, by folder
        self._folders = {path: os.path.dirname(path) for path in tops}  # every importer is a module here

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
        return self._in_folder(level, module, self._folders[importer])  # every file of a folder asks the same

    def _in_folder(self, level: int, module: str, folder: str) -> str | None:
        """`find` for any importer in `folder`, remembered."""
        key = (level, module, folder)
        try:
            return self._found[key]
        except KeyError:
            found = self._found[key] = self._find(level, module, folder)
            return found

    def _find(self, level: int, module: str, folder: str) -> str | None:
        parts = [p for p in module.split(".") if p]
        if not level and parts and parts[0] not in self._segments:
            return None
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            return self._file(folder, parts)
        # the nearest folder up from here that holds it: what a parent folder answers, its
        # subfolders (asked for the same module) share
        found = self._file(folder, parts)
        parent = os.path.dirname(folder)
        if found is not None or parent == folder:
            return found
        return self._in_folder(0, module, parent)

    def _file(self, folder: str, parts: list[str]) -> str | None:
        base = folder.rstrip(os.sep) + os.sep + os.sep.join(parts) if parts else folder
        for candidate in (base + ".py", base.rstrip(os.sep) + os.sep + "__init__.py"):
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


def _reads(text: str) -> bool:
    """Every file that imports: what it takes from the repository's modules is what a codemod
    must not remove there, whether or not the file itself names torch (`from utils import
    Variable` in a file that says nothing else of torch)."""
    return "import" in text


def _top_part(file: ParsedFile) -> Part:
    top = top_names(file.tree)
    return {"events": [list(event) for event in top.events], "all": list(top.all_names) if top.all_names is not None else None}


def _merge(parts: Sequence[tuple[str, Part]]) -> frozenset[str]:
    tops = {}
    for path, part in parts:
        names = part["all"]
        tops[os.path.abspath(path)] = TopNames(tuple(tuple(event) for event in part["events"]), tuple(names) if names is not None else None)
    return imported_names_entries(tops)


IMPORTED_NAMES = Collector(
    name="imported_names",
    summary="Names that files get from other files of the repo: star imports of repo modules and"
    " re-exports (`from mypkg.torch_utils import Variable`); see `imported_names_entries`.",
    reads=_reads,
    collect=_top_part,
    merge=_merge,
)
