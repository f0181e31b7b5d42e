"""The registry is the ordered list of the codemods' declarations, each made once (its SPEC)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codemods import registry
from codemods.gates import Stage

ROOT = Path(__file__).resolve().parents[1]
GATES = ROOT / "codemods" / "gates"


def test_every_declaration_is_listed_once_in_its_table() -> None:
    declared = sorted(p.stem for p in GATES.glob("*.py") if p.stem != "__init__")
    listed = [spec.target.partition(":")[0].rsplit(".", 1)[1] for spec in registry.all_specs()]
    assert sorted(listed) == declared  # each gate module's SPEC, once
    assert all(spec.stage is Stage.CHECK for spec in registry.CHECKS)
    assert [spec.stage for spec in registry.PIPELINE[:1]] == [Stage.TEXT]
    assert all(spec.stage is Stage.REWRITE for spec in registry.PIPELINE[1:])


def test_every_place_in_the_pipeline_says_why() -> None:
    """Each entry of PIPELINE has a comment above it giving the reason for its position."""
    source = (ROOT / "codemods" / "registry.py").read_text().splitlines()
    pipeline = next(
        node for node in ast.parse("\n".join(source)).body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "PIPELINE"
    )  # fmt: skip
    unexplained = [
        ast.unparse(entry) for entry in pipeline.value.elts if not source[entry.lineno - 2].lstrip().startswith("#")
    ]
    assert unexplained == []


def test_a_class_reads_code_and_safety_from_its_declaration() -> None:
    for spec in registry.all_specs():
        assert (spec.codemod.CODE, spec.codemod.SAFETY) == (spec.code, spec.label)


def test_a_class_that_declares_other_metadata_is_refused() -> None:
    base = registry.get("TM001").codemod
    with pytest.raises(TypeError, match="declare it once"):
        type(base.__name__, (base,), {"__module__": base.__module__, "CODE": "TM002"})


def test_only_checks_take_tm9_codes() -> None:
    with pytest.raises(ValueError, match="TM9xx"):
        registry.Spec("TM950", "not-a-check", "x:Y", registry.Safety.SAFE, ("x",))
    with pytest.raises(ValueError, match="TM9xx"):
        registry.Spec("TM050", "a-check", "x:Y", registry.Safety.SAFE, ("x",), stage=Stage.CHECK)
