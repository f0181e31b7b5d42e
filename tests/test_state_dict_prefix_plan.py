"""TM104's plan on its own: the pure functions from a survey and a block's statements to edits
and findings, called directly (no transformer, no engine)."""

from __future__ import annotations

import dataclasses

import libcst as cst
import pytest

from codemods.transforms.state_dict_prefix import plan
from codemods.transforms.state_dict_prefix.nodes import source_of
from codemods.transforms.state_dict_prefix.survey import Survey, wraps_model

WRAPPING = Survey(wrapped=frozenset({"model"}), repo_wraps=True, helpers_ok=True, hand_strips=())
NOT_WRAPPING = Survey(wrapped=frozenset(), repo_wraps=False, helpers_ok=True, hand_strips=())


def resolve(expr: cst.BaseExpression) -> str | None:
    """The few names these cases import, as the codemod's import table would resolve them."""
    names = {
        "OrderedDict": "collections.OrderedDict",
        "torch.load": "torch.load",
        "nn.DataParallel": "torch.nn.DataParallel",
    }
    return names.get(source_of(expr))


def context(survey: Survey = WRAPPING, bound=(), loaded=(), taken=()) -> plan.BlockContext:
    return plan.BlockContext(
        survey=survey,
        resolve=resolve,
        bound=lambda: set(bound),
        loaded=lambda: set(loaded),
        taken=lambda: set(taken),
    )


def edits(code: str, ctx: plan.BlockContext, i: int = 0) -> list[plan.Edit]:
    body = list(cst.parse_module(code).body)
    return list(plan.block_edits(body, body, i, [], ctx))


def code(statements) -> str:
    return cst.Module(body=list(statements)).code


def test_a_copy_loop_becomes_a_copy_and_the_library_call() -> None:
    (edit,) = edits("new = OrderedDict()\nfor k, v in sd.items():\n    new[k[7:]] = v\n", context())
    assert edit.width == 2 and edit.consume == plan.TRIED and not edit.unwrap
    assert code(edit.statements) == 'new = OrderedDict(sd)\nconsume_prefix_in_state_dict_if_present(new, "module.")\n'


def test_a_comprehension_needs_the_import_only_once_applied() -> None:
    (edit,) = edits("new = {k.replace('module.', ''): v for k, v in sd.items()}\n", context())
    assert edit.consume == plan.APPLIED and edit.width == 1
    assert code(edit.statements) == 'new = dict(sd)\nconsume_prefix_in_state_dict_if_present(new, "module.")\n'


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "new = {'.'.join(k.split('.')[1:]): v for k, v in sd.items()}\n", id="generic-split-needs-a-wrapping-repo"
        ),
        pytest.param("new = {k[6:]: v for k, v in sd.items()}\n", id="six-characters-is-not-the-prefix"),
        pytest.param(
            "new = OrderedDict()\nfor k, v in sd.items():\n    new[k[7:]] = v\nprint(k)\n", id="loop-variable-read-after"
        ),
    ],
)
def test_what_is_not_exactly_the_idiom_gets_no_edit(source: str) -> None:
    assert edits(source, context(NOT_WRAPPING)) == []


def test_an_in_place_rename_over_a_copy_of_the_keys() -> None:
    source = "keys = list(sd.keys())\nfor k in keys:\n    if k.startswith('module.'):\n        sd[k[7:]] = sd.pop(k)\n"
    (edit,) = edits(source, context())
    assert edit.width == 2 and code(edit.statements) == 'consume_prefix_in_state_dict_if_present(sd, "module.")\n'


def test_a_load_of_torch_load_hoists_a_name_no_one_has() -> None:
    (edit,) = edits("model.load_state_dict(torch.load(path), strict=False)\n", context(taken={"state_dict"}))
    assert edit.claims == "state_dict_" and edit.unwrap
    assert code(edit.statements) == (
        "state_dict_ = torch.load(path)\n"
        'consume_prefix_in_state_dict_if_present(state_dict_, "module.")\n'
        "unwrap_model(model).load_state_dict(state_dict_, strict=False)\n"
    )


def test_loads_that_need_no_strip() -> None:
    load = "net.load_state_dict(torch.load(path))\n"
    assert edits(load, context(bound={"net"})) == []  # built here and never wrapped
    assert edits(load, context(NOT_WRAPPING)) == []  # the repository wraps no model
    assert edits("optimizer.load_state_dict(torch.load(path))\n", context()) == []
    clash = dataclasses.replace(WRAPPING, helpers_ok=False)
    assert edits(load, context(clash)) == []


def test_a_strip_already_made_before_a_load_is_not_made_twice() -> None:
    source = 'consume_prefix_in_state_dict_if_present(ckpt, "module.")\nmodel.load_state_dict(ckpt)\n'
    body = list(cst.parse_module(source).body)
    assert list(plan.block_edits(body, body, 1, body[:1], context(loaded={"ckpt"}))) == []
    assert len(list(plan.block_edits(body, body, 1, [], context(loaded={"ckpt"})))) == 1


def test_a_retry_with_a_user_unwrap_model_only_retires_the_import() -> None:
    source = (
        "try:\n    model.load_state_dict(sd)\nexcept RuntimeError:\n"
        "    new = OrderedDict()\n    for k, v in sd.items():\n        new[k[7:]] = v\n    model.load_state_dict(new)\n"
    )
    (edit,) = edits(source, context(dataclasses.replace(WRAPPING, helpers_ok=False)))
    assert edit.replacement is None and edit.retire_import == ("collections", "OrderedDict")
    (edit,) = edits(source, context())
    assert edit.unwrap and code(edit.statements) == (
        'consume_prefix_in_state_dict_if_present(sd, "module.")\nunwrap_model(model).load_state_dict(sd)\n'
    )


def test_a_save_unwraps_or_declines() -> None:
    call = cst.parse_expression("model.state_dict()")
    edit = plan.unwrapped_save(WRAPPING, call, call)
    assert source_of(edit.replacement) == "unwrap_model(model).state_dict()"
    assert isinstance(plan.unwrapped_save(dataclasses.replace(WRAPPING, helpers_ok=False), call, call), plan.Decline)


def test_branches_made_the_same_keep_one_unless_the_test_does_something() -> None:
    test = "if isinstance(model, nn.DataParallel):\n"
    original = cst.parse_statement(f"{test}    save(model.module)\nelse:\n    save(model)\n")
    updated = cst.parse_statement(f"{test}    save(m)\nelse:\n    save(m)\n")
    edit = plan.merged_branches(original, updated)
    assert code(edit.replacement.nodes) == "save(m)\n" and set(edit.retire_names) == {"isinstance", "model", "nn"}
    impure = updated.with_changes(test=cst.parse_expression("check(model)"))
    assert isinstance(plan.merged_branches(original, impure), plan.Decline)
    assert plan.merged_branches(updated, updated) is None  # the same already: the user's, not ours


def test_leftover_strips_are_those_no_edit_replaced() -> None:
    loop = cst.parse_statement("for k in sd:\n    x = k.replace('module.', '_')\n")
    strip = loop.body.body[0].body[0].value
    survey = dataclasses.replace(WRAPPING, hand_strips=(strip,))
    assert [d.node for d in plan.leftover_strips(survey, [])] == [strip]
    assert plan.leftover_strips(survey, [loop]) == ()


def test_what_counts_as_a_wrapped_model() -> None:
    def wraps(code: str, helper: bool = False) -> bool:
        return wraps_model(cst.parse_expression(code), resolve, helper)

    assert wraps("nn.DataParallel(net)") and wraps("nn.DataParallel(net).cuda()")
    assert wraps("ddp_wrap(net)", helper=True) and not wraps("ddp_wrap(net)")
    assert not wraps("Wrapper(net)") and not wraps("net")
