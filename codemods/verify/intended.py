"""Intended divergences: a result a codemod changes on purpose is not a regression.

Some codemods change behaviour by design (TM015 era-defaults writes the default of the torch
the code was written for, so the migrated code computes what it computed then, not what the
original computes on today's torch). Their SPEC says so in `intended`. When the culprit search
names only such codemods behind a regression (or a diverged probe), it becomes `intended`,
with the codemod and its reason: not counted, and never a culprit for `--drop-culprits`.
"""

from __future__ import annotations

from codemods.verify.compare import COUNTED, INTENDED
from codemods.verify.culprit_phase import CulpritSearch
from codemods.verify.model import VerifyReport


def intent(culprit: str) -> str | None:
    """`TM015 era-defaults changes results on purpose: <why>` for a culprit ("TM015" or
    "TM015 on a.py") whose codemod declares it, else None."""
    from codemods import registry

    code = culprit.split(" on ", 1)[0]
    try:
        spec = registry.get(code)
    except registry.SelectionError:
        return None
    why = getattr(spec, "intended", None)
    return f"{code} {spec.name} changes results on purpose: {why}" if why else None


def _intended(culprits: list[str]) -> list[str] | None:
    reasons = [intent(c) for c in culprits]
    return list(dict.fromkeys(reasons)) if culprits and all(reasons) else None


def classify(report: VerifyReport) -> None:
    """Regressions (and a diverged probe) caused only by intended changes become `intended`;
    the culprit units left are those of the remaining regressions."""
    for c in report.changes:
        reasons = _intended(c.culprits) if c.kind in COUNTED else None
        if reasons:
            c.kind = INTENDED
            c.note = "; ".join(filter(None, [c.note, *reasons]))
    probe = report.probe
    if probe is not None and probe.regression and probe.status == "diverged":
        reasons = _intended(probe.culprits)
        if reasons:
            probe.status = INTENDED
            probe.intended = "; ".join(reasons)
    blamed = {u for c in report.regressions for u in c.culprits}
    if probe is not None and probe.regression:
        blamed |= set(probe.culprits)
    report.culprit_units = [u for u in report.culprit_units if str(u) in blamed]


def summary(report: VerifyReport) -> list[str]:
    """For the verdict: `1 intended change by TM015 era-defaults` (tests; the probe says its own)."""
    if not report.intended:
        return []
    from codemods import registry

    codes = dict.fromkeys(c.split(" on ", 1)[0] for change in report.intended for c in change.culprits)
    names = ", ".join(f"{code} {registry.get(code).name}" for code in codes)
    n = len(report.intended)
    return [f"{n} intended change{'' if n == 1 else 's'} by {names}"]


class IntendedChanges(CulpritSearch):
    """Classifies intended divergences before the migration without the culprits is checked."""

    def confirm_without(self, report: VerifyReport) -> None:
        classify(report)
        if not report.culprit_units:
            return
        super().confirm_without(report)
        w, probe = report.without_culprits, report.probe
        if w is not None and w.probe == "diverged" and probe is not None and probe.status == INTENDED:
            w.probe = INTENDED  # the divergence the intended codemods make, which stay in
