"""`per-file-ignores` reads codes as `select`/`ignore` do (registry's matching: any case, a name,
a prefix, ALL) and rejects an unknown code naming the config file, in both config formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import registry
from codemods.config import ConfigError, find_config

PYPROJECT = '[tool.torch-migrate]\nper-file-ignores = {{"tests/*" = {codes}}}\n'
SETUP_CFG = "[torch-migrate]\nper-file-ignores =\n    tests/*: {codes}\n"


def _config(tmp_path: Path, kind: str, codes: list[str]):
    if kind == "pyproject.toml":
        (tmp_path / kind).write_text(PYPROJECT.format(codes="[" + ", ".join(f'"{c}"' for c in codes) + "]"))
    else:
        (tmp_path / kind).write_text(SETUP_CFG.format(codes=", ".join(codes)))
    return find_config(tmp_path)


@pytest.mark.parametrize("kind", ["pyproject.toml", "setup.cfg"])
@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["tm001"], ("TM001",)),
        (["loss-reduction"], ("TM001",)),
        (["Tm00"], tuple(s.code for s in registry.all_specs() if s.code.startswith("TM00"))),
        (["all"], tuple(s.code for s in registry.all_specs())),
    ],
    ids=["lower-case", "name", "prefix", "all"],
)
def test_codes_are_spelled_out_like_select(tmp_path: Path, kind: str, codes: list[str], expected: tuple) -> None:
    assert _config(tmp_path, kind, codes).per_file_ignores == (("tests/*", expected),)


@pytest.mark.parametrize("kind", ["pyproject.toml", "setup.cfg"])
def test_an_unknown_code_is_an_error_naming_the_file(tmp_path: Path, kind: str) -> None:
    with pytest.raises(ConfigError, match="unknown codemod") as info:
        _config(tmp_path, kind, ["TM001", "tm777"])
    assert str(info.value).startswith(f"{tmp_path / kind}: per-file-ignores['tests/*']: ")
    assert "'tm777'" in str(info.value)
