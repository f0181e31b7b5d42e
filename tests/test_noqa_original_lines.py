"""`# noqa` applies to the original line it is written on, whatever lines earlier codemods added
or removed above it; and no codemod gets past it: a change to a line a noqa keeps, made without
`rewrite()`, is not applied (the engine checks each codemod's output)."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods import registry
from codemods.base import MigrationCodemod
from codemods.engine.pipeline import transform_source
from codemods.registry import Safety, Spec

ALL = [spec for spec in registry.PIPELINE if spec.safety is not Safety.UNSAFE]  # the default run

# TM101 (before TM102) adds two lines above the noqa line (`device = ...`); TM002 (before TM006)
# removes one (the import). The noqa line and the next differ only in the noqa.
HEAD_ADDS = '''\
import torch

x = torch.zeros(3).cuda()


def load(f):
    a = torch.load(f)  # noqa: TM102
    b = torch.load(f)
    return a, b
'''

HEAD_REMOVES = '''\
import torch
import torch.nn.functional as F
from torch.autograd import Variable
from torch.autograd import Variable as V


def act(v):
    a = F.sigmoid(Variable(v))  # noqa: TM006
    b = F.sigmoid(V(v))
    return a, b
'''


@pytest.mark.parametrize(
    ("source", "code", "old", "new"),
    [(HEAD_ADDS, "TM102", "torch.load(f", "map_location="), (HEAD_REMOVES, "TM006", "F.sigmoid(", "torch.sigmoid(")],
    ids=["lines-added-above", "lines-removed-above"],
)
def test_the_noqa_line_is_kept_and_the_next_is_rewritten(source: str, code: str, old: str, new: str) -> None:
    result = transform_source(source, ALL)
    assert result.changed and {code} <= set(result.rewrites) and len(set(result.rewrites)) > 1
    lines = result.code.splitlines()
    kept = next(line for line in lines if f"# noqa: {code}" in line)
    assert old in kept and new not in kept
    after = lines[lines.index(kept) + 1 :][:2]  # the next statement: a rewrite may wrap it onto a second line
    assert new in " ".join(" ".join(after).split())


def test_a_noqa_above_the_shift_does_not_protect_a_line_below_it() -> None:
    """The fault the other way round: in the shifted text the noqa's line number names the line
    that moved onto it."""
    source = HEAD_ADDS.replace("    a = torch.load(f)  # noqa: TM102\n", "    a = torch.load(f)\n").replace(
        "x = torch.zeros(3).cuda()\n", "x = torch.zeros(3).cuda()\ny = torch.load('y.pt')  # noqa: TM102\n"
    )
    result = transform_source(source, ALL)
    assert "y = torch.load('y.pt')  # noqa: TM102" in result.code.replace(", weights_only=False", "")
    assert " ".join(result.code.split()).count("torch.load(f, map_location=") == 2  # wrapped or not


SIX_IMPORT_KEPT = '''\
import torch
from torch.autograd import Variable
from torch._six import string_classes, inf  # noqa: TM007


def f(x):
    return isinstance(Variable(x), string_classes) or x == inf
'''

SIX_USE_KEPT = '''\
import torch
from torch.autograd import Variable
from torch._six import string_classes, inf


def f(x):
    y = Variable(x)
    if isinstance(y, string_classes):  # noqa: TM007
        return 1
    return y == inf
'''


def test_noqa_tm007_on_the_import_keeps_it_and_its_names() -> None:
    result = transform_source(SIX_IMPORT_KEPT, ALL)
    assert "from torch._six import string_classes, inf  # noqa: TM007" in result.code
    assert "isinstance(x.detach(), string_classes) or x == inf" in result.code  # TM002 ran (x is a parameter: the cut is kept); TM007 left them
    assert "TM007" not in result.rewrites and not [f for f in result.findings if f.code == "TM007"]


def test_noqa_tm007_on_a_use_keeps_that_use_and_its_import() -> None:
    result = transform_source(SIX_USE_KEPT, ALL)
    assert "if isinstance(y, string_classes):  # noqa: TM007" in result.code
    assert "from torch._six import string_classes\n" in result.code
    assert "return y == math.inf" in result.code and result.rewrites.get("TM007")


class _Bypass(MigrationCodemod):
    """A codemod that renames every `old(...)` call without `rewrite()`."""

    CODE = "TM777"

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if isinstance(original_node.func, cst.Name) and original_node.func.value == "old":
            self.rewrites += 1  # what rewrite() does, without its noqa check
            return updated_node.with_changes(func=cst.Name("new"))
        return updated_node


DEFS = "old = new = print\n\n\n"
BYPASS = Spec("TM777", "bypass", _Bypass, Safety.SAFE, (r"old",))


def test_the_engine_refuses_a_change_to_a_noqa_line_made_without_rewrite() -> None:
    source = f"{DEFS}x = old(1)  # noqa: TM777\ny = old(2)\n"
    result = transform_source(source, [BYPASS])
    assert result.code == source and not result.changed
    [finding] = result.findings
    assert (finding.code, finding.line) == ("TM777", 4) and "not applied to this file" in finding.message
    # without the noqa the same codemod is applied
    assert transform_source(source.replace("  # noqa: TM777", ""), [BYPASS]).code.count("new(") == 2


def test_the_refusal_finds_the_noqa_line_after_earlier_codemods_moved_it() -> None:
    source = f"import torch\n{DEFS}z = torch.zeros(1).cuda()\nx = old(1)  # noqa: TM777\ny = old(2)\n"
    result = transform_source(source, [*(s for s in ALL if s.code == "TM101"), BYPASS])
    assert "x = old(1)  # noqa: TM777" in result.code and "y = old(2)" in result.code
    assert [(f.code, f.line) for f in result.findings if f.code == "TM777"] == [("TM777", 6)]
