"""TM902 empty-cache-without-del: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate, Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"\bempty_cache\b",)


GATE = Gate(sites=(r"\bdel\b",))


SPEC = Spec(
    code="TM902",
    name="empty-cache-without-del",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.empty_cache_without_del:EmptyCacheWithoutDel",
    triggers=triggers(),
    summary="torch.cuda.empty_cache() with nothing deleted before it",
    gate=GATE,
)
