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
What other files take from a module is what they read of it, so that a module's import that no
file reads any more can go (issue 37 §5): `import utils as u` takes the attributes the file reads
(`u.wrap`), and everything when it uses `u` any other way (`u.__dict__`, `getattr(u, name)`,
passing `u` around); `from utils import *` takes the names the file then reads (`reads`), and the
names it passes on to its own importers. A file with `globals()`, `eval` and the like reads every
name; a file whose reads were not recorded takes everything, as before.
Paths are absolute (os.path.abspath), so the engine's display paths and the first pass's agree.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from codemods.helpers.facts.collector import Collector, ParsedFile, Part
from codemods.helpers.star_exports import torch_star_exports

@dataclass(frozen=True)
class TopNames:
    """What one file binds at its top level, in source order: ("import", local, level, module,
    name) for `from module import name as local` (name "" for `import module as local`),
    ("module", "pkg.mod") beside the import of `pkg` for `import pkg.mod`, ("star", level,
    module) and ("define", name); plus its literal `__all__`, if any, and what it reads of the
    names that may come from other modules of the repository (`Reads`)."""

    events: tuple[tuple, ...] = ()
    all_names: tuple[str, ...] | None = None
    reads: tuple[str, ...] | None = None
    """`ALL` (it reads names dynamically: `globals()`, `eval`, ...), the names it loads when it has
    a star import, `alias.name` for the attributes it reads of a module it imports as `alias`,
    and `alias.**` when it uses that alias otherwise; None: not recorded (it takes everything).
    Aliases of modules that are surely not the repository's (`TRACKED` says) are not followed."""
    tracked: tuple[str, ...] = ()
    """The aliases whose reads `reads` lists (any other alias takes everything of its module)."""


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
    tracked = _tracked_aliases(events)
    stars = any(event[0] == "star" for event in events)
    reads = _reads_of(tree, tracked, stars) if tracked or stars else ()
    return TopNames(tuple(events), all_names, reads, tuple(sorted(tracked)))


ALL = "**"
_DYNAMIC = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
# first names of modules no repository's own module is taken to be: their aliases (`np`, `nn`,
# `F`, `os`) are not followed, which keeps the facts small (an unfollowed alias takes everything)
_EXTERNAL = frozenset(sys.stdlib_module_names) | {
    "torch", "torchvision", "torchaudio", "torchtext", "numpy", "scipy", "matplotlib", "PIL", "cv2",
    "sklearn", "pandas", "tqdm", "h5py", "tensorboardX", "apex", "six", "yaml", "skimage", "visdom",
}  # fmt: skip


def _tracked_aliases(events: list[tuple]) -> set[str]:
    """The local names bound to a module (or a name) that may be the repository's own, by a
    plain `import m as alias` or `from pkg import name` (a submodule, perhaps); never the head of
    a dotted `import pkg.mod`, whose attribute chains are not followed."""
    heads = {event[1].split(".")[0] for event in events if event[0] == "module"}
    tracked = set()
    for event in events:
        if event[0] == "import":
            _, local, level, module, name = event
            first = (module or name).split(".")[0]
            if local not in heads and (level or first not in _EXTERNAL):
                tracked.add(local)
    return tracked


def _reads_of(tree: ast.Module, tracked: set[str], stars: bool) -> tuple[str, ...]:
    """`TopNames.reads` of a module, from one walk over it."""
    reads: set[str] = set()
    attribute_of: set[ast.Name] = set()  # `alias` in `alias.attr` and `getattr(alias, "attr")`
    loads: list[ast.Name] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in tracked:
            attribute_of.add(node.value)
            reads.add(f"{node.value.id}.{ALL if node.attr == '__dict__' else node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _DYNAMIC:
                return (ALL,)
            args = node.args
            if node.func.id in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[0], ast.Name) and args[0].id in tracked:
                attribute_of.add(args[0])
                literal = isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
                reads.add(f"{args[0].id}.{args[1].value if literal else ALL}")
    for name in loads:
        if name.id in tracked:
            if name not in attribute_of:
                reads.add(f"{name.id}.{ALL}")
        elif stars:
            reads.add(name.id)
    return tuple(sorted(reads))


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
    spells a repository module), `T module name` (a name other files take from a module: `*`
    for every name a star import sees, `**` for any attribute), `E module name qualified star`
    (what a module exports from outside the repository; star: whether `import *` gives it)."""
    modules = _Modules(tops)
    entries: set[str] = set()
    linked: set[str] = set()
    taken: dict[str, set[str]] = {}
    star_edges: list[tuple[str, str, int]] = []  # (importer, module, the star's place in the importer's events)
    for path, top in tops.items():
        for place, event in enumerate(top.events):
            if event[0] == "star":
                found = modules.find(event[1], event[2], path)
                if found is not None:
                    entries.add(f"S\t{path}\t{found}")
                    star_edges.append((path, found, place))
                    linked.add(found)
            elif event[0] == "import":
                _, local, level, module, name = event
                spelled = "." * level + module
                found = modules.find(level, module, path)
                if found is not None:
                    entries.add(f"M\t{path}\t{spelled}\t{found}")
                    taken.setdefault(found, set()).update([name] if name else _attributes(top, local))
                    linked.add(found)
                sub = modules.find(level, f"{module}.{name}", path) if name else None
                if sub is not None:  # `from pkg import mod`: a module of the package
                    entries.add(f"M\t{path}\t{spelled + '.' if module else spelled}{name}\t{sub}")
                    taken.setdefault(sub, set()).update(_attributes(top, local))
                    linked.add(sub)
            elif event[0] == "module":
                found = modules.find(0, event[1], path)
                if found is not None:
                    taken.setdefault(found, set()).add(ALL)
                    linked.add(found)
    modules.settle(linked)
    _take_through_stars(tops, modules, star_edges, taken)
    entries.update(f"T\t{module}\t{name}" for module, names in taken.items() for name in names)
    for path in linked:
        visible = tops[path].all_names
        for name, qualified in modules.exports(path).items():
            if qualified is not None:
                star = "*" if (name in visible if visible is not None else not name.startswith("_")) else ""
                entries.add(f"E\t{path}\t{name}\t{qualified}\t{star}")
    return frozenset(entries)


def _attributes(top: TopNames, alias: str) -> set[str]:
    """What a file takes of the module it imports as `alias`: the attributes it reads, or `**`."""
    if top.reads is None or alias not in top.tracked or ALL in top.reads:
        return {ALL}
    prefix = alias + "."
    return {read[len(prefix) :] for read in top.reads if read.startswith(prefix)}


def _star_visible(tops: dict[str, TopNames], modules: _Modules, module: str) -> set[str]:
    """The names `from <module> import *` binds."""
    visible = tops[module].all_names
    return {n for n in modules.exports(module) if (n in visible if visible is not None else not n.startswith("_"))}


def _take_through_stars(tops: dict[str, TopNames], modules: _Modules, edges: list[tuple[str, str, int]], taken: dict[str, set[str]]) -> None:
    """Add to `taken` what the star imports take: the names each importer reads by them (its
    last top-level binding of the name being a star import) and whatever of them its own
    importers take from it in turn, followed until nothing changes (import cycles)."""
    by_star: dict[str, set[str] | None] = {}
    for importer in {edge[0] for edge in edges}:
        top = tops[importer]
        if top.reads is None or ALL in top.reads:
            by_star[importer] = None  # it may read any name
            continue
        last_star = max(place for place, event in enumerate(top.events) if event[0] == "star")
        own: dict[str, int] = {}
        for place, event in enumerate(top.events):
            if event[0] in ("import", "define"):
                own[event[1]] = place
        by_star[importer] = {n for n in top.reads if "." not in n and own.get(n, -1) < last_star}
    changed = True
    while changed:
        changed = False
        for importer, module, _ in edges:
            visible = _star_visible(tops, modules, module)
            reads, onward = by_star[importer], taken.get(importer, set())
            if reads is None or "*" in onward or ALL in onward:
                wanted = {"*"}
            else:
                wanted = (reads | onward) & visible
            have = taken.setdefault(module, set())
            if not wanted <= have:
                have |= wanted
                changed = True
def _reads(text: str) -> bool:
    """Every file that imports: what it takes from the repository's modules is what a codemod
    must not remove there, whether or not the file itself names torch (`from utils import
    Variable` in a file that says nothing else of torch)."""
    return "import" in text


def _top_part(file: ParsedFile) -> Part:
    top = top_names(file.tree)
    return {
        "events": [list(event) for event in top.events],
        "all": list(top.all_names) if top.all_names is not None else None,
        "reads": list(top.reads) if top.reads is not None else None,
        "tracked": list(top.tracked),
    }


def _merge(parts: Sequence[tuple[str, Part]]) -> frozenset[str]:
    tops = {}
    for path, part in parts:
        names, reads = part["all"], part.get("reads")
        tops[os.path.abspath(path)] = TopNames(
            tuple(tuple(event) for event in part["events"]),
            tuple(names) if names is not None else None,
            tuple(reads) if reads is not None else None,
            tuple(part.get("tracked", ())),
        )
    return imported_names_entries(tops)


IMPORTED_NAMES = Collector(
    name="imported_names",
    summary="Names that files get from other files of the repo: star imports of repo modules and"
    " re-exports (`from mypkg.torch_utils import Variable`); see `imported_names_entries`.",
    reads=_reads,
    collect=_top_part,
    merge=_merge,
)
