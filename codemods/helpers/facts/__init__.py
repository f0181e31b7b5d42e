"""Whole-repository facts, from a cheap first pass with Python's own `ast` (far faster than libcst).

Per-file codemods cannot see other files; some decisions need to (is `Net` an `nn.Module`? is
this class a `Dataset`?). Each such fact is a `Collector` (collector.py): which files it reads,
what it takes from one file, how the parts merge. `COLLECTORS` is the registry; `RepoFacts` has
one attribute per collector, named as it, and is handed to every codemod (`self.file.facts`).

To add a fact: write its collector beside the others, add it to `COLLECTORS`, read it as
`self.file.facts.<name>`. The engine parses each file once for all the collectors that read it,
and the cache keeps every file's parts (engine/cache.py), so nothing else needs to change.
"""

from __future__ import annotations

import ast
from dataclasses import field, make_dataclass
from typing import Callable, Iterable, Sequence

from codemods.helpers.facts.classes import (
    CUDA_CLASSES,
    DATALOADERS,
    DATASET_CLASSES,
    LOADER_CLASSES,
    MODULE_CLASSES,
    is_dataset_base,
)
from codemods.helpers.facts.collector import Collector, ParsedFile, Part, import_aliases
from codemods.helpers.facts.gpu_selectors import GPU_SELECTORS
from codemods.helpers.facts.idioms import IDIOMS
from codemods.helpers.facts.imported_names import IMPORTED_NAMES, TopNames, imported_names_entries, top_names
from codemods.helpers.facts.parallel import DATAPARALLEL_FILES, WRAPPED_ATTRIBUTES
from codemods.helpers.star_exports import torch_star_exports

__all__ = [
    "COLLECTORS", "DATALOADERS", "Collector", "ParsedFile", "RepoFacts", "TopNames", "collect_facts", "collectors_for",
    "file_parts", "import_aliases", "imported_names_entries", "is_dataset_base", "merge_facts", "top_names",
    "torch_star_exports",
]  # fmt: skip

COLLECTORS: tuple[Collector, ...] = (
    MODULE_CLASSES,
    DATASET_CLASSES,
    DATAPARALLEL_FILES,
    LOADER_CLASSES,
    WRAPPED_ATTRIBUTES,
    CUDA_CLASSES,
    IDIOMS,
    IMPORTED_NAMES,
    GPU_SELECTORS,
)
BY_NAME: dict[str, Collector] = {collector.name: collector for collector in COLLECTORS}

# What the engine reads whatever the codemods: the names star imports and re-exports give a file
# (the trigger regexes, the output guard and the per-file cache key read them for every codemod).
ENGINE_FACTS = ("imported_names",)
ERA_FACTS = ("idioms",)  # the era (codemods/era.py), for the codemods that ask for it

RepoFacts = make_dataclass(
    "RepoFacts",
    [(collector.name, frozenset, field(default=frozenset())) for collector in COLLECTORS],
    frozen=True,
)
RepoFacts.__module__ = __name__  # where pickle (the worker processes' plan) finds it
RepoFacts.__doc__ = "The repository's facts, one frozenset of strings per collector (empty where it did not run):\n\n" + "\n".join(
    f"- `{collector.name}`: {collector.summary}" for collector in COLLECTORS
)


def collectors_for(specs: Sequence) -> tuple[Collector, ...]:
    """The collectors a run of `specs` needs: those the engine reads for every codemod, those
    the codemods declare (`Spec.facts`), and the era's idioms if one reads the era."""
    declared = {name for spec in specs for name in spec.facts}
    unknown = declared - BY_NAME.keys() - {"era"}
    if unknown:
        raise ValueError(f"no collector for the facts {sorted(unknown)} (helpers/facts/)")
    names = {*ENGINE_FACTS, *declared, *(ERA_FACTS if "era" in declared else ())}
    return tuple(collector for collector in COLLECTORS if collector.name in names)


def file_parts(
    path: str, text: str, collectors: Sequence[Collector] = COLLECTORS, repair: Callable[[str], str | None] | None = None
) -> dict[str, Part]:
    """One file's part for each of `collectors` (None: it adds nothing to that fact, because the
    collector does not read it, it does not parse, or its walk failed). Parsed once, and only
    when a collector reads it. `repair`: the text the pipeline parses of a file that does not
    parse (TM000's text stage), or None; its facts are that text's, as the codemods see it (else
    a second run, on the repaired file, would know more and change it again)."""
    reading = [collector for collector in collectors if collector.reads(text)]
    parts: dict[str, Part] = {collector.name: None for collector in collectors}
    if not reading:
        return parts
    try:
        file = ParsedFile(path, text, ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        fixed = repair(text) if repair is not None else None
        if fixed is None:
            return parts  # the file simply adds nothing
        return file_parts(path, fixed, collectors)
    for collector in reading:
        try:
            parts[collector.name] = collector.collect(file)
        except (ValueError, RecursionError, MemoryError):
            pass  # too deeply nested for a walk: the file adds nothing to this fact
    return parts


def merge_facts(collectors: Sequence[Collector], files: Iterable[tuple[str, dict[str, Part]]]) -> RepoFacts:
    """The repository's facts from its files' `(path, file_parts(...))`, in the files' order."""
    files = list(files)
    values = {}
    for collector in collectors:
        found = [(path, parts[collector.name]) for path, parts in files if parts.get(collector.name) is not None]
        values[collector.name] = collector.merge(found)
    return RepoFacts(**values)


def collect_facts(
    sources: Iterable[tuple[str, str]],
    collectors: Sequence[Collector] = COLLECTORS,
    repair: Callable[[str], str | None] | None = None,
) -> RepoFacts:
    """Facts from `(path, text)` pairs, as a run gathers them (without its cache)."""
    return merge_facts(collectors, ((path, file_parts(path, text, collectors, repair)) for path, text in sources))
