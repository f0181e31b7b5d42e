"""End to end: `torch-migrate verify` on two real legacy projects' own test suites.

The first run downloads the pinned sdists from PyPI and builds the suites' venv (pinned test
dependencies, torch==2.13.0 only); both are cached (`$TORCH_MIGRATE_CACHE/real-suites`, default
`~/.cache/torch-migrate/real-suites`). Without PyPI on a cold cache the tests FAIL, never skip:
the targets below are the project's promise. See scripts/real_suites.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import ROOT, load_script

real_suites = load_script("real_suites")

pytestmark = pytest.mark.realsuites


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    try:
        cache = real_suites.check_cache(real_suites.DEFAULT_CACHE)
        rows = real_suites.run_all(real_suites.SUITES, cache)
    except real_suites.SetupError as exc:
        problem = str(exc)
    else:
        return {row["project"]: row for row in rows}
    pytest.fail(f"the real suites could not be set up: {problem}", pytrace=False)


# A deliberately broken migration (tests/faults.py's TM099, installed only in the CLI process these
# runs start): one definition removed from one module that some of the project's tests use.
FAULTS = {
    # ignite's tests import nothing before the migration (torch._six): the two tests of
    # MeanAbsoluteError are newly collected after it, and fail because its `reset` is gone (the
    # base class's does nothing, so its counters are never set). Removing `compute` instead would
    # leave NotComputableError imported and unused: the engine's name guard drops such a rewrite.
    "pytorch-ignite 0.1.0": ("ignite/metrics/mean_absolute_error.py", "MeanAbsoluteError.reset"),
    # Poutyne's suite runs before: test_policies.py imports sgdr_phases, so the whole module no
    # longer imports and every one of its tests that passed before is a regression.
    "poutyne 0.5.1": ("poutyne/framework/callbacks/policies.py", "sgdr_phases"),
}


@pytest.fixture(scope="module")
def broken(results) -> dict[str, dict]:
    """verify, with one rerun, on each suite migrated by the pipeline plus its fault."""
    python = real_suites.venv_python(real_suites.DEFAULT_CACHE)
    by_name = {f"{s.name} {s.version}": s for s in real_suites.SUITES}

    def one(project: str) -> dict:
        file, name = FAULTS[project]
        cli = (sys.executable, str(ROOT / "tests" / "faults.py"), f"{file}={name}")
        return real_suites.verify_suite(by_name[project], real_suites.DEFAULT_CACHE, python, 1, cli=cli, label="broken")

    with ThreadPoolExecutor(max_workers=len(FAULTS)) as pool:
        return dict(zip(FAULTS, pool.map(one, FAULTS)))


def _tests_in(project: str, test_file: str) -> set[str]:
    """The test functions of one of the project's test files, read from its source (the oracle)."""
    suite = next(s for s in real_suites.SUITES if f"{s.name} {s.version}" == project)
    tree = ast.parse((real_suites.DEFAULT_CACHE / "src" / suite.folder / test_file).read_text())
    ids = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            ids.add(f"{test_file}::{node.name}")
        elif isinstance(node, ast.ClassDef):
            ids |= {f"{test_file}::{node.name}::{f.name}" for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")}
    return ids


def test_broken_ignite_names_the_fault_behind_exactly_the_tests_that_use_it(broken):
    row = broken["pytorch-ignite 0.1.0"]
    culprit = "TM099 on ignite/metrics/mean_absolute_error.py"
    dependent = _tests_in("pytorch-ignite 0.1.0", "tests/ignite/metrics/test_mean_absolute_error.py")
    assert len(dependent) == 2, dependent
    # Nothing passed before (no module imported), so they are not regressions: newly collected, failing.
    # (And the whole-model load the safe default leaves failing: no culprit, nothing was broken.)
    assert row["regressions"] == [] and set(row["newly_failing"]) == dependent | _safe_load_failing(row), _explain(row)
    assert row["flaky"] == [], _explain(row)
    assert row["culprits"] == {culprit: sorted(dependent)}, _explain(row)
    assert row["after"]["passed"] >= 75 - len(dependent), _explain(row)


def test_broken_poutyne_reports_every_test_of_the_module_that_no_longer_imports_as_a_regression(broken):
    row = broken["poutyne 0.5.1"]
    culprit = "TM099 on poutyne/framework/callbacks/policies.py"
    dependent = _tests_in("poutyne 0.5.1", "tests/framework/callbacks/test_policies.py")
    assert len(dependent) >= 10, dependent
    assert set(row["regressions"]) == dependent, _explain(row)
    assert row["flaky"] == [] and row["status"] == "regressions" and row["exit_code"] == 1, _explain(row)
    assert row["culprits"] == {culprit: sorted(dependent)} and row["unexplained"] == [], _explain(row)
    assert all("cannot import name 'sgdr_phases'" in m for m in row["messages"].values()), _explain(row)


def _explain(row: dict) -> str:
    return f"{row['project']}: {row}"


def _safe_load_failing(row: dict) -> set[str]:
    return set(next(s for s in real_suites.SUITES if f"{s.name} {s.version}" == row["project"]).safe_load_failing)


def test_ignite_fails_to_import_before_and_passes_after(results):
    row = results["pytorch-ignite 0.1.0"]
    # Before: no test module imports (torch._six, collections.Mapping): only collection errors.
    assert row["before"]["passed"] == 0 and row["before"]["error"] > 0, _explain(row)
    assert row["after"]["passed"] >= 75, _explain(row)
    # One test saves and loads a whole model: torch 2.13's safe load refuses it, and the migration
    # keeps that load safe (a TM301 finding says how to allow it) instead of switching safety off.
    assert set(row["newly_failing"]) == _safe_load_failing(row) == {"tests/ignite/handlers/test_checkpoint.py::test_no_state_dict"}
    assert row["after"]["failed"] == 1 and row["after"]["error"] == 0, _explain(row)
    assert row["regressions"] == [] and row["status"] == "ok" and row["exit_code"] == 0, _explain(row)
    assert {"TM007", "TM401"} <= set(row["rewrites"]), _explain(row)


def test_poutyne_goes_from_78_to_92_passing_without_regressions(results):
    row = results["poutyne 0.5.1"]
    assert row["before"]["passed"] == 78 and row["before"]["failed"] + row["before"]["error"] > 0, _explain(row)
    assert row["after"]["passed"] >= 92, _explain(row)
    assert row["after"]["failed"] == row["after"]["error"] == 0, _explain(row)
    assert row["regressions"] == [] and row["status"] == "ok" and row["exit_code"] == 0, _explain(row)
    assert {"TM008", "TM401"} <= set(row["rewrites"]), _explain(row)


def test_report_renders_the_readme_table_from_the_results(results):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "real_suites.py"), "report", "--cache", str(real_suites.DEFAULT_CACHE)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "passed" in line]
    assert len(rows) == len(real_suites.SUITES)
    for project, row in results.items():
        line = next(line for line in rows if line.startswith(f"| {project} |"))
        assert f"{row['after']['passed']} passed" in line and "✓" in line and "| 0 |" in line
