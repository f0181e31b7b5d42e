"""Make sure each copy imports its own code, not the user's tree.

A project installed in editable mode (`pip install -e .`, a `.pth` file, PYTHONPATH) is imported
from the user's working tree wherever the tests run, so both copies would test the original
code and any regression would go unseen. Before testing, the target interpreter is asked where
the migrated packages come from; when that is the user's tree, the copy's own folders are put
first on PYTHONPATH for every run, and the check is repeated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from codemods.verify import execute

_WHERE = r"""
import importlib.util, json, os, sys
# Without the working directory: `pytest` (unlike `python -m pytest`) does not put it on the path.
if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    del sys.path[0]
found = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    where = None
    if spec is not None:
        where = spec.origin if spec.origin not in (None, "namespace") else None
        if where is None and spec.submodule_search_locations:
            where = list(spec.submodule_search_locations)[0]
    found[name] = where
print("TORCH_MIGRATE_IMPORTS " + json.dumps(found))
"""


def import_roots(root: Path, files: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Top-level import name -> (folder it is imported from, relative to `root`; the files' paths
    relative to that folder), for the `.py` files among `files`."""
    roots: dict[str, tuple[str, list[str]]] = {}
    for rel in files:
        path = root / rel
        if path.suffix != ".py":
            continue
        name, folder = path.stem, path.parent
        while folder != root and (folder / "__init__.py").exists():
            name, folder = folder.name, folder.parent
        if name.isidentifier():
            entry = roots.setdefault(name, (folder.relative_to(root).as_posix(), []))
            entry[1].append(path.relative_to(folder).as_posix())
    return {name: (folder, tuple(sorted(subs))) for name, (folder, subs) in roots.items()}


def installed_copy(origin: str | None, subs: Iterable[str]) -> bool:
    """Whether `origin` (a package's __init__.py elsewhere, e.g. site-packages) is this project's
    package installed there: it holds the same files the migration changed."""
    if not origin or Path(origin).name != "__init__.py":
        return False
    base = Path(origin).parent.parent
    return all((base / sub).is_file() for sub in subs)


def origins(
    python: str, cwd: Path, env: dict[str, str], names: Iterable[str], timeout: float, processes: execute.Processes
) -> dict[str, str | None]:
    names = sorted(names)
    if not names:
        return {}
    try:
        done = processes.run([python, "-c", _WHERE, *names], cwd, env, timeout, merge_output=False)
    except execute.StartError:
        return {}
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("TORCH_MIGRATE_IMPORTS ")), None)
    return json.loads(line.split(" ", 1)[1]) if line else {}


def inside(path: str | None, folder: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False
