"""End to end: `verify` and `run --verify` on the bundled fixture projects (CPU only).

Every pytest run inside a copy imports torch, so runs are counted: reruns are kept at 0-1 here
(the rerun logic has its own project, `flaky_counter`, whose tests do not import torch).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from codemods.cli import main  # noqa: E402
from codemods.verify import VerifyOptions, apply_verified, render, verify  # noqa: E402
from codemods.verify.device import detect  # noqa: E402

from tests.conftest import PROJECTS  # noqa: E402


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def pinned(tmp_path_factory):
    """One verification of pinned_warning, shared: a fair regression caused by TM001 on legacy.py."""
    import shutil

    root = tmp_path_factory.mktemp("pinned") / "pinned_warning"
    shutil.copytree(PROJECTS / "pinned_warning", root)
    before = snapshot(root)
    report = verify(root, VerifyOptions(rerun=0))
    return root, before, report


def test_regression_is_reported_with_its_culprit_and_the_tree_is_untouched(pinned) -> None:
    root, before, report = pinned
    assert report.exit_code == 1, render.text(report)
    assert [(c.id, c.before, c.after) for c in report.regressions] == [
        ("tests/test_legacy_api.py::test_legacy_criterion_still_warns", "passed", "failed")
    ]
    assert report.regressions[0].culprits == ["TM001 on legacy.py"]
    assert [c.id for c in report.fixed] == ["tests/test_metrics.py::test_mean_absolute_error"]
    assert report.without_culprits is not None and report.without_culprits.clean
    assert snapshot(root) == before  # verify only reads the user's tree
    text = render.text(report)
    assert "culprit: TM001 on legacy.py" in text and "REGRESSIONS" in text
    markdown = render.markdown(report)
    assert "| `legacy.py` | 1 | 1 |" in markdown and "| TM001 | loss-reduction | 2 |" in markdown
    assert "regression" in markdown and "### Device" in markdown
    assert json.loads(render.as_json(report))["culprits"] == {
        "TM001 on legacy.py": ["tests/test_legacy_api.py::test_legacy_criterion_still_warns"]
    }


def test_run_verify_writes_nothing_on_regressions_and_drop_culprits_writes_the_rest(pinned, tmp_path) -> None:
    import shutil

    _, _, report = pinned
    options = VerifyOptions(rerun=0)
    untouched = tmp_path / "untouched"
    shutil.copytree(PROJECTS / "pinned_warning", untouched)
    before = snapshot(untouched)
    applied = apply_verified(untouched, report, options)
    assert (applied.written, applied.exit_code) == (False, 1)
    assert snapshot(untouched) == before

    dropped = tmp_path / "dropped"
    shutil.copytree(PROJECTS / "pinned_warning", dropped)
    applied = apply_verified(dropped, report, options, drop_culprits=True)
    assert (applied.written, applied.exit_code, applied.dropped) == (True, 0, ["TM001 on legacy.py"])
    assert (dropped / "legacy.py").read_bytes() == before["legacy.py"]
    assert 'reduction="mean"' in (dropped / "metrics.py").read_text()


def test_run_verify_cli_wiring(pinned, tmp_path, monkeypatch) -> None:
    """The CLI around a regression: exit 1 and nothing written; --drop-culprits writes the rest."""
    import shutil

    import codemods.verify as package

    _, _, report = pinned
    monkeypatch.setattr(package, "verify", lambda path, options, on_event=None: report)
    target = tmp_path / "p"
    shutil.copytree(PROJECTS / "pinned_warning", target)
    before = snapshot(target)
    code, out, _ = cli("run", str(target), "--verify")
    assert code == 1 and "nothing written" in out and snapshot(target) == before
    code, out, _ = cli("run", str(target), "--verify", "--drop-culprits", "--format", "json")
    data = json.loads(out)
    assert (code, data["written"], data["dropped"]) == (0, True, ["TM001 on legacy.py"])
    assert snapshot(target)["legacy.py"] == before["legacy.py"] and snapshot(target)["metrics.py"] != before["metrics.py"]
    code, _, err = cli("run", str(target), "--drop-culprits")
    assert code == 2 and "--drop-culprits needs --verify" in err


def test_legacy_project_fixed_by_the_migration_run_verify_writes_it(project) -> None:
    root = project("loss_warnings")
    code, out, _ = cli("run", str(root), "--verify", "--rerun", "0", "--format", "json")
    data = json.loads(out)
    assert code == 0, out
    report = data["verify"]
    assert report["status"] == "ok" and report["summary"]["regression"] == 0
    fixed = [t for t in report["tests"] if t["kind"] == "fixed"]
    assert [t["id"] for t in fixed] == ["tests/test_objective.py::test_sum_of_squares"]
    assert fixed[0]["before_message"].startswith("UserWarning: size_average")
    assert report["device"]["torch"].startswith("2.") and report["device"]["python"]
    assert data["written"] is True
    assert 'nn.MSELoss(reduction="sum")' in (root / "lossy" / "objective.py").read_text()


def test_flaky_test_is_recognised_not_a_regression(project, tmp_path, monkeypatch) -> None:
    root = project("flaky_counter")
    counter = tmp_path / "counter"
    counter.mkdir()
    monkeypatch.setenv("FLAKY_COUNTER_DIR", str(counter))
    code, out, _ = cli("verify", str(root), "--rerun", "1", "--format", "json")
    data = json.loads(out)
    assert code == 0, out
    kinds = {t["id"]: t["kind"] for t in data["tests"]}
    assert kinds == {"tests/test_flaky.py::test_sometimes_fails": "flaky", "tests/test_flaky.py::test_arithmetic": "unchanged"}
    assert len(list(counter.iterdir())) == 4  # first runs on both sides, one rerun on each


def test_probe_without_tests(project) -> None:
    root = project("probe_only")
    code, out, _ = cli("verify", str(root), "--probe", "python train.py")
    assert code == 0, out
    assert "Probe `python train.py`: equal (10 number(s) compared)" in out


def test_probe_divergence_is_a_regression_with_its_culprit(project) -> None:
    root = project("probe_only")
    code, out, _ = cli("verify", str(root), "--probe", "python -c \"print('chars', len(open('train.py').read()))\"", "--format", "json")
    data = json.loads(out)
    assert code == 1, out
    probe = data["probe"]
    assert probe["status"] == "diverged" and probe["divergence"]["line"] == 1
    assert probe["culprits"] == ["TM001 on train.py"]


def test_no_tests_and_no_probe_runs_the_smoke_check(project) -> None:
    # A project without tests is no longer refused: its modules are imported on both sides.
    code, out, _ = cli("verify", str(project("probe_only")))
    assert code == 0 and "smoke check" in out and "no tests found" not in out
    assert "0 of 1 rewrite executed" in out  # train.py trains only under __main__: not proven


def test_setup_failures_exit_2_with_a_clear_message(project, tmp_path) -> None:
    root = project("flaky_counter")
    code, out, _ = cli("verify", str(root), "--tests", "no-such-test-runner-xyz -q")
    assert code == 2 and "cannot start" in out and "no-such-test-runner-xyz" in out
    code, out, _ = cli("verify", str(root), "--python", str(tmp_path / "missing-python"))
    assert code == 2 and "interpreter cannot start" in out
    code, out, _ = cli("verify", str(root), "--tests", "sleep 30", "--timeout", "1")
    assert code == 2 and "timed out after 1 s" in out


def test_device_cuda_without_a_gpu_fails_cleanly(project) -> None:
    if detect(sys.executable).cuda_available:
        pytest.skip("a GPU is visible here; this checks the CPU-only behaviour")
    code, out, _ = cli("verify", str(project("flaky_counter")), "--device", "cuda", "--python", sys.executable)
    assert code == 2 and "--device cuda" in out and "cannot use CUDA" in out


def test_interrupt_kills_the_tests_and_removes_the_copies(project, tmp_path, monkeypatch) -> None:
    root = project("flaky_counter")
    pids = tmp_path / "pids"
    pids.mkdir()
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))

    def on_event(message: str) -> None:
        if message.startswith("running"):
            signal.setitimer(signal.ITIMER_REAL, 2.0)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            verify(root, VerifyOptions(tests=f"echo $$ > {pids}/$$; sleep 60", python=sys.executable), on_event)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert list(work.iterdir()) == []  # copies removed
    started = [int(p.name) for p in pids.iterdir()]
    assert started
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_non_pytest_command_is_judged_by_its_exit_code(project) -> None:
    root = project("flaky_counter")
    # A "test" that pins the legacy source text: true before, false after the migration.
    code, out, _ = cli("verify", str(root), "--tests", "grep -q size_average model.py", "--rerun", "1", "--format", "json")
    data = json.loads(out)
    assert code == 1, out
    assert [(t["id"], t["before"], t["after"], t["kind"]) for t in data["tests"]] == [
        ("<test command>", "passed", "failed", "regression")
    ]
    assert data["culprits"] == {"TM001 on model.py": ["<test command>"]}
    assert data["sides"][0]["per_test"] is False


def test_nothing_selected_means_nothing_to_verify_and_copies_can_be_kept(project) -> None:
    root = project("flaky_counter")
    code, out, _ = cli("verify", str(root), "--ignore", "TM001", "--keep-copies", "--format", "json")
    data = json.loads(out)
    assert (code, data["status"], data["sides"]) == (0, "nothing-to-migrate", [])
    kept = Path(data["copies"])
    try:
        assert (kept / "base" / "model.py").read_text() == (root / "model.py").read_text()
    finally:
        import shutil

        shutil.rmtree(kept)
    code, _, err = cli("verify", str(root), "--select", "TM999")
    assert code == 2 and "unknown codemod" in err


@pytest.mark.parametrize("install", ["editable", "installed"])
def test_an_installed_project_is_imported_from_each_copy(install, tmp_path, monkeypatch) -> None:
    """`pip install -e .` puts the user's src/ on the path, `pip install .` a copy of the package in
    site-packages. Without care both sides would test that code and this regression would go unseen."""
    root = tmp_path / "installed"
    (root / "src" / "mypkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (root / "src" / "mypkg" / "core.py").write_text("import torch.nn as nn\n\n\ndef crit():\n    return nn.MSELoss(size_average=False)\n")
    (root / "tests" / "test_core.py").write_text(
        "from pathlib import Path\n\nimport mypkg\n\n\n"
        "def test_keeps_the_legacy_call():\n"
        "    assert 'size_average' in (Path(mypkg.__file__).parent / 'core.py').read_text()\n"
    )
    if install == "editable":
        monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    else:
        import shutil

        shutil.copytree(root / "src" / "mypkg", tmp_path / "site" / "mypkg")
        monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    code, out, _ = cli("verify", str(root), "--rerun", "0", "--python", sys.executable, "--format", "json")
    data = json.loads(out)
    assert code == 1, out
    assert [t["id"] for t in data["tests"] if t["kind"] == "regression"] == ["tests/test_core.py::test_keeps_the_legacy_call"]
    assert any("mypkg would be imported from outside the copies" in n for n in data["notes"])


def test_a_flat_editable_install_is_redirected_for_a_bare_pytest_command(tmp_path, monkeypatch) -> None:
    """`pytest` (not `python -m pytest`) does not put the working directory on sys.path: a flat
    project installed in editable mode is then imported from the user's tree unless redirected."""
    root = tmp_path / "flat"
    (root / "flatpkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "flatpkg" / "__init__.py").write_text("import torch.nn as nn\n\n\ndef crit():\n    return nn.MSELoss(size_average=False)\n")
    (root / "tests" / "test_flat.py").write_text(
        "from pathlib import Path\n\nimport importlib.util\n\n\n"
        "def test_keeps_the_legacy_call():\n"
        "    spec = importlib.util.find_spec('flatpkg')\n"
        "    assert 'size_average' in Path(spec.origin).read_text()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(root))
    pytest_exe = str(Path(sys.executable).parent / "pytest")
    code, out, _ = cli("verify", str(root), "--tests", f"{pytest_exe} -p no:cacheprovider", "--rerun", "0", "--format", "json")
    data = json.loads(out)
    assert code == 1, out
    assert [t["id"] for t in data["tests"] if t["kind"] == "regression"] == ["tests/test_flat.py::test_keeps_the_legacy_call"]


def test_readme_example_is_fixed_by_the_migration(project) -> None:
    """The README's main command: the bundled example's tests fail before and pass after."""
    root = project("legacy_classifier")
    before = snapshot(root)
    report = verify(root, VerifyOptions(rerun=1, device="cpu"))
    sides = {s.label: s.outcomes for s in report.sides}
    assert report.exit_code == 0 and not report.regressions
    assert sides["before"].get("passed") == 1 and sides["before"].get("failed") == 3
    assert sides["after"].get("passed") == 4
    assert not sides["after"].get("failed") and not sides["after"].get("error")
    assert len(report.fixed) == 3
    assert set(report.migration.rewrites) == {"TM001", "TM002", "TM003", "TM101"}
    assert snapshot(root) == before  # verify only reads the user's tree
