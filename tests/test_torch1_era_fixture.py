"""fixtures/projects/torch1_era does what its README says, on the dev venv's torch (2.x).

No verify here (and no torch 1.13): the migration's rewrites on a copy, the suite's outcomes
before and after it on this torch, and the migrated probe's numbers against the ones the
original prints on torch 1.13.1 (recorded in the README).
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from codemods.cli import main  # noqa: E402
from tests.conftest import PROJECTS  # noqa: E402

NAME = "torch1_era"
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("the fixture's claims are about torch 2.x", allow_module_level=True)

# probe.py's output with the original code on torch 1.13.1 (see the README).
PROBE_1_13_1 = """\
epoch 0 loss 1.0452478185e+00
epoch 1 loss 2.7484008515e-01
epoch 2 loss 1.8667725393e-01
epoch 3 loss 1.2429177937e-01
epoch 4 loss 8.0460199583e-02
grad_norm 2.8001426624e-01
prediction_sum -2.0055073262e+01
top_variances 1.5307094768e+00 1.2186081655e+00
"""

FIXED = {
    "tests/test_compat.py::test_is_path_like",
    "tests/test_compat.py::test_grad_norm_l2_and_inf",
    "tests/test_spectral.py::test_principal_components_of_stretched_data",
}
UNFIXED = {"tests/test_spectral.py::test_laplacian_spectrum_of_a_path_graph"}
UNCHANGED = {
    "tests/test_checkpoint.py::test_resume_restores_epoch_and_optimizer",
    "tests/test_checkpoint.py::test_resumed_training_continues_identically",
    "tests/test_model.py::test_forward_shape",
    "tests/test_model.py::test_data_is_deterministic",
    "tests/test_model.py::test_training_reduces_the_loss",
}


def _migrate(root: Path) -> dict:
    args = ["run", str(root), "--format", "json", "--no-cache", "--jobs", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """(original, migrated, the migration's JSON report): copies, migrated once for the module."""
    base = tmp_path_factory.mktemp(NAME)
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    original, migrated = base / "original", base / "migrated"
    shutil.copytree(PROJECTS / NAME, original, ignore=ignore)
    shutil.copytree(PROJECTS / NAME, migrated, ignore=ignore)
    return original, migrated, _migrate(migrated)


def _suite(root: Path) -> subprocess.Popen:
    """The project's own suite on this interpreter, started (two of them run side by side)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-rA", "--continue-on-collection-errors"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _outcomes(proc: subprocess.Popen) -> dict[str, str]:
    """Per-test outcomes of a finished suite; a module that does not import gives 'error' to
    each of its tests (named from the expected lists)."""
    out, _ = proc.communicate(timeout=180)
    outcomes = {}
    for word, target in re.findall(r"^(PASSED|FAILED|ERROR) (\S+)", out, re.M):
        if "::" in target:
            outcomes[target] = word.lower()
        else:  # a collection error: the whole module
            for test in FIXED | UNFIXED | UNCHANGED:
                if test.startswith(target + "::"):
                    outcomes[test] = "error"
    return outcomes


def test_the_migration_makes_exactly_the_expected_rewrites(copies):
    _, root, report = copies
    rewrites = {Path(f["path"]).relative_to(root).as_posix(): f["rewrites"] for f in report["files"] if f["rewrites"]}
    assert rewrites == {
        "oldnet/compat.py": {"TM007": 3},
        "oldnet/spectral.py": {"TM006": 1},
        "oldnet/checkpoint.py": {"TM102": 1},
    }

    compat = (root / "oldnet/compat.py").read_text()
    assert "from torch._six" not in compat
    assert "isinstance(obj, (str, bytes))" in compat and "norm_type == math.inf" in compat

    spectral = (root / "oldnet/spectral.py").read_text()
    assert 'torch.linalg.eigh(cov, UPLO="U")' in spectral
    assert "torch.symeig" not in spectral
    # The tensor-method form is what no codemod converts: it stays as written.
    assert "return laplacian.symeig(eigenvectors=True)" in spectral

    checkpoint = (root / "oldnet/checkpoint.py").read_text()
    # What the matching torch.save writes comes partly from its caller (epoch, best_loss): not
    # provably plain, so TM301 leaves torch's safe default (and reports it): never weights_only=False.
    assert re.search(r"checkpoint = torch\.load\(path, map_location=[^\n]*\)\n", checkpoint)
    assert "weights_only" not in checkpoint
    assert any(f["code"] == "TM301" and f["line"] == 21 for g in report["files"] for f in g["findings"])

    # Nothing else changes: the tests, the model and the probe are as bundled.
    bundled = PROJECTS / NAME
    tests = [p.relative_to(bundled).as_posix() for p in (bundled / "tests").glob("*.py")]
    for rel in ("oldnet/model.py", "oldnet/__init__.py", "probe.py", *tests):
        assert (root / rel).read_text() == (bundled / rel).read_text(), rel

    # A second run changes nothing.
    assert not any(f["rewrites"] for f in _migrate(root)["files"])


def test_outcomes_on_this_torch_before_and_after_the_migration(copies):
    original, migrated, _ = copies
    runs = _suite(original), _suite(migrated)
    baseline, after = _outcomes(runs[0]), _outcomes(runs[1])
    assert set(baseline) == FIXED | UNFIXED | UNCHANGED
    assert {t for t, o in baseline.items() if o == "passed"} == UNCHANGED
    assert {t for t, o in after.items() if o == "passed"} == FIXED | UNCHANGED
    assert {t for t, o in after.items() if o != "passed"} == UNFIXED
    assert after[next(iter(UNFIXED))] == "failed"


def test_the_migrated_probe_prints_the_torch_1_13_numbers(copies, capsys, monkeypatch):
    _, root, _ = copies
    # The original cannot run here: the module it imports is gone.
    assert importlib.util.find_spec("torch._six") is None

    # The migrated probe, in this process (it puts its folder on sys.path and imports oldnet).
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        runpy.run_path(str(root / "probe.py"), run_name="__main__")
    finally:
        for name in [m for m in sys.modules if m == "oldnet" or m.startswith("oldnet.")]:
            del sys.modules[name]
    output = capsys.readouterr().out
    lines, expected = output.splitlines(), PROBE_1_13_1.splitlines()
    assert [line.split()[0] for line in lines] == [line.split()[0] for line in expected]
    number = re.compile(r"-?\d+\.\d+e[+-]\d+")
    got = [float(x) for x in number.findall(output)]
    want = [float(x) for x in number.findall(PROBE_1_13_1)]
    assert len(got) == len(want) == 9
    # The README shows the same output.
    assert "\n".join("    " + line for line in expected) in (PROJECTS / NAME / "README.md").read_text()
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=1e-5), (g, w)
