"""TM301 behaviour on torch >= 2.6: whole-model pickles load again (weights_only=False), state
dicts load with weights_only=True, and the results are the saved objects."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402

SNIPPET = textwrap.dedent(
    """
    import torch

    def restore(model, path):
        state = torch.load(path)
        model.load_state_dict(state)
        return model

    net = restore(torch.nn.Linear(3, 2), STATE)
    whole = torch.load(WHOLE)
    result = (net.weight, whole.weight)
    """
)


@pytest.fixture
def saved(tmp_path: Path) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    torch.save(model.state_dict(), tmp_path / "state.pt")
    torch.save(model, tmp_path / "whole.pt")  # a pickled nn.Module: not loadable with weights_only=True
    return {"STATE": str(tmp_path / "state.pt"), "WHOLE": str(tmp_path / "whole.pt"), "expected": model.weight}


def run(source: str, saved: dict):
    namespace = {k: v for k, v in saved.items() if k != "expected"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(source, "<snippet>", "exec"), namespace)
    return namespace["result"]


def test_whole_model_loads_again_and_state_dict_is_weights_only(saved: dict) -> None:
    result = transform_source(SNIPPET, [registry.get("TM301")])
    assert "torch.load(path, weights_only=True)" in result.code
    assert "torch.load(WHOLE, weights_only=False)" in result.code
    assert [f.line for f in result.findings if f.kind == "finding"] == [10]

    with pytest.raises(Exception, match="weights_only"):
        run(SNIPPET, saved)  # torch 2.6+ refuses the pickled module by default
    net_weight, whole_weight = run(result.code, saved)
    torch.testing.assert_close(net_weight, saved["expected"])
    torch.testing.assert_close(whole_weight, saved["expected"])


def test_weights_only_true_really_restricts(saved: dict, tmp_path: Path) -> None:
    # The True we add is meaningful: the same call on a whole-model pickle fails.
    source = "import torch\nm = torch.nn.Linear(3, 2)\nm.load_state_dict(torch.load(WHOLE))\nresult = m\n"
    new = transform_source(source, [registry.get("TM301")]).code
    assert "weights_only=True" in new
    with pytest.raises(Exception, match="[Ww]eights"):
        run(new, saved)


CHECKPOINT = textwrap.dedent(
    """
    import numpy as np
    import torch

    def save(model, path):
        metric = np.float64(0.75)  # a NumPy scalar: not weights-only
        torch.save({"model": model.state_dict(), "metric": metric, "epoch": 3}, path)

    def resume(model, path):
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        return checkpoint["metric"], checkpoint["epoch"]

    def plain_save(model, path):
        torch.save({"model": model.state_dict(), "epoch": 3, "loss": torch.tensor(0.5)}, path)

    def plain_resume(model, path):
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        return checkpoint["epoch"], checkpoint["loss"]

    def main(path):
        torch.manual_seed(0)
        save(torch.nn.Linear(3, 2), path)
        plain_save(torch.nn.Linear(3, 2), path + ".plain")
        model = torch.nn.Linear(3, 2)
        metric, epoch = resume(model, path)
        other = torch.nn.Linear(3, 2)
        _, loss = plain_resume(other, path + ".plain")
        return model.weight, metric, epoch, other.weight, loss
    """
)


def test_checkpoint_with_a_numpy_metric_still_loads(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    result = transform_source(CHECKPOINT, [registry.get("TM301")])
    assert "torch.load(path, weights_only=False)" in result.code  # the np.float64 rules out True
    assert 'torch.load(path, weights_only=True)' in result.code  # plain_resume: tensors and numbers only
    path = str(tmp_path / "ckpt.pt")
    with pytest.raises(Exception, match="[Ww]eights"):
        _main(CHECKPOINT.replace("checkpoint = torch.load(path)", "checkpoint = torch.load(path, weights_only=True)", 1), path)
    weight, metric, epoch, other, loss = _main(result.code, path)
    torch.manual_seed(0)
    expected = torch.nn.Linear(3, 2).weight
    torch.testing.assert_close(weight, expected)
    assert (float(metric), epoch) == (0.75, 3)
    torch.testing.assert_close(loss, torch.tensor(0.5))
    assert other.shape == (2, 3)


def _main(source: str, path: str):
    namespace: dict = {}
    exec(compile(source, "<snippet>", "exec"), namespace)
    return namespace["main"](path)


def test_a_load_that_is_a_state_dict_on_one_path_only_still_loads_a_pretraining_checkpoint(tmp_path: Path) -> None:
    import argparse

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "TM301-load-weights-only" / "whole_on_one_path.in.py"
    migrated = transform_source(fixture.read_text(), [registry.get("TM301")]).code
    assert "torch.load(path, weights_only=False)" in migrated
    source = torch.nn.Linear(4, 4)
    path = tmp_path / "pretrained.pt"
    weights = {f"proj.{k}": v for k, v in source.state_dict().items()}
    torch.save({"model": weights, "args": argparse.Namespace(lr=0.1)}, path)
    namespace: dict = {}
    exec(compile(migrated, "whole_on_one_path.py", "exec"), namespace)
    encoder = namespace["Encoder"](path, finetuned=False)  # the migrated code loads it on torch 2.13
    torch.testing.assert_close(encoder.proj.weight, source.weight)
    with pytest.raises(Exception, match="Unsupported global|weights_only"):
        torch.load(path, weights_only=True)  # what weights_only=True would have done
