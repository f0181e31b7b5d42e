"""The collectors of facts about models wrapped in `DataParallel`/`DistributedDataParallel`: a
trainer's `self.model` is often wrapped in one file and saved in another, so whether a saved
`state_dict` carries the `module.` prefix is a repository-wide question.
"""

from __future__ import annotations

import ast

from codemods.helpers.facts.collector import Collector, ParsedFile, Part, mentions
from codemods.helpers.wrapped import WRAPPER_NAMES, ast_unmoved

_NAMES_A_WRAPPER = mentions("DataParallel")  # DistributedDataParallel holds it too


def _wraps(file: ParsedFile) -> Part:
    """Whether the file calls a DataParallel/DDP anywhere (spelled as its imports say)."""
    return any(
        isinstance(node, ast.Call) and (name := file.qualified(node.func)) is not None and name.rsplit(".", 1)[-1] in WRAPPER_NAMES
        for node in ast.walk(file.tree)
    )


DATAPARALLEL_FILES = Collector(
    name="dataparallel_files",
    summary="Files (as given to the codemods) that wrap a model in DataParallel/DDP.",
    reads=_NAMES_A_WRAPPER,
    collect=_wraps,
    merge=lambda parts: frozenset(path for path, wraps in parts if wraps),
)


def _wrapped_attributes(file: ParsedFile) -> Part:
    """`x` of each `self.x = DataParallel(...)` (also `DataParallel(...).cuda()`/`.to(...)`)."""
    found = set()
    for node in ast.walk(file.tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        call = ast_unmoved(node.value)
        name = file.qualified(call.func)
        if not name or name.rsplit(".", 1)[-1] not in WRAPPER_NAMES:
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.add(target.attr)
    return sorted(found)


WRAPPED_ATTRIBUTES = Collector(
    name="wrapped_attributes",
    summary="Attribute names `x` of `self.x = DataParallel(...)`/DDP anywhere in the repo.",
    reads=_NAMES_A_WRAPPER,
    collect=_wrapped_attributes,
    merge=lambda parts: frozenset(name for _, names in parts for name in names),
)
