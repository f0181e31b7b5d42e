"""TM104 behaviour: the rewritten stripping idioms give exactly the keys the hand-written ones gave
on a DataParallel checkpoint, and also load a checkpoint saved without the prefix."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

FOLDER = FIXTURES / "TM104-state-dict-prefix"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))


def _namespaces(case: str) -> tuple[dict, dict]:
    source = (FOLDER / f"{case}.in.py").read_text()
    migrated = transform_source(source, [registry.get("TM104")]).code
    assert migrated != source
    before: dict = {}
    after: dict = {}
    exec(compile(source, f"{case}.in.py", "exec"), before)
    exec(compile(migrated, f"{case}.out.py", "exec"), after)
    return before, after


@pytest.mark.parametrize("function", ["fastai_style", "semseg_style", "guarded_style"])
def test_loops_give_the_same_keys(function: str) -> None:
    before, after = _namespaces("loops")
    wrapped = torch.nn.DataParallel(Net()).state_dict()
    old = before[function](dict(wrapped))
    new = after[function](dict(wrapped))
    assert list(new) == list(old) == list(Net().state_dict())
    for key in old:
        assert new[key] is old[key]
    # and a checkpoint without the prefix now loads instead of being cut to pieces
    plain = Net().state_dict()
    assert list(after[function](dict(plain))) == list(plain)


def test_split_loop_and_retry_load_both_kinds_of_checkpoint(tmp_path) -> None:
    before, after = _namespaces("split_join")
    retry_before, retry_after = _namespaces("retry")
    source = Net()
    for saved in (torch.nn.DataParallel(source).state_dict(), source.state_dict()):
        path = tmp_path / "ckpt.pt"
        torch.save(saved, path)
        for load in (after["split_style"], retry_after["load"]):
            model = Net()
            load(str(path), model) if load is after["split_style"] else load(model, str(path))
            for key, value in model.state_dict().items():
                torch.testing.assert_close(value, source.state_dict()[key])
        # the retry idiom also loads into a wrapped model, as the original did
        wrapped = torch.nn.DataParallel(Net())
        retry_after["load"](wrapped, str(path))
        torch.testing.assert_close(wrapped.module.body[0].weight, source.body[0].weight)
    with pytest.raises(RuntimeError):  # the original split idiom breaks on an unprefixed checkpoint
        torch.save(source.state_dict(), tmp_path / "plain.pt")
        before["split_style"](str(tmp_path / "plain.pt"), Net())


def test_comprehensions_give_the_same_keys() -> None:
    before, after = _namespaces("comprehension")
    wrapped = torch.nn.DataParallel(Net()).state_dict()
    for function in ("convert2",):
        assert list(after[function](dict(wrapped))) == list(before[function](dict(wrapped)))


def test_saving_a_wrapped_model_saves_the_plain_keys(tmp_path) -> None:
    source = "import torch\nimport torch.nn as nn\nmodel = nn.DataParallel(net)\ntorch.save(model.state_dict(), path)\n"
    migrated = transform_source(source, [registry.get("TM104")]).code
    path = tmp_path / "m.pt"
    exec(compile(migrated, "m.py", "exec"), {"net": Net(), "path": str(path)})
    Net().load_state_dict(torch.load(path), strict=True)


def test_a_self_attribute_wrapped_in_another_file_is_saved_unwrapped(tmp_path) -> None:
    from codemods.api import Options, migrate

    (tmp_path / "base.py").write_text(
        "import torch.nn as nn\n\n\nclass BaseTrainer:\n    def __init__(self, net):\n"
        "        self.model = nn.DataParallel(net)\n"
    )
    (tmp_path / "trainer.py").write_text(
        "import torch\nfrom base import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n    def save(self, path):\n"
        "        torch.save(self.model.state_dict(), path)\n        torch.save(self.net.state_dict(), path + '.net')\n"
    )
    report = migrate([tmp_path], Options(mode="write", select=("TM104",), use_config=False))
    assert [f.path for f in report.files if f.changed] == [str(tmp_path / "trainer.py")]
    text = (tmp_path / "trainer.py").read_text()
    assert "torch.save(unwrap_model(self.model).state_dict(), path)" in text
    assert "torch.save(self.net.state_dict(), path + '.net')" in text
    namespace: dict = {}
    exec(compile(text.replace("from base import BaseTrainer", "BaseTrainer = object"), "t.py", "exec"), namespace)
    trainer = namespace["Trainer"]()
    trainer.model = torch.nn.DataParallel(Net())
    trainer.net = Net()
    trainer.save(str(tmp_path / "m.pt"))
    Net().load_state_dict(torch.load(tmp_path / "m.pt"), strict=True)
