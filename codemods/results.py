"""The plain data a migration produces: findings, per-file results and the run's report.

Everything here is a frozen dataclass of builtins so that it pickles across process pools and
Dask workers and serialises to JSON without custom encoders.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field

from codemods.versions import Target, format_version


class Status(str, enum.Enum):
    UNCHANGED = "unchanged"  # nothing to do (or only findings)
    CHANGED = "changed"  # rewritten (or would be, under --diff/--check)
    SKIPPED = "skipped"  # no selected codemod can fire: never parsed
    ERROR = "error"  # could not be processed; left untouched


@dataclass(frozen=True)
class Finding:
    """Something a codemod saw but did not (or may not) rewrite, or a rewrite to review."""

    code: str
    path: str
    line: int
    column: int  # from 0, as libcst counts; every report (text, JSON, SARIF) shows it from 1
    message: str
    safety: str
    suggestion: str | None = None
    kind: str = "finding"  # "finding": left as is; "review": rewritten, please review

    def to_dict(self) -> dict:
        return dict(vars(self))  # its fields in order, all builtins: `asdict` without its deep copy


@dataclass(frozen=True)
class Problem:
    """Why a file could not be processed. `code` names the codemod for internal errors."""

    path: str
    line: int
    reason: str
    code: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        culprit = f" [{self.code}]" if self.code else ""
        return f"{where}: {self.reason}{culprit}"

    def to_dict(self) -> dict:
        return dict(vars(self))  # its fields in order, all builtins: `asdict` without its deep copy


@dataclass(frozen=True)
class FileResult:
    path: str
    status: Status
    rewrites: dict[str, int] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    problem: Problem | None = None
    diff: str | None = None
    notes: tuple[str, ...] = ()  # e.g. legacy-syntax repairs made before parsing
    companions: tuple[str, ...] = ()  # new files it imports: to create (--diff), or created (engine/companions.py)

    @property
    def changed(self) -> bool:
        return self.status is Status.CHANGED


@dataclass
class Report:
    """The result of one `migrate()` run; owns the counters and the exit code."""

    files: list[FileResult] = field(default_factory=list)
    mode: str = "write"  # write | diff | check
    codes: tuple[str, ...] = ()
    fail_on_findings: bool = False  # open findings set exit bit 1 too (--fail-on-findings)
    warnings: tuple[str, ...] = ()  # e.g. a selected unsafe codemod that did not run; no Python files
    target: Target | None = None  # the torch the output must run on, and where that came from
    target_warning: str | None = None  # the target is newer than the repository's pin (api.target_warning)
    era: str | None = None  # the torch the code was written for, when a selected codemod asked (TM015)
    exit_zero: bool = False  # --exit-zero: pending rewrites and findings leave the code 0; errors still 2

    @property
    def changed(self) -> list[FileResult]:
        return [f for f in self.files if f.status is Status.CHANGED]

    @property
    def problems(self) -> list[Problem]:
        return [f.problem for f in self.files if f.problem is not None]

    @property
    def findings(self) -> list[Finding]:
        return [finding for f in self.files for finding in f.findings]

    @property
    def open_findings(self) -> list[Finding]:
        """Cases left as they are (not the review notes on rewrites made)."""
        return [f for f in self.findings if f.kind == "finding"]

    @property
    def rewrites(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.rewrites)
        return total

    @property
    def exit_code(self) -> int:
        """Bitmask: 1 a rewrite is pending (diff/check) or, with `fail_on_findings`, a finding is
        open (any mode); 2 a file could not be processed."""
        code = 0
        if (self.mode != "write" and self.changed) or (self.fail_on_findings and self.open_findings):
            code |= 1
        if self.exit_zero:
            code = 0
        if self.problems:
            code |= 2
        return code

    def to_dict(self) -> dict:
        """Schema version 2: lines and columns count from 1 (version 1 counted columns from 0).
        A file with a pending rewrite (--diff/--check) lists its `edits` (report/edits.py)."""
        from codemods.report.edits import file_edits

        return {
            "version": 2,
            "mode": self.mode,
            "codemods": list(self.codes),
            "target": target_dict(self.target, self.target_warning),
            "era": self.era,
            "summary": {
                "files": len(self.files),
                "changed": len(self.changed),
                "skipped": sum(f.status is Status.SKIPPED for f in self.files),
                "errors": len(self.problems),
                "findings": len(self.findings),
                "rewrites": dict(sorted(self.rewrites.items())),
            },
            "files": [
                {
                    "path": f.path,
                    "status": f.status.value,
                    "rewrites": dict(sorted(f.rewrites.items())),
                    "findings": [{**x.to_dict(), "column": x.column + 1} for x in f.findings],
                    "error": f.problem.to_dict() if f.problem else None,
                    "notes": list(f.notes),
                    "edits": [edit.to_dict() for edit in file_edits(f)],
                }
                for f in self.files
                if f.status is not Status.SKIPPED or f.findings  # a skipped file can still be named (TM000)
            ],
            "exit_code": self.exit_code,
        }


def target_dict(target: Target | None, warning: str | None = None) -> dict | None:
    """A target as the JSON reports show it: `{"torch": "1.13", "source": ..., "warning": ...}`."""
    if target is None:
        return None
    return {"torch": format_version(target.version), "source": target.source, "warning": warning}
