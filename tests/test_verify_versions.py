"""verify across torch versions: the original on the torch it was written for, the migration on the target.

fixtures/projects/torch1_era (see its README) passes on torch 1.13.1 (the cached old-torch venv,
scripts/old_torch.py; a failure, never a skip, when it cannot be built) and is migrated for this
venv's torch 2.13. Three sides: before (original, 1.13.1), baseline (original, 2.13), after
(migrated, 2.13).
"""

from __future__ import annotations

import ast
import json
import sys
import venv

import pytest
from click.testing import CliRunner

from codemods.cli import main
from codemods.verify import VerifyOptions, render, verify
from codemods.verify.compare import FIXED, UNCHANGED, UNFIXED

from tests import faults
from tests.conftest import PROJECTS

pytest.importorskip("torch")

FIXED_TESTS = {
    "tests/test_compat.py::test_is_path_like",
    "tests/test_compat.py::test_grad_norm_l2_and_inf",
    "tests/test_spectral.py::test_principal_components_of_stretched_data",
}
UNFIXED_TEST = "tests/test_spectral.py::test_laplacian_spectrum_of_a_path_graph"


def options(old: str, **extra) -> VerifyOptions:
    return VerifyOptions(before_python=old, python=sys.executable, device="cpu", **{"rerun": 1, **extra})


@pytest.fixture(scope="module")
def three_sides(old_torch_python, tmp_path_factory):
    """One verification of torch1_era across versions, as JSON from the real CLI, with the probe."""
    import shutil

    root = tmp_path_factory.mktemp("era") / "torch1_era"
    shutil.copytree(PROJECTS / "torch1_era", root)
    result = CliRunner().invoke(
        main,
        ["verify", str(root), "--before-python", old_torch_python, "--python", sys.executable, "--device", "cpu",
         "--rerun", "1", "--probe", "python probe.py", "--format", "json"],
        catch_exceptions=False,
    )  # fmt: skip
    return result.exit_code, json.loads(result.stdout)


def test_the_three_kinds_on_the_example(three_sides) -> None:
    code, data = three_sides
    kinds = {t["id"]: t["kind"] for t in data["tests"]}
    assert {i for i, k in kinds.items() if k == FIXED} == FIXED_TESTS, kinds
    assert {i for i, k in kinds.items() if k == UNFIXED} == {UNFIXED_TEST}, kinds
    assert {i for i, k in kinds.items() if k not in (FIXED, UNFIXED)} == {i for i, k in kinds.items() if k == UNCHANGED}
    assert len([k for k in kinds.values() if k == UNCHANGED]) == 5
    assert code == 1 and data["exit_code"] == 1 and data["status"] == "regressions"  # something that passed does not
    assert data["summary"]["unfixed"] == 1 and data["summary"]["regression"] == 0 and data["summary"]["flaky"] == 0
    assert "1 unfixed" in data["message"]
    unfixed = next(t for t in data["tests"] if t["id"] == UNFIXED_TEST)
    assert (unfixed["before"], unfixed["baseline"], unfixed["after"]) == ("passed", "failed", "failed")
    assert "symeig" in unfixed["baseline_message"]
    fixed = next(t for t in data["tests"] if t["id"] == "tests/test_compat.py::test_is_path_like")
    assert (fixed["before"], fixed["baseline"], fixed["after"]) == ("passed", "error", "passed")
    assert "torch._six" in fixed["baseline_message"]
    # Each fix is credited to the codemod whose removal breaks the test again.
    fixers = {t["id"]: t["fixed_by"] for t in data["tests"] if t["kind"] == FIXED}
    assert fixers == {
        "tests/test_compat.py::test_is_path_like": ["TM007"],
        "tests/test_compat.py::test_grad_norm_l2_and_inf": ["TM007"],
        "tests/test_spectral.py::test_principal_components_of_stretched_data": ["TM006"],
    }
    assert data["fixed_by"] == {"TM006": 1, "TM007": 2} and "fixed by the migration (TM006 ×1, TM007 ×2)" in data["message"]


def test_each_side_reports_its_own_environment(three_sides, old_torch_python) -> None:
    _, data = three_sides
    sides = {s["label"]: s["environment"] for s in data["sides"]}
    assert list(sides) == ["before", "baseline", "after"]
    assert sides["before"]["torch"].startswith("1.13.1") and sides["before"]["python"] == old_torch_python
    assert sides["baseline"]["torch"].startswith("2.13.0") and sides["after"] == sides["baseline"]
    assert all(set(env) == {"python", "python_version", "torch", "cuda_available", "devices"} for env in sides.values())
    assert data["era"].startswith("1.13.1")


def test_the_probe_matches_across_versions(three_sides) -> None:
    _, data = three_sides
    probe = data["probe"]
    assert probe["status"] == "equal" and probe["compared"] >= 8, probe
    assert probe["before_torch"].startswith("1.13.1") and probe["after_torch"].startswith("2.13.0")


def _tests_using(name: str) -> set[str]:
    """The tests of the example whose module imports `name` (the oracle for the planted fault)."""
    ids = set()
    for path in sorted((PROJECTS / "torch1_era" / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.ImportFrom) and any(a.name == name for a in n.names) for n in ast.walk(tree)):
            ids |= {f"tests/{path.name}::{f.name}" for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")}
    return ids


def test_a_planted_regression_is_told_apart_from_the_upgrade_and_found_with_its_culprit(old_torch_python, project, monkeypatch) -> None:
    from codemods import registry

    monkeypatch.setattr(registry, "PIPELINE", registry.PIPELINE)
    faults.install({"oldnet/model.py": {"train_epoch"}})
    report = verify(project("torch1_era"), options(old_torch_python))
    text = render.text(report)
    dependent = _tests_using("train_epoch")
    assert dependent and {c.id for c in report.regressions} == dependent, text
    assert all(c.culprits == ["TM099 on oldnet/model.py"] for c in report.regressions), text
    assert {c.id for c in report.unfixed} == {UNFIXED_TEST}, text  # the upgrade's, not the fault's
    assert not report.flaky and report.exit_code == 1
    assert "baseline: failed" in text and "torch 1.13.1" in text
    markdown = render.markdown(report)
    assert "| | before | baseline | after |" in markdown and "| torch | 1.13.1" in markdown


def test_the_same_interpreter_twice_is_two_sides_with_a_note(project) -> None:
    root = project("legacy_unittest")
    report = verify(root, VerifyOptions(tests="python -m pytest -q -o 'python_files=tests/*.py' tests", before_python=sys.executable, python=sys.executable, device="cpu", rerun=0))
    assert [s.label for s in report.sides] == ["before", "after"]
    assert any("two sides" in n for n in report.notes)


def test_a_before_interpreter_that_cannot_run_the_tests_is_a_clear_error_before_anything_runs(project, tmp_path) -> None:
    root = project("legacy_unittest")
    runner = CliRunner()
    missing = runner.invoke(main, ["verify", str(root), "--before-python", str(tmp_path / "nope" / "python"), "--device", "cpu"])
    assert missing.exit_code == 2 and "before interpreter" in missing.stdout, missing.stdout
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # a Python without torch
    result = runner.invoke(main, ["verify", str(root), "--before-python", str(bare / "bin" / "python"), "--device", "cpu"])
    assert result.exit_code == 2 and "has no torch" in result.stdout, result.stdout


def test_batch_takes_before_python_and_reports_three_columns(old_torch_python, tmp_path, monkeypatch) -> None:
    import shutil
    import subprocess

    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Batch User\n\temail = batch@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "src" / "era"
    shutil.copytree(PROJECTS / "torch1_era", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "torch 1.13 code"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    manifest = tmp_path / "repos.toml"
    manifest.write_text(
        f'[defaults]\nbranch = "tm/upgrade"\ntimeout = 600\ndevice = "cpu"\npython = "{sys.executable}"\n'
        f'before-python = "{old_torch_python}"\n\n[[repo]]\nname = "era"\npath = "{repo}"\n'
    )
    result = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(tmp_path / "work"), "--format", "json"])
    (row,) = json.loads(result.output)["repos"]
    assert row["tests_baseline"] is not None and row["torch"]["before"].startswith("1.13.1"), row
    assert row["unfixed"] == [UNFIXED_TEST] and row["regressions"] == [], row
    assert row["status"] == "migrated" and row["commit"], row  # unfixed tests do not hold back a migration that broke nothing
    report = (tmp_path / "work" / "reports" / "era" / "REPORT.md").read_text()
    assert "| | before (torch 1.13.1" in report and "| baseline (torch 2.13.0" in report and "**Unfixed**" in report
    text = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(tmp_path / "work"), "--resume"]).output
    assert "baseline" in text  # the summary table's tests column: before → baseline → after


def test_run_verify_writes_a_migration_that_broke_nothing_and_exits_1_for_the_unfixed_test(old_torch_python, project) -> None:
    root = project("torch1_era")
    original = (root / "oldnet" / "compat.py").read_text()
    result = CliRunner().invoke(
        main,
        ["run", str(root), "--verify", "--before-python", old_torch_python, "--python", sys.executable,
         "--device", "cpu", "--rerun", "0"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "wrote the verified migration to 3 file(s)" in result.output and "remain unfixed" in result.output
    assert "from torch._six import" in original and "from torch._six import" not in (root / "oldnet" / "compat.py").read_text()
