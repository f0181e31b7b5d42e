"""What `from torch.X import *` binds, for the torch modules old code star-imports: a table made by
scripts/gen_star_exports.py (codemods/data/torch_star_exports.json). Both `ast` readers of
names use it: the repository facts (helpers/facts/) and one file's scan (helpers/scan.py).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def torch_star_exports() -> dict[str, frozenset[str]]:
    """Torch module -> the names its star import binds."""
    from codemods.gates import data_table  # read as a file: importlib.resources costs imports per run

    table = data_table("torch_star_exports.json")
    return {module: frozenset(names) for module, names in table.items()}
