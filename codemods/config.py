"""`[tool.torch-migrate]` in pyproject.toml, or `[torch-migrate]` in setup.cfg, found upwards."""

from __future__ import annotations

import configparser
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = ("select", "ignore", "unsafe", "exclude", "device-name", "per-file-ignores", "target-torch")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Config:
    source: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    unsafe: bool = False
    exclude: tuple[str, ...] = ()
    device_name: str = "device"
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)
    target_torch: str | None = None  # "1.13": the torch the output must run on (api.target_for)


def _codes(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.replace("\n", ",").split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ConfigError(f"{where}: expected a list of strings, got {value!r}")


def _bool(value: object, where: str, typed: bool) -> bool:
    """A boolean; from setup.cfg (`typed` False: every value is a string) also its spellings."""
    if isinstance(value, bool):
        return value
    if not typed and isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0", "yes", "no"}:
        return value.strip().lower() in {"true", "1", "yes"}
    raise ConfigError(f"{where}: expected true or false, got {value!r}")


def _target_torch(value: object, where: str) -> str:
    """`target-torch = "1.13"`: a release the tables know. A string only: TOML reads 1.10 as 1.1."""
    from codemods.versions import format_version, target_version

    if not isinstance(value, str):
        raise ConfigError(f'{where}: expected a string such as "1.13", got {value!r}')
    try:
        return format_version(target_version(value))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _known(codes: tuple[str, ...], where: str) -> tuple[str, ...]:
    """`codes` if each names a codemod (a code, a prefix, a name or ALL), else a ConfigError."""
    from codemods import registry  # the registry is only needed once a config is read

    try:
        registry.select(codes, unsafe=True)
    except registry.SelectionError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return codes


def _expanded(codes: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The exact codes that `codes` (codes, prefixes, names, any case) stand for."""
    from codemods import registry

    if not codes:  # select() reads "nothing given" as everything
        return ()
    return tuple(s.code for s in registry.select(_known(codes, where), unsafe=True))


def _parse(raw: dict, source: Path, typed: bool) -> Config:
    where = f"{source}"
    unknown = sorted(set(raw) - set(KEYS) - {k.replace("-", "_") for k in KEYS})
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
    get = lambda key: raw.get(key, raw.get(key.replace("-", "_")))  # noqa: E731
    per_file = get("per-file-ignores") or {}
    if isinstance(per_file, str):  # setup.cfg: "glob: TM1, TM2" lines
        pairs = [line.split(":", 1) for line in per_file.splitlines() if line.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ConfigError(f"{where}: per-file-ignores lines must read 'glob: CODES'")
        per_file = {k.strip(): v for k, v in pairs}
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}: per-file-ignores must map globs to codes")
    device = get("device-name") or "device"
    if not isinstance(device, str) or not device.isidentifier():
        raise ConfigError(f"{where}: device-name must be a Python identifier, got {device!r}")
    select, unsafe, target = get("select"), get("unsafe"), get("target-torch")
    return Config(
        source=source,
        select=_known(_codes(select, f"{where}: select"), f"{where}: select") if select is not None else None,
        ignore=_known(_codes(get("ignore") or [], f"{where}: ignore"), f"{where}: ignore"),
        unsafe=_bool(unsafe, f"{where}: unsafe", typed) if unsafe is not None else False,
        exclude=_codes(get("exclude") or [], f"{where}: exclude"),
        device_name=device,
        per_file_ignores=tuple(_per_file(per_file, where)),
        target_torch=_target_torch(target, f"{where}: target-torch") if target is not None else None,
    )


def _per_file(table: dict, where: str):
    """(glob, exact codes) pairs: codes are checked and spelled out like `select`'s, so a
    lower-case code or a name ignores what it says and an unknown one is an error."""
    for glob, codes in table.items():
        label = f"{where}: per-file-ignores[{glob!r}]"
        yield glob, _expanded(_codes(codes, label), label)


def _from_pyproject(path: Path) -> Config | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    section = data.get("tool", {}).get("torch-migrate")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.torch-migrate] must be a table")
    return _parse(section, path, typed=True)


def _from_setup_cfg(path: Path) -> Config | None:
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}") from None
    if not parser.has_section("torch-migrate"):
        return None
    return _parse(dict(parser.items("torch-migrate")), path, typed=False)


def find_config(start: Path) -> Config:
    """The first configuration found from `start` upwards (defaults when there is none)."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        for name, reader in (("pyproject.toml", _from_pyproject), ("setup.cfg", _from_setup_cfg)):
            candidate = directory / name
            if candidate.is_file():
                found = reader(candidate)
                if found is not None:
                    return found
    return Config()


def load_config(path: Path) -> Config:
    """`--config FILE`: the settings of that file, no discovery. A `setup.cfg` (or any `.cfg`/
    `.ini`) is read for `[torch-migrate]`; a TOML file for `[tool.torch-migrate]` (a
    pyproject.toml), else its top level (a torch-migrate.toml holding only the settings)."""
    if not path.is_file():
        raise ConfigError(f"{path}: --config names no file")
    if path.suffix in (".cfg", ".ini"):
        found = _from_setup_cfg(path)
        if found is None:
            raise ConfigError(f"{path}: no [torch-migrate] section")
        return found
    found = _from_pyproject(path)
    if found is not None:
        return found
    if path.name == "pyproject.toml":
        raise ConfigError(f"{path}: no [tool.torch-migrate] table")
    data = tomllib.loads(path.read_text(encoding="utf-8"))  # _from_pyproject read it: it is TOML
    return _parse(data, path, typed=True)
