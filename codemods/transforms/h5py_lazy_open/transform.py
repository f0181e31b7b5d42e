"""TM201: an `h5py.File` opened in a Dataset's `__init__` -> opened lazily, once per process.

The codemod drives the other modules of this package: `survey.py` reads the module and each
Dataset class, `plan.py` decides what to change, `rewriter.py` rewrites a class, and `runtime/`
holds the helper written into the migrated module.
"""

from __future__ import annotations

import libcst as cst

from codemods.base import MigrationCodemod
from codemods.helpers.placement import in_module_newlines
from codemods.helpers.spelling import ImportForm, head, import_forms
from codemods.transforms.h5py_lazy_open.plan import ClassPlan, plan_class
from codemods.transforms.h5py_lazy_open.rewriter import ClassRewriter
from codemods.transforms.h5py_lazy_open.runtime import DESCRIPTOR, INHERITED, LAZY, helper
from codemods.transforms.h5py_lazy_open.survey import is_open, read_chain, survey_class, survey_module
from codemods.transforms.h5py_lazy_open.syntax import defines_class, names_in

# Names the helper's `_H5Lazy.open` binds or reads itself: a module-level spelling of `h5py.File`
# headed by one of them would not reach it.
HELPER_NAMES = frozenset({"self", "pid", "source", "os", LAZY, DESCRIPTOR, INHERITED})


class H5pyLazyOpen(MigrationCodemod):
    """Open an `h5py.File` kept by a Dataset lazily, once in each process that reads it.

    ## What it does
    In a `torch.utils.data.Dataset` (directly, through a repo class, or any class with
    `__getitem__` that is handed to a `DataLoader`), an `h5py.File(...)` opened in `__init__` (or
    in a method `__init__` calls) and kept on `self` (`self.f = h5py.File(p)`,
    `self.x = h5py.File(p)["x"]`, or `hf = h5py.File(p)` followed by `self.x = hf.get("x")`)
    becomes an `_H5Lazy(...)` with the same arguments, and the attribute a `_H5PerProcess`
    descriptor. Reading `self.f` opens the file in the current process on first use and reuses
    the handle afterwards; `__init__` closes whatever it opened (metadata such as lengths can
    still be read there), and so does the `__init__` of a subclass in the same module that reads
    the file again; `self.f.close()` closes this process's handle. Both helpers are written into
    the migrated module. A `with` block, a lazy open, and a file that `__init__` reads in full
    (`[:]`, `[()]`, `np.array(...)`) and closes on every path are left alone (a finding when the
    closed handle stays on `self`: it cannot be pickled for spawn workers). A handle opened at
    module level and used by a Dataset, or passed into one, is reported.

    ## Why is this bad?
    A handle opened in `__init__` is shared by every `fork`ed DataLoader worker: HDF5 is not
    fork-safe, and concurrent reads through inherited handles return wrong data or crash. Under
    the `spawn` and `forkserver` start methods (the default on macOS and Windows, and in Python
    3.14 on Linux) the dataset cannot even be pickled, so `num_workers > 0` fails at once.

    ## Example
    ```python
    import h5py
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path):
            self.h5 = h5py.File(path, "r")
            self.n = len(self.h5["x"])

        def __getitem__(self, i):
            return self.h5["x"][i]
    ```

    ## Use instead
    ```python
    import h5py
    from torch.utils.data import Dataset
    import os

    # ... generated helpers, written in full: _H5_INHERITED, _H5Lazy, _H5PerProcess


    class Frames(Dataset):
        h5 = _H5PerProcess()

        def __init__(self, path):
            self.h5 = _H5Lazy(path, "r")
            self.n = len(self.h5["x"])
            _H5PerProcess.close(self)

        def __getitem__(self, i):
            return self.h5["x"][i]
    ```

    ## Fix safety
    Review: items are the same, but the file is opened when first read rather than in
    `__init__`, so a missing file fails at that first read; the attribute now opens the file on
    every fresh process, and code that relied on the handle staying open in the main process
    after `__init__` (rather than reading through the attribute) may need a look. Handles kept in
    containers, tuple assignments and local handles used for more than `[key]`/`.get(key)` reads
    are reported, not rewritten.

    ## References
    - https://docs.h5py.org/en/stable/mpi.html#using-parallel-hdf5-from-h5py (HDF5 and processes)
    - https://github.com/pytorch/pytorch/issues/11929 (h5py in DataLoader workers)
    - https://pytorch.org/docs/stable/data.html#multi-process-data-loading
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._migrated: list[str] = []  # class names, in module order
        self._lazy_attributes: dict[str, set[str]] = {}  # class name -> attributes holding an _H5Lazy
        self._loader_classes: frozenset[str] = frozenset()
        self._dataset_classes: frozenset[str] = frozenset()
        self._top_level: frozenset[int] = frozenset()  # id() of the module's own top-level classes
        self._module_handles: dict[str, cst.CSTNode] = {}
        self._open_heads: set[str] = set()  # how the rewritten opens spelled h5py.File: `h5py`, `h5`, `H5File`

    def visit_Module(self, node: cst.Module) -> None:
        facts = self.file.facts
        self._loader_classes = facts.loader_classes
        survey = survey_module(node, self, facts.dataset_classes, self._loader_classes)
        self._top_level, self._dataset_classes = survey.top_level, survey.dataset_classes
        self._module_handles = dict(survey.handles)

    # -- findings outside Dataset classes --------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        """A dataset built from an already opened h5py handle: the handle is shared by workers."""
        known = self._dataset_classes | self.file.facts.dataset_classes | self._loader_classes
        if not (isinstance(node.func, cst.Name) and node.func.value in known):
            return
        for arg in node.args:
            value = read_chain(arg.value)[0]
            if is_open(self, value):
                self.finding(
                    node,
                    f"an open h5py handle is passed into dataset `{node.func.value}`: every DataLoader worker"
                    " shares it (fork) or cannot receive it (spawn); pass the path and open it lazily inside",
                    suggestion="pass the file name; open it on first use in each worker",
                )
                return

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if id(node) in self._top_level and node.name.value in self._dataset_classes:
            self._report_module_handles(node)

    def _report_module_handles(self, node: cst.ClassDef) -> None:
        if not self._module_handles:
            return
        used = {n.value for n in names_in(node)}
        for name, assign in list(self._module_handles.items()):
            if name in used:
                del self._module_handles[name]  # one finding per handle, however many datasets read it
                self.finding(
                    assign,
                    f"h5py file `{name}` is opened at module level and read by dataset `{node.name.value}`:"
                    " DataLoader workers share the handle (fork) or cannot pickle it (spawn)",
                    suggestion="keep the file name at module level and open it lazily inside the dataset",
                )

    # -- the rewrite ------------------------------------------------------------------------------

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        name = original_node.name.value
        if id(original_node) not in self._top_level or name not in self._dataset_classes:
            return updated_node
        survey = survey_class(original_node, self)
        plan = plan_class(survey, frozenset(self._inherited(original_node)))
        for finding in plan.findings:
            self.finding(finding.node, finding.message, suggestion=finding.suggestion)
        if plan.lazy_attributes is not None:
            self._lazy_attributes[name] = set(plan.lazy_attributes)
        if plan.opens:
            for call in plan.opens:
                self.rewrite(
                    call,
                    call,
                    call,
                    review=f"`{name}` now opens this h5py file lazily, once per process"
                    " (DataLoader workers each open their own); `__init__` closes what it opened",
                )
            self._migrated.append(name)
            self._open_heads |= {head(call.func) for call in plan.opens} - {None}
            return ClassRewriter(plan, survey.init).rewrite(original_node)
        if plan.reopened_by is not None:
            read = plan.reopened_by
            self.rewrite(
                read,
                read,
                read,
                review=f"`{name}.__init__` reads an h5py file its base class now opens lazily;"
                " it closes it before returning",
            )
            return ClassRewriter(ClassPlan(), survey.init).rewrite(original_node)
        return updated_node

    def _inherited(self, node: cst.ClassDef) -> set[str]:
        """Lazy attributes this class inherits from classes migrated earlier in the module."""
        found: set[str] = set()
        for base in node.bases:
            if isinstance(base.value, cst.Name):
                found |= self._lazy_attributes.get(base.value.value, set())
        return found

    # -- the module-level helper -------------------------------------------------------------------

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._migrated or defines_class(updated_node, LAZY):
            return updated_node
        self.add_needed_import("os")
        forms = import_forms(original_node)
        # The helper opens files through the module's own import of h5py, so that it stays used;
        # the imports only the rewritten opens used go (each is kept while anything still uses it).
        for local in self._open_heads:
            form = forms.get(local)
            if form is not None and form.module.split(".")[0] == "h5py":
                self.remove_unused_import(form.module, form.obj, form.asname)
        body = list(updated_node.body)
        at = next(
            i for i, s in enumerate(body) if isinstance(s, cst.ClassDef) and s.name.value == self._migrated[0]
        )
        statements = list(cst.parse_module(in_module_newlines(helper(self._h5py_file(forms)), updated_node)).body)
        blank = (cst.EmptyLine(indent=False), cst.EmptyLine(indent=False))
        statements[0] = statements[0].with_changes(leading_lines=blank if at else ())
        cls = body[at]
        blanks = sum(1 for line in cls.leading_lines if line.comment is None)
        if blanks < 2:  # two blank lines between the helper and the class, not three
            body[at] = cls.with_changes(leading_lines=(*blank[blanks:], *cls.leading_lines))
        return updated_node.with_changes(body=[*body[:at], *statements, *body[at:]])

    def _h5py_file(self, forms: dict[str, ImportForm]) -> str | None:
        """How the helper can spell `h5py.File` with a module-level import (`import h5py [as h5]`
        first, then `from h5py import File [as F]`); None when h5py is bound only inside
        functions (the helper then imports it where it opens a file, as a lazy import would)."""
        found = None
        for local, form in forms.items():
            if not form.module_level or local in self.imports.shadowed or local in HELPER_NAMES:
                continue
            if form.obj is None and form.module.split(".")[0] == "h5py" and (form.asname is None or form.module == "h5py"):
                return f"{local}.File"  # `import h5py`, `import h5py.x` (binds h5py), `import h5py as h5`
            if form.module == "h5py" and form.obj == "File" and found is None:
                found = local
        return found
