"""TM009 run: every builder receives, after migration, exactly the weights the legacy call gave it.

No weights are loaded and torchvision is not imported: it is not installed here (its compiled
operators do not load against the CPU torch wheel the tests use), and loading weights would
download them, which the test machines cannot. What a legacy call means is decided before any
weights are touched, by torchvision's `@handle_legacy_interface` (with `kwonly_to_pos_or_kw` for
positional arguments), which turns `pretrained=`/`pretrained_backbone=` into the `weights=`/
`weights_backbone=` the builder then receives. So the test runs the legacy and the migrated code
against a stand-in `torchvision` built from TM009's table: every builder is a function that
returns the keyword arguments it receives, behind a reference implementation of that legacy
handling written here from its documented behaviour (positional arguments bound to the
keyword-only parameters in order; a truthy legacy value -> the builder's legacy weights, a falsy
one -> None; both with deprecation warnings), and every weights enum is an `enum.Enum` with the
table's members. The legacy run warns; the migrated run, with warnings as errors, must not, and
both must hand every builder the same arguments. That the table's legacy weights are
torchvision's own is checked against its source by tests/test_torchvision_weights_table.py (and
spot-checked below against values from torchvision's documentation).
"""

from __future__ import annotations

import enum
import sys
import types
import warnings

import pytest

from codemods.gates.torchvision_weights import table
from tests.behaviour import migrate, run

_SENTINEL = object()


class _NoWeights(Exception):
    pass


def _legacy_handling(name: str, params: list[str], legacy: dict[str, tuple[str, object]]):
    """A builder that returns what it receives, behind the legacy interface's translation."""

    def builder(*args, **kwargs):
        if args:
            if len(args) > len(params):
                raise TypeError(f"{name}() takes at most {len(params)} arguments")
            warnings.warn(f"Using {', '.join(params[: len(args)])} as positional parameter(s) is deprecated since 0.13")
            kwargs.update(zip(params, args))
        for new, (old, default) in legacy.items():
            given = kwargs.get(new, _SENTINEL)
            if (new not in kwargs and old not in kwargs) or isinstance(given, enum.Enum) or given is None or (
                isinstance(given, str) and given != "legacy"
            ):
                continue
            positional = given is not _SENTINEL
            value = kwargs.pop(new) if positional else kwargs.pop(old)
            if value:
                if default is None:
                    raise _NoWeights(name)
                chosen = default
            else:
                chosen = None
            if not positional:
                warnings.warn(f"The parameter '{old}' is deprecated since 0.13, please use '{new}' instead.")
            warnings.warn(f"Arguments other than a weight enum or `None` for '{new}' are deprecated since 0.13.")
            kwargs[new] = chosen
        return (name, kwargs)

    builder.__name__ = name.rpartition(".")[2]
    return builder


@pytest.fixture(scope="module")
def stub_torchvision():
    """`torchvision` and its model modules, from the table, in sys.modules for the module's tests."""
    data = table()
    enums = {
        qualified: enum.Enum(qualified.rpartition(".")[2], {member: qualified + "." + member for member in entry["members"]})
        for qualified, entry in data["enums"].items()
    }
    modules: dict[str, types.ModuleType] = {}

    def module(name: str) -> types.ModuleType:
        if name not in modules:
            modules[name] = types.ModuleType(name)
            parent, _, leaf = name.rpartition(".")
            if parent:
                setattr(module(parent), leaf, modules[name])
        return modules[name]

    objects: dict[str, object] = dict(enums)
    for public, entry in data["builders"].items():
        legacy = {}
        for new, info in entry["legacy"].items():
            if "chooser" in info:
                continue  # never rewritten (a finding): the stand-in has no legacy translation for it
            legacy[new] = (info["from"], enums[info["enum"]][info["value"]] if info.get("value") else None)
        builder = _legacy_handling(public, [*entry["positional"], *entry["keywords"]], legacy)
        for spelled in (public, *entry["spellings"]):
            objects[spelled] = builder
    for qualified in objects:
        module(qualified.rpartition(".")[0])
    for qualified, obj in sorted(objects.items(), key=lambda item: item[0].count(".")):
        parent, _, leaf = qualified.rpartition(".")
        setattr(modules[parent], leaf, obj)  # `torchvision.models.alexnet` is the function, as in torchvision
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    yield enums
    for name, old in saved.items():
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old


def _both(source: str, *args):
    """(legacy result, the warnings it gave), migrated result (warnings are errors there)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = run(source, "build", *args)
    new = run(migrate(source, "TM009"), "build", *args, strict=True)
    return old, [str(w.message) for w in caught], new


def _plain_builders() -> list[tuple[str, dict]]:
    return [
        (name, entry)
        for name, entry in table()["builders"].items()
        if all(info.get("value") for info in entry["legacy"].values())
    ]


def test_every_builder_gets_the_same_weights_for_true_false_and_a_flag(stub_torchvision) -> None:
    builders = _plain_builders()
    assert len(builders) >= 100
    calls = []
    for name, entry in builders:
        for new, info in entry["legacy"].items():
            old = info["from"]
            calls += [f"{name}({old}=True)", f"{name}({old}=False)", f"{name}({old}=flag)", f"{name}({old}=not flag)"]
    source = "import torchvision\n\n\ndef build(flag):\n    return [\n" + "".join(f"        {c},\n" for c in calls) + "    ]\n"
    for flag in (True, False, 0, "yes"):
        old, caught, new = _both(source, flag)
        assert any("deprecated" in message for message in caught)
        assert new == old
    assert new[0] == ("torchvision.models.alexnet", {"weights": stub_torchvision["torchvision.models.AlexNet_Weights"].IMAGENET1K_V1})


def test_positional_arguments_bind_as_torchvision_binds_them(stub_torchvision) -> None:
    source = """
from torchvision import models
from torchvision.models import resnet18
from torchvision.models.detection import fasterrcnn_resnet50_fpn as frcnn


def build(flag):
    return [
        resnet18(True),
        resnet18(False, False),
        models.mobilenet_v2(True, progress=False),
        frcnn(False, True, 91, True),
        frcnn(False, True, 5, False, 3),
        models.video.r3d_18(True),
        models.detection.retinanet_resnet50_fpn(pretrained=flag or False, pretrained_backbone=True),
    ]
"""
    for flag in (True, False):
        old, caught, new = _both(source, flag)
        assert any("positional" in message for message in caught)
        assert new == old
    assert new[3][1] == {
        "weights": None,
        "progress": True,
        "num_classes": 91,
        "weights_backbone": stub_torchvision["torchvision.models.ResNet50_Weights"].IMAGENET1K_V1,
    }


def test_the_enum_imports_it_adds_resolve(stub_torchvision) -> None:
    source = """
from torchvision.models import resnet50
from torchvision.models.segmentation import deeplabv3_resnet50 as deeplab


def build(flag):
    return [resnet50(pretrained=flag), deeplab(pretrained=True, pretrained_backbone=False)]
"""
    migrated = migrate(source, "TM009")
    assert "from torchvision.models import ResNet50_Weights, resnet50" in migrated
    assert "from torchvision.models.segmentation import DeepLabV3_ResNet50_Weights" in migrated
    for flag in (True, False):
        old, _, new = _both(source, flag)
        assert new == old


def test_the_weights_are_the_documented_legacy_ones_not_default(stub_torchvision) -> None:
    """Values from torchvision's documentation of each builder's `pretrained=True`, independent
    of the table: the first weights published for it, where DEFAULT may be newer."""
    source = """
import torchvision.models as tvm


def build(flag):
    return [
        tvm.resnet50(pretrained=True),
        tvm.efficientnet_b1(pretrained=True),
        tvm.detection.maskrcnn_resnet50_fpn(pretrained=True),
        tvm.optical_flow.raft_large(pretrained=True),
        tvm.segmentation.fcn_resnet50(pretrained=True),
    ]
"""
    _, _, new = _both(source, True)
    chosen = [kwargs["weights"].value for _, kwargs in new]
    assert chosen == [
        "torchvision.models.ResNet50_Weights.IMAGENET1K_V1",  # DEFAULT is IMAGENET1K_V2
        "torchvision.models.EfficientNet_B1_Weights.IMAGENET1K_V1",  # DEFAULT is IMAGENET1K_V2
        "torchvision.models.detection.MaskRCNN_ResNet50_FPN_Weights.COCO_V1",
        "torchvision.models.optical_flow.Raft_Large_Weights.C_T_SKHT_V2",
        "torchvision.models.segmentation.FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1",
    ]
    assert table()["enums"]["torchvision.models.EfficientNet_B1_Weights"]["default"] == "IMAGENET1K_V2"
