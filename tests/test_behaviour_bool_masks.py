"""TM011 under torch: uint8 masks fail or warn today; the migrated bool masks run with warnings as
errors and give what a bool-mask reference gives, which is what the uint8 masks meant."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
import torch.nn.functional as F


def attend(scores, tokens, pad_index):
    pad = (tokens == pad_index).byte()
    scores = scores.masked_fill(pad.unsqueeze(1), -1e9)
    return F.softmax(scores, dim=-1)


def causal(scores):
    n = scores.size(-1)
    future = torch.triu(torch.ones(n, n, dtype=torch.uint8), diagonal=1)
    return scores.masked_fill(future, float("-inf")).softmax(-1)


def pick(x: torch.Tensor):
    keep = torch.ByteTensor([1, 0, 1])
    return x[keep]


def magnitude(x):
    return torch.where((x > 0).byte(), x, -x)


def clip(x):
    x = x.clone()
    x[(x < 0).type(torch.uint8)] = 0
    return x


def selected(x, lengths):
    valid = x.new_zeros(x.size(), dtype=torch.uint8)
    for row, n in enumerate(lengths.tolist()):
        valid[row, :n] = 1
    return x.masked_select(valid)
"""


def _inputs():
    torch.manual_seed(0)
    scores = torch.randn(2, 4, 4)
    tokens = torch.tensor([[5, 7, 0, 0], [3, 0, 0, 0]])
    x = torch.randn(3, 4)
    lengths = torch.tensor([4, 1, 2])
    return {
        "attend": (scores, tokens, 0),
        "causal": (scores,),
        "pick": (x,),
        "magnitude": (x,),
        "clip": (x,),
        "selected": (x, lengths),
    }


def _reference(name, *args):
    """What each function computes with bool masks, written independently of the snippet: the
    mask selects where the uint8 value is 1 (torch < 1.2 documented uint8 masks as "binary")."""
    if name == "attend":
        scores, tokens, pad = args
        return F_softmax(scores.masked_fill((tokens == pad).unsqueeze(1), -1e9))
    if name == "causal":
        (scores,) = args
        n = scores.size(-1)
        future = torch.ones(n, n).triu(1) == 1
        return F_softmax(scores.masked_fill(future, float("-inf")))
    (x,) = args[:1]
    if name == "pick":
        return x[torch.tensor([True, False, True])]
    if name == "magnitude":
        return x.abs()
    if name == "clip":
        return x.clamp(min=0)
    if name == "selected":
        lengths = args[1]
        rows = [x[row, :n] for row, n in enumerate(lengths.tolist())]
        return torch.cat(rows)
    raise AssertionError(name)


def F_softmax(t):
    return torch.softmax(t, dim=-1)


@pytest.mark.parametrize("name", ["attend", "causal", "clip", "selected"])
def test_legacy_masks_raise_today(name: str) -> None:
    with pytest.raises(RuntimeError, match="(?i)bool"):
        run(LEGACY, name, *_inputs()[name])


@pytest.mark.parametrize("name", ["pick", "magnitude"])
def test_legacy_masks_warn_today(name: str) -> None:
    with pytest.warns(UserWarning, match="uint8"):
        old = run(LEGACY, name, *_inputs()[name])
    torch.testing.assert_close(old, _reference(name, *_inputs()[name]))  # deprecated, same meaning


def test_migrated_masks_run_without_warnings_and_match_the_reference() -> None:
    new_source = migrate(LEGACY, "TM011")
    assert "uint8" not in new_source and "byte()" not in new_source and "ByteTensor" not in new_source
    for name, args in _inputs().items():
        new = run(new_source, name, *args, strict=True)
        torch.testing.assert_close(new, _reference(name, *args), msg=name)


def test_a_uint8_tensor_read_as_indices_means_something_else() -> None:
    """Why the codemod proves where a mask goes: the same uint8 values as indices (`.long()`, or
    any NumPy array indexed by the tensor) pick rows 1, 0, 1, not rows 0 and 2."""
    x = _inputs()["pick"][0]
    keep = torch.ByteTensor([1, 0, 1])
    as_mask = run(migrate(LEGACY, "TM011"), "pick", x, strict=True)
    torch.testing.assert_close(as_mask, x[[0, 2]])
    as_indices = x[keep.long()]
    assert as_indices.shape == (3, 4) and as_mask.shape == (2, 4)
    torch.testing.assert_close(as_indices, x[[1, 0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_numpy = x.numpy()[keep]  # NumPy reads the uint8 tensor as indices, silently
    assert from_numpy.shape == (3, 4)
    assert x.numpy()[keep.bool()].shape == (2, 4)


def test_what_it_declines_would_change_meaning() -> None:
    """`.byte()` of values other than 0/1 and `~` of a uint8 mask: why they are findings."""
    source = """
def soft(x, probs):
    return x.masked_fill(probs.byte(), 0)


def inverted(x):
    keep = (x > 0).byte()
    return x[~keep]
"""
    from codemods import registry
    from codemods.api import transform_source

    result = transform_source(source, [registry.get("TM011")])
    assert not result.changed and len(result.findings) == 2
    probs = torch.tensor([0.5, 0.0, 256.0])
    assert probs.byte().tolist() == [0, 0, 0] and probs.bool().tolist() == [True, False, True]
    keep = (torch.tensor([1.0, -1.0]) > 0).byte()
    assert (~keep).tolist() == [254, 255]  # bitwise on uint8: both nonzero, every element selected
    assert (~keep.bool()).tolist() == [False, True]
