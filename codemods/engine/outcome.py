"""What the pipeline made of one file's bytes, as the result cache keeps it (engine/cache.py)."""

from __future__ import annotations

from dataclasses import dataclass

from codemods.results import Finding, Problem, Status


@dataclass(frozen=True)
class FileOutcome:
    """What the pipeline made of one file's bytes: everything a FileResult needs (the diff once
    a --diff or --check run made it)."""

    status: Status
    rewrites: dict[str, int]
    findings: tuple[Finding, ...] = ()
    problem: Problem | None = None
    notes: tuple[str, ...] = ()
    # The migrated text when status is CHANGED (None in an outcome read without it: a --diff
    # lookup whose entry has the diff, see Cache.get)
    code: str | None = None
    diff: str | None = None  # its unified diff (the key holds the display path it names)
    companions: tuple[str, ...] = ()  # the companion modules it newly imports (engine/companions.py)

    def to_json(self) -> dict:
        """All but the text and the diff, which the cache keeps in columns of their own."""
        return {
            "status": self.status.value,
            "rewrites": self.rewrites,
            "findings": [f.to_dict() for f in self.findings],
            "problem": self.problem.to_dict() if self.problem else None,
            "notes": list(self.notes),
            "companions": list(self.companions),
        }

    @classmethod
    def from_json(cls, raw: dict, code: str | None = None, diff: str | None = None) -> FileOutcome:
        status = Status(raw["status"])
        rewrites = {str(k): int(v) for k, v in raw["rewrites"].items()}
        findings = tuple(Finding(**f) for f in raw["findings"])
        problem = Problem(**raw["problem"]) if raw["problem"] is not None else None
        notes = tuple(str(n) for n in raw["notes"])
        companions = tuple(str(n) for n in raw.get("companions", ()))
        if status is Status.CHANGED:
            if code is None and diff is None or not all(v is None or isinstance(v, str) for v in (code, diff)):
                raise ValueError("a changed entry carries the migrated text or its diff")
        elif code is not None or diff is not None:
            raise ValueError("only a changed entry carries a text")
        return cls(status, rewrites, findings, problem, notes, code, diff, companions)
