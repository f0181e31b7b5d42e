"""The README's codemod table is generated from the registry and must not go stale."""

from __future__ import annotations

import subprocess
import sys

from codemods.registry import all_specs
from tests.conftest import ROOT


def test_readme_table_is_current() -> None:
    proc = subprocess.run([sys.executable, "scripts/render_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_codemod_documents_the_ruff_sections() -> None:
    for spec in all_specs():
        for section in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References"):
            assert f"## {section}" in spec.doc, f"{spec.code} lacks '## {section}'"
        assert spec.summary, f"{spec.code} lacks a DESCRIPTION"
