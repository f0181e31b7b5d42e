"""TM201 h5py-lazy-open: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


H5_FILE = "h5py.File"


def triggers() -> tuple[str, ...]:
    # A bare literal: `re` finds it with a fast substring search (a leading `\b` is ~100x slower).
    return (r"h5py",)


def may_act(scan: Scan, words, facts) -> bool:
    """Every change and finding is about an opened file that something keeps: a `with
    h5py.File(...) as f:` block (most uses) closes its file itself, so its open is no site —
    TM201 classifies it "not kept", and no dataset receives it nor a module global holds it."""
    nodes = list(scan.nodes(words))
    # nodes() yields a `with` header's statement whole, so each with-item comes with its call
    managed = {id(n.context_expr) for n in nodes if isinstance(n, ast.withitem)}
    return any(
        isinstance(n, ast.Call) and id(n) not in managed and H5_FILE in scan.qualified(n.func) for n in nodes
    )


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM201",
    name="h5py-lazy-open",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.h5py_lazy_open:H5pyLazyOpen",
    triggers=triggers(),
    facts=("dataset_classes", "loader_classes"),
    summary="self.f = h5py.File(p) in Dataset.__init__ -> one lazily opened handle per process",
    gate=GATE,
)
