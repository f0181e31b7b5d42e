"""The codemod pipeline: one ordered table, and how a selection is made from it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from codemods.helpers.codemod import MigrationCodemod
from codemods.transforms import checkpoint_reentrant, legacy_syntax, loss_reduction, scalar_item, variable_removal


class Safety(str, enum.Enum):
    SAFE = "safe"  # on by default; behaviour kept (or a crash becomes a correct run)
    REVIEW = "review"  # on by default; every change listed for review with its reason
    UNSAFE = "unsafe"  # only with --unsafe


@dataclass(frozen=True)
class Spec:
    code: str
    name: str
    codemod: type[MigrationCodemod]
    safety: Safety
    triggers: tuple[str, ...]
    """Regular expressions; a file matching none of them is never parsed for this codemod."""

    @cached_property
    def trigger(self) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{t})" for t in self.triggers))

    @property
    def summary(self) -> str:
        return self.codemod.DESCRIPTION

    @property
    def doc(self) -> str:
        return self.codemod.__doc__ or ""

    def fires_on(self, text: str) -> bool:
        return self.trigger.search(text) is not None


PIPELINE: tuple[Spec, ...] = (
    # First: it runs before parsing, and a file it repairs is what every other codemod reads.
    Spec("TM000", "legacy-syntax", legacy_syntax.LegacySyntax, Safety.SAFE, legacy_syntax.triggers()),
    Spec("TM001", "loss-reduction", loss_reduction.LossReduction, Safety.SAFE, loss_reduction.triggers()),
    Spec("TM002", "variable-removal", variable_removal.VariableRemoval, Safety.SAFE, variable_removal.triggers()),
    # After TM002: `Variable(loss).data[0]` must first lose its wrapper to be seen as a loss.
    Spec("TM003", "scalar-item", scalar_item.ScalarItem, Safety.SAFE, scalar_item.triggers()),
    Spec(
        "TM005",
        "checkpoint-reentrant",
        checkpoint_reentrant.CheckpointReentrant,
        Safety.SAFE,
        checkpoint_reentrant.triggers(),
    ),
)

_BY_KEY = {**{s.code: s for s in PIPELINE}, **{s.name: s for s in PIPELINE}}


class SelectionError(ValueError):
    pass


def get(key: str) -> Spec:
    """A spec by code (`TM001`) or name (`loss-reduction`)."""
    try:
        return _BY_KEY[key.strip().upper() if key.strip().upper() in _BY_KEY else key.strip()]
    except KeyError:
        raise SelectionError(f"unknown codemod {key!r}; `torch-migrate list` shows them") from None


def _matching(keys: Iterable[str]) -> set[str]:
    codes: set[str] = set()
    for raw in keys:
        key = raw.strip()
        if not key:
            continue
        upper = key.upper()
        hits = {s.code for s in PIPELINE if s.code.startswith(upper) or s.name == key}
        if upper == "ALL":
            hits = {s.code for s in PIPELINE}
        if not hits:
            raise SelectionError(f"unknown codemod or prefix {key!r}; `torch-migrate list` shows them")
        codes |= hits
    return codes


def select(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe: bool = False,
) -> tuple[Spec, ...]:
    """The specs to run, in PIPELINE order. Codes, names and prefixes (`TM1`) are accepted.

    Unsafe codemods run only with `unsafe=True`, even when selected by name.
    """
    chosen = _matching(select) if select else {s.code for s in PIPELINE}
    dropped = _matching(ignore) if ignore else set()
    return tuple(
        s
        for s in PIPELINE
        if s.code in chosen and s.code not in dropped and (unsafe or s.safety is not Safety.UNSAFE)
    )
