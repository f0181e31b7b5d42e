"""The code TM201 writes into a migrated module: a per-process lazy h5py handle and its descriptor.

Everything below the marker line is copied into the migrated module as it is (the migrated code
must never import torch-migrate); `runtime/__init__.py` reads it as package data. It is a real
module so that it is linted, and imported by `tests/test_h5py_runtime.py`; the TM201 behaviour
tests run the copy with real files and real DataLoader workers under `fork` and `spawn`.
"""

import os

# TM201 copies everything below this line into a migrated module.
_H5_INHERITED = []  # handles a forked child inherited: kept alive, never used or closed there


class _H5Lazy:
    """torch-migrate TM201: an h5py file (or a group/dataset read from it), opened once per process.

    It holds the arguments of `h5py.File(...)` and the keys read from the file. The file is
    opened on first use in each process and reused after that; the process id is checked, so a
    handle inherited through `fork` is never used, and pickling (DataLoader workers started with
    `spawn` or `forkserver`) carries only the arguments.
    """

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.source, self.method, self.key = None, None, None
        self._pid = self._value = self._from = None

    def __getitem__(self, key):
        return self._derive("__getitem__", key)

    def get(self, key):
        return self._derive("get", key)

    def _derive(self, method, key):
        derived = _H5Lazy()
        derived.source, derived.method, derived.key = self, method, key
        return derived

    def open(self):
        """The h5py object in this process, opening the file on first use."""
        pid = os.getpid()
        if self.source is None:
            if self._pid != pid:
                self._forget()
                import h5py as _h5py

                self._value, self._pid = _h5py.File(*self.args, **self.kwargs), pid
            return self._value
        source = self.source.open()
        if self._from is not source or self._pid != pid:
            self._forget()
            self._value, self._from, self._pid = getattr(source, self.method)(self.key), source, pid
        return self._value

    def close(self):
        """Close the file in this process; the next use opens it again."""
        if self.source is not None:
            self.source.close()
        elif self._value is not None and self._pid == os.getpid():
            self._value.close()
        self._forget()

    def _forget(self):
        if self._value is not None and self._pid != os.getpid():
            _H5_INHERITED.append(self._value)
        self._pid = self._value = self._from = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(_pid=None, _value=None, _from=None)
        return state


class _H5PerProcess:
    """torch-migrate TM201: a dataset attribute that holds an `_H5Lazy`; reading it opens the file."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        try:
            value = obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        return value.open() if isinstance(value, _H5Lazy) else value

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value

    def __delete__(self, obj):
        try:
            del obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    @staticmethod
    def close(obj, *names):
        """Close the files behind `names` (all of `obj`'s when none is given) in this process."""
        for name, value in list(vars(obj).items()):
            if isinstance(value, _H5Lazy) and (not names or name in names):
                value.close()
