"""Run a snippet before and after migration: the helpers the behaviour tests share."""

from __future__ import annotations

import warnings
from typing import Any

from codemods import registry
from codemods.api import transform_source


def migrate(source: str, *codes: str) -> str:
    result = transform_source(source, [registry.get(c) for c in codes])
    assert result.problem is None, result.problem
    assert result.changed, "the codemod did not rewrite the snippet"
    return result.code


def run(source: str, entry: str, *args: Any, strict: bool = False) -> Any:
    """Execute `source` as a module and call its `entry(*args)`; `strict` turns warnings into errors."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    with warnings.catch_warnings():
        if strict:
            warnings.simplefilter("error")
        exec(compile(source, "<snippet>", "exec"), namespace)
        return namespace[entry](*args)
