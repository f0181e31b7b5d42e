"""Notebooks of every shape nbformat 4 does not allow: each is a clear per-file problem naming
what is wrong, never an internal error; a CRLF notebook is migrated and keeps its line ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemods.api import Options, migrate
from codemods.results import Status

LEGACY = ["import torch.nn as nn\n", "c = nn.MSELoss(size_average=False)\n"]


def _notebook(cells, **keys) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **keys}


def _code(source) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


SHAPES = {
    "source list of numbers": (_notebook([_code([*LEGACY, 1, 2])]), "cell 1: its `source` list holds the number 1"),
    "source list holding null": (_notebook([_code([None])]), "cell 1: its `source` list holds null"),
    "source list of lists": (_notebook([_code([LEGACY])]), "cell 1: its `source` list holds a list"),
    "source null": (_notebook([_code(None)]), "cell 1: its `source` is null"),
    "source object": (_notebook([_code({"a": 1})]), "cell 1: its `source` is an object"),
    "source number, second cell": (_notebook([_code(LEGACY), _code(5)]), "cell 2: its `source` is the number 5"),
    "cell not an object": (_notebook(["import torch"]), "cell 1 is a string, not an object"),
    "cells an object": (_notebook({"a": _code(LEGACY)}), "`cells` is an object, not a list"),
    "cells null": (_notebook(None), "`cells` is null, not a list"),
    "no cells": ({"metadata": {}, "nbformat": 4, "nbformat_minor": 5}, "it has no `cells`"),
    "no nbformat": ({"cells": [_code(LEGACY)], "metadata": {}}, "it has no `nbformat` version"),
    "nbformat 3": ({"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [{"cell_type": "code", "input": LEGACY}]}]},
                   "nbformat 3 is not supported: only nbformat 4 notebooks are migrated (convert it"),
    "nbformat 5": (_notebook([_code(LEGACY)], nbformat=5), "nbformat 5 is not supported"),
    "nbformat as text": (_notebook([_code(LEGACY)], nbformat="4"), "nbformat '4' is not supported"),
    "a list": ([_code(LEGACY)], "not a notebook: its JSON is a list, not an object"),
    "null": (None, "not a notebook: its JSON is null, not an object"),
}  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES)
def test_a_malformed_notebook_is_a_clear_problem(tmp_path: Path, shape: str) -> None:
    notebook, reason = SHAPES[shape]
    target = tmp_path / "nb.ipynb"
    target.write_text(json.dumps(notebook, indent=1) + "\n")
    before = target.read_bytes()
    report = migrate([str(tmp_path)], Options(mode="write", use_config=False, cache=False))
    (result,) = report.files
    assert result.status is Status.ERROR
    assert result.problem.reason.startswith(reason) or reason in result.problem.reason, result.problem.reason
    assert not result.problem.reason.startswith("internal error")
    assert target.read_bytes() == before


@pytest.mark.parametrize("listed", [True, False], ids=["source-list", "source-string"])
def test_a_crlf_notebook_is_migrated_with_its_line_ends(tmp_path: Path, listed: bool) -> None:
    source = LEGACY if listed else "".join(LEGACY)
    target = tmp_path / "nb.ipynb"
    target.write_bytes((json.dumps(_notebook([_code(source)]), indent=1) + "\n").replace("\n", "\r\n").encode())
    report = migrate([str(tmp_path)], Options(mode="write", use_config=False, cache=False))
    assert not report.problems and report.rewrites == {"TM001": 1}
    data = target.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")
    cells = json.loads(data)["cells"]
    assert "".join(cells[0]["source"]) == 'import torch.nn as nn\nc = nn.MSELoss(reduction="sum")\n'
