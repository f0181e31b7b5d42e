"""`run --verify`: write into the user's tree only what verification cleared."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from codemods import api
from codemods.results import Report
from codemods.verify.migration import migrate_tree
from codemods.verify.model import ERROR, REGRESSIONS, UNCHANGED, VerifyOptions, VerifyReport


def digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class Applied:
    written: bool
    message: str
    migration: Report | None = None
    dropped: list[str] = field(default_factory=list)
    exit_code: int = 0


def apply_verified(path: str | Path, report: VerifyReport, options: VerifyOptions, drop_culprits: bool = False) -> Applied:
    """Write the verified migration into `path`, or nothing, and say why.

    Written only when verification found no regressions (tests only the torch upgrade broke,
    `unfixed`, do not hold it back, but exit 1), or, with `drop_culprits`, when every
    regression was pinned on culprit codemods and the migration without them ran clean. Files
    edited since the copy was taken are never overwritten.
    """
    project = Path(path)
    if report.status == ERROR:
        return Applied(False, f"nothing written: verification could not run ({report.message})", exit_code=2)
    if report.status == UNCHANGED:
        return Applied(False, "nothing written: nothing to migrate", exit_code=0)
    without = []
    regressed = bool(report.regressions) or (report.probe is not None and report.probe.regression)
    if report.status == REGRESSIONS and regressed:
        if not drop_culprits:
            return Applied(False, "nothing written: the migration causes regressions (see above); "
                           "--drop-culprits writes it without the culprit codemods", exit_code=1)  # fmt: skip
        wc = report.without_culprits
        if report.unexplained or not report.culprit_units or wc is None or not wc.clean:
            why = "some regressions have no single culprit" if report.unexplained or not report.culprit_units else (
                "the migration without the culprits still regresses")  # fmt: skip
            return Applied(False, f"nothing written: {why}", exit_code=1)
        without = list(report.culprit_units)
    edited = [rel for rel, sha in report.baseline.items() if digest(project / rel) != sha]
    if edited:
        return Applied(
            False, f"nothing written: {len(edited)} file(s) changed while verifying ({', '.join(sorted(edited)[:5])}); "
            "run again", exit_code=2,
        )  # fmt: skip
    o = options
    migration = migrate_tree(
        project,
        api.Options(mode="write", select=o.select, ignore=o.ignore, unsafe=o.unsafe, exclude=o.exclude, use_config=o.use_config),
        without,
        jobs=None,
        target=report.target,
    )
    if not without:
        drift = [r.path for r in migration.changed if report.verified.get(r.path) != digest(project / r.path)]
        if drift:  # the engine is deterministic; this would be a bug of ours, say so loudly
            return Applied(True, f"written, but {len(drift)} file(s) differ from the verified copy: {', '.join(drift)}",
                           migration, exit_code=2)  # fmt: skip
    dropped = [str(u) for u in without]
    message = f"wrote the verified migration to {len(migration.changed)} file(s)"
    if dropped:
        message += " without " + ", ".join(dropped) + " (the culprits; the rest verified clean)"
    if report.unfixed:
        # The migration broke nothing (it is written), but the torch upgrade did and no codemod
        # repaired it: what passed before still does not pass after.
        message += f"; {len(report.unfixed)} test(s) broken by the torch upgrade remain unfixed (see above)"
    return Applied(True, message, migration, dropped, exit_code=2 if migration.problems else 1 if report.unfixed else 0)
