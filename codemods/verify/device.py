"""The target interpreter and where its tests will run, asked of that interpreter, not of ours."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from codemods import torch_probe
from codemods.verify import execute

DEVICES = ("auto", "cpu", "cuda")

class DeviceError(Exception):
    """The target interpreter cannot be used, or the requested device is not there."""


@dataclass(frozen=True)
class Device:
    requested: str  # auto | cpu | cuda
    python: str  # the interpreter the tests run with
    python_version: str = ""
    torch: str | None = None
    cuda_available: bool = False
    cuda_version: str | None = None
    devices: tuple[str, ...] = ()
    torch_error: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # what we set for the device choice
    has_pytest: bool = True  # whether it can import pytest (the test runner)

    @property
    def uses_cuda(self) -> bool:
        return self.cuda_available and self.requested != "cpu"

    @property
    def summary(self) -> str:
        if self.torch is None:
            where = f"torch not importable ({self.torch_error})" if self.torch_error else "torch not installed"
        elif self.uses_cuda:
            names = ", ".join(sorted(set(self.devices))) or "CUDA device"
            where = f"torch {self.torch}, CUDA {self.cuda_version}: {len(self.devices)} × {names}"
        elif self.requested == "cpu":
            where = f"torch {self.torch}, CPU (GPUs hidden with CUDA_VISIBLE_DEVICES='')"
        else:
            where = f"torch {self.torch}, CPU (no CUDA device visible)"
        return f"{where}; Python {self.python_version} at {self.python}"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["devices"] = list(self.devices)
        data["uses_cuda"] = self.uses_cuda
        return data


def default_python(explicit: str | None = None) -> str:
    """--python, else the active virtualenv's python, else the interpreter running us."""
    if explicit:
        return explicit
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        for name in ("bin/python", "Scripts/python.exe"):
            candidate = Path(venv) / name
            if candidate.exists():
                return str(candidate)
    return sys.executable


def environment(python: str, device: str) -> dict[str, str]:
    """The environment a side runs in: ours, with the target interpreter first on PATH."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    folder = os.path.dirname(os.path.abspath(python)) if os.sep in python else ""
    if folder:
        env["PATH"] = folder + os.pathsep + env.get("PATH", "")
        if (Path(folder).parent / "pyvenv.cfg").exists():
            env["VIRTUAL_ENV"] = str(Path(folder).parent)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


_cache: dict[tuple[str, str], Device] = {}
_cache_lock = threading.Lock()


def detect(python: str, requested: str = "auto", timeout: float = 180, processes: execute.Processes | None = None) -> Device:
    """Ask `python` about itself and torch (a command of `processes`, a verification's); raises
    DeviceError when it cannot run or CUDA is missing."""
    if requested not in DEVICES:
        raise DeviceError(f"--device must be one of {', '.join(DEVICES)}, not {requested!r}")
    # The answer depends only on the interpreter and on whether GPUs are hidden (cpu).
    key = (python, requested == "cpu")
    with _cache_lock:
        found = _cache.get(key)
    if found is None:
        found = _ask(python, requested, timeout, processes or execute.Processes(watch=False))
        with _cache_lock:
            _cache[key] = found
    found = replace(found, requested=requested)
    if requested == "cuda" and not found.cuda_available:
        why = found.torch_error or ("torch is not installed" if found.torch is None else "no CUDA device is visible")
        raise DeviceError(
            f"--device cuda: {python} cannot use CUDA ({why}; torch {found.torch or '-'}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')!r}). "
            "Use --device cpu or auto, or a machine with a GPU."
        )
    return found


def _ask(python: str, requested: str, timeout: float, processes: execute.Processes) -> Device:
    env = environment(python, requested)
    with tempfile.TemporaryDirectory(prefix="torch-migrate-device-") as neutral:  # no local `torch/`
        try:
            args = [python, "-c", torch_probe.source(), *(["cpu"] if requested == "cpu" else [])]
            done = processes.run(args, Path(neutral), env, timeout, merge_output=False)
        except execute.StartError as exc:
            raise DeviceError(f"the target interpreter cannot start: {exc}") from None
    if done.timed_out:
        raise DeviceError(f"{python} did not answer within {timeout:.0f} s (importing torch)")
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith(torch_probe.MARKER)), None)
    if done.returncode != 0 or line is None:
        raise DeviceError(f"{python} is not a working Python interpreter (exit {done.returncode}): {done.tail[-500:]}")
    info = json.loads(line.split(" ", 1)[1])
    return Device(
        requested=requested,
        python=info["executable"] or python,
        python_version=info["python"],
        torch=info["torch"],
        cuda_available=info["cuda_available"],
        cuda_version=info["cuda_version"],
        devices=tuple(info["devices"]),
        torch_error=info["error"],
        env={"CUDA_VISIBLE_DEVICES": ""} if requested == "cpu" else {},
        has_pytest=info.get("pytest", True),
    )


# Messages torch gives when legacy code asks for CUDA on a machine without it.
CUDA_MISSING = (
    "Torch not compiled with CUDA enabled",
    "No CUDA GPUs are available",
    "Found no NVIDIA driver",
    "CUDA driver",
    "no CUDA-capable device",
    "cuda is not available",
    "Attempting to deserialize object on a CUDA device",
)


def needs_cuda(message: str) -> bool:
    lower = message.lower()
    return any(m.lower() in lower for m in CUDA_MISSING)

