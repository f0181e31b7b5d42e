"""TM103's plan (codemods/transforms/dataparallel_to_ddp/plan.py) on its own: a pure function from
a module's frozen survey and a few facts about the file to what the transform rewrites and what
it reports. Each case surveys a small module once, then plans it under the facts it varies."""

from __future__ import annotations

import dataclasses
import textwrap

import libcst as cst
import pytest

from codemods.transforms.dataparallel_to_ddp import DataParallelToDDP
from codemods.transforms.dataparallel_to_ddp.plan import PlanInputs, plan_module
from codemods.transforms.dataparallel_to_ddp.survey import ModuleSurvey

TRAIN = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader


    def main(dataset):
        train_loader = DataLoader(dataset, batch_size=8, shuffle=True)
        model = nn.DataParallel(Net())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in train_loader:
                model(x).sum().backward()
                optimizer.step()
        torch.save(model.module.state_dict(), "model.pt")


    if __name__ == "__main__":
        main(None)
    """)

LIBRARY = textwrap.dedent("""\
    import torch.nn as nn


    def build(net):
        return nn.DataParallel(net)
    """)

IN_A_MODEL = textwrap.dedent("""\
    import torch.nn as nn
    from models.base import BaseModel


    class Trainer(BaseModel):
        def __init__(self, net):
            self.net = nn.DataParallel(net)
    """)


def _survey(source: str) -> ModuleSurvey:
    codemod = DataParallelToDDP()
    codemod.transform_module(cst.parse_module(source))
    return codemod.survey


def _messages(plan) -> list[str]:
    return [found.message for found in plan.findings]


def test_a_training_script_is_restructured_with_each_site_named() -> None:
    survey = _survey(TRAIN)
    plan = plan_module(survey, PlanInputs(launch="run.py"))
    assert plan.walk and plan.restructure and not plan.findings
    [(wrap, model)] = plan.wraps.items()
    assert cst.Module(body=[]).code_for_node(model) == "Net()"
    assert "`python run.py` runs one process" in plan.site_reviews[wrap]
    assert list(plan.samplers.values()) == ["train_sampler"]
    [(loop, loaders)] = plan.epoch_loops.items()
    assert loaders == ("train_loader",) and loop is survey.epoch_loops[0][0]
    assert plan.guarded_lines == frozenset(survey.saves) and len(survey.saves) == 1
    assert plan.helpers_needed == {"ddp_sampler", "ddp_set_epoch"}


def test_the_plan_and_its_survey_are_frozen() -> None:
    survey = _survey(TRAIN)
    plan = plan_module(survey, PlanInputs())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.restructure = False
    with pytest.raises(dataclasses.FrozenInstanceError):
        survey.entry = False
    with pytest.raises(TypeError):
        plan.wraps[next(iter(plan.wraps))] = None
    assert plan_module(survey, PlanInputs()) == plan  # same survey, same facts: the same plan


@pytest.mark.parametrize(
    ("inputs", "held_back"),
    [
        pytest.param(PlanInputs(torchrun_available=False), True, id="a target torch without torchrun"),
        pytest.param(PlanInputs(wrap_kept_by_noqa=True), False, id="one wrap kept by noqa"),
    ],
)
def test_a_file_left_whole_is_not_walked(inputs: PlanInputs, held_back: bool) -> None:
    survey = _survey(TRAIN)
    plan = plan_module(survey, inputs)
    assert not plan.walk and not plan.restructure and not plan.findings and not plan.wraps
    assert plan.held_back == ((survey.wraps[0].call,) if held_back else ())


def test_a_library_module_keeps_its_wrap_with_a_finding() -> None:
    plan = plan_module(_survey(LIBRARY), PlanInputs())
    assert plan.walk and not plan.restructure  # its isinstance tests may still change
    assert [m.split(":")[0] for m in _messages(plan)] == ["DataParallel outside a training script"]


def test_the_repository_facts_say_which_classes_are_models() -> None:
    survey = _survey(IN_A_MODEL)
    outside = plan_module(survey, PlanInputs())
    inside = plan_module(survey, PlanInputs(module_classes=frozenset({"BaseModel"})))
    assert _messages(outside)[0].startswith("DataParallel outside a training script")
    assert _messages(inside)[0].startswith("DataParallel on a submodule")


def test_a_sampler_name_in_use_is_not_reused() -> None:
    taken = TRAIN.replace("def main(dataset):", "def main(dataset, train_sampler=None):")
    plan = plan_module(_survey(taken), PlanInputs())
    assert list(plan.samplers.values()) == ["train_sampler_"]
