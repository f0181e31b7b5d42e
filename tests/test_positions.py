"""Every finding and review note names the line and column of the ORIGINAL file, in every format,
though the codemods before the one that reports it added lines (TM101 defines `device` below the
imports, TM103 writes its DDP helpers) or removed them (TM002 drops `from torch.autograd import
Variable`): engine/positions.py maps each codemod's input back to the file as read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from codemods.cli import main
from codemods.engine.positions import Origin, changed_lines, split_lines
from codemods.engine.pipeline import transform_source
from codemods import registry

# TM101 adds two lines below the imports, TM002 removes one; the loads are below both.
SHIFTED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


model = nn.DataParallel(nn.Linear(4, 2)).cuda()


def evaluate(x):
    y = F.sigmoid(Variable(x))
    return F.softmax(y)


state = torch.load("checkpoint.pt")
model.load_state_dict(torch.load("weights.pt"))
'''

# TM103 writes its helpers (dozens of lines) above the training loop; the loads are below them.
TRAINING = '''\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    dataset = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    model = nn.DataParallel(nn.Linear(4, 2)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
    extra = torch.load("extra.pt")
    model.load_state_dict(torch.load("model.pt"))
    return extra


if __name__ == "__main__":
    main()
'''


def _where(source: str, text: str) -> tuple[int, int]:
    """(line from 1, column from 1) of the first `text` in `source`."""
    for number, line in enumerate(source.splitlines(), start=1):
        if text in line:
            return number, line.index(text) + 1
    raise AssertionError(f"{text!r} not in the source")


def _run(path: Path, fmt: str) -> str:
    result = CliRunner().invoke(main, ["run", "--diff", "--no-cache", "--no-config", "--format", fmt, str(path)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def _json(path: Path) -> list[tuple[str, int, int]]:
    report = json.loads(_run(path, "json"))
    return [(f["code"], f["line"], f["column"]) for file in report["files"] for f in file["findings"]]


def _sarif(path: Path) -> list[tuple[str, int, int]]:
    report = json.loads(_run(path, "sarif"))
    found = []
    for result in report["runs"][0]["results"]:
        region = result["locations"][0]["physicalLocation"].get("region")
        if region is not None and result["ruleId"] != "edit" and "would change this file" not in result["message"]["text"]:
            found.append((result["ruleId"], region["startLine"], region["startColumn"]))
    return found


def _text(path: Path) -> list[tuple[str, int, int]]:
    rows = re.findall(rf"^{re.escape(str(path))}:(\d+):(\d+): (TM\d+) ", _run(path, "text"), re.MULTILINE)
    return [(code, int(line), int(column)) for line, column, code in rows]


@pytest.mark.parametrize("read", [_json, _sarif, _text], ids=["json", "sarif", "text"])
@pytest.mark.parametrize(
    ("source", "sites"),
    [
        (SHIFTED, {"TM102": ['torch.load("checkpoint.pt")', 'torch.load("weights.pt")'], "TM903": ["F.softmax(y)"]}),
        (TRAINING, {"TM102": ['torch.load("extra.pt")', 'torch.load("model.pt")']}),
    ],
    ids=["lines-added-and-removed", "ddp-helpers-added"],
)
def test_findings_name_the_original_line_and_column(tmp_path: Path, source: str, sites: dict, read) -> None:
    path = tmp_path / "train.py"
    path.write_text(source)
    found = read(path)
    assert any(code in ("TM101", "TM002", "TM103") for code in json.loads(_run(path, "json"))["summary"]["rewrites"])
    for code, texts in sites.items():
        expected = sorted(_where(source, text) for text in texts)
        assert sorted((line, column) for c, line, column in found if c == code) == expected, (code, found)
    # TM301 names the same calls as TM102, at the same places
    loads = sorted(_where(source, text) for text in sites["TM102"])
    assert sorted((line, column) for c, line, column in found if c == "TM301") == loads
    lines = source.splitlines()
    assert all(lines[line - 1].strip() for _, line, _ in found), found  # never a blank line


def test_a_finding_inside_inserted_code_names_the_statement_it_was_written_beside() -> None:
    origin = Origin("import torch\n\nx = 1\n", "import torch\n\ndevice = 'cpu'\n\nx = 1\n")
    assert origin.position(3, 0) == (1, 0)  # the non-blank line above, not the blank line 2
    assert origin.line(3) is None and origin.line(5) == 3
    assert origin.position(5, 0) == (3, 0)


def test_a_changed_line_maps_its_columns_through_what_stayed() -> None:
    origin = Origin("a = 1\nx = Variable(torch.load(f))\n", "x = torch.load(f)\n")
    assert origin.position(1, 4) == (2, 13)  # `torch.load` after `Variable(` in the original
    assert origin.line(1) == 2


LINES = st.lists(st.sampled_from(["a = 1", "b = f(a)", "", "c = g(b)", "    d = 2"]), max_size=12)


@settings(deadline=None)  # a loaded machine's pauses are not this test's subject
@given(LINES, LINES)
def test_every_mapped_position_is_a_line_of_the_original(old: list[str], new: list[str]) -> None:
    original, text = "\n".join(old) + "\n", "\n".join(new) + "\n"
    old, new = split_lines(original), split_lines(text)
    origin = Origin(original, text)
    for line in range(1, len(new) + 1):
        mapped, column = origin.position(line, 0)
        assert 1 <= mapped <= max(len(old), 1)
        if any(o.strip() for o in old):
            assert old[mapped - 1].strip()  # never blank while the original has a non-blank line
        source = origin.line(line)
        if source is not None and new[line - 1] == old[source - 1] and old[source - 1].strip():
            assert (mapped, column) == (source, 0)  # a line both texts have is that line
    kept = set(range(1, len(old) + 1)) - set(changed_lines(original, text, range(1, len(old) + 1)))
    assert all(old[i - 1] in new for i in kept)


def test_lines_end_where_python_ends_them() -> None:
    assert split_lines("a\fb\r\nc\rd\n") == ["a\fb", "c", "d"]


def test_the_pipeline_reports_original_positions_from_the_python_api() -> None:
    specs = [registry.get(code) for code in ("TM002", "TM101", "TM102", "TM301")]
    result = transform_source(SHIFTED, specs)
    loads = [(f.line, f.column + 1) for f in result.findings if f.code in ("TM102", "TM301")]
    assert sorted(set(loads)) == sorted(_where(SHIFTED, t) for t in ('torch.load("checkpoint.pt")', 'torch.load("weights.pt")'))
