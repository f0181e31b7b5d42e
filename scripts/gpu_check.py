"""The GPU check's work; run it through scripts/verify_gpu_check.sh (whose header documents it).

Standard library only, under any Python >= 3.8: it runs the machine's interpreter and the venv it
makes as subprocesses, and never imports torch or this project itself.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
DEVICE_SCRIPT = ROOT / "fixtures" / "device_script"
# Each example's expected verify outcome: exit code and a phrase of its message (see their READMEs).
EXAMPLES = {
    "loss_warnings": (0, "no regressions"),
    "pinned_warning": (1, "caused by TM001 on legacy.py"),  # a fair regression, found with its culprit
    "legacy_classifier": (0, "no regressions"),
    "torch1_era": (0, "no regressions"),
}
BUDGET_S = 330.0  # the whole check stays under 6 minutes, whatever hangs

# Runs a migrated script with its loss function audited: the devices of the tensors it was given.
TM101_AUDIT = """
import json, os, runpy, sys
import torch
import torch.nn.functional as F

seen = []
original = F.cross_entropy

def cross_entropy(input, target, *args, **kwargs):
    seen.append([str(input.device), str(target.device)])
    return original(input, target, *args, **kwargs)

F.cross_entropy = cross_entropy
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
allocated = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0
with open(os.environ["AUDIT_FILE"], "w") as f:
    json.dump({"loss_inputs": seen, "cuda_bytes_allocated": allocated}, f)
"""

# Runs the migrated DDP script under torchrun, recording per rank the backend, the model's device and
# who saved a checkpoint.
DDP_AUDIT = """
import json, os, runpy, sys
import torch
import torch.distributed as dist

record = {"rank": os.environ.get("RANK"), "world_size": os.environ.get("WORLD_SIZE"), "backend": None,
          "ddp_param_devices": [], "device_ids": None, "saves": 0}
init = dist.init_process_group

def init_process_group(*args, **kwargs):
    init(*args, **kwargs)
    record["backend"] = str(dist.get_backend())

dist.init_process_group = init_process_group
DDP = torch.nn.parallel.DistributedDataParallel
ddp_init = DDP.__init__

def ddp_init_audited(self, module, *args, **kwargs):
    record["ddp_param_devices"] = sorted({str(p.device) for p in module.parameters()})
    record["device_ids"] = kwargs.get("device_ids")
    ddp_init(self, module, *args, **kwargs)

DDP.__init__ = ddp_init_audited
save = torch.save

def save_audited(*args, **kwargs):
    record["saves"] += 1
    return save(*args, **kwargs)

torch.save = save_audited
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
with open(os.path.join(sys.argv[1], "audit-%s.json" % os.environ.get("RANK", "0")), "w") as f:
    json.dump(record, f)
"""

CHECKPOINT = """
import runpy, sys
import torch
namespace = runpy.run_path(sys.argv[1], run_name="not_main")
torch.manual_seed(0)
model = namespace["Net"]()
if sys.argv[3] == "cuda":
    model = model.cuda()
state = model.state_dict()
assert all(t.device.type == sys.argv[3] for t in state.values())
torch.save(state, sys.argv[2])
"""

ENV_PROBE = """
import json, os, sys
info = {"python": sys.executable, "python_version": sys.version.split()[0], "prefix": sys.prefix}
try:
    import torch
    info.update(torch=torch.__version__, torch_file=torch.__file__, cuda_available=torch.cuda.is_available(),
                cuda_version=torch.version.cuda, nccl_available=torch.distributed.is_nccl_available(),
                gpus=[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
except Exception as exc:
    info["torch_error"] = repr(exc)
try:
    import codemods
    info.update(codemods=codemods.__version__, codemods_file=codemods.__file__)
except Exception as exc:
    info["codemods_error"] = repr(exc)
print(json.dumps(info))
"""


class Checks:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.device: str = args.device
        self.started = time.monotonic()
        self.results: list[dict] = []
        self.work = Path(tempfile.mkdtemp(prefix="torch-migrate-gpu-check-"))
        self.venv = Path(args.venv) if args.venv else self.work / "venv"
        self.vpy = str(self.venv / "bin" / "python")
        self.env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PYTHONPATH"):
            self.env.pop(name, None)
        if self.device == "cpu":
            self.env["CUDA_VISIBLE_DEVICES"] = ""
        self.installed = False
        self.gpus = 0

    # -- plumbing -------------------------------------------------------------------------------

    def left(self, want: float) -> float:
        return max(5.0, min(want, BUDGET_S - (time.monotonic() - self.started)))

    def sh(self, command: list[str], timeout: float, cwd: Path | None = None, env: dict | None = None):
        """(exit code, stdout+stderr); 124 on timeout."""
        try:
            done = subprocess.run(
                command, cwd=cwd or self.work, env=env or self.env, capture_output=True, text=True,
                timeout=self.left(timeout),
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"") + (exc.stderr or b"")
            text = out.decode(errors="replace") if isinstance(out, bytes) else out
            return 124, text + "\n[timed out]"
        return done.returncode, done.stdout + done.stderr

    def check(self, name: str, body) -> None:
        print(f"=== {name}", flush=True)
        began = time.monotonic()
        entry: dict = {"name": name}
        try:
            ok, details = body()
        except Exception as exc:  # a broken check is a failed check, with its reason
            ok, details = False, {"error": f"{type(exc).__name__}: {exc}"}
        entry.update(ok=bool(ok), seconds=round(time.monotonic() - began, 1), **details)
        self.results.append(entry)
        print(f"{'PASS' if ok else 'FAIL'} {name} ({entry['seconds']} s)", flush=True)
        for key in ("error", "problems", "note"):
            if entry.get(key):
                print(f"  {key}: {entry[key]}", flush=True)

    def tail(self, text: str, lines: int = 25) -> str:
        return "\n".join(text.strip().splitlines()[-lines:])

    # -- the checks -----------------------------------------------------------------------------

    def environment(self):
        code, out = self.sh([self.args.python, "-c", ENV_PROBE], 60)
        info = json.loads(out.strip().splitlines()[-1]) if code == 0 else {}
        problems = []
        if "torch" not in info:
            problems.append("the machine's python has no usable torch: " + info.get("torch_error", out[-500:]))
        elif self.device == "cuda" and not info.get("cuda_available"):
            problems.append("--device cuda but torch sees no GPU")
        elif self.device == "cpu" and info.get("cuda_available"):
            problems.append("--device cpu but a GPU is visible (CUDA_VISIBLE_DEVICES should hide it)")
        self.gpus = len(info.get("gpus") or [])
        return not problems, {"machine": platform.platform(), "info": info, "problems": problems}

    def install(self):
        wheels = Path(self.args.wheels).resolve()
        if not wheels.is_dir() or not list(wheels.glob("torch_migrate-*.whl")):
            return False, {"problems": [f"no torch_migrate wheel in {wheels}: run scripts/gpu_wheels.sh first"]}
        steps = []
        if self.venv.exists():
            shutil.rmtree(self.venv)
        # --system-site-packages: the machine's (CUDA) torch is used, never reinstalled. No pip in the
        # venv (ensurepip is often missing); the pip wheel from the folder installs, run as a zipapp.
        code, out = self.sh([self.args.python, "-m", "venv", "--system-site-packages", "--without-pip",
                             str(self.venv)], 120)  # fmt: skip
        steps.append({"step": "venv", "exit_code": code, "tail": self.tail(out, 5)})
        if code != 0:
            return False, {"steps": steps, "problems": ["could not create the venv"]}
        # If the machine's python is itself a venv, its site-packages are not the "system" ones:
        # make them visible too (appended, so what is installed in the new venv comes first).
        code, out = self.sh([self.args.python, "-c", (
            "import json, site, sys\n"
            "dirs = site.getsitepackages() if sys.prefix != sys.base_prefix else []\n"
            "print(json.dumps(dirs))"
        )], 60)  # fmt: skip
        parent_dirs = json.loads(out.strip().splitlines()[-1]) if code == 0 else []
        code, out = self.sh([self.vpy, "-c", "import site, json; print(json.dumps(site.getsitepackages()))"], 60)
        own = Path(json.loads(out.strip().splitlines()[-1])[0])
        if parent_dirs:
            (own / "_torch_migrate_gpu_check_parent.pth").write_text("\n".join(parent_dirs) + "\n")
        pips = sorted(wheels.glob("pip-*.whl"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)[:3]])
        pip = [self.vpy, f"{pips[-1]}/pip"] if pips else [self.vpy, "-m", "pip"]
        # --ignore-installed: the project and every dependency come from the folder, even where the
        # machine's python already has some of them; --no-index: never the network.
        command = pip + ["install", "--no-index", "--find-links", str(wheels), "--ignore-installed",
                         "--no-cache-dir", "--no-warn-script-location", "torch-migrate", "pytest"]  # fmt: skip
        code, out = self.sh(command, 180)
        processed = re.findall(r"Processing (\S+\.whl)", out)
        steps.append({"step": "pip install", "command": command, "exit_code": code, "tail": self.tail(out, 8)})
        problems = [] if code == 0 else ["pip install from the wheels folder failed"]
        code, out = self.sh([self.vpy, "-c", ENV_PROBE], 60)
        info = json.loads(out.strip().splitlines()[-1]) if code == 0 else {"error": out[-500:]}
        where = info.get("codemods_file") or ""
        if not where.startswith(str(own)):
            problems.append(f"codemods imports from {where or info.get('codemods_error')}, not from the venv")
        if "torch" not in info:
            problems.append("torch is not importable in the venv: " + info.get("torch_error", ""))
        code, out = self.sh([str(self.venv / "bin" / "torch-migrate"), "--version"], 60)
        if code != 0:
            problems.append("the torch-migrate command does not run: " + out[-300:])
        self.installed = not problems
        return self.installed, {
            "wheels": str(wheels), "venv": str(self.venv), "site_packages": str(own), "no_index": True,
            "installed_from_wheels": [p for p in processed if p.startswith(str(wheels))],
            "codemods_file": where, "torch_file": info.get("torch_file"), "torch": info.get("torch"),
            "version_output": out.strip(), "steps": steps, "problems": problems,
        }  # fmt: skip

    def verify(self, name: str, device: str, expect_cuda: bool):
        source = PROJECTS / name
        copy = self.work / "projects" / f"{name}-{device}"
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".pytest_cache", "__pycache__"))
        report = self.work / f"verify-{name}-{device}.json"
        command = [self.vpy, "-m", "codemods", "verify", str(copy), "--device", device, "--python", self.vpy,
                   "--rerun", "1", "--timeout", "150", "--format", "json", "-o", str(report)]  # fmt: skip
        code, out = self.sh(command, 170)
        data = json.loads(report.read_text()) if report.is_file() else {}
        want_code, phrase = EXAMPLES.get(name, (0, "no regressions"))
        problems = [] if code == want_code else [f"verify exited {code}, expected {want_code}"]
        if phrase not in (data.get("message") or ""):
            problems.append(f"the report does not say {phrase!r}")
        seen = data.get("device") or {}
        if seen.get("uses_cuda") is not None and bool(seen.get("uses_cuda")) != expect_cuda:
            problems.append(f"the tests ran with uses_cuda={seen.get('uses_cuda')}, expected {expect_cuda}")
        if not data:
            problems.append("no JSON report")
        return not problems, {
            "project": name, "device_option": device, "exit_code": code, "expected_exit_code": want_code,
            "status": data.get("status"),
            "message": data.get("message"), "device": seen, "problems": problems,
            "tail": self.tail(out, 6) if problems else "",
        }  # fmt: skip

    def migrate(self, folder: Path, script: str) -> tuple[int, str]:
        return self.sh([str(self.venv / "bin" / "torch-migrate"), "run", script, "--no-cache", "-j", "1"], 120, folder)

    def ddp(self):
        folder = self.work / "ddp"
        folder.mkdir()
        shutil.copy(PROJECTS / "ddp_train" / "train.py", folder / "train.py")
        code, out = self.migrate(folder, "train.py")
        migrated = (folder / "train.py").read_text()
        if code != 0 or "ddp_wrap(" not in migrated:
            return False, {"problems": [f"TM103 did not migrate train.py (exit {code})"], "tail": self.tail(out)}
        (folder / "audited.py").write_text(DDP_AUDIT)
        nproc = int(self.args.nproc or (self.gpus if self.device == "cuda" else 2))
        env = dict(self.env, OMP_NUM_THREADS="1")
        if self.device == "cpu":
            env["GLOO_SOCKET_IFNAME"] = "lo"
        failures = []
        for attempt in (1, 2):  # a second try only after a failure, which the summary keeps
            out_dir, logs = folder / f"out-{attempt}", folder / f"logs-{attempt}"
            out_dir.mkdir()
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            command = [self.vpy, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={nproc}",
                       "--master_addr=127.0.0.1", f"--master_port={port}", "--log-dir", str(logs), "--redirects", "2",
                       "audited.py", "train.py", str(out_dir)]  # fmt: skip
            code, out = self.sh(command, 200 if attempt == 1 else 120, folder, env)
            problems = [] if code == 0 else [f"torchrun exited {code}"]
            audits, runs = [], []
            for rank in range(nproc):
                try:
                    audits.append(json.loads((out_dir / f"audit-{rank}.json").read_text()))
                    runs.append(json.loads((out_dir / f"run-{rank}.json").read_text()))
                except (OSError, ValueError):
                    problems.append(f"rank {rank} wrote no result")
            if not problems:
                break
            errors = {log.parent.name: self.tail(log.read_text(errors="replace"), 12)
                      for log in sorted(logs.rglob("stderr.log")) if log.stat().st_size}  # fmt: skip
            failures.append({"attempt": attempt, "problems": problems, "tail": self.tail(out, 12),
                             "rank_stderr": errors})  # fmt: skip
        details = {"nproc": nproc, "exit_code": code, "attempts": len(failures) + (not problems),
                   "failed_attempts": failures, "audits": audits}  # fmt: skip
        if problems:
            return False, {**details, "problems": problems}
        if failures:
            details["note"] = "passed on the second attempt; the first failure is under failed_attempts"
        want_backend = "nccl" if self.device == "cuda" else "gloo"
        if nproc > 1:
            for rank, audit in enumerate(audits):
                if audit["backend"] != want_backend:
                    problems.append(f"rank {rank} used backend {audit['backend']}, expected {want_backend}")
                want = [f"cuda:{rank}"] if self.device == "cuda" else ["cpu"]
                if audit["ddp_param_devices"] != want:
                    problems.append(f"rank {rank}'s DDP model was on {audit['ddp_param_devices']}, expected {want}")
            per_rank = math.ceil(64 / nproc)
            for epoch in range(3):
                sets = [set(run["seen"][epoch]) for run in runs]
                if set().union(*sets) != set(range(64)) or any(len(r["seen"][epoch]) != per_rank for r in runs):
                    problems.append(f"epoch {epoch}: the ranks did not split the 64 samples")
                if 64 % nproc == 0 and sum(len(s) for s in sets) != 64:
                    problems.append(f"epoch {epoch}: ranks saw overlapping samples")
        else:
            details["note"] = "one process: the migrated script ran without a process group (DDP needs 2 GPUs)"
        if [a["saves"] for a in audits] != [1] + [0] * (nproc - 1):
            problems.append(f"checkpoint saves per rank {[a['saves'] for a in audits]}, expected rank 0 only")
        if out.count("epoch 2 loss") != 1:
            problems.append("the last epoch's loss was printed %d times, expected once" % out.count("epoch 2 loss"))
        if not (out_dir / "model.pt").is_file():
            problems.append("no model.pt")
        details["losses"] = [run["loss"] for run in runs]
        return not problems, {**details, "backend_expected": want_backend, "problems": problems,
                              "tail": self.tail(out, 30) if problems else ""}  # fmt: skip

    def tm101(self):
        folder = self.work / "tm101"
        folder.mkdir()
        for name in ("legacy_gpu.py", "cpu_reference.py"):
            shutil.copy(DEVICE_SCRIPT / name, folder / name)
        shutil.copy(folder / "legacy_gpu.py", folder / "migrated.py")
        code, out = self.migrate(folder, "migrated.py")
        migrated = (folder / "migrated.py").read_text()
        problems = [] if code == 0 else [f"torch-migrate run exited {code}"]
        if "TM101" not in out or ".cuda(" in migrated or "torch.cuda.FloatTensor" in migrated:
            problems.append("TM101 did not migrate the script")
        if problems:
            return False, {"problems": problems, "tail": self.tail(out)}
        checkpoint = folder / "checkpoint.pt"
        code, out = self.sh([self.vpy, "-c", CHECKPOINT, "cpu_reference.py", str(checkpoint), self.device], 90, folder)
        if code != 0:
            return False, {"problems": ["could not write the checkpoint"], "tail": self.tail(out)}
        (folder / "audited.py").write_text(TM101_AUDIT)
        audit = folder / "audit.json"
        code, migrated_out = self.sh([self.vpy, "audited.py", "migrated.py", str(checkpoint)], 90, folder,
                                     dict(self.env, AUDIT_FILE=str(audit)))  # fmt: skip
        if code != 0:
            return False, {"problems": [f"the migrated script exited {code}"], "tail": self.tail(migrated_out)}
        seen = json.loads(audit.read_text())
        got = json.loads(migrated_out.strip().splitlines()[-1])
        devices = {d.split(":")[0] for pair in seen["loss_inputs"] for d in pair}
        if devices != {self.device}:
            problems.append(f"the loss was computed on {sorted(devices)}, expected {self.device}")
        if self.device == "cuda" and not seen["cuda_bytes_allocated"]:
            problems.append("no CUDA memory was allocated")
        cpu_env = dict(self.env, CUDA_VISIBLE_DEVICES="")
        code, out = self.sh([self.vpy, "cpu_reference.py", str(checkpoint)], 90, folder, cpu_env)
        want = json.loads(out.strip().splitlines()[-1]) if code == 0 else None
        if want is None:
            problems.append("the CPU reference did not run: " + self.tail(out, 3))
        elif not _close(got, want):
            problems.append(f"the migrated script's result {got} differs from the CPU reference {want}")
        details = {"loss_inputs": seen["loss_inputs"], "cuda_bytes_allocated": seen["cuda_bytes_allocated"],
                   "migrated": got, "cpu_reference": want}  # fmt: skip
        # The legacy original never runs on the CPU (it needs CUDA), nor, because of its discarded
        # `inputs.cuda()`, on a GPU (inputs on the CPU, model on the GPU): what the migration fixed.
        code, out = self.sh([self.vpy, "legacy_gpu.py", str(checkpoint)], 90, folder)
        details["legacy_exit_code"] = code
        details["legacy_error"] = self.tail(out, 1)
        if code == 0:
            problems.append("the legacy script ran: the check proves nothing")
        return not problems, {**details, "problems": problems}

    # -- driver ---------------------------------------------------------------------------------

    def run(self) -> int:
        self.check("environment", self.environment)
        self.check("install from wheels", self.install)
        if self.installed:
            examples = self.args.projects.split(",") if self.args.projects else EXAMPLES
            for name in examples:
                if (PROJECTS / name).is_dir():
                    self.check(f"verify {name} --device {self.device}",
                               lambda name=name: self.verify(name, self.device, self.device == "cuda"))  # fmt: skip
            if self.device == "cuda":
                self.check("verify loss_warnings --device cpu (GPU hidden)",
                           lambda: self.verify("loss_warnings", "cpu", False))  # fmt: skip
            self.check("DDP fixture under torchrun", self.ddp)
            self.check("TM101-migrated script", self.tm101)
        passed = all(r["ok"] for r in self.results) and self.installed
        summary = {
            "check": "torch-migrate GPU check (scripts/verify_gpu_check.sh)", "device": self.device,
            "passed": passed, "seconds": round(time.monotonic() - self.started, 1),
            "checks": self.results,
        }  # fmt: skip
        path = Path(self.args.summary)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=2) + "\n")
        failed = [r["name"] for r in self.results if not r["ok"]]
        which = f"; failed: {', '.join(failed)}" if failed else ""
        print(f"{'PASSED' if passed else 'FAILED'}: {len(self.results) - len(failed)}/{len(self.results)} checks"
              f" in {summary['seconds']} s{which}. Summary: {path}")  # fmt: skip
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            print(f"work folder kept: {self.work}")
        return 0 if passed else 1


def _close(got: dict, want: dict, tol: float = 1e-4) -> bool:
    a = [x for row in got["outputs"] for x in row] + [got["loss"]]
    b = [x for row in want["outputs"] for x in row] + [want["loss"]]
    return len(a) == len(b) and all(abs(x - y) <= tol + tol * abs(y) for x, y in zip(a, b))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", default="python3")
    parser.add_argument("--wheels", required=True)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--summary", required=True)
    parser.add_argument("--venv", default=None)
    parser.add_argument("--projects", default=None)
    parser.add_argument("--nproc", default=None)
    parser.add_argument("--keep", action="store_true")
    return Checks(parser.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
