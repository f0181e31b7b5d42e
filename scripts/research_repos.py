"""`torch-migrate verify` on old research repositories that have no test suite (issue 36's proof).

    python scripts/research_repos.py clone DIR                   # git clone each pinned repository (network)
    python scripts/research_repos.py run DIR [--before-python EXE] [NAME...]   # verify each, DIR/results-*.json
    python scripts/research_repos.py report DIR                  # the README table from those results

The repositories are GitHub projects from 2018-2021 that nobody here wrote and that are not in the
corpus; each is pinned to a commit. None ships tests, so `verify` proves each migration with the
generated smoke check (imports, models, scripts' `--help`). `run` copies each clone (the clone is
never touched) and runs the real CLI on the copy,
`python -m codemods verify COPY --device cpu --rerun 1 --format json` — two sides on this
interpreter's torch, or three with `--before-python` (the original code on its own torch, e.g. the
torch 1.13.1 venv of scripts/old_torch.py) — and summarises each report: modules imported before
and after, models compared, the kinds, the culprits, the rewrites the checks executed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

REPOS = {  # name: (GitHub owner/name, commit)
    "pytorch-cifar": ("kuangliu/pytorch-cifar", "49b7aa97b0c12fe0d4054e670403a16b6b834ddd"),
    "crnn.pytorch": ("meijieru/crnn.pytorch", "3cc7904c5ba20b18fcdc2d02ac2b24a9be9eafaf"),
    "mixup-cifar10": ("facebookresearch/mixup-cifar10", "eaff31ab397a90fbc0a4aac71fb5311144b3608b"),
    "pytorch-playground": ("aaron-xichen/pytorch-playground", "5d476295f1c1564c8074eb885bb6138d6bd09889"),
    "PyTorchZeroToAll": ("hunkim/PyTorchZeroToAll", "e5a260fac0b4ff1e2ec434fc6f0d962ac97fc289"),
    "pytorch-tutorial": ("yunjey/pytorch-tutorial", "0500d3df5a2a8080ccfccbc00aca0eacc21818db"),
}


def clone(root: Path, names: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        repo, commit = REPOS[name]
        target = root / name
        if not target.exists():
            subprocess.run(["git", "clone", "--quiet", f"https://github.com/{repo}", str(target)], check=True)
        subprocess.run(["git", "-C", str(target), "checkout", "--quiet", commit], check=True)


def verify(clone_dir: Path, before_python: str | None, timeout: int) -> tuple[dict, float]:
    with tempfile.TemporaryDirectory(prefix="research-") as scratch:
        copy = Path(scratch) / clone_dir.name
        shutil.copytree(clone_dir, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        command = [sys.executable, "-m", "codemods", "verify", str(copy), "--device", "cpu", "--rerun", "1",
                   "--timeout", str(timeout), "--format", "json"]  # fmt: skip
        if before_python:
            command += ["--before-python", before_python]
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - started
    try:
        return json.loads(done.stdout), seconds
    except json.JSONDecodeError:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        return {"exit_code": done.returncode, "message": " / ".join(tail), "tests": []}, seconds


def summarise(name: str, data: dict, seconds: float) -> dict:
    tests = data.get("tests") or []
    imports = [t for t in tests if t["id"].startswith("smoke::import::")]
    models = [t for t in tests if t["id"].startswith("smoke::model::")]
    scripts = [t for t in tests if t["id"].startswith("smoke::script::")]
    kinds: dict[str, int] = {}
    for t in tests:
        kinds[t["kind"]] = kinds.get(t["kind"], 0) + 1
    coverage = data.get("coverage") or {}
    return {
        "name": name,
        "exit_code": data.get("exit_code"),
        "message": data.get("message", ""),
        "seconds": round(seconds, 1),
        "sides": [s["label"] for s in data.get("sides") or []],
        "imports": {side: sum(t.get(side) == "passed" for t in imports) for side in ("before", "baseline", "after")},
        "modules": len(imports),
        "models": {side: sum(t.get(side) == "passed" for t in models) for side in ("before", "baseline", "after")},
        "model_classes": len(models),
        "scripts": {side: sum(t.get(side) == "passed" for t in scripts) for side in ("before", "baseline", "after")},
        "script_count": len(scripts),
        "kinds": kinds,
        "divergent": {t["id"]: {"kind": t["kind"], "culprits": t.get("culprits") or [], "after": (t.get("after_message") or "")[:200]}
                      for t in tests if t["kind"] not in ("unchanged", "fixed")},  # fmt: skip
        "culprits": data.get("culprits") or {},
        "rewrites": coverage.get("rewrites"),
        "exercised": coverage.get("exercised"),
    }


def report(root: Path) -> str:
    lines = [
        "| repository | sides | modules importing (before → after) | models built and compared | scripts' `--help` | kinds | rewrites executed | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for file in sorted(root.glob("results-*.json")):
        for r in json.loads(file.read_text()):
            three = "baseline" in r["sides"]
            imp, mod, scr = r["imports"], r["models"], r["scripts"]
            arrow = (lambda d: f"{d['before']} → {d['baseline']} → {d['after']}") if three else (lambda d: f"{d['before']} → {d['after']}")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items()))
            executed = f"{r['exercised']} of {r['rewrites']}" if r["rewrites"] is not None else "—"
            lines.append(
                f"| {r['name']} | {'three' if three else 'two'} | {arrow(imp)} of {r['modules']} | {arrow(mod)} of "
                f"{r['model_classes']} | {arrow(scr)} of {r['script_count']} | {kinds or '—'} (exit {r['exit_code']}) | "
                f"{executed} | {r['seconds']:.0f} s |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("clone", "run", "report"))
    parser.add_argument("dir", type=Path, help="the folder of clones (and of results-*.json)")
    parser.add_argument("names", nargs="*", help=f"repositories (default: all of {', '.join(REPOS)})")
    parser.add_argument("--before-python", help="the original code's interpreter: three sides")
    parser.add_argument("--timeout", type=int, default=600, help="verify --timeout")
    args = parser.parse_intermixed_args(argv)
    names = args.names or list(REPOS)
    if args.action == "clone":
        clone(args.dir, names)
    elif args.action == "run":
        results = []
        for name in names:
            data, seconds = verify(args.dir / name, args.before_python, args.timeout)
            results.append(summarise(name, data, seconds))
            print(json.dumps(results[-1]), flush=True)
        file = args.dir / f"results-{'three' if args.before_python else 'two'}.json"
        kept = [r for r in (json.loads(file.read_text()) if file.exists() else []) if r["name"] not in names]
        file.write_text(json.dumps(sorted(kept + results, key=lambda r: list(REPOS).index(r["name"])), indent=1) + "\n")
    else:
        print(report(args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
