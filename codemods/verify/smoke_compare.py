"""A model check's result against its reference (the before side's first run): the first difference.

Pure: plain JSON from `smoke_probe.py` in, a message (or None: the same) out. What differs, in
the order it is looked for: the state-dict keys (a renamed key is a difference even when every
number agrees), their shapes and dtypes, the initial values, the input the forward accepted, the
forward output and the gradients of its sum. Numbers agree within `rtol`/`atol` (NaN equals NaN).
"""

from __future__ import annotations

import math
from typing import Sequence

from codemods.verify.probe import close as _close  # the probe's own tolerance: NaN equals NaN


def tensor_difference(ref: dict | None, got: dict | None, rtol: float, atol: float, scaled: float = 0.0) -> str | None:
    """The way one tensor's summary differs from the reference's, or None. Each sampled value is
    held to `rtol` of itself plus `atol` plus `scaled` times the reference's largest sampled value."""
    if ref is None or got is None:
        return None if ref is got else "a gradient is missing on one side"
    if ref["shape"] != got["shape"]:
        return f"shape {tuple(ref['shape'])} before, {tuple(got['shape'])} after"
    if ref["dtype"] != got["dtype"]:
        return f"dtype {ref['dtype']} before, {got['dtype']} after"
    worst = 0.0
    floor = atol + scaled * max((abs(v) for v in ref["sample"] if math.isfinite(v)), default=0.0)
    for a, b in zip(got["sample"], ref["sample"]):
        if not _close(a, b, rtol, floor):
            worst = max(worst, abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf)
    # A sum adds many roundings: it is held to the tolerance of its absolute sum.
    if not worst and not _close(got["sum"], ref["sum"], rtol, floor + max(rtol, scaled) * ref["abs"]):
        worst = abs(got["sum"] - ref["sum"])
    return f"values differ (max abs diff {worst:.3g})" if worst else None


def _named(pairs: Sequence) -> dict:
    return {name: value for name, value in pairs}


def _keys(before: list[str], after: list[str]) -> str | None:
    if before == after:
        return None
    gone = [k for k in before if k not in after]
    new = [k for k in after if k not in before]
    if not gone and not new:
        return "state-dict keys in another order"
    parts = []
    if gone:
        parts.append("missing after: " + ", ".join(gone[:5]) + (" …" if len(gone) > 5 else ""))
    if new:
        parts.append("new after: " + ", ".join(new[:5]) + (" …" if len(new) > 5 else ""))
    return "state-dict keys differ (" + "; ".join(parts) + ")"


def _tensors(what: str, ref: Sequence, got: Sequence, rtol: float, atol: float, scaled: float) -> str | None:
    ref_named, got_named = _named(ref), _named(got)
    if list(ref_named) != list(got_named):
        return f"{what}: " + (_keys(list(ref_named), list(got_named)) or "other tensors")
    for name, r in ref_named.items():
        problem = tensor_difference(r, got_named[name], rtol, atol, scaled)
        if problem:
            return f"{what} {name}: {problem}"
    return None


def model_difference(ref: dict, got: dict, rtol: float, atol: float, scaled: float = 0.0) -> str | None:
    """The first way `got` (a model check's data) differs from `ref`, or None (`scaled`: see
    `tensor_difference`; smoke.py sets it when the two sides run different torch releases)."""
    problem = _keys([k for k, _ in ref["state"]], [k for k, _ in got["state"]])
    if problem:
        return problem
    problem = _tensors("initial parameter", ref["state"], got["state"], rtol, atol, scaled)
    if problem:
        return problem
    if ref.get("forward") is None:
        return None  # no input was derived before: nothing more to compare
    if got.get("forward") is None:
        return f"forward no longer runs on input {_input(ref)}: {got.get('no_input', '')}"[:300]
    if ref["input"] != got["input"]:
        return f"forward accepted input {_input(ref)} before, {_input(got)} after"
    problem = _tensors("forward output", ref["forward"], got["forward"], rtol, atol, scaled)
    if problem:
        return problem
    if (ref.get("grads") is None) != (got.get("grads") is None):
        return "backward ran on one side only"
    if ref.get("grads") is not None:
        return _tensors("gradient of", ref["grads"], got["grads"], rtol, atol, scaled)
    return None


def _input(data: dict) -> str:
    kind, shape = data["input"]
    return f"{'indices' if kind == 'long' else 'floats'} {tuple(shape)}"
