"""codemods/data/legacy_tensor_types.json matches the installed torch (scripts/gen_tables.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import ROOT

pytest.importorskip("torch")


def test_legacy_tensor_types_table_is_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_tables", ROOT / "scripts" / "gen_tables.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    checked_in = json.loads((ROOT / "codemods" / "data" / "legacy_tensor_types.json").read_text())
    assert checked_in == gen.legacy_tensor_types()
    assert checked_in["FloatTensor"] == "float32" and checked_in["LongTensor"] == "int64"
