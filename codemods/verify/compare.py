"""Compare per-test outcomes before and after, and judge reruns: regression, fixed, or flaky."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from codemods.verify.junit import FAILING, Outcome

# Kinds, in the order reports list them.
REGRESSION = "regression"  # not failing before (or absent), failing after
MISSING = "missing"  # passed before, gone after
FIXED = "fixed"  # failing before, passing after
FLAKY = "flaky"  # reruns disagree with themselves on one side
ADDED = "added"  # only after, not failing
CHANGED = "changed"  # failing both sides, differently (failed <-> error), or skipped <-> passed
UNCHANGED = "unchanged"
KINDS = (REGRESSION, MISSING, FIXED, FLAKY, ADDED, CHANGED, UNCHANGED)


@dataclass
class TestChange:
    id: str
    before: str | None  # outcome, None when absent on that side
    after: str | None
    kind: str
    before_message: str = ""
    after_message: str = ""
    reruns_before: list[str] = field(default_factory=list)  # outcomes of the reruns, in order
    reruns_after: list[str] = field(default_factory=list)
    culprits: list[str] = field(default_factory=list)  # "TM001 on a.py"
    note: str = ""

    @property
    def test_id(self) -> str:
        return self.id

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def classify(before: Outcome | None, after: Outcome | None) -> str:
    b = before.outcome if before else None
    a = after.outcome if after else None
    if a in FAILING and b not in FAILING:
        return REGRESSION
    if a is None:
        return MISSING if b == "passed" else UNCHANGED if b is None else CHANGED
    if b is None:
        return ADDED
    if b in FAILING and a not in FAILING:
        return FIXED if a == "passed" else CHANGED
    return UNCHANGED if a == b else CHANGED


def compare(before: Mapping[str, Outcome], after: Mapping[str, Outcome]) -> list[TestChange]:
    changes = []
    for test_id in sorted(set(before) | set(after)):
        b, a = before.get(test_id), after.get(test_id)
        changes.append(
            TestChange(
                test_id,
                b.outcome if b else None,
                a.outcome if a else None,
                classify(b, a),
                b.message if b else "",
                a.message if a else "",
            )
        )
    return changes


def _failing(outcome: str | None) -> bool | None:
    return None if outcome is None else outcome in FAILING


def judge(change: TestChange) -> str:
    """After reruns: a change that does not hold on every run of both sides is flaky.

    A side is consistent when each of its runs (the first and every rerun) agrees on
    failing/not failing; a missing result in a rerun counts as disagreement.
    """
    sides = ([change.before, *change.reruns_before], [change.after, *change.reruns_after])
    for runs in sides:
        if len({_failing(o) for o in runs}) > 1:
            return FLAKY
    return change.kind


def counts(changes: Sequence[TestChange]) -> dict[str, int]:
    return {kind: sum(c.kind == kind for c in changes) for kind in KINDS}
