"""Real legacy projects' own test suites, before and after migration, through `torch-migrate verify`.

    python scripts/real_suites.py fetch          # download the pinned sdists, check sha256, unpack
    python scripts/real_suites.py venv           # build the suites' venv with the pinned test deps
    python scripts/real_suites.py run [--check] [--rerun N] [NAME...]   # verify each, write results.json
    python scripts/real_suites.py report [--json FILE]                  # the README table from results.json

`run` makes a copy of each unpacked project and runs the real CLI on it,
`python -m codemods verify COPY --python SUITES_VENV/bin/python --tests "python -m pytest ... tests"
--device cpu --format json`, both suites at once. Each suite's verdict (before/after outcome counts,
regressions, codemods applied) goes to `results.json` in the cache; `report` turns that file into
the Markdown table of the README's "Real projects" section. tests/test_real_suites.py runs the same
thing and asserts the targets.

Nothing of the projects is edited by hand, except one file: pytorch-ignite's sdist lacks
`tests/__init__.py`, without which pytest's rootdir-relative import makes `tests/ignite/` shadow
the `ignite` package; `setup_files` adds that empty file to the copy (so to both sides).

The venv is made with this interpreter's `-m venv` and holds exactly `TEST_REQUIREMENTS` (never a
torch other than 2.13.0; on a machine without a local wheel pass
`--pip-args "--extra-index-url https://download.pytorch.org/whl/cpu"`). It is rebuilt only when the
pins or this interpreter's version change.
Cache: `$TORCH_MIGRATE_CACHE/real-suites` (default `~/.cache/torch-migrate/real-suites`) or
`--cache DIR`, which must not lie inside a git repository (see `DEFAULT_CACHE`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Outside any git repository on purpose: discovery honours an enclosing repository's .gitignore,
# and pytest would take an enclosing project's setup.cfg as the suites' configuration.
DEFAULT_CACHE = Path(os.environ.get("TORCH_MIGRATE_CACHE", Path.home() / ".cache" / "torch-migrate")) / "real-suites"
RESULTS = "results.json"
PIP_RETRIES = ("--retries", "3", "--timeout", "30")  # pip's own retries of each connection
ATTEMPTS = 2  # whole pip commands, with a pause between, for failures pip does not retry itself


class SetupError(Exception):
    """The suites cannot be set up (network, checksum, pip); the message says what to do."""


@dataclass(frozen=True)
class Suite:
    name: str  # as on PyPI
    version: str
    sha256: str
    archive: str  # the sdist's file name
    tests: tuple[str, ...] = ("tests",)
    min_passed: int = 0  # the target after migration
    setup_files: tuple[str, ...] = ()  # empty files added to both copies (see the module docstring)
    # Tests that load a whole pickled object with torch.load: torch >= 2.6 refuses it by default,
    # and the default migration keeps that safe load (TM301 reports it, with the add_safe_globals
    # recipe; only --unsafe's TM302 writes weights_only=False), so they fail after the migration.
    safe_load_failing: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return self.archive[: -len(".tar.gz")]


SUITES: tuple[Suite, ...] = (
    Suite(
        "pytorch-ignite",
        "0.1.0",
        "afc63936aceffc1634c72d8f3cdea748df330fbdd2b3a1b75f393a9258914141",
        "pytorch-ignite-0.1.0.tar.gz",
        min_passed=75,
        setup_files=("tests/__init__.py",),
        safe_load_failing=("tests/ignite/handlers/test_checkpoint.py::test_no_state_dict",),
    ),
    Suite(
        "poutyne",
        "0.5.1",
        "507322bf3e35682618e810bb2c23f81869bc57f13c09b07c0e6ba2523c3b18dd",
        "Poutyne-0.5.1.tar.gz",
        min_passed=92,
    ),
)

# Everything the two suites import, pinned (the output of `pip freeze` in a venv that ran them).
# mock: ignite's tests; tensorboard (+ deps): Poutyne's TensorBoardLogger test via
# torch.utils.tensorboard. tensorboardX is left out on purpose: its test then skips, as upstream CI did.
TEST_REQUIREMENTS: tuple[str, ...] = (
    "torch==2.13.0",
    "numpy==2.4.6",
    "pytest==8.3.5",
    "mock==5.2.0",
    "tensorboard==2.21.0",
    "tensorboard-data-server==0.7.2",
    "absl-py==2.5.1",
    "grpcio==1.85.3",
    "protobuf==7.36.2",
    "Markdown==3.11.3",
    "Werkzeug==3.1.9",
    "MarkupSafe==3.0.4",
    "pillow==13.0.0",
    "packaging==26.4",
    "setuptools==84.2.1",
    "filelock==4.3.1",
    "fsspec==2026.9.0",
    "Jinja2==3.1.6",
    "mpmath==1.3.0",
    "networkx==3.6.1",
    "sympy==1.14.0",
    "typing_extensions==4.16.0",
    "iniconfig==2.3.1",
    "pluggy==1.7.0",
)


# -- fetch -------------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def pip(python: Path | str, args: list[str], what: str) -> None:
    """`python -m pip ARGS`, retried; SetupError with pip's last lines when every attempt fails."""
    command = [str(python), "-m", "pip", *args, *PIP_RETRIES]
    for attempt in range(1, ATTEMPTS + 1):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            return
        if attempt < ATTEMPTS:
            time.sleep(5 * attempt)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    raise SetupError(
        f"{what} failed {ATTEMPTS} times (is PyPI reachable from here?)\n$ {shlex.join(command)}\n{tail}"
    )


def fetch(suite: Suite, cache: Path) -> Path:
    """The unpacked sdist (downloaded and checked once, then reused)."""
    archives = cache / "archives"
    archive = archives / suite.archive
    if not archive.exists():
        archives.mkdir(parents=True, exist_ok=True)
        pip(
            sys.executable,
            ["download", "--no-deps", "--no-binary", ":all:", f"{suite.name}=={suite.version}", "-d", str(archives)],
            f"downloading the sdist of {suite.name}=={suite.version} from PyPI",
        )
        if not archive.exists():
            raise SetupError(f"pip downloaded {suite.name}=={suite.version} but {archive} is not there")
    actual = sha256(archive)
    if actual != suite.sha256:
        archive.unlink()
        raise SetupError(f"{suite.archive}: sha256 {actual} != pinned {suite.sha256}; removed it")
    source = cache / "src" / suite.folder
    if not source.exists():
        staging = cache / "src" / f".{suite.folder}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        (staging / suite.folder).rename(source)
        shutil.rmtree(staging)
    return source


# -- venv --------------------------------------------------------------------------------------


def venv_python(cache: Path) -> Path:
    return cache / "venv" / "bin" / "python"


def build_venv(cache: Path, pip_args: str = "") -> Path:
    """The suites' venv, reused while the pins and this interpreter's version stay the same."""
    python = venv_python(cache)
    stamp = cache / "venv" / "requirements.txt"
    wanted = f"# python {sys.version.split()[0]} {pip_args}\n" + "\n".join(TEST_REQUIREMENTS) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    shutil.rmtree(cache / "venv", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(cache / "venv")], check=True)
    pip(
        python,
        ["install", "--quiet", *shlex.split(pip_args), *TEST_REQUIREMENTS],
        "installing the suites' pinned test dependencies",
    )
    torch = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if not torch.stdout.strip().startswith("2.13.0"):
        raise SetupError(f"the suites' venv has torch {torch.stdout.strip() or torch.stderr[-300:]}, not 2.13.0")
    stamp.write_text(wanted)  # last: a half-built venv is rebuilt next time
    return python


# -- run ---------------------------------------------------------------------------------------


def prepare(source: Path, target: Path, suite: Suite) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for name in suite.setup_files:
        (target / name).touch()


def test_command(suite: Suite) -> str:
    return shlex.join(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *suite.tests])


CLI = (sys.executable, "-m", "codemods")


def verify_suite(
    suite: Suite,
    cache: Path,
    python: Path,
    rerun: int = 0,
    timeout: int = 900,
    cli: tuple[str, ...] = CLI,
    label: str = "",
) -> dict:
    """`torch-migrate verify` (the real CLI) on a copy of the project; its verdict, summarised.

    `cli` is the command that runs the CLI (tests/test_real_suites.py runs it with a fault
    codemod installed, in a work folder of its own named by `label`).
    """
    source = fetch(suite, cache)
    work = cache / "work" / (suite.folder + (f"-{label}" if label else ""))
    project = work / "project"
    prepare(source, project, suite)
    report = work / "verify.json"
    report.unlink(missing_ok=True)
    command = [
        *cli, "verify", str(project), "--python", str(python),
        "--tests", test_command(suite), "--device", "cpu", "--rerun", str(rerun), "--timeout", str(timeout),
        "--format", "json", "-o", str(report),
    ]  # fmt: skip
    # cwd=ROOT: `-m codemods` imports this checkout's codemods. No PYTHONPATH: verify hands its
    # environment on to the suites' pytest, where this repository's `tests` must not be importable.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH"))}
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    (work / "verify.log").write_text(done.stdout + done.stderr)
    if done.returncode not in (0, 1) or not report.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"torch-migrate verify could not run on {suite.name} (exit {done.returncode}):\n{tail}")
    return summarise(suite, json.loads(report.read_text()), time.monotonic() - started, done.returncode)


OUTCOMES = ("passed", "failed", "error", "skipped")


def summarise(suite: Suite, data: dict, seconds: float, exit_code: int) -> dict:
    """One row of the results: what verify's JSON report says about this suite."""
    sides = {s["label"]: s for s in data["sides"]}
    counts = lambda label: {k: sides.get(label, {}).get("outcomes", {}).get(k, 0) for k in OUTCOMES}  # noqa: E731
    regressions = sorted(t["id"] for t in data["tests"] if t["kind"] in ("regression", "missing"))
    newly = sorted(t["id"] for t in data["tests"] if t["kind"] == "newly-collected-failing")
    after = counts("after")
    return {
        "project": f"{suite.name} {suite.version}",
        "status": data["status"],
        "exit_code": exit_code,
        "before": counts("before"),
        "after": after,
        "target_passed": suite.min_passed,
        "regressions": regressions,
        "fixed": data["summary"].get("fixed", 0),
        "flaky": sorted(t["id"] for t in data["tests"] if t["kind"] == "flaky"),
        "newly_failing": newly,
        "culprits": data.get("culprits", {}),
        "unexplained": data.get("unexplained", []),
        "messages": {t["id"]: t.get("after_message", "") for t in data["tests"] if t["id"] in regressions},
        "met": after["passed"] >= suite.min_passed and not regressions and data["status"] == "ok",
        "rewrites": data["migration"]["rewrites"] if data.get("migration") else {},
        "files_changed": len(data["migration"]["files_changed"]) if data.get("migration") else 0,
        "notes": data.get("notes", []),
        "seconds": round(seconds, 1),
    }


def run_all(suites: list[Suite] | tuple[Suite, ...], cache: Path, pip_args: str = "", rerun: int = 0) -> list[dict]:
    """Fetch, build the venv, verify every suite (all at once); write `results.json` in the cache."""
    for suite in suites:
        fetch(suite, cache)
    python = build_venv(cache, pip_args)
    with ThreadPoolExecutor(max_workers=len(suites)) as pool:
        results = list(pool.map(lambda s: verify_suite(s, cache, python, rerun), suites))
    (cache / RESULTS).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _cell(summary: dict[str, int]) -> str:
    parts = [f"{summary['passed']} passed"]
    parts += [f"{summary[k]} {k}" for k in ("failed", "error", "skipped") if summary[k]]
    return ", ".join(parts)


def markdown(results: list[dict]) -> str:
    lines = [
        "| project (its own tests) | before migration | after migration | target | regressions | codemods applied |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        applied = ", ".join(f"{c}×{n}" for c, n in r["rewrites"].items()) or "none"
        lines.append(
            f"| {r['project']} | {_cell(r['before'])} | {_cell(r['after'])} | >= {r['target_passed']} passed"
            f" {'✓' if r['met'] else '✗'} | {len(r['regressions'])} | {applied} |"
        )
    return "\n".join(lines) + "\n"


def check_cache(cache: Path) -> Path:
    """`cache`, created and resolved; SetupError when it lies inside a git repository."""
    cache = cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    inside = subprocess.run(["git", "-C", str(cache), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if inside.returncode == 0:
        raise SetupError(f"cache {cache} lies inside the git repository {inside.stdout.strip()}; choose another")
    return cache


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("fetch", "venv", "run", "report"))
    parser.add_argument("names", nargs="*", help="suites to use (default: all)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--pip-args", default="", help="extra arguments for `pip install` of the test deps")
    parser.add_argument("--rerun", type=int, default=0, help="verify --rerun (reruns of changed tests)")
    parser.add_argument("--check", action="store_true", help="run: exit 1 unless every suite meets its target")
    parser.add_argument("--json", type=Path, help=f"report: the results to read (default: CACHE/{RESULTS})")
    args = parser.parse_args(argv)

    if args.command == "report":
        path = args.json or args.cache / RESULTS
        if not path.exists():
            parser.error(f"{path} does not exist: run `real_suites.py run` or tests/test_real_suites.py first")
        sys.stdout.write(markdown(json.loads(path.read_text())))
        return 0
    suites = [s for s in SUITES if not args.names or s.name in args.names]
    if not suites:
        parser.error(f"unknown suite; known: {', '.join(s.name for s in SUITES)}")
    try:
        cache = check_cache(args.cache)
        if args.command == "fetch":
            for suite in suites:
                print(fetch(suite, cache))
            return 0
        if args.command == "venv":
            print(build_venv(cache, args.pip_args))
            return 0
        results = run_all(suites, cache, args.pip_args, args.rerun)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(results))
    for r in results:
        if r["regressions"]:
            print(f"{r['project']}: regressions: {', '.join(r['regressions'])}")
    print(f"results: {cache / RESULTS}")
    return 0 if not args.check or all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
