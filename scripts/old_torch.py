"""The old-torch virtualenv of the cross-version tests: the torch the legacy code was written for.

    python scripts/old_torch.py          # build it if needed, print its interpreter

`verify --before-python` runs the original code with this interpreter (torch 1.13.1 — a CUDA build
that runs on the CPU — `numpy<2`, pytest). The first build takes about 95 s and 3.3 GB on this
machine type; it is cached under `$TORCH_MIGRATE_CACHE/old-torch` (default
`~/.cache/torch-migrate/old-torch`) and rebuilt only when the pins or this interpreter's version
change. Every test that needs it shares one (tests/conftest.py's session fixture `old_torch_python`);
without PyPI on a cold cache those tests FAIL, never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("TORCH_MIGRATE_CACHE", Path.home() / ".cache" / "torch-migrate")) / "old-torch"
REQUIREMENTS = ("torch==1.13.1", "numpy==1.26.4", "pytest==9.2.0")
TORCH = "1.13.1"


class SetupError(Exception):
    """The venv cannot be built; the message says why."""


def python(cache: Path = CACHE) -> Path:
    return cache / "venv" / "bin" / "python"


def build(cache: Path = CACHE) -> Path:
    """The venv's interpreter, built once per pins and interpreter version."""
    exe = python(cache)
    stamp = cache / "venv" / "requirements.txt"
    wanted = f"# python {sys.version.split()[0]}\n" + "\n".join(REQUIREMENTS) + "\n"
    if exe.exists() and stamp.exists() and stamp.read_text() == wanted:
        return exe
    shutil.rmtree(cache / "venv", ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(cache / "venv")], check=True)
    for attempt in (1, 2):
        done = subprocess.run(
            [str(exe), "-m", "pip", "install", "--quiet", *REQUIREMENTS, "--retries", "3", "--timeout", "60"],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode == 0:
            break
    else:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SetupError(f"installing {' '.join(REQUIREMENTS)} failed (is PyPI reachable from here?)\n{tail}")
    check = subprocess.run([str(exe), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if not check.stdout.startswith(TORCH):
        raise SetupError(f"the old-torch venv has torch {check.stdout.strip() or check.stderr[-300:]}, not {TORCH}")
    stamp.write_text(wanted)  # last: a half-built venv is rebuilt next time
    return exe


if __name__ == "__main__":
    try:
        print(build())
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
