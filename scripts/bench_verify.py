"""verify's own cost: its wall time against its longest side (issue 23 asks ≤ 1.25× with three sides),
and with --coverage the cost of measuring rewrite coverage (issue 36 asks ≤ 1.15× on a real suite).

    python scripts/bench_verify.py [--repeat 3] [--project fixtures/projects/torch1_era]
    python scripts/bench_verify.py --coverage --project DIR --python EXE --tests CMD

Runs the real CLI, `verify PROJECT --rerun 0 --no-culprits --device cpu --format json`, with two
sides (the target only) and with three (`--before-python`, the cached torch 1.13.1 venv of
scripts/old_torch.py), `--repeat` times each, interleaved. For each run: the process's wall time
and its longest side (the slowest first run of the test command, from the JSON report); the
medians and their ratio are printed and returned (scripts/bench.py includes them with --verify).
The difference is what verify adds around the test runs: copying, migrating, asking each
interpreter about torch, the import-isolation check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import old_torch  # noqa: E402


def one(project: Path, before_python: str | None, python: str, tests: str | None, *extra: str) -> tuple[float, float]:
    command = [
        sys.executable, "-m", "codemods", "verify", str(project), "--python", python,
        "--rerun", "0", "--no-culprits", "--device", "cpu", "--format", "json",
        *(["--tests", tests] if tests else []), *extra,
    ]  # fmt: skip
    if before_python:
        command += ["--before-python", before_python]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    data = json.loads(done.stdout)
    if data["status"] == "error":
        raise RuntimeError(f"verify could not run: {data['message']}")
    return wall, max(side["seconds"] for side in data["sides"])


def measure(project: Path, repeat: int, before: str | None = None, python: str = sys.executable, tests: str | None = None) -> dict:
    before = before or str(old_torch.build())
    runs: dict[str, list[tuple[float, float]]] = {"two sides": [], "three sides": []}
    for _ in range(repeat):
        runs["two sides"].append(one(project, None, python, tests))
        runs["three sides"].append(one(project, before, python, tests))
    out = {}
    for label, pairs in runs.items():
        wall = statistics.median(w for w, _ in pairs)
        side = statistics.median(s for _, s in pairs)
        out[label] = {"wall_s": round(wall, 2), "longest_side_s": round(side, 2), "ratio": round(wall / side, 2)}
    return out


def coverage_overhead(project: Path, repeat: int, python: str = sys.executable, tests: str | None = None) -> dict:
    """verify's wall time measuring rewrite coverage against `--no-coverage` (two sides), interleaved."""
    runs: dict[str, list[float]] = {"coverage": [], "no coverage": []}
    for _ in range(repeat):
        runs["coverage"].append(one(project, None, python, tests)[0])
        runs["no coverage"].append(one(project, None, python, tests, "--no-coverage")[0])
    medians = {label: round(statistics.median(walls), 2) for label, walls in runs.items()}
    return {**medians, "ratio": round(medians["coverage"] / medians["no coverage"], 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--project", type=Path, default=ROOT / "fixtures" / "projects" / "torch1_era")
    parser.add_argument("--before-python", help="the before interpreter (default: scripts/old_torch.py's venv)")
    parser.add_argument("--python", default=sys.executable, help="the target interpreter")
    parser.add_argument("--tests", help="the test command (default: verify's)")
    parser.add_argument("--coverage", action="store_true", help="compare verify with and without rewrite coverage instead")
    args = parser.parse_args(argv)
    if args.coverage:
        r = coverage_overhead(args.project, args.repeat, args.python, args.tests)
        print(f"verify on {args.project.name}, medians of {args.repeat}: with rewrite coverage {r['coverage']:.2f} s, "
              f"--no-coverage {r['no coverage']:.2f} s, ratio {r['ratio']:.3f}")
        return 0
    results = measure(args.project, args.repeat, args.before_python, args.python, args.tests)
    print(f"verify on {args.project.name}, medians of {args.repeat}:")
    print("| | verify wall | longest side | ratio |\n|---|---|---|---|")
    for label, r in results.items():
        print(f"| {label} | {r['wall_s']:.2f} s | {r['longest_side_s']:.2f} s | {r['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
