"""Measuring the after side with coverage.py: every command run in the after copy, and every
Python process it starts, records which lines of the changed files ran.

The hook is a `sitecustomize` module in a folder of the verification's own, last on the after
copy's PYTHONPATH: each Python process of the proof (pytest, a probe command, the smoke runner,
their subprocesses) starts coverage as it starts (`coverage.process_startup`, the documented
way to measure subprocesses), then hands over to the interpreter's own `sitecustomize`, if any.
Coverage is the target interpreter's own when it has coverage 7 or newer, else this tool's,
imported from a folder that holds nothing else (its C tracer loads only where it was built for
that Python; coverage then uses its Python tracer, or `sys.monitoring` on 3.12+). Only the
changed files are measured (`include`), so everything else runs at full speed. Whatever goes
wrong stays out of the run measured: the process runs unmeasured and leaves a note saying why,
and the report says "rewrite coverage unavailable: <why>".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterable

from codemods.verify.rewrite_coverage import RewriteCoverage, measure
from codemods.verify.smoke_discover import is_smoke
from codemods.verify.workspace import Workspace

HOOK = '''\
"""Written by torch-migrate verify: measure this process with coverage.py, then run the
interpreter's own sitecustomize (if any)."""
import os
import sys


def _torch_migrate_coverage():
    data = os.environ.get("TORCH_MIGRATE_COVERAGE_DATA", "")
    try:
        try:
            import coverage
            if coverage.version_info < (7,):
                raise ImportError("coverage %s is older than 7" % coverage.__version__)
        except ImportError:
            for name in [m for m in sys.modules if m == "coverage" or m.startswith("coverage.")]:
                del sys.modules[name]
            sys.path.insert(0, os.environ["TORCH_MIGRATE_COVERAGE_LIB"])
            try:
                import coverage
            finally:
                del sys.path[0]
        coverage.process_startup()  # a no-op where coverage's own .pth file started it already
        if getattr(coverage.process_startup, "coverage", None) is not None:
            open(os.path.join(data, "started-%d" % os.getpid()), "w").close()
    except Exception as exc:
        try:
            with open(os.path.join(data, "unavailable-%d" % os.getpid()), "w") as out:
                out.write("%s: %s" % (type(exc).__name__, exc))
        except Exception:
            pass


_torch_migrate_coverage()
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_ours = sys.modules.pop("sitecustomize")
try:
    import sitecustomize  # noqa: F401  the interpreter's own, which then stands for this one
except ImportError as exc:
    sys.modules["sitecustomize"] = _ours  # importlib hands back what sys.modules holds
    if exc.name != "sitecustomize":
        raise
'''

QUIET = "no-data-collected, module-not-measured, module-not-imported, no-ctracer, no-sysmon, couldnt-parse"


class CoverageRuns(Workspace):
    """The after copy's runs, measured between `start_coverage` and `rewrite_coverage`."""

    coverage_dir: Path | None = None
    coverage_env: dict[str, str] | None = None

    def env_for(self, project: Path, extra: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
        env = super().env_for(project, extra)
        after = self.projects.get("after")
        if self.coverage_env is None or after is None or self.copy_root(project) != self.copy_root(after):
            return env
        hook = self.coverage_env["PYTHONPATH"]
        path = os.pathsep.join(p for p in (env.get("PYTHONPATH"), hook) if p)
        return {**env, **self.coverage_env, "PYTHONPATH": path}

    def start_coverage(self, changed: Iterable[str]) -> None:
        """Measure the after copy's changed Python files from now on (notebooks cannot be)."""
        after = self.projects["after"]
        files = [os.path.realpath(after / rel) for rel in changed if rel.endswith(".py")]
        if not files or not self.options.coverage:
            return
        self.coverage_dir = self.workdir / "coverage"
        self.coverage_env = hook_env(self.coverage_dir, files, getattr(self.device, "python_version", None))

    def rewrite_coverage(self, report) -> None:
        """Stop measuring and put what the proofs executed in `report.coverage`."""
        root, self.coverage_env = self.coverage_dir, None
        migration = report.migration
        if migration is None or (root is None and self.options.coverage):
            return
        proofs = []
        if report.sides:
            if any(not is_smoke(c.id) for c in report.changes) or not report.changes:
                proofs.append("the tests")
            if any(is_smoke(c.id) for c in report.changes):
                proofs.append("the smoke checks")
        if report.probe is not None:
            proofs.append("the probe")
        before = self.projects["before"]
        after = self.projects["after"]
        changed = [f for f in migration.changed if f.path.endswith(".py") and (before / f.path).exists()]  # not a new file
        files = []
        for f in changed:
            old = (before / f.path).read_bytes().decode("utf-8", "surrogateescape")
            files.append((f, old, report.verified_files.get(f.path) or (after / f.path).read_bytes()))
        result = RewriteCoverage(0, proofs=tuple(proofs))
        result.unmeasured = [f.path for f in migration.changed if not f.path.endswith(".py")]
        try:
            if root is None:
                ran, why = None, "not measured (--no-coverage)"
            else:
                ran, why = _read(root / "data", {f.path: os.path.realpath(after / f.path) for f in changed})
            result.rewrites, result.unexercised = measure(files, ran or {})
        except Exception as exc:  # never fail a verification because of its evidence of coverage
            ran, why = None, f"{type(exc).__name__}: {exc}"
        if ran is None:
            result.unavailable = why
        else:
            result.exercised = result.rewrites - len(result.unexercised)
        report.coverage = result


def hook_env(root: Path, files: list[str], python_version: str | None) -> dict[str, str]:
    """Make, under `root`, the hook, the coverage folder and the configuration that measures
    `files` (real paths); the environment variables that turn it on in a process."""
    hook, lib, data = root / "hook", root / "lib", root / "data"
    for folder in (hook, lib, data):
        folder.mkdir(parents=True, exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    package = _our_coverage()
    if package is not None:
        try:
            (lib / "coverage").symlink_to(package, target_is_directory=True)
        except OSError:
            shutil.copytree(package, lib / "coverage")
    include = "".join(f"\n    {f}" for f in files)
    (root / "coveragerc").write_text(
        f"[run]\nparallel = true\ndata_file = {data / '.coverage'}\ninclude ={include}\ndisable_warnings = {QUIET}\n",
        encoding="utf-8",
    )
    env = {
        "PYTHONPATH": str(hook),
        "COVERAGE_PROCESS_START": str(root / "coveragerc"),
        "TORCH_MIGRATE_COVERAGE_DATA": str(data),
        "TORCH_MIGRATE_COVERAGE_LIB": str(lib),
    }
    version = tuple(int(p) for p in str(python_version or "0").split(".")[:2] if p.isdigit())
    if version >= (3, 12):
        env["COVERAGE_CORE"] = "sysmon"  # far cheaper than a trace function
    return env


def _our_coverage() -> Path | None:
    """This tool's coverage package, for a target interpreter that lacks one."""
    try:
        import coverage
    except ImportError:
        return None
    return Path(coverage.__file__).parent


def _read(data: Path, paths: dict[str, str]) -> tuple[dict[str, set[int]] | None, str]:
    """Lines that ran per changed file, from every data file written; None and why, when no
    process could be measured."""
    started = list(data.glob("started-*"))
    if not started:
        notes = sorted(data.glob("unavailable-*"))
        if notes:
            why = notes[0].read_text(errors="replace")
            return None, f"coverage could not start in the target interpreter ({why}); install coverage>=7 there"
        return None, "no process of the after side started coverage (a command that does not run Python, or runs it with -I/-E?)"
    try:
        from coverage import CoverageData
    except ImportError as exc:
        return None, f"coverage is not importable here ({exc}); install coverage>=7"
    ran: dict[str, set[int]] = {rel: set() for rel in paths}
    wanted = {real: rel for rel, real in paths.items()}
    for file in data.glob(".coverage.*"):
        found = CoverageData(basename=str(file))
        found.read()
        for measured in found.measured_files():
            rel = wanted.get(os.path.realpath(measured))
            if rel is not None:
                ran[rel] |= set(found.lines(measured) or ())
    return ran, ""
