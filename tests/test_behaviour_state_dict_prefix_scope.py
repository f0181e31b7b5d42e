"""TM104 touches only models a wrapper touches, and leaves no conditional whose branches became the
same (issue 15): the default pipeline on a training script that saves through
`if isinstance(model, DataParallel): ... else: ...` saves the same weights as before, with one save."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods.api import transform_source  # noqa: E402

TRAIN = """
import argparse
import sys

import torch
import torch.nn as nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))


def main(out):
    model = nn.DataParallel(build())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for epoch in range(3):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    if isinstance(model, nn.DataParallel):
        torch.save(model.module.state_dict(), out)
    else:
        torch.save(model.state_dict(), out)
    # evaluation: a fresh model that nothing wraps loads the checkpoint as it is
    plain = build()
    plain.load_state_dict(torch.load(out))
    return plain(x).sum().item()


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args(sys.argv[2:])
    print(main(sys.argv[1]))
"""


def _run(source: str, tmp_path: Path, name: str, monkeypatch) -> tuple[float, dict]:
    script, out = tmp_path / f"{name}.py", tmp_path / f"{name}.pt"
    script.write_text(source)
    for variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(sys, "argv", [str(script), str(out)])
    namespace = runpy.run_path(str(script), run_name="not_main")
    return namespace["main"](str(out)), torch.load(out)


def test_identical_branches_collapse_and_the_plain_model_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    result = transform_source(TRAIN, path="train.py")  # the default pipeline
    assert result.problem is None, result.problem
    code = result.code
    main = code[code.index("def main") :]
    assert main.count("torch.save(") == 1 and "isinstance" not in main  # one branch kept
    assert "plain.load_state_dict(torch.load(out" in main  # no unwrap_model, no strip for `plain`
    assert "unwrap_model(plain)" not in code
    assert transform_source(code, path="train.py").code == code
    old_value, old_state = _run(TRAIN, tmp_path, "before", monkeypatch)
    new_value, new_state = _run(code, tmp_path, "after", monkeypatch)
    assert new_value == old_value
    assert list(new_state) == list(old_state)
    for key, value in new_state.items():
        torch.testing.assert_close(value, old_state[key], rtol=0, atol=0)
