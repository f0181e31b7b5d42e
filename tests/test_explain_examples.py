"""Every `explain` page is executable, as Fixit's rule docs are: its Example, run through its
own codemod alone (the newest target torch), gives exactly its Use instead; a findings-only
check's Example yields its finding and is left as it is. The blocks are read with the parsing
`explain` itself uses (codemods/docs.py), so what a user reads is what is tested.

The one liberty a page takes, besides trailing whitespace: helpers a codemod generates into the
file are named on one comment line instead of printed (docs.elided_helpers); the output must
define exactly those names there, and nothing else."""

from __future__ import annotations

import ast

import pytest

from codemods import docs, registry
from codemods.api import transform_source

REWRITING = registry.PIPELINE
REPORTING = registry.CHECKS  # findings only (TM9xx)


def _blocks(spec: registry.Spec) -> tuple[str, str]:
    """The page's Example and Use instead code, one ```python block each."""
    parts = docs.sections(docs.page(spec))
    example, use_instead = docs.python_blocks(parts["Example"]), docs.python_blocks(parts["Use instead"])
    assert len(example) == 1, f"{spec.code}: the Example should hold one python block, not {len(example)}"
    assert len(use_instead) == 1, f"{spec.code}: Use instead should hold one python block, not {len(use_instead)}"
    return example[0], use_instead[0]


def _lines(code: str) -> list[str]:
    """`code`'s lines without trailing whitespace, and without blank lines at its end."""
    return [line.rstrip() for line in code.rstrip().splitlines()]


def _top_level_names(code: str) -> list[str]:
    """The names `code` binds at module level, in order; only definitions and assignments, so an
    elided part cannot hide a call, an import or a rewrite of the user's code."""
    names = []
    for statement in ast.parse(code).body:
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            names.append(statement.name)
        elif isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
            names.extend(t.id for t in statement.targets)
        else:
            raise AssertionError(f"an elided part holds more than definitions: {ast.dump(statement)[:80]}")
    return names


def _assert_written(output: str, use_instead: str) -> None:
    written, shown = _lines(output), _lines(use_instead)
    elisions = [(index, docs.elided_helpers(line)) for index, line in enumerate(shown) if docs.elided_helpers(line)]
    if not elisions:
        assert "\n".join(written) == "\n".join(shown)
        return
    assert len(elisions) == 1, "one elided part per page"
    index, helpers = elisions[0]
    head, tail = shown[:index], shown[index + 1 :]
    assert len(written) >= len(head) + len(tail)
    assert "\n".join(written[: len(head)]) == "\n".join(head)
    assert "\n".join(written[len(written) - len(tail) :]) == "\n".join(tail)
    assert _top_level_names("\n".join(written[len(head) : len(written) - len(tail)])) == list(helpers)


@pytest.mark.parametrize("spec", REWRITING, ids=lambda spec: spec.code)
def test_example_becomes_use_instead(spec: registry.Spec) -> None:
    example, use_instead = _blocks(spec)
    result = transform_source(example, [spec], path="example.py")
    assert result.problem is None, result.problem
    _assert_written(result.code, use_instead)


@pytest.mark.parametrize("spec", REPORTING, ids=lambda spec: spec.code)
def test_example_yields_its_finding(spec: registry.Spec) -> None:
    example, _ = _blocks(spec)
    result = transform_source(example, [spec], path="example.py")
    assert result.problem is None, result.problem
    assert result.code == example, f"{spec.code} is findings-only, yet rewrote its Example"
    assert any(f.code == spec.code for f in result.findings), f"{spec.code}: its Example yields no {spec.code} finding"


def test_every_page_is_run() -> None:
    assert sorted(spec.code for spec in (*REWRITING, *REPORTING)) == sorted(spec.code for spec in registry.all_specs())
