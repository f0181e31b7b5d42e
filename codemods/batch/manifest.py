"""The batch manifest: `[defaults]` plus one `[[repo]]` table per repository.

    [defaults]
    branch = "torch-migrate"
    select = ["TM0", "TM1"]
    tests = "python -m pytest -q"
    timeout = 900

    [[repo]]
    path = "../vision-models"       # a local repository (its working copy is never touched)

    [[repo]]
    url = "file:///srv/git/old-gan.git"
    ref = "v0.3"
    unsafe = true                   # any default can be overridden per repository
    target-torch = "1.13"           # the torch its output must run on (default: as `run`/`verify` derive it)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from codemods.batch.git import branch_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETTINGS = {
    "branch": str,
    "select": list,
    "ignore": list,
    "unsafe": bool,
    "tests": str,
    "probe": str,
    "timeout": (int, float),
    "python": str,
    "before-python": str,  # verify's --before-python: the interpreter the original code runs on today
    "device": str,
    "target-torch": str,  # the torch the output must run on ("1.13"), as run's and verify's --target-torch
}
REPO_ONLY = {"name": str, "path": str, "url": str, "ref": str}
# A name is one folder inside the work dir (repos/NAME, reports/NAME): never `.`, `..`, a path or an option.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class RepoEntry:
    name: str
    source: str  # a local path (absolute) or a URL
    is_path: bool
    ref: str | None = None
    branch: str = "torch-migrate"
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    unsafe: bool = False
    tests: str | None = None
    probe: str | None = None
    timeout: float = 1200.0
    python: str | None = None
    device: str = "auto"
    before_python: str | None = None
    target_torch: str | None = None

    def fingerprint(self) -> str:
        """Identifies the entry for --resume: same fingerprint, same work."""
        data = asdict(self)
        if data["target_torch"] is None:  # an entry without one keeps the fingerprint it had before the key existed
            del data["target_torch"]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _check(where: str, key: str, value: object, kind) -> object:
    if kind is list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ManifestError(f"{where}: `{key}` must be a list of strings, got {value!r}")
        return tuple(value)
    if kind is bool and not isinstance(value, bool):
        raise ManifestError(f"{where}: `{key}` must be true or false, got {value!r}")
    if not isinstance(value, kind) or (kind != bool and isinstance(value, bool)):
        raise ManifestError(f"{where}: `{key}` has the wrong type ({type(value).__name__}): {value!r}")
    return value


def _settings(table: dict, where: str, allowed: dict) -> dict:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))} (known: {', '.join(allowed)})")
    return {key.replace("-", "_"): _check(where, key, value, allowed[key]) for key, value in table.items()}


def _target_torch(value: str, where: str) -> str:
    from codemods.versions import format_version, target_version

    try:
        return format_version(target_version(value))
    except ValueError as exc:
        raise ManifestError(f"{where}: `target-torch`: {exc}") from None


def _default_name(source: str) -> str:
    name = re.sub(r"\.git$", "", source.rstrip("/").rsplit("/", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".-")[:100] or "repo"


def entry_problem(fields: dict) -> str | None:
    """Why an entry's `url` (`source`), `name`, `branch` or `ref` cannot be used (None: they can).
    Checked before any work: the name becomes folders that a rerun removes, the others go on git's
    command line."""
    name, branch, ref = fields.get("name"), fields.get("branch"), fields.get("ref")
    source = fields.get("source")
    if source is not None and source.startswith("-"):  # `--upload-pack=CMD` would run CMD
        return f"`url` {source!r} starts with '-', which git reads as an option"
    if name is not None and not SAFE_NAME.fullmatch(name):
        return (
            f"`name` {name!r} is not a plain folder name: use up to 100 letters, digits, '_', '.' and '-', "
            "not starting with '.' or '-' (it names the repository's clone and report folders in the work dir)"
        )
    if branch is not None and (problem := branch_problem(branch)):
        return f"`branch` {branch!r} {problem}"
    if ref is not None and ref.startswith("-"):
        return f"`ref` {ref!r} starts with '-', which git reads as an option"
    return None


def load_manifest(path: str | Path) -> list[RepoEntry]:
    """Parse and validate a manifest; every problem is one `ManifestError` naming entry and field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - {"defaults", "repo"})
    if unknown:
        raise ManifestError(f"{path}: unknown table(s) {', '.join(unknown)} (expected [defaults] and [[repo]])")
    defaults = _settings(data.get("defaults", {}), f"{path}: [defaults]", SETTINGS)
    if problem := entry_problem(defaults):
        raise ManifestError(f"{path}: [defaults]: {problem}")
    repos = data.get("repo")
    if not isinstance(repos, list) or not repos:
        raise ManifestError(f"{path}: no [[repo]] entries")

    entries: list[RepoEntry] = []
    names: set[str] = set()
    for index, raw in enumerate(repos, start=1):
        where = f"{path}: [[repo]] #{index}"
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: must be a table")
        fields = _settings(raw, where, {**SETTINGS, **REPO_ONLY})
        if ("path" in fields) == ("url" in fields):
            raise ManifestError(f"{where}: give exactly one of `path` or `url`")
        if "path" in fields:
            # A missing or non-git `path` is that repository's failed row, not the whole batch's error.
            source, is_path = str((path.parent / fields.pop("path")).resolve()), True
        else:
            source, is_path = fields.pop("url"), False
        name = fields.pop("name", None) or _default_name(source)
        if problem := entry_problem({**fields, "name": name, "source": source}):
            raise ManifestError(f"{where}: {problem}")
        if name.casefold() in names:  # one folder on a case-insensitive file system
            raise ManifestError(f"{where}: `name` {name!r} is used twice; give one of them a `name`")
        names.add(name.casefold())
        merged = {**defaults, **fields}
        if merged.get("before_python") and os.sep in merged["before_python"]:
            # Relative to the manifest; not resolved: a venv's python is a symlink to its base.
            merged["before_python"] = os.path.abspath(path.parent / merged["before_python"])
        if merged.get("device", "auto") not in ("auto", "cpu", "cuda"):
            raise ManifestError(f"{where}: `device` must be auto, cpu or cuda")
        if merged.get("target_torch") is not None:
            merged["target_torch"] = _target_torch(merged["target_torch"], where)
        entries.append(RepoEntry(name=name, source=source, is_path=is_path, **merged))
    return entries
