"""Real legacy projects' own test suites, before and after migration.

    python scripts/real_suites.py fetch          # download the pinned sdists, check sha256, unpack
    python scripts/real_suites.py venv           # build the suites' venv with the pinned test deps
    python scripts/real_suites.py run [--check] [--json FILE] [--markdown FILE] [NAME...]

`run` copies each unpacked project twice, migrates one copy with the Python API
(`codemods.api.migrate([copy], Options(mode="write"))`), runs the project's own pytest suite in
both copies with the suites' venv, and compares the outcomes test by test (JUnit XML). `--check`
exits 1 unless every suite meets its target: at least `min_passed` tests pass after migration
and no test that passed before fails after.

Nothing of the projects is edited by hand, except one file: pytorch-ignite's sdist lacks
`tests/__init__.py`, without which pytest's rootdir-relative import makes `tests/ignite/` shadow
the `ignite` package; `SETUP_FILES` adds that empty file to both copies.

The venv is made with this interpreter's `-m venv` and holds exactly `TEST_REQUIREMENTS` (never a
torch other than 2.13.0; on a machine without a local wheel pass
`--pip-args "--extra-index-url https://download.pytorch.org/whl/cpu"`).
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
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Outside any git repository on purpose: discovery honours an enclosing repository's .gitignore,
# and pytest would take an enclosing project's setup.cfg as the suites' configuration.
DEFAULT_CACHE = Path(os.environ.get("TORCH_MIGRATE_CACHE", Path.home() / ".cache" / "torch-migrate")) / "real-suites"


@dataclass(frozen=True)
class Suite:
    name: str  # as on PyPI
    version: str
    sha256: str
    archive: str  # the sdist's file name
    tests: tuple[str, ...] = ("tests",)
    min_passed: int = 0  # the target after migration
    setup_files: tuple[str, ...] = ()  # empty files added to both copies (see the module docstring)

    @property
    def folder(self) -> str:
        return self.archive[: -len(".tar.gz")]


SUITES: tuple[Suite, ...] = (
    Suite(
        "pytorch-ignite",
        "0.1.0",
        "afc63936aceffc1634c72d8f3cdea748df330fbdd2b3a1b75f393a9258914141",
        "pytorch-ignite-0.1.0.tar.gz",
        min_passed=76,
        setup_files=("tests/__init__.py",),
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


def fetch(suite: Suite, cache: Path) -> Path:
    """The unpacked sdist (downloaded and checked once, then reused)."""
    archives = cache / "archives"
    archive = archives / suite.archive
    if not archive.exists():
        archives.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"{suite.name}=={suite.version}", "-d", str(archives)],
            check=True,
        )
    actual = sha256(archive)
    if actual != suite.sha256:
        archive.unlink()
        raise SystemExit(f"{suite.archive}: sha256 {actual} != pinned {suite.sha256}; removed it")
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
    python = venv_python(cache)
    stamp = cache / "venv" / "requirements.txt"
    wanted = "\n".join(TEST_REQUIREMENTS) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    shutil.rmtree(cache / "venv", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(cache / "venv")], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *shlex.split(pip_args), *TEST_REQUIREMENTS], check=True
    )
    stamp.write_text(wanted)
    return python


# -- run ---------------------------------------------------------------------------------------


@dataclass
class Outcomes:
    """Per test id: passed / failed / error / skipped."""

    by_test: dict[str, str] = field(default_factory=dict)
    returncode: int = 0
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.by_test.values() if o == outcome)

    def summary(self) -> dict[str, int]:
        return {k: self.count(k) for k in ("passed", "failed", "error", "skipped")}


def parse_junit(path: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    if not path.exists():
        return outcomes
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                break
        outcomes[test_id] = outcome
    return outcomes


def run_tests(python: Path, project: Path, suite: Suite, report: Path, timeout: int) -> Outcomes:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [
        str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
        f"--rootdir={project}", f"--junitxml={report}", *suite.tests,
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)
    (report.with_suffix(".log")).write_text(done.stdout + done.stderr)
    return Outcomes(parse_junit(report), done.returncode, time.monotonic() - started)


def prepare(source: Path, target: Path, suite: Suite) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    for name in suite.setup_files:
        (target / name).touch()


def migrate(project: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from codemods.api import Options, migrate as run_migration

    report = run_migration([project], Options(mode="write"))
    return {
        "rewrites": dict(sorted(report.rewrites.items())),
        "changed_files": len(report.changed),
        "problems": [str(p) for p in report.problems],
        "findings": [f"{Path(f.path).relative_to(project)}:{f.line}: {f.code} {f.message}" for f in report.findings],
    }


def compare(suite: Suite, before: Outcomes, after: Outcomes, migration: dict) -> dict:
    regressions = sorted(t for t, o in before.by_test.items() if o == "passed" and after.by_test.get(t) != "passed")
    fixed = sorted(t for t, o in after.by_test.items() if o == "passed" and before.by_test.get(t) != "passed")
    passed = after.count("passed")
    return {
        "project": f"{suite.name} {suite.version}",
        "before": before.summary(),
        "after": after.summary(),
        "target_passed": suite.min_passed,
        "regressions": regressions,
        "newly_passing": len(fixed),
        "met": passed >= suite.min_passed and not regressions,
        "migration": migration,
        "seconds": {"before": round(before.seconds, 1), "after": round(after.seconds, 1)},
    }


def run_suite(suite: Suite, cache: Path, python: Path, timeout: int) -> dict:
    source = fetch(suite, cache)
    work = cache / "work" / suite.folder
    work.mkdir(parents=True, exist_ok=True)
    before_dir, after_dir = work / "before", work / "after"
    prepare(source, before_dir, suite)
    prepare(source, after_dir, suite)
    migration = migrate(after_dir)
    before = run_tests(python, before_dir, suite, work / "before.xml", timeout)
    after = run_tests(python, after_dir, suite, work / "after.xml", timeout)
    return compare(suite, before, after, migration)


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
        applied = ", ".join(f"{c}×{n}" for c, n in r["migration"]["rewrites"].items()) or "none"
        lines.append(
            f"| {r['project']} | {_cell(r['before'])} | {_cell(r['after'])} | >= {r['target_passed']} passed"
            f" {'✓' if r['met'] else '✗'} | {len(r['regressions'])} | {applied} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("fetch", "venv", "run"))
    parser.add_argument("names", nargs="*", help="suites to use (default: all)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--pip-args", default="", help="extra arguments for `pip install` of the test deps")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per test run")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every suite meets its target")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--markdown", type=Path, help="write the results table as Markdown")
    args = parser.parse_args(argv)

    suites = [s for s in SUITES if not args.names or s.name in args.names]
    if not suites:
        parser.error(f"unknown suite; known: {', '.join(s.name for s in SUITES)}")
    cache = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    inside = subprocess.run(["git", "-C", str(cache), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if inside.returncode == 0:
        parser.error(f"--cache {cache} lies inside the git repository {inside.stdout.strip()}; choose another")
    if args.command == "fetch":
        for suite in suites:
            print(fetch(suite, cache))
        return 0
    python = build_venv(cache, args.pip_args)
    if args.command == "venv":
        print(python)
        return 0
    results = [run_suite(s, cache, python, args.timeout) for s in suites]
    table = markdown(results)
    print(table)
    for r in results:
        if r["regressions"]:
            print(f"{r['project']}: regressions: {', '.join(r['regressions'])}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(table)
    return 0 if not args.check or all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
