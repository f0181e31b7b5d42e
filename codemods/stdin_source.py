"""`run -`: one module's text read from stdin, migrated as that file of its project would be.

Editors and pre-commit-style integrations pipe a buffer that may not be saved. `filename`
(`--stdin-filename`) names it in messages and decides, as a file there would, which
configuration applies (found from its folder upwards, unless `--config` names one), whether
`exclude` skips it and which `per-file-ignores` apply.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codemods import registry
from codemods.api import Options, repository_pin, target_for, target_warning
from codemods.config import Config, find_config, load_config
from codemods.engine.discovery import _excluded, _named_rel
from codemods.engine.pipeline import transform_source
from codemods.engine.runner import Plan, unified_diff
from codemods.engine.source import SourceError, TooLarge, decode
from codemods.helpers.facts import RepoFacts, collect_facts
from codemods.results import FileResult, Problem, Report, Status

STDIN = "-"


@dataclass(frozen=True)
class Migrated:
    """The report of the one file, and the bytes `run -` prints: the migrated text in the
    input's encoding (BOM kept), or the input as it came when nothing changed, when it is
    excluded or cannot be processed."""

    report: Report
    output: bytes


def _config(anchor: Path, options: Options) -> Config:
    if options.config_file is not None:
        return load_config(Path(options.config_file))
    return find_config(anchor) if options.use_config else Config()


def _era(specs, folder: Path, facts: RepoFacts):
    """The torch the project's code was written for, when a selected codemod asks (api._era)."""
    if not any("era" in s.facts for s in specs):
        return None
    from codemods.era import detect_era

    return detect_era(folder, facts=facts)


def migrate_stdin(data: bytes, options: Options, filename: str | None = None) -> Migrated:
    """Migrate `data` (a module's bytes) under `options` (its mode: write prints the migrated
    text, diff and check report it); `filename` as `--stdin-filename` gives it."""
    display = filename or STDIN
    anchor = Path(filename) if filename else Path(".")
    config = _config(anchor, options)
    select = options.select if options.select is not None else config.select
    ignore = options.ignore if options.ignore is not None else config.ignore
    unsafe = options.unsafe if options.unsafe is not None else config.unsafe
    specs = registry.select(select, ignore, unsafe)
    warnings = tuple(
        f"{spec.code} ({spec.name}) is selected but unsafe, so it did not run: it needs --unsafe"
        for spec in registry.held_back(select, ignore, unsafe)
    )
    root = config.source.parent if config.source else None
    target = target_for(options, config, [anchor])
    plan: Plan | None = None  # the report names its era once it is made

    def report(result: FileResult) -> Report:
        return Report(
            files=[result], mode=options.mode, codes=tuple(s.code for s in specs), fail_on_findings=options.fail_on_findings,
            warnings=warnings, target=target, era=str(plan.era) if plan is not None and plan.era is not None else None, target_warning=target_warning(target, repository_pin([anchor], config)),
        )  # fmt: skip

    if filename and _excluded(_named_rel(anchor, root), (*config.exclude, *options.exclude)):
        return Migrated(report(FileResult(display, Status.SKIPPED)), data)
    try:
        if len(data) > options.max_bytes:
            raise TooLarge(len(data), options.max_bytes)
        source = decode(data)
    except SourceError as exc:
        problem = Problem(display, exc.line, exc.reason)
        return Migrated(report(FileResult(display, Status.ERROR, problem=problem)), data)
    facts = RepoFacts()
    if any(s.reads_repo for s in specs):
        facts = collect_facts([(display, source.text)])
    plan = Plan(
        specs=specs, mode=options.mode, device_name=options.device_name or config.device_name, facts=facts,
        per_file_ignores=config.per_file_ignores, max_bytes=options.max_bytes,
        root=str(root.resolve()) if root else None, target=target, era=_era(specs, root or anchor.parent, facts),
    )  # fmt: skip
    rel = os.path.relpath(anchor.resolve(), plan.root) if plan.root and filename else display
    chosen = plan.specs_for(rel) if plan.per_file_ignores else specs
    result = transform_source(source.text, chosen, plan.context(display))
    if result.problem is not None:
        failed = FileResult(display, Status.ERROR, findings=result.findings, problem=result.problem)
        return Migrated(report(failed), data)
    if not result.changed:
        status = Status.UNCHANGED if result.parsed else Status.SKIPPED
        return Migrated(report(FileResult(display, status, findings=result.findings)), data)
    diff = unified_diff(source.text, result.code, display) if options.mode != "write" else None
    changed = FileResult(
        display, Status.CHANGED, dict(result.rewrites or {}), result.findings, diff=diff, notes=tuple(result.notes)
    )
    return Migrated(report(changed), source.encode(result.code))
