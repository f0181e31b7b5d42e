"""Which codemod (and which of its files) causes a regression: switch units off and re-test.

`trial(without)` migrates a fresh copy with the units in `without` switched off, runs the
regressed tests there, and returns the ids that still fail. Pure search logic, no I/O, so it is
tested with a fake trial.

Few units: each is switched off alone, and a test's culprits are the units whose removal makes
it pass. Many units: per test, a binary search over the pipeline-ordered prefix of units applied
finds the first unit whose addition makes it fail; that unit is then confirmed by switching it
off alone. When no single unit explains a test (two codemods each break it), the same bisection
is repeated with the units found so far switched off, until the test passes: the set found is
then pruned to the smallest one that still makes it pass, and reported as "only together". A
test that still fails with every unit switched off (the original code fails too) is unexplained.

`base` units are switched off in every trial (narrowing one codemod of a set to its files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from codemods.verify.migration import ALL_FILES, Unit

ONE_AT_A_TIME = 4  # up to this many units, switch each off alone; above it, bisect

Trial = Callable[[frozenset[Unit]], set[str]]


@dataclass
class Search:
    culprits: dict[str, list[Unit]] = field(default_factory=dict)  # test id -> units
    together: set[str] = field(default_factory=set)  # tests whose culprits must all be switched off
    unexplained: list[str] = field(default_factory=list)
    trials: int = 0


class _Memo:
    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.seen: dict[frozenset[Unit], set[str]] = {}

    def __call__(self, without: Iterable[Unit]) -> set[str]:
        key = frozenset(without)
        if key not in self.seen:
            self.seen[key] = self.trial(key)
        return self.seen[key]

    def many(self, sets: Sequence[frozenset[Unit]], parallel: Callable | None) -> None:
        todo = [s for s in dict.fromkeys(sets) if s not in self.seen]
        if parallel is not None and len(todo) > 1:
            for key, value in zip(todo, parallel(self.trial, todo)):
                self.seen[key] = value
        else:
            for key in todo:
                self(key)


def search(
    units: Sequence[Unit],
    tests: Iterable[str],
    trial: Trial,
    parallel: Callable | None = None,
    base: frozenset[Unit] = frozenset(),
) -> Search:
    """Name the units responsible for each failing test in `tests` (units in pipeline order).

    `parallel(fn, items)`, when given, maps `fn` over independent trials concurrently.
    """
    tests = sorted(set(tests))
    memo = _Memo(trial if not base else (lambda without: trial(without | base)))
    result = Search()
    if len(units) == 1:
        # Only one unit changed anything, and the regression is real: it is the cause.
        result.culprits = {t: [units[0]] for t in tests}
        return result
    if len(units) <= ONE_AT_A_TIME:
        memo.many([frozenset({u}) for u in units], parallel)
        for t in tests:
            result.culprits[t] = [u for u in units if t not in memo({u})]
    else:
        for t in tests:
            first = _first_breaking(t, list(units), frozenset(), memo)
            result.culprits[t] = [first] if t not in memo({first}) else []
    leftover = [t for t in tests if not result.culprits[t]]
    if leftover and _fixable(leftover, units, memo):
        for t in leftover:
            if t not in memo(frozenset(units)):
                result.culprits[t] = _smallest_set(t, list(units), memo)
                result.together.add(t)
    result.unexplained = [t for t in tests if not result.culprits[t]]
    result.culprits = {t: us for t, us in result.culprits.items() if us}
    result.trials = len(memo.seen)
    return result


def _fixable(tests: Sequence[str], units: Sequence[Unit], memo: _Memo) -> bool:
    """Whether any of `tests` passes with every unit switched off (else no set can explain it)."""
    return any(t not in memo(frozenset(units)) for t in tests)


def _first_breaking(t: str, units: list[Unit], off: frozenset[Unit], memo: _Memo) -> Unit:
    """With `off` switched off, the first of `units` (in order) whose addition makes `t` fail.

    Assumes `t` fails with only `off` switched off and passes with all of `units` off too.
    """
    lo, hi = 0, len(units)  # applying units[:lo] passes, units[:hi] fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t in memo(off | frozenset(units[mid:])):
            hi = mid
        else:
            lo = mid
    return units[hi - 1]


def _smallest_set(t: str, units: list[Unit], memo: _Memo) -> list[Unit]:
    """Units that together explain `t`: switched off together, it passes (greedy, then pruned)."""
    chosen: list[Unit] = []
    while t in memo(frozenset(chosen)):
        rest = [u for u in units if u not in chosen]
        chosen.append(_first_breaking(t, rest, frozenset(chosen), memo))
    for unit in list(chosen):
        smaller = [u for u in chosen if u != unit]
        if smaller and t not in memo(frozenset(smaller)):
            chosen = smaller
    return sorted(chosen, key=units.index)


def codemod_units(fired: dict[str, list[str]]) -> list[Unit]:
    return [Unit(code) for code in fired]


def file_units(code: str, files: Sequence[str]) -> list[Unit]:
    return [Unit(code, f) for f in files]


def everywhere(unit: Unit) -> bool:
    return unit.file == ALL_FILES
