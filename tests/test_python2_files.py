"""A file that does not parse as Python 3 and that no codemod reads is named by a TM000 finding
(a migration leaving it behind has not made the repository runnable), in every report and in
batch's summary row; the file itself is never touched."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from codemods.api import Options, migrate
from codemods.batch import run_batch
from codemods.batch.render import summary_lines, summary_table
from codemods.batch.result import RepoResult
from codemods.cli import main
from codemods.results import Status
from tests.test_batch import _manifest, _repo

PY2 = "import os\n\nprint 'hello'\n"  # no codemod's words in it: never parsed by one


def _migrate(root: Path, **kw):
    return migrate([str(root)], Options(use_config=False, cache=False, **kw))


def test_a_python2_file_no_codemod_reads_gets_one_finding_and_stays_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(PY2)
    (tmp_path / "new.py").write_text("import os\n\nprint('hello')\n")
    report = _migrate(tmp_path)
    (finding,) = report.findings
    assert finding.code == "TM000" and finding.path.endswith("old.py") and finding.line == 3
    assert "does not parse as Python 3" in finding.message and "print" in finding.message
    assert (tmp_path / "old.py").read_text() == PY2
    (old,) = [f for f in report.files if f.path.endswith("old.py")]
    assert old.status is Status.SKIPPED and not old.rewrites


def test_the_finding_belongs_to_tm000_and_follows_the_selection(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(PY2)
    assert not _migrate(tmp_path, select=("TM002",)).findings
    assert not _migrate(tmp_path, ignore=("TM000",)).findings


def test_json_and_sarif_show_it(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(PY2)
    for fmt in ("json", "sarif"):
        out = CliRunner().invoke(main, ["run", "--no-config", "--diff", "--format", fmt, str(tmp_path)]).output
        assert "TM000" in out and "does not parse as Python 3" in out, (fmt, out)
        json.loads(out)


def test_batch_names_the_files_in_its_summary_row(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    repo = _repo(src, "old", {"lib.py": "import torch\n", "legacy/py2.py": PY2})
    outcome = run_batch(_manifest(tmp_path, {"old": repo}), tmp_path / "work", verify=False)
    (result,) = outcome.results
    assert result.not_python3 == ["legacy/py2.py"] and result.findings == 1
    assert "1 not Python 3" in summary_lines([result], set(), 120)[1]


def test_the_wide_table_names_them() -> None:
    from rich.console import Console

    result = RepoResult("r", "src", status="unchanged", not_python3=["a.py", "b.py"], findings=2)
    console = Console(width=300, record=True)
    console.print(summary_table([result], set()))
    assert "2 file(s) not Python 3: a.py, b.py" in console.export_text()
