"""The copies a verification works in, the interpreters that run them, and the state every phase shares.

`Workspace` holds a session's state (its folders, interpreters, environments, the resolved
target) and everything about copies: the pristine base, the migrated copies for each side and
for culprit trials, the environment a run in a copy gets, and keeping each copy importing its
own code. The phases (test runs, the probe, the culprit search) build on it.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Sequence

from codemods import api
from codemods.verify import copies, execute, imports, junit
from codemods.verify.commands import TestCommand
from codemods.verify.device import Device, DeviceError, default_python, detect, environment
from codemods.verify.migration import Unit, migrate_tree
from codemods.verify.model import VerifyOptions
from codemods.versions import Target

SUITE = "<test command>"  # the id of a whole run that gave no per-test results
PROBE = "<probe>"


class Abort(Exception):
    """Verification cannot go on; the message says why (status error, exit 2)."""


class Workspace:
    """A verification's state and its copies (the phases are mixins over it: see `core.Session`)."""

    def __init__(self, path: Path, options: VerifyOptions, on_event: Callable[[str], None] | None) -> None:
        self.path = path
        self.options = options
        self.say = on_event or (lambda _msg: None)
        self.workdir = Path(tempfile.mkdtemp(prefix="torch-migrate-verify-"))
        self.counter = itertools.count(1)
        self.device: Device | None = None  # the target interpreter
        self.env: dict[str, str] = {}
        # With --before-python (three sides): the original code's interpreter, for the before copy.
        self.before_device: Device | None = None
        self.before_env: dict[str, str] = {}
        self.projects: dict[str, Path] = {}  # side label -> its copy of the project
        self.pythonpath: list[str] = []  # folders, relative to a copy's root, put first on PYTHONPATH
        self.workers = 1
        self.notes: list[str] = []
        self.source: copies.Source | None = None
        self.command: TestCommand | None = None
        self.seen: dict[str, dict[str, junit.Outcome]] = {}  # side -> its first run's outcomes, expanded
        self.target: Target | None = None  # what every migration of this session is for (resolve_target)
        self.target_warning: str | None = None
        self.probe_before: execute.Completed | None = None  # the before side's probe run (probe_phase)
        self.processes = execute.Processes()  # every command this verification runs

    def pmap(self, fn: Callable, items: Sequence) -> list:
        """Map over independent runs, concurrently when there is room; Ctrl-C stops them all."""
        if self.workers <= 1 or len(items) <= 1:
            return [fn(item) for item in items]
        pool = ThreadPoolExecutor(max_workers=self.workers)
        try:
            futures = [pool.submit(fn, item) for item in items]
            return [f.result() for f in futures]
        except BaseException:
            self.processes.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def copy_root(self, project: Path) -> Path:
        return self.workdir / project.relative_to(self.workdir).parts[0]

    def env_for(self, project: Path, extra: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
        """The environment of a run in `project`'s copy (plus `extra`, the test command's own
        `NAME=value` words): the copy's own folders first on PYTHONPATH if needed."""
        env = {**(self.before_env if self.on_before(project) else self.env), **dict(extra)}
        if not self.pythonpath:
            return env
        root = self.copy_root(project)
        first = [str(root / rel) for rel in self.pythonpath]
        rest = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
        return {**env, "PYTHONPATH": os.pathsep.join(first + rest)}

    @property
    def three(self) -> bool:
        return self.before_device is not None

    @property
    def labels(self) -> list[str]:
        return ["before", "baseline", "after"] if self.three else ["before", "after"]

    def on_before(self, project: Path) -> bool:
        """Whether `project` is the before copy, which runs with the before interpreter."""
        return self.three and self.copy_root(project) == self.copy_root(self.projects["before"])

    def device_of(self, label: str) -> Device:
        return self.before_device if label == "before" and self.three else self.device

    def isolate_imports(self, after: Path, changed: Sequence[str]) -> None:
        """Make sure the copies import their own code, not the user's tree (editable installs)."""
        root = self.copy_root(after)
        rels = [str(Path(self.source.project) / rel) for rel in changed]
        roots = imports.import_roots(root, rels)
        timeout = min(self.options.timeout, 120)
        found = imports.origins(self.device.python, after, self.env_for(after), roots, timeout, self.processes)
        leaking = sorted(
            n
            for n, where in found.items()
            if not imports.inside(where, self.workdir)
            and (imports.inside(where, self.source.root) or imports.installed_copy(where, roots[n][1]))
        )
        if not leaking:
            return
        self.pythonpath = sorted({roots[n][0] for n in leaking})
        found = imports.origins(self.device.python, after, self.env_for(after), leaking, timeout, self.processes)
        still = sorted(n for n, where in found.items() if not imports.inside(where, root))
        if still:
            raise Abort(
                f"{', '.join(still)} would be imported from {self.source.root}, not from the copy "
                "(an editable install that cannot be overridden?); both sides would test the original code"
            )
        self.notes.append(
            f"{', '.join(leaking)} would be imported from outside the copies (an installed or editable "
            "package, or PYTHONPATH); each copy puts its own folder first on PYTHONPATH to test its own code"
        )

    def migration_options(self) -> api.Options:
        o = self.options
        return api.Options(
            mode="write", select=o.select, ignore=o.ignore, unsafe=o.unsafe, exclude=o.exclude, use_config=o.use_config,
            target_torch=o.target_torch,
        )  # fmt: skip

    def resolve_target(self, asked: Callable[[], dict[str, Device]]) -> tuple[Target, str | None]:
        """The torch to migrate for (api.target_for), decided in the user's tree: without an
        explicit one, the target interpreter's torch. An interpreter that cannot answer leaves
        the repository's pin (its error is reported once the migration is known to change files)."""

        def interpreter() -> Target | None:
            try:
                device = asked()["target"]
            except Abort:
                return None
            return api.interpreter_target(device.torch, device.python)

        return api.targeting([self.path], self.migration_options(), interpreter)

    def new_copy(self, label: str, without: Iterable[Unit] | None = None, jobs: int | None = 1):
        """A fresh copy of the pristine base; migrated (minus `without`) unless `without` is None.

        `jobs=None` (a process pool) only from the main thread before any run starts.
        """
        root = copies.clone_copy(self.workdir / "base", self.workdir / f"{label}-{next(self.counter)}")
        project = self.source.project_in(root)
        report = None
        if without is not None:
            report = migrate_tree(project, self.migration_options(), without, jobs=jobs, target=self.target)
        return root, project, report

    def prepare(self, asked: Callable[[], dict[str, Device]]) -> tuple[Path, Path, api.Report]:
        self.say("copying the project")
        try:
            self.source = copies.source_of(self.path)
            copies.make_copy(self.source, self.workdir / "base")
        except copies.CopyError as exc:
            raise Abort(str(exc)) from None
        before_root, before, _ = self.new_copy("before")
        self.target, self.target_warning = self.resolve_target(asked)
        _, after, report = self.new_copy("after", without=(), jobs=None)
        self.projects = {"before": before, "after": after}
        return before, after, report

    def ask(self, python: str, which: str) -> Device:
        if os.sep in python:  # a path: relative to where the user is, not to the copies
            python = os.path.abspath(python)
        self.say(f"asking {python} ({which}) about torch and CUDA")
        try:
            return detect(python, self.options.device, timeout=min(self.options.timeout, 300), processes=self.processes)
        except DeviceError as exc:
            raise Abort(f"{which} interpreter: {exc}" if self.options.before_python else str(exc)) from None

    def ask_all(self) -> Callable[[], dict[str, Device]]:
        """Ask the interpreters about themselves in the background (each imports torch: seconds),
        while the project is copied and migrated; the result waits for them."""
        wanted = {"target": default_python(self.options.python)}
        if self.options.before_python:
            wanted["before"] = self.options.before_python
        pool = ThreadPoolExecutor(max_workers=len(wanted))
        futures = {which: pool.submit(self.ask, python, which) for which, python in wanted.items()}
        pool.shutdown(wait=False)
        return lambda: {which: future.result() for which, future in futures.items()}

    def setup_device(self, asked: Callable[[], dict[str, Device]]) -> list[str]:
        """With a distinct before interpreter, three sides."""
        notes = []
        devices = asked()
        self.device = devices["target"]
        self.env = environment(self.device.python, self.options.device)
        if self.options.before_python:
            before = devices["before"]
            for which, device in (("before", before), ("target", self.device)):
                if device.torch is None:
                    why = device.torch_error or "not installed"
                    raise Abort(f"the {which} interpreter {device.python} has no torch ({why}); both sides need one")
            if os.path.abspath(before.python) == os.path.abspath(self.device.python):  # not realpath: venvs link one base
                notes.append("--before-python is the target interpreter: two sides, as without it")
            else:
                self.before_device = before
                self.before_env = environment(before.python, self.options.device)
                _, self.projects["baseline"], _ = self.new_copy("baseline")
        parallel = self.options.parallel
        if parallel is None:
            # Two suites sharing one GPU can run each other out of memory: that is not a regression.
            parallel = (os.cpu_count() or 1) >= 2 and not self.device.uses_cuda
        self.workers = len(self.labels) if parallel else 1
        return notes


def last_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(no output)"
