"""Unit tests of the verify building blocks: no test suites are run here, and no torch is needed."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from codemods import api
from codemods.verify import culprits, execute, junit
from codemods.verify.commands import TestCommand, has_tests
from codemods.verify.compare import (
    ADDED, CHANGED, FIXED, FLAKY, MISSING, NEW_FAILING, REGRESSION, UNCHANGED, UNFIXED, compare, compare3, judge,
)  # fmt: skip
from codemods.verify.copies import make_copy, source_of
from codemods.verify.device import DeviceError, default_python, detect, environment, needs_cuda
from codemods.verify.migration import Unit, fired, migrate_tree
from codemods.verify.probe import first_divergence, numbers

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="" name="tests.test_broken" file="tests/test_broken.py"><error message="collection failure">x</error></testcase>
<testcase classname="tests.test_a.TestK" name="test_m" file="tests/test_a.py" line="2" />
<testcase classname="tests.test_a.TestK" name="test_p[a.b]" file="tests/test_a.py" line="3" />
<testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py"><skipped type="pytest.skip" message="no">s</skipped></testcase>
<testcase classname="tests.test_a" name="test_td" file="tests/test_a.py"><failure message="assert 0">f</failure></testcase>
<testcase classname="tests.test_a" name="test_td" file="tests/test_a.py"><error message="failed on teardown">e</error></testcase>
<testcase classname="tests.base.TestBase" name="test_inherited" file="tests/elsewhere.py" />
</testsuite></testsuites>"""


def test_junit_outcomes_and_node_ids(tmp_path: Path) -> None:
    xml = tmp_path / "r.xml"
    xml.write_text(JUNIT)
    got = {k: v.outcome for k, v in junit.parse(xml).items()}
    assert got == {
        "tests/test_broken.py": "error",
        "tests/test_a.py::TestK::test_m": "passed",
        "tests/test_a.py::TestK::test_p[a.b]": "passed",
        "tests/test_a.py::test_skip": "skipped",
        "tests/test_a.py::test_td": "error",  # failed in the call, then errored in teardown: worst wins
        "tests.base.TestBase::test_inherited": "passed",  # file does not match: not rebuilt
    }


def test_junit_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(junit.JUnitError):
        junit.parse(tmp_path / "absent.xml")
    (tmp_path / "bad.xml").write_text("<testsuite><testcase")
    with pytest.raises(junit.JUnitError):
        junit.parse(tmp_path / "bad.xml")


def test_rerun_target_found_above_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    sub = tmp_path / "pkg"
    sub.mkdir()
    target = junit.rerun_target("tests/test_a.py::test_x", [sub, tmp_path])
    assert target == f"{tmp_path}/tests/test_a.py::test_x"
    assert junit.rerun_target("tests/test_a.py", [sub, tmp_path]) == f"{tmp_path}/tests/test_a.py"
    assert junit.rerun_target("tests/nope.py::test_x", [sub, tmp_path]) is None
    assert junit.rerun_target("tests.base.TestBase::t", [tmp_path]) is None


def O(outcome: str) -> junit.Outcome:  # noqa: N802
    return junit.Outcome(outcome)


@pytest.mark.parametrize(
    "before, after, kind",
    [
        ("passed", "failed", REGRESSION),
        ("passed", "error", REGRESSION),
        ("skipped", "failed", REGRESSION),
        (None, "error", REGRESSION),  # a module (its id has no ::) that no longer imports
        ("passed", None, MISSING),
        ("failed", "passed", FIXED),
        ("error", "passed", FIXED),
        ("failed", "error", CHANGED),
        ("failed", "skipped", CHANGED),
        ("skipped", "passed", CHANGED),
        (None, "passed", ADDED),
        ("failed", "failed", UNCHANGED),
        ("passed", "passed", UNCHANGED),
    ],
)
def test_classify(before, after, kind) -> None:
    b = {"t.py": O(before)} if before else {}
    a = {"t.py": O(after)} if after else {}
    assert [c.kind for c in compare(b, a)] == [kind]


@pytest.mark.parametrize("before", [None, "imported-no-longer"])
def test_a_test_not_collected_before_and_failing_after_is_newly_collected_not_a_regression(before) -> None:
    b = {} if before is None else {"t.py": junit.Outcome("error", "ModuleNotFoundError: No module named 'torch._six'")}
    (change,) = compare(b, {"t.py::test_x": O("failed")})
    assert change.kind == NEW_FAILING and change.before_imported is (before is None)


def test_a_module_that_no_longer_imports_makes_its_tests_regressions_with_the_import_error() -> None:
    before = {"t.py::A::test_x": O("passed"), "t.py::A::test_y": O("failed"), "u.py::test_z": O("passed")}
    after = {"t.py": junit.Outcome("error", "NameError: name 'device' is not defined"), "u.py::test_z": O("passed")}
    changes = {c.id: c for c in compare(before, after)}
    assert set(changes) == {"t.py::A::test_x", "t.py::A::test_y", "u.py::test_z"}  # the module id is carried by its tests
    x = changes["t.py::A::test_x"]
    assert (x.kind, x.after, x.after_imported) == (REGRESSION, "error", False)
    assert x.after_message == "t.py did not import: NameError: name 'device' is not defined"
    assert changes["t.py::A::test_y"].kind == CHANGED  # failing before too: not a regression
    assert changes["u.py::test_z"].kind == UNCHANGED


def test_a_module_that_imports_only_after_migration_gives_fixes_and_newly_collected_failures() -> None:
    before = {"t.py": junit.Outcome("error", "AttributeError: module 'collections' has no attribute 'Mapping'")}
    after = {"t.py::A::test_x": O("passed"), "t.py::A::test_y": O("failed")}
    kinds = {c.id: c.kind for c in compare(before, after)}
    assert kinds == {"t.py::A::test_x": FIXED, "t.py::A::test_y": NEW_FAILING}


def test_judge_flaky_only_when_a_side_disagrees_with_itself() -> None:
    real = compare({"t": O("passed")}, {"t": O("failed")})[0]
    real.reruns_before, real.reruns_after = ["passed", "passed"], ["failed", "error"]
    assert judge(real) == REGRESSION
    flaky = compare({"t": O("passed")}, {"t": O("failed")})[0]
    flaky.reruns_before, flaky.reruns_after = ["passed", "passed"], ["passed", "failed"]
    assert judge(flaky) == FLAKY
    lucky_fix = compare({"t": O("failed")}, {"t": O("passed")})[0]
    lucky_fix.reruns_before, lucky_fix.reruns_after = ["passed"], ["passed"]
    assert judge(lucky_fix) == FLAKY
    vanished = compare({"t.py::x": O("passed")}, {})[0]
    vanished.reruns_before, vanished.reruns_after = ["passed"], [None]
    assert judge(vanished) == MISSING
    # A rerun that could not observe the test is no evidence: the first observation stands.
    derailed = compare({"t.py::x": O("passed")}, {"t.py::x": O("failed")})[0]
    derailed.reruns_before, derailed.reruns_after = [None, None], [None, "failed"]
    assert judge(derailed) == REGRESSION


def test_probe_numbers_within_tolerance() -> None:
    text, values = numbers("epoch 1/10 loss=0.25 lr 1e-3 nan")
    assert text == "epoch #/# loss=# lr # #"
    assert values[:4] == [1, 10, 0.25, 1e-3] and math.isnan(values[4])
    assert numbers("model v1.2 resnet50") == ("model v1.2 resnet50", [])
    before = "step 0 loss 1.000000\nstep 1 loss 0.500000\n"
    assert first_divergence(before, "step 0 loss 1.000001\nstep 1 loss 0.500000\n", 1e-5, 0) == (None, 4)
    div, compared = first_divergence(before, "step 0 loss 1.000000\nstep 1 loss 0.600000\n", 1e-5, 1e-8)
    assert (div.line, compared) == (2, 3) and "0.5 vs 0.6" in div.reason
    div, _ = first_divergence(before, "step 0 loss 1.000000\n", 1e-5, 1e-8)
    assert div.line == 2 and div.after == "<no more output>"
    div, _ = first_divergence("loss 1.0", "cost 1.0", 1e-5, 1e-8)
    assert div.reason == "the text differs"
    assert first_divergence("x nan", "x nan", 0, 0)[0] is None
    assert first_divergence("x 5", "x 5.1", 0, 0.2)[0] is None  # atol


def _fake_trial(breaks: dict[str, set[Unit]], calls: list):
    """A test fails while any unit in breaks[test] is applied (i.e. not switched off)."""

    def trial(without: frozenset[Unit]) -> set[str]:
        calls.append(without)
        return {t for t, units in breaks.items() if units - without}

    return trial


def test_culprit_one_at_a_time() -> None:
    units = [Unit("TM001"), Unit("TM002"), Unit("TM101")]
    calls: list = []
    found = culprits.search(units, ["a", "b"], _fake_trial({"a": {Unit("TM002")}, "b": {Unit("TM101")}}, calls))
    assert found.culprits == {"a": [Unit("TM002")], "b": [Unit("TM101")]}
    assert found.unexplained == [] and len(calls) == 3


def test_culprit_bisect_over_many_units() -> None:
    units = [Unit(f"TM{i:03d}") for i in range(12)]
    calls: list = []
    found = culprits.search(units, ["a"], _fake_trial({"a": {Unit("TM007")}}, calls))
    assert found.culprits == {"a": [Unit("TM007")]}
    assert len(calls) <= 6  # log2(12) + confirmation, not 12


def test_culprit_two_independent_causes_are_named_together() -> None:
    units = [Unit("TM001"), Unit("TM002")]

    def either_breaks(without: frozenset[Unit]) -> set[str]:
        # Either codemod alone breaks the test: switching one off does not fix it.
        return {"a"} if set(units) - without else set()

    found = culprits.search(units, ["a"], either_breaks)
    assert found.culprits == {"a": units} and found.together == {"a"} and found.unexplained == []


@pytest.mark.parametrize("n", [3, 9])  # one at a time, and bisection
def test_culprit_smallest_set_among_many_units(n) -> None:
    units = [Unit(f"TM{i:03d}") for i in range(n)]
    breakers = {units[1], units[-1]}
    calls: list = []
    found = culprits.search(units, ["a", "b"], _fake_trial({"a": breakers, "b": {units[0]}}, calls))
    assert found.culprits == {"a": [units[1], units[-1]], "b": [units[0]]}
    assert found.together == {"a"} and found.unexplained == []


def test_culprit_a_test_failing_with_everything_switched_off_is_unexplained() -> None:
    units = [Unit("TM001"), Unit("TM002"), Unit("TM003")]
    found = culprits.search(units, ["a"], lambda without: {"a"})
    assert found.culprits == {} and found.unexplained == ["a"] and found.trials == 4


def test_culprit_base_units_stay_switched_off() -> None:
    files = [Unit("TM001", "a.py"), Unit("TM001", "b.py")]
    other = Unit("TM002")
    # The test passes only with TM002 and TM001 on b.py both switched off.
    trial = _fake_trial({"t": {other, files[1]}}, [])
    assert culprits.search(files, ["t"], trial).culprits == {}
    assert culprits.search(files, ["t"], trial, base=frozenset({other})).culprits == {"t": [files[1]]}


def test_culprit_single_unit_needs_no_trial() -> None:
    calls: list = []
    found = culprits.search([Unit("TM001", "a.py")], ["t"], _fake_trial({}, calls))
    assert found.culprits == {"t": [Unit("TM001", "a.py")]} and calls == []


def test_pytest_commands_are_recognised() -> None:
    assert execute.pytest_argv("pytest -x tests") == ["pytest", "-x", "tests"]
    assert execute.pytest_argv("python3 -m pytest -k 'a and b'") == ["python3", "-m", "pytest", "-k", "a and b"]
    assert execute.pytest_argv("pytest && echo done") is None
    assert execute.pytest_argv("make test") is None


def test_rerun_drops_the_users_test_paths_but_keeps_option_values(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "conf").mkdir()
    command = TestCommand.from_user("pytest tests -x --rootdir conf")
    argv = command.argv(tmp_path / "r.xml", ["/abs/tests/test_a.py::t"], cwd=tmp_path)
    assert argv[:4] == ["pytest", "-x", "--rootdir", "conf"]
    assert argv[-1] == "/abs/tests/test_a.py::t" and f"--junitxml={tmp_path / 'r.xml'}" in argv
    assert TestCommand.from_user("make test").argv(tmp_path / "r.xml") == "make test"


def test_has_tests(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "test_x.py").write_text("")
    assert not has_tests(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "model_test.py").write_text("")
    assert has_tests(tmp_path)


def test_copy_outside_git_skips_venvs_and_caches(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "a.py").write_text("a = 1\n")
    (project / "env").mkdir()
    (project / "env" / "pyvenv.cfg").write_text("")
    (project / "env" / "big.py").write_text("")
    (project / "__pycache__").mkdir()
    (project / "__pycache__" / "a.pyc").write_text("")
    source = source_of(project)
    assert not source.git and source.files == ("pkg/a.py",)
    copy = make_copy(source, tmp_path / "copy")
    assert (copy / "pkg" / "a.py").read_text() == "a = 1\n"


def test_copy_inside_git_takes_uncommitted_state_and_the_whole_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "conftest.py").write_text("# top\n")
    (repo / "sub" / "a.py").write_text("committed\n")
    (repo / ".gitignore").write_text("data/\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (repo / "sub" / "a.py").write_text("edited\n")
    (repo / "sub" / "new.py").write_text("untracked\n")
    (repo / "data").mkdir()
    (repo / "data" / "huge.bin").write_text("ignored\n")
    source = source_of(repo / "sub")
    assert source.git and source.project == "sub"
    copy = make_copy(source, tmp_path / "copy")
    assert (copy / "sub" / "a.py").read_text() == "edited\n"
    assert (copy / "sub" / "new.py").exists() and (copy / "conftest.py").exists()
    assert not (copy / "data").exists() and not (copy / ".git").exists()
    before = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert "?? sub/new.py" in before  # the user's repository is untouched


LEGACY = "import torch.nn as nn\ncriterion = nn.MSELoss(size_average=False)\n"


def test_migrate_tree_can_switch_a_codemod_off_per_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LEGACY)
    (tmp_path / "b.py").write_text(LEGACY)
    report = migrate_tree(tmp_path, api.Options(mode="write"), [Unit("TM001", "a.py")])
    assert (tmp_path / "a.py").read_text() == LEGACY
    assert "reduction" in (tmp_path / "b.py").read_text()
    assert fired(report) == {"TM001": ["b.py"]}
    (tmp_path / "b.py").write_text(LEGACY)
    report = migrate_tree(tmp_path, api.Options(mode="write"), [Unit("TM001")])
    assert fired(report) == {} and (tmp_path / "b.py").read_text() == LEGACY


def test_device_errors_are_clean(tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="cannot start"):
        detect(str(tmp_path / "no-python"))
    with pytest.raises(DeviceError, match="--device must be"):
        detect(sys.executable, "tpu")
    assert needs_cuda("AssertionError: Torch not compiled with CUDA enabled")
    assert not needs_cuda("AssertionError: assert 1 == 2")


def test_environment_puts_the_target_first_and_hides_gpus_for_cpu(tmp_path: Path, monkeypatch) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("")
    (venv / "bin" / "python").write_text("")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    assert default_python() == str(venv / "bin" / "python")
    assert default_python("/x/python") == "/x/python"
    env = environment(str(venv / "bin" / "python"), "cpu")
    assert env["PATH"].startswith(str(venv / "bin")) and env["CUDA_VISIBLE_DEVICES"] == ""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert "CUDA_VISIBLE_DEVICES" not in environment(str(venv / "bin" / "python"), "auto")


def test_execute_timeout_kills_the_process_group(tmp_path: Path) -> None:
    done = execute.run("sleep 30 & sleep 30; echo never", tmp_path, {"PATH": "/usr/bin:/bin"}, timeout=1)
    assert done.timed_out and "never" not in done.stdout and done.seconds < 10
    with pytest.raises(execute.StartError, match="cannot start"):
        execute.run("no-such-command-xyz --flag", tmp_path, {"PATH": "/usr/bin:/bin"}, timeout=10)
    with pytest.raises(execute.StartError):
        execute.run([str(tmp_path / "missing")], tmp_path, {}, timeout=10)


def test_fixes_that_only_needed_cuda_are_flagged_on_a_cpu_machine(tmp_path: Path) -> None:
    from codemods.verify.core import Session
    from codemods.verify.device import Device
    from codemods.verify.model import VerifyOptions, VerifyReport

    session = Session(tmp_path, VerifyOptions(), None)
    session.device = Device("auto", sys.executable, torch="2.13.0", cuda_available=False)
    report = VerifyReport(str(tmp_path))
    report.changes = compare(
        {"gpu": junit.Outcome("failed", "AssertionError: Torch not compiled with CUDA enabled"), "other": O("failed")},
        {"gpu": O("passed"), "other": O("passed")},
    )
    session.device_notes(report)
    notes = {c.id: c.note for c in report.changes}
    assert "needed CUDA" in notes["gpu"] and notes["other"] == ""
    assert any("asked for CUDA" in n for n in report.notes)
    session.device = Device("auto", sys.executable, torch="2.13.0", cuda_available=True, devices=("H100",))
    report.notes.clear()
    session.device_notes(report)
    assert report.notes == []  # on a GPU machine a CUDA failure before is a real failure
    import shutil

    shutil.rmtree(session.workdir)


def test_import_roots_and_installed_copies(tmp_path: Path) -> None:
    from codemods.verify.imports import import_roots, installed_copy

    (tmp_path / "src" / "pkg" / "sub").mkdir(parents=True)
    for rel in ("src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/m.py", "train.py", "scripts/run-me.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    roots = import_roots(tmp_path, ["src/pkg/sub/m.py", "train.py", "scripts/run-me.py", "README.md"])
    assert roots == {"pkg": ("src", ("pkg/sub/m.py",)), "train": (".", ("train.py",))}
    site = tmp_path / "site-packages"
    (site / "pkg" / "sub").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    assert not installed_copy(str(site / "pkg" / "__init__.py"), ["pkg/sub/m.py"])  # another package of that name
    (site / "pkg" / "sub" / "m.py").write_text("")
    assert installed_copy(str(site / "pkg" / "__init__.py"), ["pkg/sub/m.py"])
    assert not installed_copy(str(site / "torch.py"), ["torch.py"])  # single modules are never redirected


def test_a_pytest_command_after_environment_words_is_still_pytest() -> None:
    command = TestCommand.from_user('PYTHONPATH=plugins FOO="a b" python -m pytest -p plug -o "python_files=tests/*.py" tests')
    assert command.pytest == ("python", "-m", "pytest", "-p", "plug", "-o", "python_files=tests/*.py", "tests")
    assert command.env == (("PYTHONPATH", "plugins"), ("FOO", "a b"))
    assert TestCommand.from_user("FOO=1 make test").pytest is None  # not pytest: the shell runs it as given


UNITTEST_OUTPUT = """\
tests.checks_compat (unittest.loader._FailedTest.tests.checks_compat) ... ERROR
test_mean (tests.checks_stats.StatsChecks.test_mean) ... ok
test_spread (tests.checks_summary.SummaryChecks) ... FAIL
test_doc (tests.checks_doc.DocChecks.test_doc)
A docstring line. ... skipped 'no GPU'
test_x (tests.checks_stats.StatsChecks.test_x) ... expected failure

======================================================================
ERROR: tests.checks_compat (unittest.loader._FailedTest.tests.checks_compat)
----------------------------------------------------------------------
ImportError: Failed to import test module: tests.checks_compat
Traceback (most recent call last):
AttributeError: module 'collections' has no attribute 'Mapping'

======================================================================
FAIL: test_spread (tests.checks_summary.SummaryChecks)
----------------------------------------------------------------------
AssertionError: 3 != 2

----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
"""


def test_unittest_verbose_output_gives_per_test_outcomes_with_module_ids_for_import_failures() -> None:
    from codemods.verify.unittest_output import parse_output

    results = parse_output(UNITTEST_OUTPUT)
    assert {k: v.outcome for k, v in results.items()} == {
        "tests.checks_compat": "error",
        "tests.checks_stats::StatsChecks::test_mean": "passed",
        "tests.checks_summary::SummaryChecks::test_spread": "failed",
        "tests.checks_doc::DocChecks::test_doc": "skipped",
        "tests.checks_stats::StatsChecks::test_x": "passed",
    }
    assert results["tests.checks_compat"].message == "AttributeError: module 'collections' has no attribute 'Mapping'"
    assert results["tests.checks_summary::SummaryChecks::test_spread"].message == "AssertionError: 3 != 2"
    assert parse_output("....\nRan 4 tests\nOK\n") is None
    # The module's tests on the other side fall under its id, as with pytest's collection errors.
    changes = {c.id: c.kind for c in compare(results, {"tests.checks_compat::C::test_a": O("passed")})}
    assert changes["tests.checks_compat::C::test_a"] == FIXED


def test_junit_collection_error_message_is_the_exception_not_collection_failure(tmp_path: Path) -> None:
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase classname="" name="tests.checks_a" file="tests/checks_a.py">'
        '<error message="collection failure">tests/checks_a.py:3: in &lt;module&gt;\n    M = collections.Mapping\n'
        "E   AttributeError: module 'collections' has no attribute 'Mapping'</error></testcase></testsuite></testsuites>"
    )
    (outcome,) = junit.parse(xml).values()
    assert outcome.message == "AttributeError: module 'collections' has no attribute 'Mapping'"


def test_a_rerun_that_pytest_cannot_collect_falls_back_to_modules_then_the_whole_command(tmp_path: Path) -> None:
    from codemods.verify.core import Run, Session
    from codemods.verify.model import VerifyOptions

    session = Session(tmp_path, VerifyOptions(), None)
    session.command = TestCommand.from_user("python -m pytest tests")
    asked: list = []
    gone = junit.Outcome("error", "ImportError: x")

    def run_tests(project, label, targets=None):
        asked.append(targets)
        if targets is not None and any("::" in t for t in targets):
            return Run(4, 0.1, {}, "ERROR: found no collectors for tests/test_b.py::test_y")  # usage error
        if targets is not None:
            return Run(2, 0.1, None, "")  # no JUnit XML at all
        return Run(1, 0.1, {"tests/test_a.py::test_x": O("passed"), "tests/test_b.py": gone}, "")

    session.run_tests = run_tests
    seen = {"tests/test_a.py::test_x": O("passed"), "tests/test_b.py::test_y": O("passed")}
    outcomes = session.observe(tmp_path, "rerun", ["tests/test_a.py::test_x", "tests/test_b.py::test_y"], seen)
    assert asked == [
        ["tests/test_a.py::test_x", "tests/test_b.py::test_y"],
        ["tests/test_a.py", "tests/test_b.py"],
        None,
    ]
    assert outcomes["tests/test_a.py::test_x"].outcome == "passed"
    assert outcomes["tests/test_b.py::test_y"].outcome == "error" and not outcomes["tests/test_b.py::test_y"].imported
    # A module that did not import on this side is targeted as a module from the start.
    asked.clear()
    session.observe(tmp_path, "rerun", ["tests/test_b.py::test_y"], {"tests/test_b.py::test_y": gone.__class__("error", imported=False)})
    assert asked[0] == ["tests/test_b.py"]


@pytest.mark.parametrize(
    "before, baseline, after, kind",
    [
        ("passed", "passed", "failed", REGRESSION),  # the migration broke it
        ("passed", "failed", "failed", UNFIXED),  # the upgrade broke it; nothing repaired it
        ("passed", "error", "error", UNFIXED),
        ("passed", None, "failed", UNFIXED),  # not even collected on the target torch
        ("passed", "failed", "passed", FIXED),  # the upgrade broke it; the migration repaired it
        ("passed", "passed", "passed", UNCHANGED),
        ("failed", "failed", "passed", FIXED),
        ("failed", "passed", "failed", UNCHANGED),
        ("passed", "passed", None, MISSING),
        ("passed", "failed", None, UNFIXED),
    ],
)
def test_three_way_classification(before, baseline, after, kind) -> None:
    side = lambda o: {"t.py::x": O(o)} if o else {}  # noqa: E731
    (change,) = compare3(side(before), side(baseline), side(after))
    assert change.kind == kind and change.baseline == baseline


def test_three_way_a_module_that_does_not_import_on_the_target_makes_its_tests_unfixed_or_fixed() -> None:
    before = {"t.py::a": O("passed"), "t.py::b": O("passed")}
    baseline = {"t.py": junit.Outcome("error", "ModuleNotFoundError: No module named 'torch._six'")}
    after = {"t.py::a": O("passed"), "t.py::b": O("failed")}
    changes = {c.id: c for c in compare3(before, baseline, after)}
    assert changes["t.py::a"].kind == FIXED and changes["t.py::b"].kind == UNFIXED
    assert changes["t.py::b"].baseline_message == "t.py did not import: ModuleNotFoundError: No module named 'torch._six'"
    assert "baseline" in changes["t.py::b"].to_dict(three=True) and "baseline" not in changes["t.py::b"].to_dict()


def test_judge_counts_the_baseline_reruns_too() -> None:
    (change,) = compare3({"t.py::x": O("passed")}, {"t.py::x": O("failed")}, {"t.py::x": O("failed")})
    change.reruns_before, change.reruns_after, change.reruns_baseline = ["passed"], ["failed"], ["passed"]
    assert judge(change) == FLAKY


def test_traceback_files_are_read_from_pytest_and_python_tracebacks() -> None:
    text = (
        "tests/test_a.py:12: in test_x\n    solve()\nlib/linalg.py:3: in solve\n    return A.symeig()\n"
        'E   File "/tmp/copy/lib/compat.py", line 2, in <module>\nlib/linalg.py:4: AttributeError\n'
    )
    assert junit.traceback_files(text) == ("tests/test_a.py", "lib/linalg.py", "/tmp/copy/lib/compat.py")


def test_an_unfixed_test_lists_the_findings_on_the_files_of_its_baseline_traceback(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from codemods.results import FileResult, Finding, Report, Status
    from codemods.verify.core import Session
    from codemods.verify.model import VerifyOptions, VerifyReport

    session = Session(tmp_path, VerifyOptions(), None)
    session.workdir = tmp_path
    session.source = SimpleNamespace(project=".")
    session.projects = {label: tmp_path / f"{label}-{i}" for i, label in enumerate(("before", "baseline", "after"))}
    spectral = Finding("TM006", "lib/spectral.py", 7, 11, "x.symeig() has no safe rewrite", "safe")
    elsewhere = Finding("TM903", "lib/other.py", 3, 0, "softmax without dim", "findings-only")
    report = VerifyReport("p", migration=Report(files=[
        FileResult("lib/spectral.py", Status.UNCHANGED, findings=(spectral,)),
        FileResult("lib/other.py", Status.UNCHANGED, findings=(elsewhere,)),
    ]))  # fmt: skip
    (change,) = compare3(
        {"tests/test_s.py::test_l": O("passed")},
        {"tests/test_s.py::test_l": O("failed")},
        {"tests/test_s.py::test_l": O("failed")},
    )
    report.changes = [change]
    # The baseline's traceback names the copy's absolute path: it is read back relative to the project.
    trace = ("tests/test_s.py", str(session.projects["baseline"] / "lib" / "spectral.py"))
    session.seen = {"baseline": {change.id: junit.Outcome("failed", "RuntimeError: removed", files=trace)}}
    session.unfixed_findings(report)
    assert change.kind == UNFIXED and change.findings == ["lib/spectral.py:7: TM006 x.symeig() has no safe rewrite"]
