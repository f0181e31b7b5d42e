"""Compare per-test outcomes before and after, and judge reruns: regression, fixed, or flaky.

With a before interpreter (`verify --before-python`) there are three sides: `before` (the
original code on the torch it was written for), `baseline` (the original code on the target
torch) and `after` (the migrated code on the target torch). The baseline tells who broke a test
that passed before and fails after: the migration (it passes in the baseline: `regression`) or
the torch upgrade that no codemod repaired (it fails there too: `unfixed`); and a test the upgrade
broke that passes after is the migration's `fixed`.

A module that fails to import shows up in pytest's results as one collection error under the
module's own id (`tests/test_x.py`), and its tests are simply absent. Before comparing, each side's
collection errors are spread to the tests of that module the other side saw (`expand`): a test
that passed before and whose module no longer imports after is a regression with the import
error as its message, not a test that quietly went missing; a test whose module did not import
before and that fails after never passed, so it is "newly collected, failing", not a regression.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from codemods.verify.junit import FAILING, Outcome, is_module_id, module_of

# Kinds, in the order reports list them.
REGRESSION = "regression"  # passed (or skipped) before; failing after, its module included
MISSING = "missing"  # passed before; gone after, and no collection error explains it
UNFIXED = "unfixed"  # passed before; fails after and in the baseline: the torch upgrade broke it
FIXED = "fixed"  # failing (or not importable) before, passing after
NEW_FAILING = "newly-collected-failing"  # not collected before (absent, or its module did not import); failing after
FLAKY = "flaky"  # identical runs on one side observed it both failing and not failing
ADDED = "added"  # only after, not failing
INTENDED = "intended"  # a regression whose only culprits change results on purpose (SPEC.intended)
CHANGED = "changed"  # failing both sides, differently (failed <-> error), or skipped <-> passed
UNCHANGED = "unchanged"
KINDS = (REGRESSION, MISSING, UNFIXED, INTENDED, FIXED, NEW_FAILING, FLAKY, ADDED, CHANGED, UNCHANGED)
COUNTED = (REGRESSION, MISSING)  # the migration broke it: culprits are searched for these
RERUN = (REGRESSION, MISSING, UNFIXED, FIXED, NEW_FAILING)  # what reruns check before it is believed


@dataclass
class TestChange:
    __test__ = False  # not a pytest test class

    id: str
    before: str | None  # outcome, None when absent on that side
    after: str | None
    kind: str
    before_message: str = ""
    after_message: str = ""
    # Outcomes of the reruns, in order; None: that rerun did not observe the test (could not rerun).
    reruns_before: list[str | None] = field(default_factory=list)
    reruns_after: list[str | None] = field(default_factory=list)
    culprits: list[str] = field(default_factory=list)  # "TM001 on a.py"
    note: str = ""
    before_imported: bool = True  # False: its module did not import on that side
    after_imported: bool = True
    # Three sides only (None otherwise): the original code on the target interpreter.
    baseline: str | None = None
    baseline_message: str = ""
    baseline_imported: bool = True
    reruns_baseline: list[str | None] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # unfixed: findings on the files in its traceback
    fixed_by: list[str] = field(default_factory=list)  # fixed: the codemod(s) that repaired it

    @property
    def test_id(self) -> str:
        return self.id

    def to_dict(self, three: bool = False) -> dict:
        data = dict(self.__dict__)
        if not three:
            for key in ("baseline", "baseline_message", "baseline_imported", "reruns_baseline", "findings", "fixed_by"):
                data.pop(key)
        return data


def expand(results: Mapping[str, Outcome], ids: Sequence[str]) -> dict[str, Outcome]:
    """`results` plus, for each of `ids` it lacks whose module has a collection error there, that error."""
    errors = {i: o for i, o in results.items() if is_module_id(i) and o.failing}
    if not errors:
        return dict(results)
    out = dict(results)
    for test_id in ids:
        if test_id in out:
            continue
        error = errors.get(module_of(test_id))
        if error is not None:
            message = f"{module_of(test_id)} did not import: {error.message}" if error.message else ""
            out[test_id] = replace(error, message=message[:300], imported=False)
    return out


def classify(test_id: str, before: Outcome | None, after: Outcome | None) -> str:
    b = before.outcome if before else None
    a = after.outcome if after else None
    newly = b is None or (before is not None and not before.imported)
    if a in FAILING:
        if newly:
            # Never ran before. A module that imported before (no tests collected from it) and
            # no longer imports is still the migration's breakage.
            return REGRESSION if b is None and is_module_id(test_id) else NEW_FAILING
        return REGRESSION if b not in FAILING else (UNCHANGED if a == b else CHANGED)
    if a is None:
        return MISSING if b == "passed" else UNCHANGED if b is None else CHANGED
    if b is None:
        return ADDED
    if b in FAILING:
        return FIXED if a == "passed" else CHANGED
    return UNCHANGED if a == b else CHANGED


def compare(before: Mapping[str, Outcome], after: Mapping[str, Outcome]) -> list[TestChange]:
    tests = sorted(i for i in set(before) | set(after) if not is_module_id(i))
    before, after = expand(before, tests), expand(after, tests)
    covered = {module_of(i) for i in tests}
    changes = []
    for test_id in sorted(set(before) | set(after)):
        if is_module_id(test_id) and test_id in covered:
            continue  # its tests carry its collection error (expand)
        b, a = before.get(test_id), after.get(test_id)
        changes.append(
            TestChange(
                test_id,
                b.outcome if b else None,
                a.outcome if a else None,
                classify(test_id, b, a),
                b.message if b else "",
                a.message if a else "",
                before_imported=b.imported if b else True,
                after_imported=a.imported if a else True,
            )
        )
    return changes


def compare3(
    before: Mapping[str, Outcome], baseline: Mapping[str, Outcome], after: Mapping[str, Outcome]
) -> list[TestChange]:
    """Three sides: `compare(before, after)`, with the baseline deciding who broke what."""
    changes = compare(before, after)
    ids = [c.id for c in changes if not is_module_id(c.id)]
    base = expand(baseline, ids)
    for c in changes:
        b = base.get(c.id)
        c.baseline = b.outcome if b else None
        c.baseline_message = b.message if b else ""
        c.baseline_imported = b.imported if b else True
        base_ok = b is not None and b.outcome not in FAILING
        if c.kind in COUNTED and not base_ok:
            c.kind = UNFIXED
        elif c.kind == UNCHANGED and c.before == "passed" and c.after == "passed" and not base_ok:
            c.kind = FIXED  # the upgrade broke it and the migration repaired it
    return changes


def _failing(outcome: str | None) -> bool | None:
    return None if outcome is None else outcome in FAILING


def judge(change: TestChange) -> str:
    """After reruns: flaky only when one side's identical runs observed two different outcomes.

    A side's observations are its first run and every rerun that saw the test; a rerun that did
    not observe it (None) is no evidence either way, and a test absent in the first run has no
    first observation on that side.
    """
    sides = [[change.before, *change.reruns_before], [change.after, *change.reruns_after]]
    if change.reruns_baseline:
        sides.append([change.baseline, *change.reruns_baseline])
    for runs in sides:
        if len({_failing(o) for o in runs if o is not None}) > 1:
            return FLAKY
    return change.kind


def counts(changes: Sequence[TestChange]) -> dict[str, int]:
    return {kind: sum(c.kind == kind for c in changes) for kind in KINDS}
