"""The torch a repository says it runs on: its torch requirement, read from the files that state it.

    pin = find_pin(Path("path/to/repo"))     # Target((1, 13), "requirements.txt: torch==1.13.1") or None

Read without running anything and without a dependency: `requirements*.txt` (and
`requirements/*.txt`, following `-r`/`-c`), `setup.py` (its `install_requires` strings, read with
`ast`), `setup.cfg` (`[options] install_requires`), `pyproject.toml` (`[project].dependencies`,
`[tool.poetry.dependencies]`) and conda's `environment.yml` (a small line reader for the
`dependencies:` list and its `pip:` sublist: pyyaml is not a dependency of the tool).

A requirement becomes the newest release line of `versions.RELEASES` it allows (`torch>=1.8,<2`
-> 1.13, `torch==1.4.0` -> 1.4, `torch>=1.8` -> the newest). Several requirements: the lowest
wins, since the output must run on each. Environment markers are ignored for the same reason: a
requirement that holds on some platform is one the output must run on. A bare `torch` says
nothing about the version and is not a pin.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import sys
from pathlib import Path
from typing import Callable, Iterator

from codemods.specifiers import evaluate
from codemods.versions import Target, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REQUIREMENT_GLOBS = ("requirements*.txt", "requirements/*.txt")
CONDA_FILES = ("environment.yml", "environment.yaml")
CONDA_NAMES = {"pytorch", "torch", "pytorch-gpu", "pytorch-cpu"}  # not pytorch-cuda: that one is CUDA's version

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", re.DOTALL)
_WHEEL = re.compile(r"(?:^|/)torch-(\d+(?:\.\d+)+)(?:%2B|\+|-)", re.IGNORECASE)
_OPTION = re.compile(r"\s+-{1,2}[A-Za-z]")  # `--hash=...` and other per-requirement options


# -- requirement lines -------------------------------------------------------------------------


def _is_torch(name: str) -> bool:
    return re.sub(r"[-_.]+", "-", name).lower() == "torch"


def pep508(line: str) -> tuple[str, Version] | None:
    """A PEP 508 requirement string for torch: (the requirement as shown, its release line), or None.

    `torch==1.13.1; python_version >= "3.8"` is shown as `torch==1.13.1`; a wheel URL
    (`torch @ https://.../torch-1.13.1%2Bcu117-...whl`) counts as `==` its version."""
    requirement = line.split(";", 1)[0].strip()
    match = _NAME.match(requirement)
    if match is None or not _is_torch(match.group(1)):
        wheel = _WHEEL.search(requirement) if "://" in requirement or requirement.endswith(".whl") else None
        if wheel is None:
            return None
        version = evaluate(f"=={wheel.group(1)}")
        return (requirement, version) if version is not None else None
    rest = match.group(3).strip()
    if rest.startswith("@"):
        wheel = _WHEEL.search(rest)
        version = evaluate(f"=={wheel.group(1)}") if wheel else None
        return (requirement, version) if version is not None else None
    if rest.startswith("(") and rest.endswith(")"):  # the old `torch (>=1.8)` form
        rest = rest[1:-1]
    version = evaluate(rest) if rest else None
    return (requirement, version) if version is not None else None


def _requirement_lines(path: Path, seen: set[Path]) -> Iterator[tuple[Path, str]]:
    """The logical lines of a requirements file, comments dropped, continuations joined, `-r`
    and `-c` files followed (relative to the file that names them; each file once)."""
    resolved = path.resolve()
    if resolved in seen:
        return
    seen.add(resolved)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    text = re.sub(r"\\\r?\n", " ", text)
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        include = re.match(r"^(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+|(?=\S))(\S+)", line)
        if include:
            yield from _requirement_lines(path.parent / include.group(1), seen)
            continue
        if line.startswith("-"):
            continue  # -e, --index-url, -f ...: not a version
        yield path, _OPTION.split(line, 1)[0]


# -- the files ---------------------------------------------------------------------------------

Found = tuple[str, Version]  # (source, release line): "requirements.txt: torch==1.13.1", (1, 13)


def _label(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def from_requirements(root: Path) -> Iterator[Found]:
    seen: set[Path] = set()
    files = sorted({p for pattern in REQUIREMENT_GLOBS for p in root.glob(pattern) if p.is_file()})
    for file in files:
        for where, line in _requirement_lines(file, seen):
            found = pep508(line)
            if found is not None:
                yield f"{_label(where, root)}: {found[0]}", found[1]


def _strings(node: ast.AST | None, assigned: dict[str, ast.AST], depth: int = 0) -> list[str]:
    """The strings of a list/tuple literal (or a name bound to one, or their sum)."""
    if node is None or depth > 5:
        return []
    if isinstance(node, ast.Name):
        return _strings(assigned.get(node.id), assigned, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _strings(node.left, assigned, depth + 1) + _strings(node.right, assigned, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def from_setup_py(root: Path) -> Iterator[Found]:
    """`install_requires` of the `setup(...)` call, read with ast: the file is never executed."""
    path = root / "setup.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return
    assigned: dict[str, ast.AST] = {}
    for statement in tree.body:  # module-level `requirements = [...]`, the last one wins
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = statement.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "setup":
            continue
        for keyword in node.keywords:
            if keyword.arg == "install_requires":
                for text in _strings(keyword.value, assigned):
                    found = pep508(text)
                    if found is not None:
                        yield f"setup.py: {found[0]}", found[1]


def from_setup_cfg(root: Path) -> Iterator[Found]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return
    if not parser.has_option("options", "install_requires"):
        return
    for raw in parser.get("options", "install_requires").splitlines():
        found = pep508(re.sub(r"(^|\s)#.*$", "", raw))
        if found is not None:
            yield f"setup.cfg: {found[0]}", found[1]


def _poetry(value: object) -> Iterator[str]:
    """The version constraints of a poetry dependency: a string, a table, or a list of tables."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict) and isinstance(value.get("version"), str):
        yield value["version"]
    elif isinstance(value, list):
        for item in value:
            yield from _poetry(item)


def from_pyproject(root: Path) -> Iterator[Found]:
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    project = data.get("project")
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    for text in dependencies if isinstance(dependencies, list) else ():
        found = pep508(text) if isinstance(text, str) else None
        if found is not None:
            yield f"pyproject.toml: {found[0]}", found[1]
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    table = poetry.get("dependencies") if isinstance(poetry, dict) else None
    for name, value in table.items() if isinstance(table, dict) else ():
        if not _is_torch(name):
            continue
        for constraint in _poetry(value):
            version = evaluate(constraint, "poetry")
            if version is not None:
                yield f'pyproject.toml: {name} = "{constraint}"', version


def conda_spec(text: str) -> tuple[str, Version] | None:
    """A conda match spec for torch (`pytorch=1.13`, `pytorch==1.13.1=py3.9_cuda11.7_0`,
    `conda-forge::pytorch>=1.8,<2`, `pytorch 1.13.*`): (as shown, release line), or None."""
    spec = text.split("::", 1)[-1].strip()
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", spec)
    if match is None or match.group(1).lower() not in CONDA_NAMES:
        return None
    rest = match.group(2).strip()
    if "[" in rest:
        return None  # pytorch[version='>=1.8']: rare; not guessed at
    if rest.startswith("=") and not rest.startswith("=="):
        rest = "=" + rest[1:].split("=", 1)[0]  # `=1.13.1=build`: the build string goes
    elif rest.startswith("=="):
        rest = "==" + rest[2:].split("=", 1)[0]
    else:
        rest = rest.split(" ", 1)[0] if re.match(r"^\d", rest) else rest  # `1.13.1 build_0`
    version = evaluate(rest, "conda") if rest else None
    return (text.strip(), version) if version is not None else None


def _conda_items(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """(item, in the pip sublist) for each entry of the top-level `dependencies:` list."""
    inside = False
    pip_indent: int | None = None
    for raw in lines:
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 0 and not body.startswith("-"):
            key, _, value = body.partition(":")
            inside = key.strip().strip("'\"") == "dependencies"
            pip_indent = None
            if inside and value.strip().startswith("["):  # flow style: dependencies: [pytorch=1.13, numpy]
                for item in value.strip().strip("[]").split(","):
                    if item.strip():
                        yield item.strip().strip("'\""), False
                inside = False
            continue
        if not inside or not body.startswith("-"):
            continue
        item = body[1:].strip().strip("'\"")
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None
        if item.rstrip(":").strip() == "pip" and item.endswith(":"):
            pip_indent = indent
            continue
        yield item, pip_indent is not None


def from_conda(root: Path) -> Iterator[Found]:
    for name in CONDA_FILES:
        path = root / name
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for item, pip in _conda_items(lines):
            if pip:
                include = re.match(r"^(?:-r|--requirement)\s*=?\s*(\S+)", item)
                if include:
                    for where, line in _requirement_lines(path.parent / include.group(1), set()):
                        found = pep508(line)
                        if found is not None:
                            yield f"{_label(where, root)}: {found[0]}", found[1]
                    continue
                found = pep508(item)
            else:
                found = conda_spec(item)
            if found is not None:
                yield f"{name}: {found[0]}", found[1]


READERS: tuple[Callable[[Path], Iterator[Found]], ...] = (
    from_requirements,
    from_setup_py,
    from_setup_cfg,
    from_pyproject,
    from_conda,
)


def pin_in(folder: Path) -> Target | None:
    """The torch `folder`'s own files require: the lowest release line among their requirements
    (the first file in reading order on a tie), or None when none bounds torch."""
    best: Found | None = None
    for reader in READERS:
        for source, version in reader(folder):
            if best is None or version < best[1]:
                best = (source, version)
    return Target(best[1], best[0]) if best is not None else None


def _boundary(folder: Path, boundary: Path | None) -> list[Path]:
    """The folders to look in, nearest first: up to `boundary`, else to the first folder holding
    `.git`, a pyproject.toml or a setup.cfg; only `folder` when there is neither."""
    chain = [folder, *folder.parents]
    if boundary is not None and boundary in chain:
        return chain[: chain.index(boundary) + 1]
    for index, candidate in enumerate(chain):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").is_file() or (candidate / "setup.cfg").is_file():
            return chain[: index + 1]
    return [folder]


def find_pin(start: Path, boundary: Path | None = None) -> Target | None:
    """The repository's torch requirement: from `start` (a folder or a file) upwards to the
    repository's root (`boundary`, e.g. the config's folder, else the folder holding `.git`),
    the nearest folder whose files bound torch; never beyond the root."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in _boundary(here, boundary.resolve() if boundary is not None else None):
        found = pin_in(folder)
        if found is not None:
            return found
    return None
