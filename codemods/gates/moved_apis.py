"""TM014 moved-apis, before parsing: its table and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Gate, data_table


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("moved_apis.json")


def triggers() -> tuple[str, ...]:
    return (
        r"\bfunctorch\b",
        r"\b_register_pytree_node\b",
        r"\b(?:remove_)?weight_norm\b",
        r"\bsdp_kernel\b",
        r"\bUpsampling(?:Nearest|Bilinear)2d\b",
        r"\brequire_grad\b",
    )


# `.weight_g`/`.weight_v` reads are reported (in a file that applies weight_norm) off trigger lines.
GATE = Gate(sites=(r"\bweight_[gv]\b",))
