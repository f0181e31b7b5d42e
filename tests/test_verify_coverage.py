"""verify's rewrite coverage (which rewrites the proofs ran), its evidence-bearing verdict, and
intended divergences (issue #36 items 2-4).

The end-to-end cases run real suites in copies: `half_tested` needs no torch (its tests run on
any Python with pytest); `legacy_classifier` and the era project import torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.results import FileResult, Report, Status
from codemods.verify import VerifyOptions, VerifyReport, render, verify
from codemods.verify.compare import INTENDED, UNCHANGED, TestChange
from codemods.verify.core import _verdict
from codemods.verify.coverage_runs import _read, hook_env
from codemods.verify.model import OK
from codemods.verify.rewrite_coverage import RewriteCoverage, Site, exercised, sites, statement_spans

from tests.conftest import PROJECTS

HALF = [
    {"path": "halftested/containers.py", "line": 10, "code": "TM401"},
    {"path": "halftested/containers.py", "line": 14, "code": "TM401"},
    {"path": "halftested/losses.py", "line": 4, "code": "TM001"},
]
HALF_LINE = (
    "proof: 2 of 5 rewrites executed by the tests; not executed: halftested/containers.py:10 TM401, "
    "halftested/containers.py:14 TM401, halftested/losses.py:4 TM001"
)


def _copy(name: str, root: Path) -> Path:
    target = root / name
    shutil.copytree(PROJECTS / name, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


@pytest.fixture(scope="module")
def half(tmp_path_factory) -> VerifyReport:
    return verify(_copy("half_tested", tmp_path_factory.mktemp("half")), VerifyOptions(rerun=0))


def test_half_tested_counts_and_unexercised_rewrites_in_every_format(half) -> None:
    text = render.text(half)
    assert half.exit_code == 0, text
    assert half.coverage.to_dict() == {"rewrites": 5, "exercised": 2, "unexercised": HALF, "unavailable": None}
    assert HALF_LINE in text.splitlines()
    data = json.loads(render.as_json(half))
    assert data["coverage"] == {"rewrites": 5, "exercised": 2, "unexercised": HALF, "unavailable": None}
    markdown = render.markdown(half)
    assert "**2 of 5 rewrites executed** by the tests." in markdown
    table = markdown.split("### Rewrite coverage", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `halftested/")]
    assert rows == [
        "| `halftested/containers.py` | 10 | TM401 |",
        "| `halftested/containers.py` | 14 | TM401 |",
        "| `halftested/losses.py` | 4 | TM001 |",
    ]


def test_no_coverage_measures_nothing_and_claims_no_rewrite_executed(tmp_path) -> None:
    from click.testing import CliRunner

    from codemods.cli import main

    project = _copy("half_tested", tmp_path)
    result = CliRunner().invoke(main, ["verify", str(project), "--no-coverage", "--rerun", "0", "--format", "json"])
    data = json.loads(result.stdout)
    assert data["exit_code"] == 0, data["message"]
    assert data["coverage"] == {"rewrites": 5, "exercised": None, "unexercised": None, "unavailable": "not measured (--no-coverage)"}
    assert "executed" not in data["message"] or "unavailable" in data["message"], data["message"]


def test_the_verdict_says_how_much_was_compared(half) -> None:
    assert half.message == (
        "no regressions — 1 test passing on both sides, 1 failing on both; 2 of 5 rewrites executed; "
        "1 test(s) fixed by the migration"
    )
    assert render.text(half).splitlines()[-1].startswith("OK: no regressions — 1 test passing on both sides, 1 failing on both;")


def _bare_python() -> str:
    """An interpreter with pytest and without coverage (this venv's base), else skip."""
    base = shutil.which("python3", path=str(Path(sys.base_prefix) / "bin")) or ""
    probe = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('pytest') and not u.find_spec('coverage') else 1)"
    if not base or subprocess.run([base, "-c", probe]).returncode != 0:
        pytest.skip("no interpreter with pytest and without coverage here")
    return base


def test_a_target_without_coverage_is_measured_with_the_tools_own(tmp_path) -> None:
    report = verify(_copy("half_tested", tmp_path), VerifyOptions(rerun=0, python=_bare_python()))
    assert report.coverage.to_dict() == {"rewrites": 5, "exercised": 2, "unexercised": HALF, "unavailable": None}


def test_coverage_that_cannot_start_is_reported_unavailable_never_a_failure(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("codemods.verify.coverage_runs._our_coverage", lambda: None)
    report = verify(_copy("half_tested", tmp_path), VerifyOptions(rerun=0, python=_bare_python()))
    assert report.exit_code == 0
    assert report.coverage.unavailable == (
        "coverage could not start in the target interpreter (ModuleNotFoundError: No module named 'coverage'); "
        "install coverage>=7 there"
    )
    assert json.loads(render.as_json(report))["coverage"] == {
        "rewrites": 5, "exercised": None, "unexercised": None, "unavailable": report.coverage.unavailable,
    }  # fmt: skip
    text = render.text(report)
    assert f"proof: rewrite coverage unavailable: {report.coverage.unavailable}" in text
    assert "; rewrite coverage unavailable; " in report.message
    assert "No rewrite is shown to have run." in render.markdown(report)


def test_a_command_that_ignores_pythonpath_leaves_coverage_unavailable(tmp_path) -> None:
    project = _copy("half_tested", tmp_path)
    report = verify(project, VerifyOptions(rerun=0, tests="python -I -c 'import sys'"))
    assert report.exit_code == 0, render.text(report)
    assert report.coverage.unavailable.startswith("no process of the after side started coverage")
    assert report.message == "no regressions — 1 test passing on both sides; rewrite coverage unavailable"


def test_legacy_classifier_the_untested_cuda_branch_is_not_executed(tmp_path) -> None:
    pytest.importorskip("torch")
    report = verify(_copy("legacy_classifier", tmp_path), VerifyOptions(rerun=0))
    assert report.coverage.to_dict() == {
        "rewrites": 8, "exercised": 7, "unavailable": None,
        "unexercised": [{"path": "classifier/train.py", "line": 22, "code": "TM101"}],
    }  # fmt: skip
    assert "proof: 7 of 8 rewrites executed by the tests; not executed: classifier/train.py:22 TM101" in render.text(report)


def test_the_hook_measures_a_process_silently_and_runs_the_interpreters_own_sitecustomize(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(x):\n    if x:\n        return 1\n    return 2\n\n\nf(False)\n")
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys\nsys.stdout.write('own sitecustomize ran\\n')\n")
    env = {**os.environ, **hook_env(tmp_path / "cov", [os.path.realpath(module)], None)}
    for extra, printed in (("", ""), (os.pathsep + str(own), "own sitecustomize ran\n")):
        done = subprocess.run(
            [sys.executable, str(module)], env={**env, "PYTHONPATH": env["PYTHONPATH"] + extra}, capture_output=True, text=True
        )
        assert (done.returncode, done.stderr, done.stdout) == (0, "", printed)
    ran, why = _read(tmp_path / "cov" / "data", {"m.py": os.path.realpath(module)})
    assert ran == {"m.py": {1, 2, 4, 7}}, why


# --- the pieces, without running anything ---

OLD = "import collections\n\n\ndef f(x):\n    if x:\n        return collections.Mapping\n    return collections.Sequence\n"
NEW = (
    "import collections\nimport collections.abc\n\n\ndef f(x):\n    if x:\n        return collections.abc.Mapping\n"
    "    return collections.abc.Sequence\n"
)


def test_sites_locate_each_rewrite_in_the_original_and_the_migrated_file() -> None:
    result = FileResult("m.py", Status.CHANGED, rewrites={"TM401": 2})
    assert sites(result, OLD, NEW) == [
        Site("m.py", 2, "TM401", 2, 2),  # the import, inserted before original line 2
        Site("m.py", 6, "TM401", 7, 7),
        Site("m.py", 7, "TM401", 8, 8),
    ]


def test_a_rewrite_counts_as_executed_only_when_its_statements_ran() -> None:
    spans = statement_spans(NEW)
    ran = {1, 2, 5, 6, 8}  # f(False): the `if` header ran, its body did not
    assert not exercised(Site("m.py", 6, "TM401", 7, 7), spans, ran)
    assert exercised(Site("m.py", 7, "TM401", 8, 8), spans, ran)
    # a deletion (nothing added) is judged by the statement now at its place
    assert exercised(Site("m.py", 3, "TM002", 5, 4), spans, {5})
    assert not exercised(Site("m.py", 3, "TM002", 5, 4), spans, {1})


def _report(changes: list[TestChange], coverage: RewriteCoverage | None) -> VerifyReport:
    report = VerifyReport("p", migration=Report(files=[], mode="write"), coverage=coverage)
    report.sides = [object()]  # a test run happened
    report.changes = changes
    return report


def test_ok_with_most_tests_failing_on_both_sides_reads_as_weak_evidence() -> None:
    changes = [TestChange("t.py::ok", "passed", "passed", UNCHANGED)]
    changes += [TestChange(f"t.py::bad{i}", "failed", "failed", UNCHANGED) for i in range(9)]
    report = _report(changes, RewriteCoverage(12, 3))
    report.status = OK
    assert _verdict(report) == "no regressions — 1 test passing on both sides, 9 failing on both; 3 of 12 rewrites executed"


def test_an_intended_divergence_is_its_own_kind_not_a_regression(tmp_path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "tests").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==1.2.0\n")  # written for torch < 1.3: align_corners=True
    (tmp_path / "warp.py").write_text(
        "import torch.nn.functional as F\n\n\ndef warp(image, grid):\n    return F.grid_sample(image, grid)\n"
    )
    (tmp_path / "tests" / "test_warp.py").write_text(
        "import torch\nimport torch.nn.functional as F\n\nfrom warp import warp\n\n\n"
        "def test_warp_matches_todays_default():\n"
        "    image, grid = torch.arange(16.0).reshape(1, 1, 4, 4), torch.tensor([[[[-0.5, -0.5], [0.5, 0.25]]]])\n"
        "    assert torch.equal(warp(image, grid), F.grid_sample(image, grid, align_corners=False))\n"
    )
    report = verify(tmp_path, VerifyOptions(rerun=0, target_torch="2.13"))
    text = render.text(report)
    assert report.exit_code == 0 and not report.regressions, text
    [change] = report.changes
    assert change.kind == INTENDED and change.culprits == ["TM015 on warp.py"]
    assert change.note.startswith("TM015 era-defaults changes results on purpose: it writes the align_corners default")
    assert report.culprit_units == [] and report.without_culprits is None  # nothing to drop
    assert report.message == (
        "no regressions — 0 tests passing on both sides; 1 of 1 rewrite executed; 1 intended change by TM015 era-defaults"
    )
    assert json.loads(render.as_json(report))["summary"]["intended"] == 1
    assert "Intended (a codemod changes this result on purpose" in text


def test_only_regressions_whose_culprits_all_declare_intent_become_intended() -> None:
    from codemods.verify.intended import classify
    from codemods.verify.migration import Unit
    from codemods.verify.model import ProbeResult

    era, loss = Unit("TM015", "warp.py"), Unit("TM001")
    report = VerifyReport("p")
    report.changes = [
        TestChange("t.py::warp", "passed", "failed", "regression", culprits=["TM015 on warp.py"]),
        TestChange("t.py::loss", "passed", "failed", "regression", culprits=["TM001"]),
        TestChange("t.py::both", "passed", "failed", "regression", culprits=["TM001", "TM015 on warp.py"]),
    ]
    report.probe = ProbeResult("python probe.py", "diverged", culprits=["TM015 on warp.py"])
    report.culprit_units = [loss, era]
    classify(report)
    assert [c.kind for c in report.changes] == [INTENDED, "regression", "regression"]
    assert report.probe.status == INTENDED and not report.probe.regression
    assert report.probe.intended.startswith("TM015 era-defaults changes results on purpose")
    assert report.culprit_units == [loss, era]  # TM015 is still behind t.py::both, with TM001
    report.changes.pop()
    classify(report)
    assert report.culprit_units == [loss]


def test_batch_report_md_lists_the_rewrites_no_proof_ran() -> None:
    from codemods.batch.render import markdown_report
    from codemods.batch.result import RepoResult

    checked = VerifyReport("repo", coverage=RewriteCoverage(3, 2, [Site("a.py", 9, "TM101", 12, 12)], ("the tests",)))
    text = markdown_report(RepoResult("repo", "src", status="verified"), "", checked, None)
    assert "**2 of 3 rewrites executed** by the tests." in text
    assert "| `a.py` | 9 | TM101 |" in text
