"""What the smoke check can run in a project without tests, found with `ast` (nothing is imported).

- **imports**: every module of the project (not its tests, `setup.py`, virtualenvs or caches), by
  its dotted name from the project root (or from `src/` in a src layout);
- **models**: every `nn.Module` subclass it defines (directly, through another `torch.nn` class, or
  through another of its own models) that can be built: with no arguments when its `__init__`
  needs none, else with the arguments of a call the project itself makes to it, each a constant
  or a name of the calling module (`Head(16, 4)`, `ResNet(BasicBlock, [2, 2, 2, 2])`: smoke_sites.py);
- **scripts**: files that parse their arguments with argparse or click: `--help` must answer.

Each becomes a `Check` with a pseudo-test id: `smoke::import::<dotted.module>`,
`smoke::model::<dotted.module>.<Class>`, `smoke::script::<path>`.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from codemods.verify.commands import TEST_FILE
from codemods.verify.smoke_sites import Site, aliases_of, resolve, sites_in

PREFIX = "smoke::"
IMPORT, MODEL, SCRIPT = "import", "model", "script"
MAX_CHECKS = {IMPORT: 300, MODEL: 100, SCRIPT: 50}  # beyond these, the first ones by path
SKIPPED_FILES = {"setup.py", "conftest.py", "__main__.py"}
NOT_MODULES = {"Parameter", "ParameterDict"}  # capitalised torch.nn names that are no nn.Module
ARGPARSE_CALLS = {"ArgumentParser", "parse_args", "parse_known_args"}


@dataclass(frozen=True)
class Check:
    kind: str  # import | model | script
    module: str = ""  # dotted module (import, model)
    cls: str = ""  # model: the class
    args: tuple[str, ...] = ()  # model: the literal arguments' source, positional
    kwargs: tuple[tuple[str, str], ...] = ()  # model: name -> literal source
    path: str = ""  # the file, relative to the project
    site: str = ""  # model: where its arguments come from ("train.py:12"), "" for none
    site_module: str = ""  # model: the module whose names its arguments use ("" when only constants)

    @property
    def id(self) -> str:
        name = {IMPORT: self.module, MODEL: f"{self.module}.{self.cls}", SCRIPT: self.path}[self.kind]
        return f"{PREFIX}{self.kind}::{name}"

    def to_plan(self) -> dict:
        return {"id": self.id, "kind": self.kind, "module": self.module, "cls": self.cls,
                "args": list(self.args), "kwargs": dict(self.kwargs), "path": self.path,
                "site_module": self.site_module}  # fmt: skip


@dataclass
class Discovery:
    checks: list[Check] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)  # folders (relative) put first on sys.path
    unbuildable: list[str] = field(default_factory=list)  # models needing arguments no call site gives


def is_smoke(test_id: str) -> bool:
    return test_id.startswith(PREFIX)


def _files(project: Path) -> list[str]:
    from codemods.verify.copies import NEVER

    found = []
    for current, dirs, files in os.walk(project):
        dirs[:] = sorted(
            d for d in dirs
            if d not in NEVER and not d.startswith(".") and d not in ("tests", "test")
            and not (Path(current) / d / "pyvenv.cfg").exists()
        )  # fmt: skip
        for name in sorted(files):
            rel = (Path(current) / name).relative_to(project).as_posix()
            if name.endswith(".py") and name not in SKIPPED_FILES and not TEST_FILE.search(rel):
                found.append(rel)
    return found


def _roots(project: Path) -> list[str]:
    src = project / "src"
    return ["src", "."] if src.is_dir() and not (src / "__init__.py").exists() else ["."]


def module_name(rel: str, roots: list[str]) -> str | None:
    """`pkg/mod.py` -> `pkg.mod` (`pkg/__init__.py` -> `pkg`), from the first root it lies under;
    None when a part is no identifier (`my-scripts/run.py`)."""
    for root in roots:
        prefix = "" if root == "." else root + "/"
        if rel.startswith(prefix):
            parts = rel[len(prefix) :][:-3].split("/")
            if parts[-1] == "__init__":
                parts.pop()
            if parts and all(p.isidentifier() for p in parts):
                return ".".join(parts)
            return None
    return None


def _torch_module(name: str) -> bool:
    if not name.startswith("torch.nn."):
        return False
    last = name.rsplit(".", 1)[1]
    return last[:1].isupper() and last not in NOT_MODULES and ".functional." not in name and ".init." not in name


@dataclass
class _Class:
    module: str
    path: str
    node: ast.ClassDef
    bases: list[str]  # resolved dotted names


def _needs_arguments(node: ast.ClassDef) -> bool | None:
    """Whether its own `__init__` has required parameters; None when it defines none."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            a = item.args
            positional = [*a.posonlyargs, *a.args][1:]  # without self
            required = len(positional) - len(a.defaults)
            kwonly = any(d is None for d in a.kw_defaults)
            return required > 0 or kwonly
    return None


def _parses_arguments(tree: ast.Module, aliases: dict[str, str]) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = resolve(node.func, aliases) or ""
            last = name.rsplit(".", 1)[-1]
            if last in ARGPARSE_CALLS and ("argparse" in name or last != "ArgumentParser" or name == last):
                return True
            if name in ("click.command", "click.group"):
                return True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any((resolve(d.func if isinstance(d, ast.Call) else d, aliases) or "") in ("click.command", "click.group")
                   for d in node.decorator_list):  # fmt: skip
                return True
    return False


def discover(project: Path) -> Discovery:
    found = Discovery(roots=_roots(project))
    trees: dict[str, tuple[str, ast.Module]] = {}
    for rel in _files(project):
        module = module_name(rel, found.roots)
        try:
            source = (project / rel).read_bytes()
            tree = ast.parse(source, filename=rel)
        except (SyntaxError, ValueError, OSError):
            tree = None
        if module is not None:
            found.checks.append(Check(IMPORT, module=module, path=rel))
        if tree is not None:
            trees[rel] = (module or "", tree)
    classes: dict[str, list[_Class]] = {}
    sites: dict[str, list[Site]] = {}
    for rel, (module, tree) in trees.items():
        aliases = aliases_of(tree, module)
        for name, found_sites in sites_in(rel, module, tree).items():
            sites.setdefault(name, []).extend(found_sites)
        if _parses_arguments(tree, aliases):
            found.checks.append(Check(SCRIPT, path=rel))
        if not module:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = [b for b in (resolve(base, aliases, module) for base in node.bases) if b]
                classes.setdefault(f"{module}.{node.name}", []).append(_Class(module, rel, node, bases))
    models = _models(classes)
    for found_sites in sites.values():
        found_sites.sort(key=lambda site: (site.needs_names, site.file, site.line))  # constants first
    for name in sorted(models):
        c = classes[name][0]
        check = _buildable(c, classes, sites)
        if check is None:
            found.unbuildable.append(name)
        else:
            found.checks.append(check)
    return _capped(found)


def _models(classes: dict[str, list[_Class]]) -> set[str]:
    """The classes that are nn.Modules: a torch.nn base, or a base that is one of these (fixpoint)."""
    models: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, defs in classes.items():
            if name in models or len(defs) != 1:
                continue
            if any(_torch_module(b) or b in models for b in defs[0].bases):
                models.add(name)
                changed = True
    return models


def _buildable(c: _Class, classes: dict[str, list[_Class]], sites) -> Check | None:
    """The check that builds `c`: without arguments when no `__init__` up its chain needs any,
    else with the first call site whose arguments are all literals."""
    needs, current, seen, owner = None, c, set(), c
    while needs is None and current is not None:
        needs, owner = _needs_arguments(current.node), current
        seen.add(id(current))
        parents = [classes[b][0] for b in current.bases if b in classes and len(classes[b]) == 1]
        current = parents[0] if parents and id(parents[0]) not in seen else None
    if needs is None:
        # No __init__ in the project's chain: torch's own. A torch class that needs arguments
        # (nn.Linear) needs them here too; nn.Module, Sequential and containers do not.
        needs = not all(b.rsplit(".", 1)[1] in ("Module", "Sequential", "ModuleList", "ModuleDict") for b in c.bases if _torch_module(b))
    base = Check(MODEL, module=c.module, cls=c.node.name, path=c.path)
    if not needs:
        return base
    # Its own calls first, then those of the class whose __init__ it inherits (the same signature).
    for site in [*sites.get(f"{c.module}.{c.node.name}", []), *sites.get(f"{owner.module}.{owner.node.name}", [])]:
        return Check(MODEL, module=c.module, cls=c.node.name, args=site.args, kwargs=site.kwargs, path=c.path,
                     site=f"{site.file}:{site.line}", site_module=site.module if site.needs_names else "")  # fmt: skip
    return None


def _capped(found: Discovery) -> Discovery:
    kept: list[Check] = []
    for kind in (IMPORT, MODEL, SCRIPT):
        kept += [c for c in found.checks if c.kind == kind][: MAX_CHECKS[kind]]
    found.checks = kept
    return found
