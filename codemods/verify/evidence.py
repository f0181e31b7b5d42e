"""How much a verdict rests on: what was compared, so that "OK" is never read as more than it is.

    OK: no regressions — 1 test passing on both sides, 9 failing on both; 3 of 12 rewrites executed
"""

from __future__ import annotations

from codemods.verify.junit import FAILING
from codemods.verify.smoke_discover import is_smoke


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _both(changes, noun: tuple[str, str]) -> list[str]:
    passing = sum(c.before == "passed" and c.after == "passed" for c in changes)
    failing = sum(c.before in FAILING and c.after in FAILING for c in changes)
    parts = [f"{_plural(passing, *noun)} passing on both sides"]
    if failing:
        parts.append(f"{failing} failing on both")
    return parts


def evidence(report) -> str:
    """`1 test passing on both sides, 9 failing on both; 2 smoke checks passing on both sides;
    3 of 12 rewrites executed`."""
    parts = []
    tests = [c for c in report.changes if not is_smoke(c.id)]
    smoke = [c for c in report.changes if is_smoke(c.id)]
    if report.sides and (tests or not smoke):
        parts.append(", ".join(_both(tests, ("test", "tests"))))
    if smoke:
        parts.append(", ".join(_both(smoke, ("smoke check", "smoke checks"))))
    if report.coverage is not None:
        parts.append(report.coverage.short())
    return "; ".join(parts) or "nothing compared"
