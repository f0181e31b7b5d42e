"""The Python API: everything the CLI does, usable without click.

    from codemods.api import migrate, Options
    report = migrate(["path/to/repo"], Options(mode="diff"))
    print(report.exit_code, report.rewrites)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from codemods import pins, registry
from codemods.config import Config, find_config, load_config
from codemods.engine import cache, pipeline
from codemods.engine.cache import Cache, content_digest
from codemods.engine.discovery import discover
from codemods.engine.gc_pause import paused_gc
from codemods.engine.interrupt import Interrupted  # noqa: F401 - raised by migrate()
from codemods.engine.runner import Plan, apart, in_processes, run_files
from codemods.engine.source import SourceError, decode, read_limited, read_open
from codemods.helpers.context import FileContext
from codemods.helpers.facts import BY_NAME, Collector, RepoFacts, collect_facts, collectors_for, file_parts, merge_facts
from codemods.results import FileResult, Problem, Report, Status
from codemods.versions import NEWEST, OLDEST, Target, format_version, parse_version, target_version

MODES = ("write", "diff", "check")
_FACTS_POOL_THRESHOLD = 200


@dataclass(frozen=True)
class Options:
    """Run options. `None` means "take it from the target's config, else the default"."""

    mode: str = "write"
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    unsafe: bool | None = None
    exclude: tuple[str, ...] = ()
    device_name: str | None = None
    jobs: int | None = None
    max_bytes: int = 2_000_000
    use_config: bool = True
    cache: bool = True  # the per-file result cache (engine/cache.py); False: --no-cache
    fail_on_findings: bool = False  # open findings set exit bit 1 (by default only pending rewrites do)
    target_torch: str | None = None  # the torch the output must run on ("1.13"); None: derived (target_for)
    config_file: str | None = None  # --config: read the settings from this file instead of looking for one


def transform_source(
    source: str,
    specs: Sequence[registry.Spec] | None = None,
    path: str = "<string>",
    facts: RepoFacts | None = None,
    target_torch: str | None = None,
) -> pipeline.Result:
    """Migrate one module's text (default: every safe and review codemod) for `target_torch`
    (default: the newest torch the tables know)."""
    chosen = registry.select() if specs is None else specs
    if facts is None and any(s.reads_repo for s in chosen):
        facts = collect_facts([(path, source)], repair=repaired_text)
    target = target_version(target_torch) if target_torch is not None else NEWEST
    return pipeline.transform_source(source, chosen, FileContext(path=path, facts=facts or RepoFacts(), target_torch=target))


def _config(paths: Sequence[Path], options: Options) -> Config:
    if options.config_file is not None:
        return load_config(Path(options.config_file))
    if not options.use_config or not paths:
        return Config()
    return find_config(paths[0])


def _facts(
    files: Iterable[Path],
    specs: Sequence[registry.Spec],
    cache_dir: Path | None = None,
    jobs: int | None = None,
    digests: dict[str, tuple[bytes, int]] | None = None,
    max_bytes: int = 2_000_000,
) -> RepoFacts:
    """The cheap whole-repo first pass: the collectors `specs` need (helpers/facts/), over every
    file they read, in `jobs` processes (it is the one serial step before the parallel pipeline
    otherwise).

    With a cache, the facts of an unchanged set of files are read back whole; else each
    unchanged file's parts are, and only the other files are read. `digests`, when given, gets
    each readable file's content digest and size (with a cache): the runner's lookups key on them.
    A file over `max_bytes` is read no further than that (the runner refuses it, saying so).
    """
    if not specs:
        return RepoFacts()
    collectors = collectors_for(specs)
    names = tuple(collector.name for collector in collectors)
    store = Cache(cache_dir) if cache_dir is not None else None
    try:
        # Here a file is only opened, to know it is readable, and read for its digest when there is
        # a cache; the workers read it. Holding every file's bytes made this process 50 MB larger on
        # the corpus, and the pipeline's workers are forked from it, each counting those pages again.
        readable: list[tuple[str, bytes]] = []  # (path, digest: empty without a cache)
        for path in files:
            try:
                with open(path, "rb") as handle:
                    data = read_open(handle, max_bytes) if store is not None else None
            except (OSError, SourceError):
                continue
            digest = content_digest(data) if data is not None else b""
            readable.append((str(path), digest))
            if digests is not None and data is not None:
                digests[str(path)] = (digest, len(data))
        key = store.facts_key(readable, names) if store is not None else None
        cached = store.get_facts(key) if store is not None else None
        if cached is not None:
            return cached
        keys = [store.parts_key(path, digest) for path, digest in readable] if store is not None else []
        parts = [store.get_parts(part_key, names) for part_key in keys] if store is not None else [None] * len(readable)
        missing = [index for index, found in enumerate(parts) if found is None]
        if jobs is not None and jobs > 1 and len(missing) >= _FACTS_POOL_THRESHOLD:  # ast is quick: a pool pays off late
            # in a child process: the pipeline's workers, forked from this one after, would each
            # count the pages the parts and their merge leave here (60 -> 35 MB on the corpus)
            if store is not None:
                store.close()  # a connection is not carried across a fork
            gathered = (collectors, readable, parts, missing, keys, key, jobs)
            return apart(_gathered, *gathered, None, cache_dir, max_bytes)
        return _gathered(collectors, readable, parts, missing, keys, key, 1, store, None, max_bytes)
    finally:
        if store is not None:
            store.close()  # freed by the cycle collector only, else (sqlite3's statement cache)


def _gathered(
    collectors: Sequence[Collector],
    readable: list[tuple[str, bytes]],
    parts: list[dict | None],
    missing: list[int],
    keys: list[str],
    key: str | None,
    jobs: int,
    store: Cache | None,
    cache_dir: Path | None = None,
    max_bytes: int = 2_000_000,
) -> RepoFacts:
    """The second half of `_facts`: the parts of the files at the `missing` indexes of `readable`
    (in `jobs` processes), stored with `store` (or a Cache of `cache_dir`) under `keys`, merged
    with those already in `parts` into the facts, stored under `key`."""
    names = tuple(collector.name for collector in collectors)
    own = store is None and cache_dir is not None
    store = Cache(cache_dir) if own else store
    try:
        chunks = _chunks(missing, jobs)
        work = [(names, [readable[index][0] for index in chunk], max_bytes) for chunk in chunks]
        for chunk, read in zip(chunks, in_processes(_file_parts, work, jobs)):
            for index, found in zip(chunk, read):
                parts[index] = found
                if store is not None and any(part is not None for part in found.values()):
                    store.put_parts(keys[index], found)  # a file that adds nothing is cheap to read again
        facts = merge_facts(collectors, ((path, found) for (path, _), found in zip(readable, parts)))
        if store is not None:
            store.put_facts(key, facts)
        return facts
    finally:
        if own and store is not None:
            store.close()


def _file_parts(job: tuple[tuple[str, ...], list[str], int]) -> list[dict]:
    """Each file's parts for the collectors named (all None for a file that does not decode, that
    can no longer be read, or that is over the size limit)."""
    names, paths, max_bytes = job
    collectors = [BY_NAME[name] for name in names]
    found = []
    for path in paths:
        try:
            text = decode(read_limited(path, max_bytes)).text
        except (OSError, SourceError):
            found.append(dict.fromkeys(names))
            continue
        with paused_gc():
            found.append(file_parts(path, text, collectors, repaired_text))
    return found


def repaired_text(text: str) -> str | None:
    """The text the pipeline parses of a file that does not parse: the text stage's repair
    (TM000), or None. The facts are gathered from it, so that they are the same whether the
    repair is still to be made (a first run) or was written (a second)."""
    stage = next((spec for spec in registry.PIPELINE if spec.stage is registry.Stage.TEXT), None)
    fixed = stage.codemod.repair_text(text) if stage is not None else None
    return fixed.text if fixed is not None and fixed.edits else None


def _chunks(items: list, jobs: int | None) -> list[list]:
    count = max(1, (jobs or os.cpu_count() or 1) * 4)
    size = -(-len(items) // count) or 1
    return [items[i : i + size] for i in range(0, len(items), size)]


def plan_for(paths: Sequence[Path], options: Options) -> tuple[Plan, Config, list[Path], list[Problem]]:
    """Resolve config and options, discover files: what `migrate` will do, without doing it."""
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {options.mode!r}")
    config = _config(paths, options)
    specs = registry.select(*_selection(options, config))
    root = config.source.parent if config.source else None
    found = discover(paths, exclude=(*config.exclude, *options.exclude), root=root)
    problems = [Problem(str(p), 0, f"cannot read: {why}") for p, why in found.unreadable]
    cache_dir = cache.default_dir(paths, config.source) if options.cache else None
    digests: dict[str, tuple[bytes, int]] = {}
    # no file to migrate: no facts to gather, no era to find (nor their imports, nor the cache)
    facts = RepoFacts()
    if found.files:
        facts = _facts(found.files, specs, cache_dir, options.jobs, digests, options.max_bytes)
    if cache_dir is not None and cache.refused(cache_dir):
        cache_dir = None  # untrusted or locked (a warning says which): the run goes on uncached
    plan = Plan(
        specs=specs,
        mode=options.mode,
        device_name=options.device_name or config.device_name,
        facts=facts,
        per_file_ignores=config.per_file_ignores,
        max_bytes=options.max_bytes,
        root=str(config.source.parent.resolve()) if config.source else None,
        cache_dir=str(cache_dir) if cache_dir is not None else None,
        target=target_for(options, config, paths),
        era=_era(paths, config, facts) if found.files and any("era" in s.facts for s in specs) else None,
        digests=digests,
    )
    return plan, config, found.files, problems


def _era(paths: Sequence[Path], config: Config, facts: RepoFacts):
    """The torch the repository's code was written for (codemods/era.py), or None: its pin, else
    the idioms the facts pass found (cached with the facts, so a warm run reads no file for it)."""
    from codemods.era import detect_era

    root = config.source.parent if config.source else Path(paths[0]) if paths else Path(".")
    return detect_era(root, facts=facts)


def target_for(
    options: Options,
    config: Config,
    paths: Sequence[Path] = (),
    interpreter: Callable[[], Target | None] | None = None,
) -> Target:
    """The torch the output must run on, the first of: `--target-torch`; the config's
    `target-torch`; under verify, the target interpreter's torch (`interpreter`, called only when
    neither decides: verify asks its interpreter in the background); the repository's torch
    requirement (`repository_pin`); the newest release the tables know."""
    if options.target_torch is not None:
        return Target(target_version(options.target_torch), "--target-torch")
    if config.target_torch is not None and config.source is not None:
        return Target(target_version(config.target_torch), f"{_display(config.source)}: target-torch")
    found = interpreter() if interpreter is not None else None
    if found is not None:
        return found
    pin = repository_pin(paths, config)
    if pin is not None:
        return _within_range(pin)
    return Target()


def repository_pin(paths: Sequence[Path], config: Config) -> Target | None:
    """The torch the repository of `paths[0]` requires (codemods/pins.py), looked for from there
    up to the config's folder, else the folder holding `.git`, not beyond."""
    if not paths:
        return None
    return pins.find_pin(Path(paths[0]), config.source.parent if config.source else None)


def interpreter_target(torch: str | None, python: str) -> Target | None:
    """The target verify derives from its interpreter's torch (`1.13.1+cpu` -> 1.13); None without one."""
    try:
        version = parse_version(torch) if torch else None
    except ValueError:
        return None
    return _within_range(Target(version, f"the torch of {python}")) if version is not None else None


def _within_range(found: Target) -> Target:
    """`found`, or the nearest release a target may be, saying so."""
    if found.version > NEWEST:
        return Target(NEWEST, f"{found.source}; {format_version(NEWEST)} is the newest the tables know")
    if found.version < OLDEST:
        return Target(OLDEST, f"{found.source}; {format_version(OLDEST)} is the oldest target")
    return found


def target_warning(target: Target, pin: Target | None) -> str | None:
    """One line when `target` is newer than the repository's pin: the output may not run there."""
    if pin is None or target.version <= pin.version:
        return None
    where = pin.source.split(":", 1)[0]
    if pin.version >= OLDEST:
        fix = f"use --target-torch {format_version(pin.version)}"
    else:
        fix = f"torch-migrate targets {format_version(OLDEST)} at the oldest"
    return (
        f"{where} pins torch {format_version(pin.version)} but the target is {format_version(target.version)}:"
        f" the output may not run there ({fix})"
    )


def targeting(
    paths: Sequence[str | Path], options: Options, interpreter: Callable[[], Target | None] | None = None
) -> tuple[Target, str | None]:
    """What a run on `paths` targets and the warning `target_warning` gives, without running it
    (verify resolves its target in the user's tree, before copying it)."""
    paths = [Path(p) for p in paths]
    config = _config(paths, options)
    target = target_for(options, config, paths, interpreter)
    return target, target_warning(target, repository_pin(paths, config))


def _selection(options: Options, config: Config) -> tuple[tuple[str, ...] | None, tuple[str, ...], bool]:
    """(select, ignore, unsafe): each option as given, else the config's."""
    return (
        options.select if options.select is not None else config.select,
        options.ignore if options.ignore is not None else config.ignore,
        options.unsafe if options.unsafe is not None else config.unsafe,
    )


def _warnings(paths: Sequence[Path], options: Options, config: Config, files: list[Path], problems: list[Problem]):
    """What a run should tell its user although nothing failed: it may have done nothing."""
    out = [
        f"{spec.code} ({spec.name}) is selected but unsafe, so it did not run: it needs --unsafe"
        " (or `unsafe = true` in the config)"
        for spec in registry.held_back(*_selection(options, config))
    ]
    if not files and not problems:
        where = ", ".join(str(p) for p in paths)
        out.append(f"no Python files (.py, .ipynb) found in {where}")
    return tuple(out)


def _display(path: Path, cwd: str | None = None) -> str:
    """The path as users should read it: relative to the working directory (`cwd`, else asked)
    when inside it. By the strings: Path.relative_to raising for each file of a tree elsewhere
    was a twentieth of a warm run."""
    if not path.is_absolute():
        return path.as_posix()
    cwd = cwd if cwd is not None else str(Path.cwd())
    absolute = str(path)
    if absolute == cwd:
        return "."
    inside = cwd if cwd.endswith(os.sep) else cwd + os.sep
    return Path(absolute[len(inside) :]).as_posix() if absolute.startswith(inside) else path.as_posix()


def migrate(
    paths: Sequence[str | Path],
    options: Options | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> Report:
    """Migrate every file under `paths` (write, or only diff/check) and return the report.

    Ctrl-C raises `Interrupted` (a KeyboardInterrupt) once the files in progress are done; its
    `results` name every file finished, so exactly the rewritten ones can be listed.
    """
    options = options or Options()
    plan, config, files, problems = plan_for([Path(p) for p in paths], options)
    warnings = _warnings([Path(p) for p in paths], options, config, files, problems)
    if on_start is not None:
        on_start(len(files))
    cwd = str(Path.cwd())
    results = run_files([(f, _display(f, cwd)) for f in files], plan, options.jobs, on_result)
    results.extend(FileResult(p.path, Status.ERROR, problem=p) for p in problems)
    warnings = (*warnings, *cache.take_notices())  # a cache not used, each said once
    codes = tuple(s.code for s in plan.specs)
    return Report(
        files=results, mode=options.mode, codes=codes, fail_on_findings=options.fail_on_findings, warnings=warnings,
        target=plan.target, target_warning=target_warning(plan.target, repository_pin([Path(p) for p in paths], config)),
        era=str(plan.era) if plan.era is not None else None,
    )  # fmt: skip
