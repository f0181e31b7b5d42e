"""The output is a pure function of the input: the same corpus migrated in fresh processes under
different hash seeds (set and dict order of strings) and with the cycle collector forced to run
often (freed nodes' ids reused early: state keyed by `id()` of a discarded node goes wrong) gives
the same diff and the same report, byte for byte.

A representative part of the corpus (the projects with DataParallel training scripts, and a
spread of the others) and the repository's own fixtures: the whole corpus three times is longer
than a test should be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_real_corpus import corpus_dirs

pytestmark = pytest.mark.corpus

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = (
    "cogdl-0.1.2",
    "deeprobust-0.2.1",
    "pytorch-ignite-0.1.0",
    "pytorch3dunet-1.9.6",
    "robustness-1.2.1.post2",
    "simpletransformers-0.48.14",
    "torchsummary-1.5.1",
)
SEEDS = ("0", "1", "4242")
# Imported by every Python process started with this folder on its path: the engine pauses the
# collector around each file (engine/gc_pause.py); here it collects every few allocations anyway.
FORCED_GC = """
import gc

gc.set_threshold(25, 1, 1)
gc.disable = lambda: None
gc.freeze = lambda: None
"""


def _run(target: Path, seed: str, hooks: Path | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONHASHSEED", "PYTHONPATH"}}
    env["PYTHONHASHSEED"] = seed
    env["PYTHONPATH"] = os.pathsep.join([str(hooks)] if hooks else []) + os.pathsep + str(ROOT)
    command = [sys.executable, "-m", "codemods", "run", "--diff", "--no-cache", "--unsafe", "--quiet", str(target)]
    done = subprocess.run(command, env=env, cwd=target, capture_output=True, timeout=1500)
    assert done.returncode in (0, 1, 3), done.stderr.decode(errors="replace")[-3000:]
    return done.stdout.decode("utf-8", "surrogateescape") + "\n--- stderr ---\n" + done.stderr.decode("utf-8", "surrogateescape")


def test_the_corpus_migrates_to_the_same_bytes_whatever_the_hash_seed_and_the_collector(tmp_path: Path) -> None:
    dirs = corpus_dirs()
    target = tmp_path / "corpus"
    for name in PROJECTS:
        shutil.copytree({path.name: path for path in dirs.values()}[name], target / name, symlinks=True)
    shutil.copytree(ROOT / "fixtures", target / "fixtures", symlinks=True)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(FORCED_GC)
    outputs = {f"seed {seed}": _run(target, seed, None) for seed in SEEDS}
    outputs["seed 7, forced gc"] = _run(target, "7", hooks)
    first, reference = next(iter(outputs.items()))
    assert "ddp_helpers" in reference  # TM103 restructured some training script here
    for label, output in outputs.items():
        assert output == reference, f"{label} differs from {first}"
