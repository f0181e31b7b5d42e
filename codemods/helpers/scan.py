"""What CPython's `ast` says of a text before libcst parses it, with no libcst import.

The engine's gates (codemods/gates/) read a `Scan` to decline a file whose trigger words are
there but whose sites are not, and the whole-repo facts pass (helpers/facts/) walks the same
statements; both run for files libcst never parses, so this module imports nothing of libcst
(a `--check` of a clean file must not pay libcst's import: pre-commit runs one on every commit). `StatementMap` (engine/statement_map.py)
builds its statement map on a `Scan`.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import warnings
from collections import deque
from functools import lru_cache
from typing import Collection, Iterable, Iterator

from codemods.helpers.patterns import Words, any_name
from codemods.helpers.star_exports import torch_star_exports

_NEWLINE = re.compile(r"\r\n|\n")
_BLOCKS = ("body", "handlers", "cases", "orelse", "finalbody")  # statement-list fields, in _fields order


class Scan:
    """What CPython's `ast` of a text says before libcst parses it (a C parse, a fraction of
    libcst's cost): the lines a pattern matches, the statements on those lines, and what the
    imports bind. A codemod's `may_act` reads it to decline a file whose words are there but
    whose sites are not (`x.float()` is no `np.float`); `StatementMap` builds on it."""

    def __init__(self, source: str, module: ast.Module, facts=None, path: str | None = None) -> None:
        self.source = source
        self.module = module
        self._starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]
        self.imports = [n for n in ast_statements(module) if isinstance(n, (ast.Import, ast.ImportFrom))]
        # import spans and the names they bind
        self.aliases = [(node.lineno, node.end_lineno or node.lineno, bound) for node in self.imports if (bound := _bound(node))]
        self._hits: dict[str, list[int]] = {}
        self._targets: dict[str, set[str]] | None = None
        stars = [(n.level, n.module or "") for n in self.imports if isinstance(n, ast.ImportFrom) and n.names[0].name == "*"]
        self.names = FileNames.of(stars, facts, path) if stars or facts is not None else _NO_NAMES

    @classmethod
    def of(cls, source: str, facts=None, path: str | None = None) -> Scan | None:
        """None when CPython cannot parse the text, or its lines could be counted differently.
        With the repo's facts and the file's path, `qualified` follows star imports of the
        repository's modules and its re-exports too (torch's own star imports always)."""
        if "\r" in source.replace("\r\n", ""):
            return None  # a lone CR: CPython and our line count could disagree
        parsed = _ast(source)
        return None if parsed is None else cls(source, parsed, facts, path)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    def hits(self, patterns: Iterable[Words]) -> list[int]:
        """Sorted line numbers a match of any pattern starts on, plus the lines that use a name
        an import on one of those lines bound (`from torch.cuda.amp import custom_fwd` makes every
        line with `custom_fwd` a site; so does `import torch.autograd.Variable as V` for `V`)."""
        lines: set[int] = set()
        for pattern in patterns:
            key = pattern.pattern
            found = self._hits.get(key)
            if found is None:
                found = self._hits[key] = sorted({self.line_of(start) for start in pattern.starts(self.source)})
            lines.update(found)
        names = {name for first, last, bound in self.aliases if _any_between(lines, first, last) for name in bound}
        names |= self.names.matching(patterns)  # what a star import or a re-export gives it
        if names:
            words = Words(any_name(names))
            lines.update(self.line_of(start) for start in words.starts(self.source))
        return sorted(lines)

    def nodes(self, patterns: Iterable[Words]) -> Iterator[ast.AST]:
        """Every ast node of the statements a hit line of `patterns` is in (the innermost
        statement holding the line; a compound one whole when the line is its header's)."""
        lines = self.hits(patterns)
        stack = list(reversed(self.module.body)) if lines else []
        while stack:
            statement = stack.pop()
            held = _between(lines, *_lines(statement))
            if not held:
                continue
            children = [child for field in _BLOCKS for child in _statement_list(statement, field)]
            inside = {line for child in children for line in _between(held, *_lines(child))}
            if len(inside) < len(held):
                yield from ast.walk(statement)  # a line outside every child: the header's, or a simple statement
            else:
                stack.extend(reversed(children))

    def calls(self, patterns: Iterable[Words], names: Collection[str]) -> bool:
        """Whether a call on the lines of `patterns` may be a call of one of `names`."""
        return any(isinstance(n, ast.Call) and not self.qualified(n.func).isdisjoint(names) for n in self.nodes(patterns))

    def qualified(self, expr: ast.AST) -> set[str]:
        """Every dotted name `expr` (`np.float`, `F.softmax`, `Mapping`) may stand for through the
        file's imports, wherever they are (a superset of what libcst's resolution finds)."""
        dotted = ast_dotted(expr)
        if dotted is None:
            return set()
        if self._targets is None:
            self._targets = {}
            for node in self.imports:
                if isinstance(node, ast.Import):
                    for a in node.names:
                        local = a.asname or a.name.split(".")[0]
                        self._targets.setdefault(local, set()).add(a.name if a.asname else local)
                elif node.module and not node.level:
                    for a in node.names:
                        self._targets.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
                elif node.level:  # spelled with its dots, as helpers/names.py does
                    prefix = "." * node.level + (node.module or "")
                    for a in node.names:
                        target = f"{prefix}.{a.name}" if node.module else prefix + a.name
                        self._targets.setdefault(a.asname or a.name, set()).add(target)
            for name, target in self.names.star_names().items():
                self._targets.setdefault(name, set()).add(target)
        head, _, rest = dotted.partition(".")
        return {self.names.reexported(f"{target}.{rest}" if rest else target) for target in self._targets.get(head, ())}


def ast_dotted(expr: ast.AST) -> str | None:
    """`a.b.c` of an ast expression, or None when it is not a plain dotted name."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def ast_star_args(call: ast.Call) -> bool:
    """Whether a call passes `*args` or `**kwargs` (helpers/arguments.has_star_args, on the ast)."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def _lines(statement: ast.AST) -> tuple[int, int]:
    first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
    return first, statement.end_lineno or statement.lineno


def _between(lines: list[int], first: int, last: int) -> list[int]:
    return lines[bisect.bisect_left(lines, first) : bisect.bisect_right(lines, last)]


def _statement_list(node: ast.AST, field: str) -> list[ast.AST]:
    children = getattr(node, field, None)
    if not isinstance(children, list):
        return []
    out = []
    for child in children:
        if isinstance(child, (ast.ExceptHandler, getattr(ast, "match_case", ast.ExceptHandler))):
            out.extend(c for f in _BLOCKS for c in _statement_list(child, f))  # their bodies
        else:
            out.append(child)
    return out


def ast_statements(module: ast.Module) -> list[ast.AST]:
    """Every statement (and except handler, match case) of the module, in `ast.walk`'s
    breadth-first order, without going through expressions: no class or import is inside one,
    and expressions are most of a tree's nodes."""
    found: list[ast.AST] = []
    queue = deque(module.body)
    while queue:
        node = queue.popleft()
        found.append(node)
        for name in _BLOCKS:  # in _fields order for every node type that has them
            children = getattr(node, name, None)
            if isinstance(children, list):
                queue.extend(children)
    return found


def _bound(node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
    """The names an import binds that its uses may not spell out: every name of `from M import`,
    the `as` names of `import` (`import torch.cuda` binds `torch`, and its uses say `torch.cuda`)."""
    if isinstance(node, ast.ImportFrom):
        return tuple(a.asname or a.name for a in node.names if a.name != "*")
    return tuple(a.asname for a in node.names if a.asname)


def _any_between(lines: set[int], first: int, last: int) -> bool:
    return any(line in lines for line in range(first, last + 1))


def _ast(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None



class FileNames:
    """One file's names that another module gives it: what its star imports bind (torch's own
    modules from a table, the repository's from the whole-repo facts) and torch's names that a
    repository module it imports re-exports (`from mypkg.torch_utils import Variable`). Read by
    `Imports` (libcst side) and `Scan.qualified` (ast side); empty without facts and a path."""

    def __init__(self, stars: dict[str, str] | None = None, modules: dict[str, dict[str, str]] | None = None) -> None:
        self._stars = stars or {}
        self._modules = modules or {}  # how the file spells a repository module -> its exports

    @classmethod
    def of(cls, stars: Iterable[tuple[int, str]], facts=None, path: str | None = None) -> FileNames:
        """For a file with these star imports ((level, module) each), at `path` in a repository
        with these `RepoFacts`."""
        names: dict[str, str] = {}
        for level, module in stars:
            if level == 0 and module in torch_star_exports():
                names.update((n, f"{module}.{n}") for n in torch_star_exports()[module])
        entries = facts.imported_names if facts is not None and path is not None else frozenset()
        if not entries:
            return cls(names) if names else _NO_NAMES
        index = _index(entries)
        here = os.path.abspath(path)
        for module in index.stars.get(here, ()):
            names.update(index.star_visible.get(module, {}))
        spelled = {spelling: index.exports.get(module, {}) for spelling, module in index.spellings.get(here, {}).items()}
        return cls(names, spelled)

    def star_names(self) -> dict[str, str]:
        return self._stars

    def matching(self, patterns: Iterable[Words]) -> set[str]:
        """The local names a star import or a re-export gives this file whose qualified name a
        pattern matches (`GradScaler` for `cuda\\.amp`): the lines using them are sites too."""
        if not self._stars and not self._modules:
            return set()
        given = dict(self._stars)
        for exports in self._modules.values():
            given.update(exports)
        patterns = list(patterns)
        return {local for local, qualified in given.items() if any(p.search(qualified) for p in patterns)}

    def reexported(self, qualified: str) -> str:
        """`qualified` with a repository module's re-export followed (`mypkg.torch_utils.Variable`
        -> `torch.autograd.Variable`); as it is otherwise."""
        if not self._modules:
            return qualified
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            exports = self._modules.get(".".join(parts[:cut]))
            if exports is not None:
                target = exports.get(parts[cut])
                if target is None:
                    return qualified
                return ".".join([target, *parts[cut + 1 :]])
        return qualified


_NO_NAMES = FileNames()


def indirect_spellings(facts, path: str, source: str) -> str:
    """The qualified names (`torch.cuda.amp.GradScaler`) of the names this file uses that only a
    star import or a re-export of another repository module gives it, one per line ("" when
    none): the trigger regexes, which read import spellings, read these too (engine/pipeline.py)."""
    entries = facts.imported_names if facts is not None else frozenset()
    if not entries:
        return ""
    index = _index(entries)
    here = os.path.abspath(path)
    stars, spellings = index.stars.get(here, ()), index.spellings.get(here, {})
    if not stars and not spellings:
        return ""
    given: dict[str, str] = {}
    for module in stars:
        given.update(index.star_visible.get(module, {}))
    for module in spellings.values():
        given.update(index.exports.get(module, {}))
    used = set(_WORD.findall(source)) & given.keys()
    return "\n".join(sorted({given[name] for name in used}))


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def exports_read(facts, path: str) -> dict[str, dict[str, str]]:
    """The repository modules the file at `path` imports from (by a star import or by naming the
    module), each with what it exports from outside the repository (name -> qualified name)."""
    entries = facts.imported_names if facts is not None else frozenset()
    if not entries:
        return {}
    index = _index(entries)
    here = os.path.abspath(path)
    modules = [*index.stars.get(here, ()), *index.spellings.get(here, {}).values()]
    return {module: index.exports.get(module, {}) for module in modules}


def names_taken(facts, path: str) -> frozenset[str]:
    """The names of the file at `path` that other files of the repository may import from it
    (by a star import or by name) and that it got from an import itself: its interface, which
    a rewrite must not remove however unused it is here (`utils.py`'s `from torch.autograd
    import Variable`, when `train.py` says `from utils import *`)."""
    entries = facts.imported_names if facts is not None else frozenset()
    if not entries:
        return frozenset()
    index = _index(entries)
    here = os.path.abspath(path)
    marks = index.taken.get(here)
    if not marks:
        return frozenset()
    exports = index.exports.get(here, {})
    if "**" in marks:  # `import utils`: any attribute may be read
        return frozenset(exports)
    names = {name for name in marks if name in exports}
    if "*" in marks:
        names |= set(index.star_visible.get(here, {}))
    return frozenset(names)


def names_read(facts, path: str) -> frozenset[str]:
    """The part of `names_taken` that other files are known to read by name (`from m import x`,
    `m.x`, `x` after `from m import *`), rather than perhaps (a dynamic read, `import m` passed
    around, a file whose reads are not known)."""
    entries = facts.imported_names if facts is not None else frozenset()
    if not entries:
        return frozenset()
    index = _index(entries)
    here = os.path.abspath(path)
    return frozenset(index.taken.get(here, set()) & set(index.exports.get(here, {})))


def names_key(facts, path: str) -> str:
    """What of the repository's star imports and re-exports the codemods can read for the file
    at `path` (its own star imports and module spellings, those modules' exports, and the names
    other files take from it), as a stable string: "" when it reads nothing. The per-file cache keys on it, so a file's cached
    result goes stale when a module it takes names from changes them, and only then."""
    entries = facts.imported_names if facts is not None else frozenset()
    if not entries:
        return ""
    index = _index(entries)
    here = os.path.abspath(path)
    stars, spellings = sorted(index.stars.get(here, ())), sorted(index.spellings.get(here, {}).items())
    taken = sorted(names_taken(facts, path))
    if not stars and not spellings and not taken:
        return ""
    modules = sorted({*stars, *(module for _, module in spellings)})
    parts = [repr(stars), repr(spellings), repr(taken)]
    for module in modules:
        parts.append(repr((module, sorted(index.exports.get(module, {}).items()), sorted(index.star_visible.get(module, {}).items()))))
    return "\n".join(parts)


class _Index:
    def __init__(self) -> None:
        self.exports: dict[str, dict[str, str]] = {}
        self.star_visible: dict[str, dict[str, str]] = {}
        self.stars: dict[str, list[str]] = {}
        self.spellings: dict[str, dict[str, str]] = {}
        self.taken: dict[str, set[str]] = {}  # module -> names other files import from it (`*`, `**`: see facts)


@lru_cache(maxsize=4)
def _index(entries: frozenset[str]) -> _Index:
    """`RepoFacts.imported_names` by file (helpers/facts/imported_names.py describes the entries)."""
    index = _Index()
    for entry in entries:
        kind, *rest = entry.split("\t")
        if kind == "E":
            module, name, qualified, star = rest
            index.exports.setdefault(module, {})[name] = qualified
            if star:
                index.star_visible.setdefault(module, {})[name] = qualified
        elif kind == "S":
            index.stars.setdefault(rest[0], []).append(rest[1])
        elif kind == "M":
            index.spellings.setdefault(rest[0], {})[rest[1]] = rest[2]
        elif kind == "T":
            index.taken.setdefault(rest[0], set()).add(rest[1])
    return index
