"""Regenerate codemods/data/torchvision_weights.json (TM009) from torchvision's Python source.

    python scripts/gen_torchvision_weights.py --source DIR           # write the table
    python scripts/gen_torchvision_weights.py --source DIR --check   # exit 1 if the table differs
    python scripts/gen_torchvision_weights.py --git-dir GIT [--rev R] [--check]   # read a git repository
    python scripts/gen_torchvision_weights.py --minimums             # only rewrite the torchvision
                                                                      # entries of torch_minimums.json

DIR holds `torchvision/models/` (a checkout of pytorch/vision, or an unpacked torchvision wheel or
sdist); GIT is a bare clone of pytorch/vision (what the search tool's `fetch` returns), read with
`git show REV:path`. Nothing is imported from torchvision: its compiled operators do not load
against the CPU torch wheel the tests use, and the rewriting path must not need it. Every module
under torchvision/models/ is parsed with `ast`:

- the `WeightsEnum` subclasses and their members, and where each is exported (`__all__` plus the
  packages' star imports): its public spelling is its package's (`torchvision.models.detection.X`);
- each builder decorated with `@handle_legacy_interface(weights=("pretrained", <default>), ...)`:
  for every new parameter, the legacy parameter it replaces and the weights the legacy `True`
  picks (`Enum.MEMBER`; `None` where none exist; the source text of a lambda that chooses by
  other arguments, which the codemod reports rather than guesses); its parameters in order
  (positional arguments are bound to them by `kwonly_to_pos_or_kw`); and every qualified name
  that reaches it (`torchvision.models.resnet18`, `torchvision.models.resnet.resnet18`).

The table pins the torchvision release and commit it was read from. The same run writes the
torchvision entries of codemods/data/torch_minimums.json (the weights enums, the members the
codemod writes, and each builder's keyword-only parameters — `weights=`, `weights_backbone=`, and
those a positional argument is turned into — in every spelling),
all at the torch release that pairs with torchvision 0.13, the first with weights enums.
tests/test_torchvision_weights_table.py checks the table's consistency and those entries without a
source; with TORCHVISION_SOURCE=DIR set it also runs `--check` against DIR.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "codemods" / "data"
TABLE = DATA / "torchvision_weights.json"
MINIMUMS = DATA / "torch_minimums.json"
FIRST_WEIGHTS_RELEASE = "0.13"  # the torchvision release that introduced `weights=` and the enums
PAIRED_TORCH = "1.12"  # the torch release torchvision 0.13 pairs with
PREFIX = "torchvision."


# -- reading the source ------------------------------------------------------------------------


class DirSource:
    """torchvision/models/**/*.py under a directory (a checkout, an unpacked wheel or sdist)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        if not (root / "torchvision" / "models" / "__init__.py").is_file():
            raise SystemExit(f"{root} has no torchvision/models/__init__.py")

    def files(self) -> list[str]:
        base = self.root / "torchvision" / "models"
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*.py"))

    def read(self, path: str) -> str:
        return (self.root / path).read_text(encoding="utf-8")

    def pin(self) -> dict:
        version = self.root / "torchvision" / "version.py"
        found = {"release": None, "commit": None}
        if version.is_file():
            text = version.read_text(encoding="utf-8")
            for key, name in (("release", "__version__"), ("commit", "git_version")):
                match = re.search(rf"^{name}\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
                if match:
                    found[key] = match.group(1)
        if found["commit"] is None and (self.root / ".git").exists():
            found["commit"] = _git(["--git-dir", str(self.root / ".git"), "rev-parse", "HEAD"])
        return found


class GitSource:
    """The same files at one revision of a (bare) git repository of pytorch/vision."""

    def __init__(self, git_dir: Path, rev: str) -> None:
        self.git = ["--git-dir", str(git_dir)]
        self.rev = _git([*self.git, "rev-parse", rev])

    def files(self) -> list[str]:
        listed = _git([*self.git, "ls-tree", "-r", "--name-only", self.rev, "torchvision/models"])
        return sorted(p for p in listed.splitlines() if p.endswith(".py"))

    def read(self, path: str) -> str:
        return _git([*self.git, "show", f"{self.rev}:{path}"])

    def pin(self) -> dict:
        text = self.read("version.txt") if "version.txt" in _git([*self.git, "ls-tree", "--name-only", self.rev]) else ""
        return {"release": text.strip() or None, "commit": self.rev}


def _git(args: list[str]) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()


# -- one module ----------------------------------------------------------------------------------


@dataclass
class Module:
    name: str  # torchvision.models.detection.faster_rcnn
    package: bool
    tree: ast.Module
    all: list[str] | None = None
    defined: set[str] = field(default_factory=set)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (module, name)
    stars: list[str] = field(default_factory=list)  # modules star-imported
    enums: dict[str, dict] = field(default_factory=dict)
    builders: dict[str, dict] = field(default_factory=dict)


def _module_name(path: str) -> tuple[str, bool]:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _absolute(module: Module, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    base = module.name.split(".") if module.package else module.name.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _is_weights_enum(node: ast.ClassDef) -> bool:
    return any(isinstance(b, ast.Name) and b.id == "WeightsEnum" for b in node.bases)


def _enum(node: ast.ClassDef) -> dict:
    members, default = [], None
    for statement in node.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
            if target == "DEFAULT" and isinstance(statement.value, ast.Name):
                default = statement.value.id
            else:
                members.append(target)
    return {"members": members, "default": default}


def _legacy_decorator(node: ast.FunctionDef) -> ast.Call | None:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Name) and decorator.func.id == "handle_legacy_interface":
            return decorator
    return None


def parse(path: str, text: str) -> Module:
    name, package = _module_name(path)
    module = Module(name, package, ast.parse(text, filename=path))
    for statement in module.tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets):
            if isinstance(statement.value, (ast.List, ast.Tuple)):
                module.all = [e.value for e in statement.value.elts if isinstance(e, ast.Constant)]
        elif isinstance(statement, ast.ImportFrom):
            source = _absolute(module, statement.level, statement.module)
            for alias in statement.names:
                if alias.name == "*":
                    module.stars.append(source)
                else:
                    module.imported[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(statement, ast.ClassDef):
            module.defined.add(statement.name)
            if _is_weights_enum(statement):
                module.enums[statement.name] = _enum(statement)
        elif isinstance(statement, ast.FunctionDef):
            module.defined.add(statement.name)
            decorator = _legacy_decorator(statement)
            if decorator is not None:
                module.builders[statement.name] = _builder(statement, decorator)
    return module


def _builder(node: ast.FunctionDef, decorator: ast.Call) -> dict:
    args = node.args
    legacy: dict[str, dict] = {}
    for keyword in decorator.keywords:
        value = keyword.value
        if not (isinstance(value, ast.Tuple) and len(value.elts) == 2 and isinstance(value.elts[0], ast.Constant)):
            raise SystemExit(f"{node.name}: unexpected handle_legacy_interface argument {ast.unparse(value)}")
        old, default = value.elts[0].value, value.elts[1]
        entry: dict = {"from": old}
        if isinstance(default, ast.Constant) and default.value is None:
            entry["value"] = None
        elif isinstance(default, ast.Attribute) and isinstance(default.value, ast.Name):
            entry["enum"], entry["value"] = default.value.id, default.attr  # local name, resolved later
        else:
            entry["chooser"] = ast.unparse(default)
        legacy[keyword.arg] = entry
    return {
        "positional": [a.arg for a in (*args.posonlyargs, *args.args)],
        "keywords": [a.arg for a in args.kwonlyargs],
        "legacy": legacy,
    }


# -- the whole package ---------------------------------------------------------------------------


class Package:
    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules

    def origin(self, module: str, name: str, seen: frozenset = frozenset()) -> tuple[str, str] | None:
        """Where `module.name` is defined: (defining module, name), following imports."""
        key = (module, name)
        if key in seen or module not in self.modules:
            return None
        seen = seen | {key}
        found = self.modules[module]
        if name in found.defined:
            return key
        if name in found.imported:
            return self.origin(*found.imported[name], seen)
        # A star import binds its names after the submodule of the same name was imported:
        # `torchvision.models.alexnet` is the function, not the module torchvision/models/alexnet.py.
        for star in found.stars:
            if name in self.exports(star):
                return self.origin(star, name, seen)
        return None

    def exports(self, module: str, seen: frozenset = frozenset()) -> set[str]:
        """The names `from module import *` binds."""
        found = self.modules.get(module)
        if found is None or module in seen:
            return set()
        if found.all is not None:
            return set(found.all)
        names = {n for n in (*found.defined, *found.imported) if not n.startswith("_")}
        for star in found.stars:
            names |= self.exports(star, seen | {module})
        return names

    def attributes(self, module: str) -> set[str]:
        """Every name reachable as `module.name`."""
        found = self.modules[module]
        names = set(found.defined) | set(found.imported)
        for star in found.stars:
            names |= self.exports(star)
        return names

    def public(self, origin: tuple[str, str]) -> str:
        """The shortest spelling among the packages above the defining module that export it."""
        module, name = origin
        parts = module.split(".")
        candidates = [f"{module}.{name}"]
        for end in range(len(parts) - 1, 1, -1):
            package = ".".join(parts[:end])
            if package in self.modules and name in self.exports(package) and self.origin(package, name) == origin:
                candidates.append(f"{package}.{name}")
        return min(candidates, key=lambda s: (s.count("."), s))


def generate(source) -> dict:
    modules = {m.name: m for m in (parse(path, source.read(path)) for path in source.files())}
    package = Package(modules)
    spellings: dict[tuple[str, str], set[str]] = {}
    for module in modules.values():
        for name in package.attributes(module.name):
            origin = package.origin(module.name, name)
            if origin is not None and origin[1] in modules[origin[0]].builders:
                spellings.setdefault(origin, set()).add(f"{module.name}.{name}")
    enums: dict[str, dict] = {}
    builders: dict[str, dict] = {}
    for (module_name, name), spelled in sorted(spellings.items()):
        module = modules[module_name]
        entry = json.loads(json.dumps(module.builders[name]))
        for legacy in entry["legacy"].values():
            if "enum" in legacy:
                origin = package.origin(module_name, legacy["enum"])
                if origin is None or origin[1] not in modules[origin[0]].enums:
                    raise SystemExit(f"{module_name}.{name}: cannot find the weights enum {legacy['enum']}")
                public = package.public(origin)
                legacy["enum"] = public
                enums[public] = modules[origin[0]].enums[origin[1]]
        public = package.public((module_name, name))
        entry["spellings"] = sorted(spelled - {public})
        builders[public] = entry
    return {
        "about": (
            "TM009's table, generated by scripts/gen_torchvision_weights.py from torchvision's Python"
            " source (never imported): for each model builder decorated with handle_legacy_interface,"
            " the weights a legacy `pretrained=True` / `pretrained_backbone=True` resolves to (`value`"
            " of `enum`; null: none exist; `chooser`: a lambda that decides by other arguments), its"
            " parameters in order (positional arguments bind to them), and the other qualified names"
            " that reach it. Do not edit by hand."
        ),
        "source": {**source.pin(), "files": "torchvision/models/**/*.py"},
        "weights_since": {"torchvision": FIRST_WEIGHTS_RELEASE, "torch": PAIRED_TORCH},
        "enums": dict(sorted(enums.items())),
        "builders": dict(sorted(builders.items())),
    }


# -- the torch_minimums entries ------------------------------------------------------------------


def minimum_entries(table: dict) -> dict[str, str]:
    """The torchvision entries of torch_minimums.json that the table implies: everything TM009 may
    write, at the torch release paired with the first torchvision that has weights enums."""
    version = table["weights_since"]["torch"]
    entries: dict[str, str] = {}
    for public, builder in table["builders"].items():
        # `weights=`/`weights_backbone=`, and every keyword-only parameter: a positional argument
        # after `pretrained` becomes the keyword torchvision binds it to (as named since 0.13)
        for spelled in (public, *builder["spellings"]):
            for keyword in builder["keywords"]:
                entries[f"{spelled}({keyword})"] = version
        for legacy in builder["legacy"].values():
            if legacy.get("enum") and legacy.get("value"):
                entries[legacy["enum"]] = version
                entries[f"{legacy['enum']}.{legacy['value']}"] = version
    return dict(sorted(entries.items()))


def merged_minimums(text: str, table: dict) -> str:
    """torch_minimums.json's text with its torchvision entries replaced by the table's."""
    data = json.loads(text)
    kept = {k: v for k, v in data["minimums"].items() if not k.startswith(PREFIX)}
    data["minimums"] = {**kept, **minimum_entries(table)}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _same(path: Path, text: str) -> bool:
    """Whether `path` holds `text`; for torch_minimums.json, whether its torchvision entries are
    those of `text` (other codemods' entries may be added anywhere in it)."""
    current = path.read_text(encoding="utf-8")
    if path != MINIMUMS:
        return current == text
    return _ours(current) == _ours(text)


def _ours(text: str) -> dict[str, str]:
    return {k: v for k, v in json.loads(text)["minimums"].items() if k.startswith(PREFIX)}


def dumped(table: dict) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--source", type=Path, help="a directory holding torchvision/models/")
    where.add_argument("--git-dir", type=Path, help="a (bare) git repository of pytorch/vision")
    parser.add_argument("--rev", default="HEAD", help="the revision to read with --git-dir")
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    parser.add_argument("--minimums", action="store_true", help="only (re)write torch_minimums.json from the checked-in table")
    args = parser.parse_args()
    if args.minimums:
        table = json.loads(TABLE.read_text(encoding="utf-8"))
    elif args.source or args.git_dir:
        table = generate(DirSource(args.source) if args.source else GitSource(args.git_dir, args.rev))
    else:
        parser.error("give --source DIR or --git-dir GIT (or --minimums)")
    outputs = {MINIMUMS: merged_minimums(MINIMUMS.read_text(encoding="utf-8"), table)}
    if not args.minimums:
        outputs[TABLE] = dumped(table)
    stale = [path for path, text in outputs.items() if not path.exists() or not _same(path, text)]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from what {Path(__file__).name} generates", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
    print(f"{len(table['builders'])} builders, {len(table['enums'])} weights enums"
          f" (torchvision {table['source'].get('release')}, {table['source'].get('commit')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
