"""codemods/data/deprecated_api.json against the installed torch."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

torch = pytest.importorskip("torch")

from tests.conftest import ROOT  # noqa: E402

TABLE = json.loads((ROOT / "codemods" / "data" / "deprecated_api.json").read_text())
FIELDS = {"replacement", "handler", "aliases", "positional", "add", "rename", "keyword_from", "arguments",
          "safety", "deprecated", "removed", "reference"}


def resolve(qualified: str):
    module, _, attr = qualified.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_replacement_exists_in_installed_torch(name: str) -> None:
    assert callable(resolve(TABLE[name]["replacement"]))


@pytest.mark.parametrize("name", sorted(TABLE))
def test_entry_is_complete(name: str) -> None:
    entry = TABLE[name]
    assert set(entry) == FIELDS
    assert entry["safety"] in {"safe", "review", "finding"}
    assert (entry["handler"] == "finding") == (entry["safety"] == "finding")
    assert entry["reference"].startswith("https://")
    for alias in entry["aliases"]:
        assert resolve(alias) is resolve(name)


def test_table_is_what_gen_tables_writes() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_tables
    finally:
        sys.path.pop(0)
    path = ROOT / "codemods" / "data" / "deprecated_api.json"
    assert path.read_text() == gen_tables.render(gen_tables.deprecated_api)


def test_every_deprecated_nn_init_function_is_covered() -> None:
    import torch.nn.init as init

    deprecated = {
        n for n in dir(init) if not n.startswith("_") and "deprecated in favor of" in (getattr(init, n).__doc__ or "")
    }
    assert deprecated and {f"torch.nn.init.{n}" for n in deprecated} <= set(TABLE)
