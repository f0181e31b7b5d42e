"""TM202 loss-accumulation: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    """`total += name...` or `total = total + name...`: an addition of something that is not a literal.

    Each starts with a literal character, so that `re` can skip ahead (a leading `\\b` or `\\w`
    makes it try every position: 100x slower on a file with no match).
    """
    return (r"\+=[ \t]*[A-Za-z_]", r"=[ \t]*\w+[ \t]*\+[ \t]*[A-Za-z_]")


SPEC = Spec(
    code="TM202",
    name="loss-accumulation",
    stage=Stage.REWRITE,
    safety=Safety.UNSAFE,
    target="codemods.transforms.loss_accumulation:LossAccumulation",
    triggers=triggers(),
    summary="total += loss (a Python number accumulating a loss tensor) -> total += loss.item()",
)
