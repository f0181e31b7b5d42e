"""What torch's losses make of their legacy `size_average=`/`reduce=` flags.

TM001 rewrites the flags into `reduction=` with this mapping; TM003 uses it to tell whether a
loss call still reduces to a scalar. The loss signatures themselves are `losses()` in
`codemods/gates/loss_reduction.py` (read before parsing, so they live with the trigger regexes).
"""

from __future__ import annotations


def legacy_reduction(size_average: object, reduce: object) -> str:
    """torch.nn._reduction.legacy_get_string, for literal values."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    if reduce:
        return "sum"
    return "none"
