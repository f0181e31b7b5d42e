"""scripts/real_suites.py without the real suites: summarising verify's JSON, the table, pins, failures."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT, load_script

real_suites = load_script("real_suites")

SUITE = real_suites.Suite("demo", "1.0", "0" * 64, "demo-1.0.tar.gz", min_passed=2)


def _verify_json(after_kind: str = "fixed") -> dict:
    """The parts of a `torch-migrate verify --format json` report that summarise() reads."""
    tests = [
        {"id": "tests/test_a.py::test_ok", "kind": "unchanged"},
        {"id": "tests/test_a.py::test_bad", "kind": after_kind},
    ]
    after = {"passed": 2, "skipped": 1} if after_kind == "fixed" else {"passed": 1, "failed": 1, "skipped": 1}
    return {
        "status": "ok" if after_kind == "fixed" else "regressions",
        "sides": [
            {"label": "before", "outcomes": {"passed": 1, "failed": 1, "skipped": 1}},
            {"label": "after", "outcomes": after},
        ],
        "tests": tests,
        "summary": {"fixed": int(after_kind == "fixed")},
        "migration": {"rewrites": {"TM007": 2, "TM401": 1}, "files_changed": ["a.py"]},
        "notes": [],
    }


def test_summarise_reads_the_counts_regressions_and_codemods_of_a_verify_report():
    row = real_suites.summarise(SUITE, _verify_json(), 1.0, 0)
    assert row["before"] == {"passed": 1, "failed": 1, "error": 0, "skipped": 1}
    assert row["after"]["passed"] == 2 and row["regressions"] == [] and row["met"]
    assert "| demo 1.0 | 1 passed, 1 failed, 1 skipped | 2 passed, 1 skipped | >= 2 passed ✓ | 0 | TM007×2, TM401×1 |" in (
        real_suites.markdown([row])
    )


def test_a_regression_misses_the_target_even_with_enough_passing_tests():
    row = real_suites.summarise(SUITE, _verify_json("regression"), 1.0, 1)
    assert row["regressions"] == ["tests/test_a.py::test_bad"] and not row["met"]
    assert "✗" in real_suites.markdown([row])


def test_report_command_prints_the_table_of_a_results_file(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps([real_suites.summarise(SUITE, _verify_json(), 1.0, 0)]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "real_suites.py"), "report", "--json", str(results)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout == real_suites.markdown(json.loads(results.read_text()))


def test_an_unreachable_index_is_a_setup_error_that_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(real_suites, "ATTEMPTS", 1)
    monkeypatch.setattr(real_suites, "PIP_RETRIES", ("--retries", "0", "--timeout", "2"))
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(real_suites.SetupError, match="PyPI reachable"):
        real_suites.fetch(SUITE, tmp_path)


def test_a_cache_inside_a_git_repository_is_refused(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(real_suites.SetupError, match="inside the git repository"):
        real_suites.check_cache(tmp_path / "cache")
    assert real_suites.check_cache(tmp_path.parent / f"{tmp_path.name}-outside") == (tmp_path.parent / f"{tmp_path.name}-outside").resolve()


def test_every_test_requirement_is_pinned_and_torch_is_the_cpu_one():
    for requirement in real_suites.TEST_REQUIREMENTS:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+-]*", requirement), requirement
    torch = [r for r in real_suites.TEST_REQUIREMENTS if r.lower().startswith("torch==")]
    assert torch == ["torch==2.13.0"]
    for suite in real_suites.SUITES:
        assert re.fullmatch(r"[0-9a-f]{64}", suite.sha256) and suite.min_passed > 0
