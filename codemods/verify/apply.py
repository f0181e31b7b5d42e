"""`run --verify` and `batch`: write into the user's tree only what verification cleared.

What is written is the verified copy's content itself (kept in the report), checked against its
digests, never a second migration; files edited since the copy was taken are never overwritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from codemods.engine.writer import read_only, write_atomic, write_new
from codemods.results import Report
from codemods.verify.model import ERROR, REGRESSIONS, UNCHANGED, VerifyOptions, VerifyReport


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(path: Path) -> str | None:
    """The file's sha256, None when it cannot be read (deleted, unreadable)."""
    try:
        return digest_of(path.read_bytes())
    except OSError:
        return None


@dataclass
class Applied:
    written: bool
    message: str
    migration: Report | None = None
    dropped: list[str] = field(default_factory=list)
    exit_code: int = 0
    drift: list[str] = field(default_factory=list)  # written files that differ from the verified copy
    unwritten: list[str] = field(default_factory=list)  # files the write failed for, with why

    @property
    def complete(self) -> bool:
        """Every verified file is in the tree, as verified."""
        return self.written and not self.drift and not self.unwritten


def apply_verified(
    path: str | Path,
    report: VerifyReport,
    options: VerifyOptions,
    drop_culprits: bool = False,
    allow_regressions: bool = False,
) -> Applied:
    """Write the verified migration into `path`, or nothing, and say why.

    Written only when verification found no regressions (tests only the torch upgrade broke,
    `unfixed`, do not hold it back, but exit 1), or, with `drop_culprits`, when every
    regression was pinned on culprit codemods and the migration without them ran clean, or,
    with `allow_regressions` (batch's flag), whole despite its regressions (exit 1). Files
    edited since the copy was taken are never overwritten; a written file that differs from
    the verified copy is listed in `drift` (exit 2). `options` are the ones verification ran
    with; what to write comes from the report alone.
    """
    project = Path(path)
    if report.status == ERROR:
        return Applied(False, f"nothing written: verification could not run ({report.message})", exit_code=2)
    if report.status == UNCHANGED:
        return Applied(False, "nothing written: nothing to migrate", exit_code=0)
    without = []
    regressed = bool(report.regressions) or (report.probe is not None and report.probe.regression)
    if report.status == REGRESSIONS and regressed and not allow_regressions:
        if not drop_culprits:
            return Applied(False, "nothing written: the migration causes regressions (see above); "
                           "--drop-culprits writes it without the culprit codemods", exit_code=1)  # fmt: skip
        wc = report.without_culprits
        if report.unexplained or not report.culprit_units or wc is None or not wc.clean:
            why = "some regressions have no single culprit" if report.unexplained or not report.culprit_units else (
                "the migration without the culprits still regresses")  # fmt: skip
            return Applied(False, f"nothing written: {why}", exit_code=1)
        without = list(report.culprit_units)
    if without:
        files, migration = report.without_culprits.files, report.without_culprits.migration
        expected = {rel: digest_of(data) for rel, data in files.items()}
    else:
        files, migration, expected = report.verified_files, report.migration, report.verified
    missing = sorted(rel for rel in expected if rel not in files or digest_of(files[rel]) != expected[rel])
    if missing or migration is None:
        return Applied(False, "nothing written: the verified copy's content is not in this report", exit_code=2)
    edited = [rel for rel in files if digest(project / rel) != report.baseline.get(rel)]
    if edited:
        return Applied(
            False, f"nothing written: {len(edited)} file(s) changed while verifying ({', '.join(sorted(edited)[:5])}); "
            "run again", exit_code=2,
        )  # fmt: skip
    new = {rel for rel in files if report.baseline.get(rel) is None}  # made by the migration (a companion module)
    locked = sorted(rel for rel in files if rel not in new and read_only((project / rel).resolve()))
    if locked:
        return Applied(False, f"nothing written: {len(locked)} file(s) became read-only while verifying "
                       f"({', '.join(locked[:5])})", exit_code=2)  # fmt: skip
    # The bytes the tests ran on, not a second migration: nothing can differ from what was verified.
    failed = []
    for rel in sorted(files):
        try:
            if rel in new:
                write_new(project / rel, files[rel])  # never over a file that appeared meanwhile
            else:
                write_atomic(project / rel, files[rel])
        except OSError as exc:  # a full disk, a folder made read-only: the other files still get theirs
            failed.append(f"{rel} ({exc.strerror or exc})")
    if failed:
        return Applied(True, f"written, but {len(failed)} file(s) could not be written: {', '.join(failed)}",
                       migration, unwritten=failed, exit_code=2)  # fmt: skip
    drift = sorted(rel for rel in files if digest(project / rel) != expected[rel])
    if drift:  # something wrote to these files while we did
        return Applied(True, f"written, but {len(drift)} file(s) differ from the verified copy: {', '.join(drift)}",
                       migration, drift=drift, exit_code=2)  # fmt: skip
    dropped = [str(u) for u in without]
    message = f"wrote the verified migration to {len(migration.changed)} file(s)"
    if dropped:
        message += " without " + ", ".join(dropped) + " (the culprits; the rest verified clean)"
    regressions_written = regressed and not without  # allow_regressions: the whole migration, as verified
    if regressions_written:
        message += "; it causes regressions (written anyway, as asked)"
    if report.unfixed:
        # The migration broke nothing (it is written), but the torch upgrade did and no codemod
        # repaired it: what passed before still does not pass after.
        message += f"; {len(report.unfixed)} test(s) broken by the torch upgrade remain unfixed (see above)"
    return Applied(True, message, migration, dropped, exit_code=2 if migration.problems else 1 if report.unfixed or regressions_written else 0)
