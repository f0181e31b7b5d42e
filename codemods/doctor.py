"""`torch-migrate doctor`: the environment and the repository's operational pitfalls.

Pure functions returning a `DoctorReport` (checks with a status, a plain-language message and the
fix); the click command in `doctor_cli.py` only renders it. What the machine says (`probe_torch`,
`shm_bytes`) is passed in, so tests can simulate Docker's 64 MB `/dev/shm` or a CUDA machine.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from codemods import doctor_launches as launches
from codemods.doctor_launches import DockerLaunch
from codemods.engine.discovery import walk
from codemods.engine.source import SourceError, read_limited

OK, INFO, WARN, FAIL = "ok", "info", "warn", "fail"
MiB = 1024 * 1024
GiB = 1024 * MiB
MIN_TORCH = (2, 3)  # torch.amp.GradScaler("cuda") and friends, which the codemods write
SHM_FAIL = 512 * MiB  # below this, worker processes die on ordinary batches (Docker's default: 64 MB)
SHM_PER_WORKER = 256 * MiB
SHM_FIX = (
    "give the container more shared memory: `docker run --shm-size=8g ...` (or `--ipc=host`); "
    "in docker-compose: `shm_size: \"8gb\"` (or `ipc: host`) on the service; or set num_workers=0"
)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | info | warn | fail
    message: str
    fix: str | None = None
    where: tuple[str, ...] = ()
    """`path:line` locations the check is about."""


@dataclass(frozen=True)
class TorchInfo:
    installed: bool
    version: str | None = None
    cuda_available: bool = False
    cuda_version: str | None = None
    devices: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Interpreter:
    """The Python whose torch doctor inspects, and why that one."""

    path: str
    source: str  # "--python", "VIRTUAL_ENV", "CONDA_PREFIX", "the project's .venv", "torch-migrate's own"

    @property
    def own(self) -> bool:
        return self.source == OWN


OWN = "torch-migrate's own"


@dataclass(frozen=True)
class DoctorReport:
    path: str
    checks: tuple[Check, ...]
    python: Interpreter | None = None

    @property
    def problems(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status in (WARN, FAIL))

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def to_dict(self) -> dict:
        python = asdict(self.python) if self.python is not None else None
        return {"path": self.path, "python": python, "exit_code": self.exit_code, "checks": [asdict(c) for c in self.checks]}


# -- the machine -----------------------------------------------------------------------------------


def _env_python(prefix: str | None) -> str | None:
    """The interpreter of a virtualenv or conda environment folder, if it has one."""
    if not prefix:
        return None
    for name in ("bin/python", "Scripts/python.exe", "python.exe"):
        candidate = Path(prefix) / name
        if candidate.is_file():
            return str(candidate)
    return None


def _same_prefix(prefix: str) -> bool:
    try:
        return Path(prefix).resolve() == Path(sys.prefix).resolve()
    except OSError:
        return False


def project_python(path: str | Path = ".", explicit: str | None = None, environ: dict | None = None) -> Interpreter:
    """The project's interpreter: --python; else the active virtualenv (VIRTUAL_ENV); else a `.venv`
    or `venv` in the project folder; else the active conda environment (CONDA_PREFIX); else the
    interpreter running torch-migrate. An active environment that is torch-migrate's own (the tool
    run from its venv) gives way to the project's `.venv`: installed apart (pipx), the tool's own
    environment never has the project's torch."""
    environ = os.environ if environ is None else environ
    if explicit:
        return Interpreter(explicit, "--python")
    root = Path(path)
    folder = root if root.is_dir() else root.parent
    local = next(((name, p) for name in (".venv", "venv") if (p := _env_python(str(folder / name)))), None)
    active = environ.get("VIRTUAL_ENV")
    if (found := _env_python(active)) and not (local and _same_prefix(active)):
        return Interpreter(found, "VIRTUAL_ENV")
    if local:  # before conda's: its base environment is active in every shell of a conda user
        return Interpreter(local[1], f"the project's {local[0]}")
    if found := _env_python(environ.get("CONDA_PREFIX")):
        return Interpreter(found, "CONDA_PREFIX")
    return Interpreter(sys.executable, OWN)


def probe_torch(python: str | None = None, timeout: float = 300) -> TorchInfo:
    """What the torch `python` (default: this interpreter) imports says about itself: the probe
    `verify` runs in its target interpreter (codemods/torch_probe.py), run the same way, in a child
    process started in an empty folder. `python -m`/`-c` put the working directory on sys.path, and
    doctor is run from inside the project: its own `torch/` folder (or any code it has there) must
    never be imported."""
    from codemods import torch_probe

    with tempfile.TemporaryDirectory(prefix="torch-migrate-doctor-") as neutral:
        try:
            args = [python or sys.executable, "-c", torch_probe.source()]
            done = subprocess.run(args, cwd=neutral, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            return TorchInfo(installed=False, error=f"the torch probe did not run: {exc}")
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith(torch_probe.MARKER)), None)
    if line is None:
        why = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return TorchInfo(installed=False, error=f"the torch probe failed (exit {done.returncode}): {why}")
    info = json.loads(line.split(" ", 1)[1])
    if not info["imported"]:
        return TorchInfo(installed=False, error=info["error"])
    if info["error"]:
        return TorchInfo(True, info["torch"], error=f"CUDA probe failed: {info['error']}")
    return TorchInfo(True, info["torch"], info["cuda_available"], info["cuda_version"], tuple(info["devices"]))


def shm_bytes(path: str = "/dev/shm") -> int | None:
    """Size of the shared-memory filesystem DataLoader workers pass batches through (None: absent)."""
    try:
        stat = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return stat.f_frsize * stat.f_blocks


# -- the repository --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerUse:
    largest: int = 0
    """The largest literal `num_workers=` of a DataLoader (0: none)."""
    dynamic: tuple[str, ...] = ()
    """Locations whose `num_workers=` is not a literal (set at run time)."""
    where: tuple[str, ...] = ()
    """Locations of every DataLoader with workers (literal > 0 or dynamic)."""

    @property
    def uses_workers(self) -> bool:
        return self.largest > 0 or bool(self.dynamic)


def _files(root: Path) -> Iterator[Path]:
    """The files doctor reads: discovery's walk (virtualenvs, caches and VCS folders skipped)."""
    if root.is_file():
        yield root
        return
    yield from walk(root)


def _read(path: Path) -> str | None:
    try:
        return read_limited(path, 2_000_000).decode("utf-8", errors="replace")
    except (OSError, SourceError):
        return None


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root if root.is_dir() else root.parent))
    except ValueError:
        return str(path)


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def scan_workers(root: Path) -> WorkerUse:
    """Every `DataLoader(..., num_workers=N)` in the repository's Python files."""
    largest, dynamic, where = 0, [], []
    for path in _files(root):
        if path.suffix != ".py":
            continue
        text = _read(path)
        if not text or "num_workers" not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "DataLoader"):
                continue
            for keyword in node.keywords:
                if keyword.arg != "num_workers":
                    continue
                at = f"{_relative(path, root)}:{node.lineno}"
                value = keyword.value
                if isinstance(value, ast.Constant) and isinstance(value.value, int):
                    if value.value > 0:
                        largest = max(largest, value.value)
                        where.append(at)
                else:
                    dynamic.append(at)
                    where.append(at)
    return WorkerUse(largest, tuple(dynamic), tuple(where))


def scan_docker(root: Path) -> tuple[DockerLaunch, ...]:
    """Container launches: `docker run` command lines and docker-compose services (doctor_launches)."""
    return launches.scan(_files(root), _read, lambda path: _relative(path, root))


# -- the diagnosis ---------------------------------------------------------------------------------


def _version_tuple(version: str) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", version.split("+")[0])[:2]
    return tuple(int(n) for n in numbers)


def check_torch(info: TorchInfo, python: Interpreter | None = None) -> Check:
    exe = python.path if python is not None else sys.executable
    where = f"{exe} ({python.source})" if python is not None else exe
    if not info.installed:
        fix = f"install torch into the project's environment (`{exe} -m pip install torch`)"
        if python is None or python.own:
            fix = (
                "give the project's interpreter with --python (or activate its environment): "
                f"this is torch-migrate's own; or `{exe} -m pip install torch`"
            )
        return Check("torch", FAIL, f"torch is not importable by {where}: {info.error}", fix)
    if _version_tuple(info.version or "0") < MIN_TORCH:
        wanted = ".".join(map(str, MIN_TORCH))
        return Check(
            "torch",
            WARN,
            f"torch {info.version} of {where} is older than {wanted}: migrated code uses newer APIs "
            "(torch.amp, set_default_device)",
            f"{exe} -m pip install 'torch>={wanted}'",
        )
    return Check("torch", OK, f"torch {info.version}")  # whose: the report's `python`


def check_cuda(info: TorchInfo) -> Check:
    if not info.installed:
        return Check("cuda", INFO, "CUDA not checked: torch is not importable")
    if info.error:
        return Check("cuda", WARN, info.error, "check the NVIDIA driver (`nvidia-smi`) and that torch was built for it")
    if not info.cuda_available:
        return Check(
            "cuda",
            INFO,
            "no CUDA device: code runs on the CPU (after TM101/TM102, `.cuda()`-only code does too)",
        )
    names = ", ".join(info.devices) or "unnamed"
    return Check("cuda", OK, f"CUDA {info.cuda_version}: {len(info.devices)} device(s): {names}")


def check_shm(shm: int | None, workers: WorkerUse) -> Check:
    if not workers.uses_workers:
        return Check("shm", OK, "no DataLoader uses worker processes (num_workers=0): /dev/shm does not matter")
    count = f"up to {workers.largest}" if workers.largest else "a number set at run time"
    if workers.largest and workers.dynamic:
        count += ", some set at run time"
    if shm is None:
        return Check("shm", INFO, f"DataLoader workers ({count}) but no /dev/shm here to check", where=workers.where)
    size = f"{shm / MiB:.0f} MiB"
    needed = max(SHM_FAIL, SHM_PER_WORKER * max(workers.largest, 1))
    explain = (
        f"/dev/shm is {size} and DataLoader workers ({count}) pass every batch through it; when it fills, "
        "workers die with \"Bus error\" / \"DataLoader worker ... is killed by signal\""
    )
    if shm < SHM_FAIL:
        return Check("shm", FAIL, explain + " (Docker's default is 64 MB)", SHM_FIX, workers.where)
    if shm < needed:
        return Check("shm", WARN, explain + f"; about {needed / GiB:.1f} GiB is safer", SHM_FIX, workers.where)
    return Check("shm", OK, f"/dev/shm is {size}: enough for DataLoader workers ({count})", where=workers.where)


def check_docker(launches: tuple[DockerLaunch, ...], workers: WorkerUse) -> Check:
    if not launches:
        return Check("docker", OK, "no `docker run` lines or docker-compose services found")
    bare = [l for l in launches if not l.has_shm]
    if not bare:
        return Check("docker", OK, f"{len(launches)} container launch(es), all with --shm-size/--ipc=host")
    where = tuple(l.where for l in bare)
    listed = "; ".join(f"{l.where} ({l.command[:60]})" for l in bare)
    if not workers.uses_workers:
        return Check(
            "docker",
            INFO,
            f"container launches without --shm-size/--ipc=host ({listed}); fine while no DataLoader uses workers",
            where=where,
        )
    return Check(
        "docker",
        FAIL,
        f"container launches without --shm-size/--ipc=host while DataLoaders use worker processes: {listed}. "
        "Docker gives containers 64 MB of /dev/shm, which workers exhaust (\"Bus error\")",
        SHM_FIX,
        where,
    )


def diagnose(
    path: str | Path = ".",
    *,
    python: Interpreter | None = None,
    probe: Callable[[], TorchInfo] | None = None,
    shm: Callable[[], int | None] = shm_bytes,
) -> DoctorReport:
    """Every check, for the machine this runs on, the project's interpreter (`python`, default
    `project_python(path)`) and the repository at `path`. `probe` stands in for asking it."""
    root = Path(path)
    python = python or project_python(root)
    info = probe() if probe is not None else probe_torch(python.path)
    workers = scan_workers(root)
    checks = (
        check_torch(info, python),
        check_cuda(info),
        check_shm(shm(), workers),
        check_docker(scan_docker(root), workers),
    )
    return DoctorReport(str(root), checks, python)


_LABELS = {OK: "ok  ", INFO: "info", WARN: "WARN", FAIL: "FAIL"}


def render_text(report: DoctorReport) -> str:
    lines = [f"torch-migrate doctor: {report.path}"]
    if report.python is not None:
        lines.append(f"  python: {report.python.path} ({report.python.source})")
    for check in report.checks:
        lines.append(f"  [{_LABELS[check.status]}] {check.name}: {check.message}")
        if check.where and check.status != OK:
            lines.append(f"         where: {', '.join(check.where)}")
        if check.fix and check.status in (WARN, FAIL):
            lines.append(f"         fix: {check.fix}")
    problems = len(report.problems)
    lines.append("no problems found" if not problems else f"{problems} problem(s) found")
    return "\n".join(lines)
