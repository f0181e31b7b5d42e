"""TM301/TM302 behaviour on torch >= 2.6: state dicts load with weights_only=True; a whole-model
pickle is never made to load unsafely by default: the migrated call keeps torch's safe default
(it raises UnpicklingError) and is reported with a recipe that works (add_safe_globals); only
TM302, an --unsafe opt-in, writes weights_only=False, and then the pickle loads."""

from __future__ import annotations

import sys
import textwrap
import types
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


def test_whole_model_stays_safe_and_reported_and_state_dict_is_weights_only(saved: dict) -> None:
    result = transform_source(SNIPPET, [registry.get("TM301")])
    assert "torch.load(path, weights_only=True)" in result.code
    assert "whole = torch.load(WHOLE)\n" in result.code  # never weakened by default
    assert "weights_only=False" not in result.code
    [finding] = [f for f in result.findings if f.kind == "finding"]
    assert finding.line == 10 and "add_safe_globals" in finding.message and "TM302" in finding.message

    with pytest.raises(Exception, match="weights_only"):
        run(SNIPPET, saved)  # torch 2.6+ refuses the pickled module by default
    with pytest.raises(Exception, match="weights_only"):
        run(result.code, saved)  # and so does the migrated code: reported, not silently unsafe


def test_only_the_unsafe_opt_in_loads_a_whole_model_pickle(saved: dict) -> None:
    assert registry.get("TM302") not in registry.select()  # not without --unsafe
    assert registry.get("TM302") in registry.select(unsafe=True)
    result = transform_source(SNIPPET, registry.select(select=["TM301", "TM302"], unsafe=True))
    assert "torch.load(path, weights_only=True)" in result.code  # TM302 leaves state dicts to TM301
    assert "torch.load(WHOLE, weights_only=False)" in result.code
    net_weight, whole_weight = run(result.code, saved)
    torch.testing.assert_close(net_weight, saved["expected"])
    torch.testing.assert_close(whole_weight, saved["expected"])


def test_the_reported_safe_globals_recipe_loads_the_checkpoint(tmp_path: Path, monkeypatch) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "TM301-load-weights-only" / "safe_globals.in.py"
    result = transform_source(fixture.read_text(), [registry.get("TM301")])
    [finding] = [f for f in result.findings if f.kind == "finding"]
    assert finding.suggestion == "torch.serialization.add_safe_globals([Meter, argparse.Namespace])"
    assert "torch.load(path)" in result.code
    path = str(tmp_path / "ckpt.pt")
    module = types.ModuleType("tm301_safe_globals")  # a real module: pickle finds Meter by name
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    exec(compile(result.code, "safe_globals.py", "exec"), namespace)
    namespace["save"](torch.nn.Linear(3, 2), path)
    with pytest.raises(Exception, match="weights_only|Unsupported global"):
        namespace["resume"](torch.nn.Linear(3, 2), path)  # as migrated: safe, so it refuses
    exec(finding.suggestion, namespace)  # the finding's recipe, as given
    try:
        meter, options = namespace["resume"](torch.nn.Linear(3, 2), path)
    finally:
        torch.serialization.clear_safe_globals()
    assert meter.total == 0.0 and options.lr == 0.1


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


def test_checkpoint_with_a_numpy_metric_is_reported_and_loads_with_the_opt_in(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    result = transform_source(CHECKPOINT, [registry.get("TM301")])
    assert "checkpoint = torch.load(path)\n" in result.code  # the np.float64 rules out True: left, reported
    assert 'torch.load(path, weights_only=True)' in result.code  # plain_resume: tensors and numbers only
    assert [f.line for f in result.findings if f.kind == "finding"] == [10]
    path = str(tmp_path / "ckpt.pt")
    with pytest.raises(Exception, match="[Ww]eights"):
        _main(result.code, path)  # the default migration never loads it unsafely
    trusted = transform_source(result.code, registry.select(select=["TM302"], unsafe=True)).code
    assert "torch.load(path, weights_only=False)" in trusted and trusted.count("weights_only=True") == 1
    weight, metric, epoch, other, loss = _main(trusted, path)
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
    assert "state = torch.load(path)  #" in migrated  # left as it is: safe on torch >= 2.6, and reported
    migrated = transform_source(migrated, registry.select(select=["TM302"], unsafe=True)).code
    assert "torch.load(path, weights_only=False)" in migrated  # the --unsafe opt-in
    source = torch.nn.Linear(4, 4)
    path = tmp_path / "pretrained.pt"
    weights = {f"proj.{k}": v for k, v in source.state_dict().items()}
    torch.save({"model": weights, "args": argparse.Namespace(lr=0.1)}, path)
    namespace: dict = {}
    exec(compile(migrated, "whole_on_one_path.py", "exec"), namespace)
    encoder = namespace["Encoder"](path, finetuned=False)  # the opted-in code loads it on torch 2.13
    torch.testing.assert_close(encoder.proj.weight, source.weight)
    with pytest.raises(Exception, match="Unsupported global|weights_only"):
        torch.load(path, weights_only=True)  # what weights_only=True would have done


# apex's FP16_Optimizer, as its `state_dict()` has it: the wrapped optimizer's state dict next to
# its LossScaler object, which weights_only=True refuses (transformer-xl's `--restart`).
APEX_FP16 = textwrap.dedent(
    """
    class LossScaler:
        def __init__(self, scale):
            self.scale = scale

    class FP16_Optimizer:
        def __init__(self, optimizer, static_loss_scale=1.0):
            self.optimizer = optimizer
            self.loss_scaler = LossScaler(static_loss_scale)

        def state_dict(self):
            return {"loss_scaler": self.loss_scaler, "optimizer_state_dict": self.optimizer.state_dict()}

        def load_state_dict(self, state_dict):
            self.loss_scaler = state_dict["loss_scaler"]
            self.optimizer.load_state_dict(state_dict["optimizer_state_dict"])
    """
)

RESTART = textwrap.dedent(
    """
    import torch
    from apex.fp16_utils import FP16_Optimizer

    def build(scale):
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)
        optimizer = FP16_Optimizer(optimizer, static_loss_scale=scale)
        return optimizer

    def restart(optimizer, path):
        with open(path, "rb") as f:
            opt_state_dict = torch.load(f)
            optimizer.load_state_dict(opt_state_dict)
        return optimizer

    torch.save(build(128.0).state_dict(), PATH)
    result = restart(build(1.0), PATH).loss_scaler.scale
    """
)


@pytest.fixture
def apex(monkeypatch) -> types.ModuleType:
    package, module = types.ModuleType("apex"), types.ModuleType("apex.fp16_utils")
    exec(compile(APEX_FP16, "apex/fp16_utils.py", "exec"), module.__dict__)
    package.fp16_utils = module
    monkeypatch.setitem(sys.modules, "apex", package)
    monkeypatch.setitem(sys.modules, "apex.fp16_utils", module)
    return module


def test_an_fp16_optimizer_state_is_not_made_weights_only(apex, tmp_path: Path) -> None:
    # the object really is refused by a weights-only load
    path = tmp_path / "optimizer.pt"
    optimizer = apex.FP16_Optimizer(torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1), 128.0)
    torch.save(optimizer.state_dict(), path)
    with pytest.raises(torch.serialization.pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    # ...so the migration does not write weights_only=True for it, and says why
    result = transform_source(RESTART, [registry.get("TM301")])
    assert "weights_only=True" not in result.code and not result.rewrites
    [finding] = [f for f in result.findings if f.kind == "finding"]
    assert finding.line == 12 and "FP16_Optimizer" in finding.message
    # the trusted-file opt-in (TM302) then restarts with the saved loss scale
    trusted = transform_source(result.code, registry.select(select=["TM301", "TM302"], unsafe=True))
    assert "torch.load(f, weights_only=False)" in trusted.code
    namespace = {"PATH": str(path)}
    exec(compile(trusted.code, "<restart>", "exec"), namespace)
    assert namespace["result"] == 128.0


PROCESSED_CACHE = textwrap.dedent(
    """
    import os

    import torch


    class Processed:
        def __init__(self, root):
            self.root = root

        def process(self, images, labels):
            training_set = (torch.ByteTensor(images), torch.tensor(labels))
            with open(os.path.join(self.root, "training.pt"), "wb") as f:
                torch.save(training_set, f)

        def load(self):
            return torch.load(os.path.join(self.root, "training.pt"))


    def main(root):
        cache = Processed(root)
        cache.process([[1, 2], [3, 4]], [0, 1])
        return cache.load()
    """
)


def test_a_load_of_a_path_this_file_saves_tensors_to_is_weights_only_and_loads(tmp_path: Path) -> None:
    """MNIST-M's processed cache (PyTorch-GAN's mnistm.py): the tuple of tensors the class saves
    is what its load reads back; weights_only=True is written and loads it on this torch."""
    result = transform_source(PROCESSED_CACHE, [registry.get("TM301")])
    assert 'torch.load(os.path.join(self.root, "training.pt"), weights_only=True)' in " ".join(result.code.split())
    assert not [f for f in result.findings if f.kind == "finding"]
    images, labels = _main(result.code, str(tmp_path))
    assert images.dtype == torch.uint8 and images.tolist() == [[1, 2], [3, 4]] and labels.tolist() == [0, 1]
    with_object = PROCESSED_CACHE.replace("torch.tensor(labels))", "torch.tensor(labels), object())")
    assert "weights_only=True" not in transform_source(with_object, [registry.get("TM301")]).code  # an object: not proven
