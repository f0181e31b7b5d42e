"""TM006 deprecated-api, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Gate, data_table
from codemods.helpers.scan import Scan


# Short names that are also everyday words (or current torch names) trigger only in the spellings
# the deprecated function can have: `init.normal(`, `F.sigmoid(`, `torch.range(`, or an import.
_INIT_COMMON = ("normal", "uniform", "constant", "eye", "sparse")
_TORCH_COMMON = ("sigmoid", "tanh")  # torch.sigmoid is current; F.sigmoid is not
_DOTTED_COMMON = ("range", "ger")
_LINALG_COMMON = ("solve", "eig", "qr")  # torch.linalg.solve is current
_COMMON = frozenset(_INIT_COMMON + _TORCH_COMMON + _DOTTED_COMMON + _LINALG_COMMON)


@lru_cache(maxsize=None)
def table() -> dict[str, dict]:
    """Qualified name (and every alias) -> entry."""
    data = data_table("deprecated_api.json")
    by_name = {}
    for name, entry in data.items():
        entry = {**entry, "name": name}
        by_name[name] = entry
        for alias in entry["aliases"]:
            by_name[alias] = entry
    return by_name


def triggers() -> tuple[str, ...]:
    short = sorted({name.rsplit(".", 1)[-1] for name in table()})
    rare = [n for n in short if n not in _COMMON]
    return (
        rf"\b(?:{'|'.join(rare)})\b",
        rf"\binit\s*\.\s*(?:{'|'.join(_INIT_COMMON)})\s*\(",
        r"\binit\s+as\b",  # `from torch.nn import init as winit`
        rf"(?<!torch)\.\s*(?:{'|'.join(_TORCH_COMMON)})\s*\(",
        rf"\.\s*(?:{'|'.join(_DOTTED_COMMON)})\s*\(",
        rf"(?<!linalg)\.\s*(?:{'|'.join(_LINALG_COMMON)})\s*\(",
        rf"\bfrom\s+torch[\w.]*\s+import\s+(?:\([^)]*|[^\n]*)\b(?:{'|'.join(sorted(_COMMON))})\b",
    )


def may_act(scan: Scan, words, facts) -> bool:
    """A call that may resolve to a table entry (everything this codemod does starts in
    leave_Call); `x.normal_(...)`, `np.eye(3)` and `torch.linalg.qr` on the trigger lines are not."""
    return scan.calls(words, table().keys())


GATE = Gate(may_act=may_act)
