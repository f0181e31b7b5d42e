"""TM201 h5py-lazy-open: an `h5py.File` kept by a Dataset -> opened lazily, once per process.

`survey.py` (what the module and its Dataset classes do with h5py handles, read-only),
`plan.py` (what to change, a pure function of the survey), `rewriter.py` (the rewrite of one
class), `transform.py` (the codemod that drives them) and `runtime/` (the code written into the
migrated module, a real module read as package data). `syntax.py` holds the node predicates
they share.
"""

from codemods.transforms.h5py_lazy_open.transform import H5pyLazyOpen

__all__ = ["H5pyLazyOpen"]
