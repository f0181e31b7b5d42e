"""verify on a legacy suite in the shape real projects have, with a migration broken on purpose.

fixtures/projects/legacy_unittest (see its README): unittest classes in `checks_*.py` files,
`-o python_files=tests/*.py`, `--import-mode=importlib`, a plugin from PYTHONPATH, and two modules
that only import after the migration. The broken migration is tests/faults.py's TM099, installed
only in this process (the engine's worker processes are forked from it). No torch: it is fast.
"""

from __future__ import annotations

import pytest

from codemods.verify import VerifyOptions, render, verify
from codemods.verify.compare import FIXED, NEW_FAILING, REGRESSION

from tests import faults

PYTEST = 'PYTHONPATH=plugins python -m pytest -q -p suite_plugin --import-mode=importlib -o "python_files=tests/*.py" tests'
UNITTEST = "python -m unittest discover -v -s tests -t . -p 'checks_*.py'"
FAULT = {"mathlib/stats.py": {"variance", "Summary.spread"}}
CULPRIT = "TM099 on mathlib/stats.py"


@pytest.fixture
def broken(monkeypatch):
    """The pipeline plus TM099, for this test only."""
    from codemods import registry

    monkeypatch.setattr(registry, "PIPELINE", registry.PIPELINE)
    faults.install(FAULT)


def kinds(report) -> dict[str, str]:
    return {c.id: c.kind for c in report.changes if c.kind != "unchanged"}


def test_the_honest_migration_fixes_the_unimportable_modules_and_shows_the_projects_own_bug(project) -> None:
    report = verify(project("legacy_unittest"), VerifyOptions(tests=PYTEST, rerun=1, device="cpu"))
    text = render.text(report)
    assert report.exit_code == 0, text
    assert kinds(report) == {
        "tests/checks_compat.py::CompatChecks::test_is_mapping": FIXED,
        "tests/checks_compat.py::CompatChecks::test_known_bug": NEW_FAILING,
        "tests/checks_legacy.py::LegacyChecks::test_scale": FIXED,
    }, text
    by_id = {c.id: c for c in report.changes}
    plugin = by_id["tests/checks_plugin.py::PluginChecks::test_plugin_was_loaded_from_pythonpath"]
    assert (plugin.before, plugin.after) == ("passed", "passed")  # PYTHONPATH and -p reached pytest
    known = by_id["tests/checks_compat.py::CompatChecks::test_known_bug"]
    assert known.before_message.startswith("tests/checks_compat.py did not import: AttributeError")
    # Each side reran what it had observed: the module on the side where it did not import.
    assert known.reruns_before == ["error"] and known.reruns_after == ["failed"]
    assert "Newly collected, failing" in text and "1 newly collected test(s) failing" in report.message


def test_a_broken_migration_is_reported_as_regressions_with_its_culprit_never_as_flaky(project, broken) -> None:
    report = verify(project("legacy_unittest"), VerifyOptions(tests=PYTEST, rerun=2, device="cpu"))
    text = render.text(report)
    assert report.exit_code == 1, text
    regressions = {c.id for c in report.regressions}
    assert regressions == {
        # checks_stats.py imports `variance`: the module no longer imports, both its tests are gone
        "tests/checks_stats.py::StatsChecks::test_mean",
        "tests/checks_stats.py::StatsChecks::test_variance",
        # checks_summary.py imports fine; the one test calling `spread()` fails
        "tests/checks_summary.py::SummaryChecks::test_spread",
    }, text
    assert not report.flaky and "Flaky" not in text
    for c in report.regressions:
        assert c.kind == REGRESSION and c.culprits == [CULPRIT], text
        assert c.reruns_before == ["passed", "passed"] and None not in c.reruns_after, text
    gone = next(c for c in report.regressions if c.id.endswith("test_mean"))
    assert not gone.after_imported and "cannot import name 'variance'" in gone.after_message
    assert report.culprits[CULPRIT] == sorted(regressions)
    assert report.without_culprits is not None and report.without_culprits.clean, text
    assert f"caused by {CULPRIT}" in report.message and "culprit: " + CULPRIT in text
    # The fixes of the rest of the migration are still told apart from the fault.
    assert kinds(report)["tests/checks_compat.py::CompatChecks::test_is_mapping"] == FIXED


def test_a_suite_run_by_unittest_is_compared_per_test_from_its_verbose_output(project, broken) -> None:
    report = verify(project("legacy_unittest"), VerifyOptions(tests=UNITTEST, rerun=1, device="cpu"))
    text = render.text(report)
    assert report.exit_code == 1, text
    assert {c.id for c in report.regressions} == {
        "tests.checks_stats::StatsChecks::test_mean",
        "tests.checks_stats::StatsChecks::test_variance",
        "tests.checks_summary::SummaryChecks::test_spread",
    }, text
    assert all(c.culprits == [CULPRIT] for c in report.regressions), text
    assert kinds(report)["tests.checks_legacy::LegacyChecks::test_scale"] == FIXED
    assert not report.flaky


def test_a_suite_without_per_test_output_is_compared_by_exit_status_with_a_note(project, broken) -> None:
    quiet = "python -m unittest discover -s tests -t . -p 'checks_s*.py'"  # no -v: dots only
    report = verify(project("legacy_unittest"), VerifyOptions(tests=quiet, rerun=0, device="cpu"))
    assert report.exit_code == 1 and [c.id for c in report.regressions] == ["<test command>"], render.text(report)
    assert any("compared by its exit status" in n for n in report.notes)
    assert report.regressions[0].culprits == [CULPRIT]
