"""scripts/real_suites.py without the network: JUnit parsing, the before/after comparison, pins."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("real_suites", ROOT / "scripts" / "real_suites.py")
real_suites = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("real_suites", real_suites)  # dataclasses look their module up there
_spec.loader.exec_module(real_suites)

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
 <testcase classname="tests.test_a" name="test_ok"/>
 <testcase classname="tests.test_a" name="test_bad"><failure message="x"/></testcase>
 <testcase classname="tests.test_a" name="test_skip"><skipped message="gpu"/></testcase>
 <testcase classname="" name="tests.test_b"><error message="collection"/></testcase>
</testsuite></testsuites>
"""


def _outcomes(tmp_path: Path, text: str, name: str) -> "real_suites.Outcomes":
    path = tmp_path / name
    path.write_text(text)
    return real_suites.Outcomes(real_suites.parse_junit(path))


def test_parse_junit_counts_each_outcome(tmp_path):
    outcomes = _outcomes(tmp_path, JUNIT, "a.xml")
    assert outcomes.summary() == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
    assert outcomes.by_test["tests.test_a::test_bad"] == "failed"


def test_compare_reports_regressions_and_the_target(tmp_path):
    suite = real_suites.Suite("demo", "1.0", "0" * 64, "demo-1.0.tar.gz", min_passed=2)
    before = _outcomes(tmp_path, JUNIT, "before.xml")
    fixed = JUNIT.replace('<failure message="x"/>', "")
    after = _outcomes(tmp_path, fixed, "after.xml")
    result = real_suites.compare(suite, before, after, {"rewrites": {}})
    assert result["met"] and result["regressions"] == [] and result["newly_passing"] == 1

    broken = JUNIT.replace('name="test_ok"/>', 'name="test_ok"><failure message="y"/></testcase>')
    result = real_suites.compare(suite, before, _outcomes(tmp_path, broken, "broken.xml"), {"rewrites": {}})
    assert not result["met"] and result["regressions"] == ["tests.test_a::test_ok"]
    assert "✗" in real_suites.markdown([result])


def test_every_test_requirement_is_pinned_and_torch_is_the_cpu_one():
    for requirement in real_suites.TEST_REQUIREMENTS:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+-]*", requirement), requirement
    torch = [r for r in real_suites.TEST_REQUIREMENTS if r.lower().startswith("torch==")]
    assert torch == ["torch==2.13.0"]
    for suite in real_suites.SUITES:
        assert re.fullmatch(r"[0-9a-f]{64}", suite.sha256) and suite.min_passed > 0
