"""Options and results of a verification: plain data, JSON-ready."""

from __future__ import annotations

from dataclasses import dataclass, field

from codemods.results import Report, target_dict
from codemods.verify.compare import COUNTED, FIXED, FLAKY, INTENDED, NEW_FAILING, UNFIXED, TestChange, counts
from codemods.verify.device import Device
from codemods.verify.migration import FileStat
from codemods.verify.probe import Divergence
from codemods.verify.rewrite_coverage import RewriteCoverage
from codemods.versions import Target

OK, UNCHANGED, REGRESSIONS, ERROR = "ok", "nothing-to-migrate", "regressions", "error"


@dataclass(frozen=True)
class VerifyOptions:
    """How to verify. Selection fields mean what they mean in `codemods.api.Options`."""

    tests: str | None = None  # test command; default `python -m pytest` when the project has tests
    probe: str | None = None  # a command whose printed numbers must match before and after
    coverage: bool = True  # measure which rewrites the proofs executed (coverage_runs.py)
    smoke: bool = False  # the generated smoke check (smoke.py) beside the tests; without tests it always runs
    python: str | None = None  # target interpreter; default: active venv's, else ours
    before_python: str | None = None  # the original code's interpreter (three sides); default: the target
    device: str = "auto"  # auto | cpu | cuda
    timeout: float = 1200.0  # seconds, per side and per run
    rerun: int = 2  # reruns of each changed test on both sides, to tell flaky from real
    rtol: float = 1e-5
    atol: float = 1e-8
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    unsafe: bool | None = None
    exclude: tuple[str, ...] = ()
    use_config: bool = True
    find_culprits: bool = True
    parallel: bool | None = None  # both sides at once; default: with 2+ CPUs and not on CUDA
    keep_copies: bool = False
    target_torch: str | None = None  # "1.13"; None: the config's, else the target interpreter's torch (api.target_for)


@dataclass
class SideRun:
    label: str  # before | after | ...
    command: str
    returncode: int | None
    seconds: float
    per_test: bool  # JUnit XML was read
    outcomes: dict[str, int] = field(default_factory=dict)  # passed/failed/error/skipped -> count
    tail: str = ""
    environment: dict | None = None  # python, python_version, torch, cuda_available, devices

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def environment_of(device: Device) -> dict:
    """A side's environment as the JSON report names it."""
    return {
        "python": device.python,
        "python_version": device.python_version,
        "torch": device.torch,
        "cuda_available": device.uses_cuda,
        "devices": list(device.devices) if device.uses_cuda else [],
    }


@dataclass
class ProbeResult:
    command: str
    status: str  # equal | diverged | after-failed | fixed | both-failed
    compared: int = 0
    before_torch: str | None = None  # each side's torch version (they differ with --before-python)
    after_torch: str | None = None
    divergence: Divergence | None = None
    before_returncode: int | None = None
    after_returncode: int | None = None
    before_tail: str = ""
    after_tail: str = ""
    culprits: list[str] = field(default_factory=list)
    intended: str = ""  # status intended: the codemod that changes its output on purpose, and why

    @property
    def regression(self) -> bool:
        return self.status in ("diverged", "after-failed")

    def to_dict(self) -> dict:
        data = dict(self.__dict__)
        data["divergence"] = self.divergence.to_dict() if self.divergence else None
        return data


@dataclass
class WithoutCulprits:
    """The migration minus the culprit units, run through the whole test command once more."""

    units: list[str]
    regressions: list[str]
    probe: str | None = None  # its probe status, when there is a probe
    migration: Report | None = field(default=None, repr=False)  # that copy's migration
    files: dict[str, bytes] = field(default_factory=dict, repr=False)  # changed file -> its content there

    @property
    def clean(self) -> bool:
        return not self.regressions and self.probe in (None, "equal", "fixed", "intended")

    def to_dict(self) -> dict:
        return {"units": self.units, "regressions": self.regressions, "probe": self.probe, "clean": self.clean}


@dataclass
class VerifyReport:
    path: str
    status: str = OK
    message: str = ""  # why it could not run (status error), else a one-line verdict
    device: Device | None = None
    before_device: Device | None = None  # with --before-python: the original code's interpreter
    migration: Report | None = None  # the after copy's migration
    target: Target | None = None  # the torch the migration was made for, and where that came from
    target_warning: str | None = None  # the target is newer than the repository's pin
    diffstat: list[FileStat] = field(default_factory=list)
    diff: str = ""
    test_command: str | None = None
    sides: list[SideRun] = field(default_factory=list)
    changes: list[TestChange] = field(default_factory=list)
    probe: ProbeResult | None = None
    culprits: dict[str, list[str]] = field(default_factory=dict)  # unit -> test ids (or "<probe>")
    culprit_units: list = field(default_factory=list)  # the Units, for --drop-culprits
    unexplained: list[str] = field(default_factory=list)
    fixed_by: dict[str, int] = field(default_factory=dict)  # three sides: codemod -> tests it repaired
    without_culprits: WithoutCulprits | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    copies: str | None = None  # where the copies are, when kept
    baseline: dict[str, str] = field(default_factory=dict, repr=False)  # changed file -> sha256 before
    verified: dict[str, str] = field(default_factory=dict, repr=False)  # changed file -> sha256 after
    # changed file -> its content in the after copy: what `apply_verified` writes, byte for byte
    verified_files: dict[str, bytes] = field(default_factory=dict, repr=False)
    coverage: RewriteCoverage | None = None  # which rewrites the proofs executed (rewrite_coverage.py)

    @property
    def regressions(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind in COUNTED]

    @property
    def unfixed(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind == UNFIXED]

    @property
    def three_sides(self) -> bool:
        return any(s.label == "baseline" for s in self.sides)

    @property
    def era(self) -> str | None:
        """The torch the original code was written for: the before interpreter's, when given."""
        return self.before_device.torch if self.before_device is not None else None

    @property
    def newly_failing(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind == NEW_FAILING]

    @property
    def intended(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind == INTENDED]

    @property
    def fixed(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind == FIXED]

    @property
    def flaky(self) -> list[TestChange]:
        return [c for c in self.changes if c.kind == FLAKY]

    @property
    def exit_code(self) -> int:
        return {OK: 0, UNCHANGED: 0, REGRESSIONS: 1}.get(self.status, 2)

    def to_dict(self) -> dict:
        migration = self.migration
        return {
            "version": 1,
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "exit_code": self.exit_code,
            "device": self.device.to_dict() if self.device else None,
            "before_device": self.before_device.to_dict() if self.before_device else None,
            "era": self.era,
            "target": target_dict(self.target, self.target_warning),
            "migration": {
                "codemods": list(migration.codes),
                "rewrites": dict(sorted(migration.rewrites.items())),
                "files_changed": [f.path for f in migration.changed],
                "findings": len(migration.findings),
                "errors": [str(p) for p in migration.problems],
            }
            if migration
            else None,
            "diffstat": [s.__dict__ for s in self.diffstat],
            "test_command": self.test_command,
            "sides": [s.to_dict() for s in self.sides],
            "summary": counts(self.changes),
            "tests": [c.to_dict(self.three_sides) for c in self.changes],
            "probe": self.probe.to_dict() if self.probe else None,
            "coverage": self.coverage.to_dict() if self.coverage else None,
            "culprits": self.culprits,
            "unexplained": self.unexplained,
            "fixed_by": self.fixed_by,
            "without_culprits": self.without_culprits.to_dict() if self.without_culprits else None,
            "notes": self.notes,
            "seconds": round(self.seconds, 2),
            "copies": self.copies,
        }
