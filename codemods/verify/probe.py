"""Compare what a probe command prints before and after: same text, numbers within tolerance."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])|(?<![\w])[-+]?(?:nan|inf)(?![\w])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Divergence:
    line: int  # 1-based line of the probe's output
    before: str
    after: str
    reason: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def numbers(line: str) -> tuple[str, list[float]]:
    """The line with its numbers masked, and the numbers."""
    values = [float(m.group()) for m in NUMBER.finditer(line)]
    return NUMBER.sub("#", line), values


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def first_divergence(before: str, after: str, rtol: float, atol: float) -> tuple[Divergence | None, int]:
    """(the first line that differs beyond tolerance or None, how many numbers were compared)."""
    old = [ln.rstrip() for ln in before.splitlines() if ln.strip()]
    new = [ln.rstrip() for ln in after.splitlines() if ln.strip()]
    compared = 0
    for index, (b, a) in enumerate(zip(old, new), start=1):
        b_text, b_values = numbers(b)
        a_text, a_values = numbers(a)
        if b_text != a_text or len(b_values) != len(a_values):
            return Divergence(index, b, a, "the text differs"), compared
        for x, y in zip(b_values, a_values):
            if not close(x, y, rtol, atol):
                return Divergence(index, b, a, f"{x!r} vs {y!r}: beyond rtol={rtol:g}, atol={atol:g}"), compared
            compared += 1
    if len(old) != len(new):
        index = min(len(old), len(new)) + 1
        pick = lambda lines: lines[index - 1] if index <= len(lines) else "<no more output>"  # noqa: E731
        return Divergence(index, pick(old), pick(new), f"{len(old)} lines before, {len(new)} after"), compared
    return None, compared
