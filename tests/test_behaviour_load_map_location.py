"""TM102 behaviour: with CUDA every load keeps its old result (data saved on the CPU stays there),
without CUDA a checkpoint saved on a GPU loads instead of failing.

No GPU here: "with CUDA" is `torch.cuda.is_available` patched to True while `torch.load` is
recorded (what it is asked to do is what a CUDA machine would do), and "saved on a GPU" is the
crafted checkpoint of tests/test_behaviour_cuda_to_device.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402
from tests.test_behaviour_cuda_to_device import save_as_if_on_gpu  # noqa: E402

SOURCE = textwrap.dedent(
    """
    import torch
    from torch.utils.data import Dataset

    class Features(Dataset):
        def __init__(self, path):
            self.features = torch.load(path)

        def __getitem__(self, index):
            return self.features[index].numpy()

    def restore(path):
        model = torch.nn.Linear(3, 2)
        model.load_state_dict(torch.load(path))
        return model

    def main(features, weights):
        return Features(features)[1], restore(weights).weight
    """
)


@pytest.fixture
def saved(tmp_path: Path) -> tuple[str, str, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    features, model = torch.randn(4, 5), torch.nn.Linear(3, 2)
    torch.save(features, tmp_path / "features.pt")
    save_as_if_on_gpu(model.state_dict(), tmp_path / "weights.pt")
    return str(tmp_path / "features.pt"), str(tmp_path / "weights.pt"), features, model.weight


def test_without_cuda_the_gpu_checkpoint_loads_and_the_cpu_data_is_the_same(saved) -> None:
    features, weights, expected_features, expected_weight = saved
    new = migrate(SOURCE, "TM102")
    with pytest.raises(RuntimeError, match="CUDA"):
        run(SOURCE, "main", features, weights)
    row, weight = run(new, "main", features, weights)
    assert (row == expected_features[1].numpy()).all()
    torch.testing.assert_close(weight, expected_weight)


def test_with_cuda_every_load_but_the_state_dict_keeps_its_location(
    saved, monkeypatch: pytest.MonkeyPatch
) -> None:
    features, weights, *_ = saved
    new = migrate(SOURCE, "TM102")
    asked: dict[str, object] = {}
    real_load = torch.load

    def recording_load(f, map_location=None, **kwargs):
        asked[Path(f).stem] = map_location
        return real_load(f, map_location="cpu", **kwargs)  # no GPU here to put them on

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch, "load", recording_load)
    run(new, "main", features, weights)
    # None: the Dataset's features stay where they were saved (the CPU), as before the migration.
    assert asked == {"features": None, "weights": "cpu"}
