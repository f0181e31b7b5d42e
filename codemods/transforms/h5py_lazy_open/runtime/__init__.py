"""The runtime code TM201 writes into a migrated module, read from `lazy_h5py.py` as package data.

`lazy_h5py.py` is the code itself (`_H5Lazy`, a per-process lazy h5py handle, and its descriptor
`_H5PerProcess`); `helper()` gives the part of it that goes into a migrated module. As written,
the helper imports h5py where it opens a file (under a name of its own, so that an import of
h5py that only the rewritten opens used is seen as unused and goes), for a module that binds
h5py only inside functions; `helper(spelling)` opens files through the module's own import
instead (`h5py.File`, `h5.File`, `H5File`), so that the module keeps one import of h5py and
uses it.
"""

from __future__ import annotations

from functools import lru_cache

LAZY = "_H5Lazy"
DESCRIPTOR = "_H5PerProcess"
# The names the helper defines at module level besides LAZY and DESCRIPTOR.
INHERITED = "_H5_INHERITED"

# The line in lazy_h5py.py after which its text is copied into a migrated module.
_MARKER = "# TM201 copies everything below this line into a migrated module.\n"

_IMPORT_AND_OPEN = """\
                import h5py as _h5py

                self._value, self._pid = _h5py.File(*self.args, **self.kwargs), pid
"""


@lru_cache(maxsize=None)
def _copied_text() -> str:
    # Imported here, not at the top: only a module with a migrated Dataset needs the helper,
    # and importlib.resources is slow enough to import that every other run should not pay it.
    from importlib.resources import files

    source = files(__name__).joinpath("lazy_h5py.py").read_text(encoding="utf-8")
    return source[source.index(_MARKER) + len(_MARKER):]


def helper(h5py_file: str | None) -> str:
    """The helper's text, opening files with `h5py_file` (how the module spells `h5py.File`
    at module level), or importing h5py itself when that is None."""
    text = _copied_text()
    if h5py_file is None:
        return text
    assert _IMPORT_AND_OPEN in text, "lazy_h5py.py no longer opens files the way helper() rewrites"
    return text.replace(_IMPORT_AND_OPEN, f"                self._value, self._pid = {h5py_file}(*self.args, **self.kwargs), pid\n")
