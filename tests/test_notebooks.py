"""Notebooks go through the same pipeline; untouched cells, outputs and metadata stay byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemods.api import Options, migrate

nbformat = pytest.importorskip("nbformat")


def _notebook(path: Path, *, indent: int = 1) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Training\nuses `size_average=False`"),
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip install -q torch\nimport torch.nn as nn"),
        nbformat.v4.new_code_cell("criterion = nn.MSELoss(size_average=False)\nnn.L1Loss?\nfiles = !ls\ncriterion"),
        nbformat.v4.new_code_cell("%%time\nx = nn.MSELoss(size_average=False)"),
        nbformat.v4.new_code_cell("print('untouched')  # why?"),
    ]
    nb.cells[4].outputs = [nbformat.v4.new_output("stream", name="stdout", text="untouched\n")]
    nb.cells[4].execution_count = 7
    text = json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text)
    return json.loads(text)


def test_notebook_cells_are_migrated_and_everything_else_kept(tmp_path: Path) -> None:
    target = tmp_path / "train.ipynb"
    before = _notebook(target)
    report = migrate([str(tmp_path)], Options(use_config=False))
    assert report.rewrites == {"TM001": 2} and not report.problems
    after = json.loads(target.read_text())
    assert after["cells"][2]["source"] == 'criterion = nn.MSELoss(reduction="sum")\nnn.L1Loss?\nfiles = !ls\ncriterion'
    assert after["cells"][3]["source"] == '%%time\nx = nn.MSELoss(reduction="sum")'  # a %%time body is Python
    for index in (0, 1, 4):  # markdown, magics, outputs: all exactly as before
        assert after["cells"][index] == before["cells"][index]
    assert after["metadata"] == before["metadata"]
    expected = dict(before)
    expected["cells"] = [*before["cells"][:2], after["cells"][2], after["cells"][3], before["cells"][4]]
    assert target.read_text() == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    assert migrate([str(tmp_path)], Options(use_config=False, mode="check")).exit_code == 0


def test_unchanged_notebook_is_never_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "clean.ipynb"
    _notebook(target)
    text = target.read_text().replace("size_average=False", 'reduction="sum"')
    target.write_text(text)
    stamp = target.stat().st_mtime_ns
    assert not migrate([str(tmp_path)], Options(use_config=False)).changed
    assert target.stat().st_mtime_ns == stamp and target.read_text() == text


def test_diff_hunks_are_labelled_by_cell(tmp_path: Path) -> None:
    _notebook(tmp_path / "train.ipynb", indent=2)
    report = migrate([str(tmp_path)], Options(use_config=False, mode="diff"))
    diff = report.changed[0].diff
    assert "--- a/" in diff and "train.ipynb [cell 3]" in diff  # counted from 1, as Jupyter shows cells
    assert '+criterion = nn.MSELoss(reduction="sum")' in diff


def test_findings_point_at_the_cell(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import torch.nn as nn"), nbformat.v4.new_code_cell("x = 1\nc = nn.L1Loss(size_average=flag)")]
    (tmp_path / "a.ipynb").write_text(json.dumps(nb, indent=1))
    (finding,) = migrate([str(tmp_path)], Options(use_config=False)).findings
    assert finding.line == 2 and finding.message.startswith("cell 2:")


def test_broken_notebook_json_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.ipynb").write_text('{"cells": [')
    report = migrate([str(tmp_path)], Options(use_config=False))
    assert report.exit_code == 2 and "not a notebook" in report.problems[0].reason
