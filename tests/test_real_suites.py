"""End to end: `torch-migrate verify` on two real legacy projects' own test suites.

The first run downloads the pinned sdists from PyPI and builds the suites' venv (pinned test
dependencies, torch==2.13.0 only); both are cached (`$TORCH_MIGRATE_CACHE/real-suites`, default
`~/.cache/torch-migrate/real-suites`). Without PyPI on a cold cache the tests FAIL, never skip:
the targets below are the project's promise. See scripts/real_suites.py.
"""

from __future__ import annotations

import subprocess
import sys

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


def _explain(row: dict) -> str:
    return f"{row['project']}: {row}"


def test_ignite_fails_to_import_before_and_passes_after(results):
    row = results["pytorch-ignite 0.1.0"]
    # Before: no test module imports (torch._six, collections.Mapping): only collection errors.
    assert row["before"]["passed"] == 0 and row["before"]["error"] > 0, _explain(row)
    assert row["after"]["passed"] >= 76, _explain(row)
    assert row["after"]["failed"] == row["after"]["error"] == 0, _explain(row)
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
