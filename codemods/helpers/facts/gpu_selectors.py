"""The collector of the functions that select the GPU (set `CUDA_VISIBLE_DEVICES`), anywhere in
the repository: a script often calls a helper of another file (`misc.auto_select_gpu(...)`), and
the device TM101 defines must come after that call (helpers/gpu_selection.py)."""

from __future__ import annotations

from codemods.helpers.facts.collector import Collector, ParsedFile, Part, mentions
from codemods.helpers.gpu_selection import selecting_functions


def _selectors(file: ParsedFile) -> Part:
    """`[name, pure]` of each function of the file that selects the GPU."""
    return sorted([name, pure] for name, pure in selecting_functions(file.text, file.tree).items()) or None


def _merge(parts) -> frozenset[str]:
    return frozenset(f"{name}\t{int(pure)}" for _, found in parts for name, pure in found)


GPU_SELECTORS = Collector(
    name="gpu_selectors",
    summary="`name\\tpure` of each function that sets CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER (pure: 1 when it does nothing else with CUDA).",
    reads=mentions("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"),
    collect=_selectors,
    merge=_merge,
)


def selectors(fact: frozenset[str]) -> dict[str, bool]:
    """The fact as name -> pure (a name two files define is pure only where both are)."""
    found: dict[str, bool] = {}
    for entry in fact:
        name, _, pure = entry.partition("\t")
        found[name] = found.get(name, True) and pure == "1"
    return found
