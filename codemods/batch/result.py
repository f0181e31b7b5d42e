"""What one repository of a batch came to: its status and everything its row and REPORT.md show.

Plain data (`asdict`), so it crosses process and network boundaries and is saved in the state file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from codemods import __version__

MIGRATED, UNCHANGED, REGRESSIONS, FAILED = "migrated", "unchanged", "regressions", "failed"
DONE = (MIGRATED, UNCHANGED, REGRESSIONS)


@dataclass
class RepoResult:
    name: str
    source: str
    status: str = FAILED
    message: str = ""
    branch: str = ""
    commit: str | None = None
    base: str | None = None
    files_changed: int = 0
    rewrites: dict[str, int] = field(default_factory=dict)
    findings: int = 0
    problems: list[str] = field(default_factory=list)
    tests_before: dict[str, int] | None = None
    tests_after: dict[str, int] | None = None
    tests_baseline: dict[str, int] | None = None  # with before-python: the original code on the target torch
    torch: dict[str, str | None] = field(default_factory=dict)  # side -> its torch version
    target: str | None = None  # "torch 1.13 (requirements.txt: torch==1.13.1)": what the migration is for
    target_warning: str | None = None  # the target is newer than the repository's pin
    era: str | None = None  # the torch the code was written for (TM015's defaults)
    unfixed: list[str] = field(default_factory=list)  # passed before; the torch upgrade broke them
    untouched: list[str] = field(default_factory=list)  # the files of `problems`, relative to the repository
    not_python3: list[str] = field(default_factory=list)  # files that do not parse as Python 3 (TM000's finding)
    regressions: list[str] = field(default_factory=list)
    culprits: list[str] = field(default_factory=list)
    pushed_to: str | None = None
    report_dir: str | None = None
    seconds: float = 0.0
    fingerprint: str = ""
    tool_version: str = __version__

    def to_dict(self) -> dict:
        return asdict(self)
