"""TM201: an `h5py.File` opened in a Dataset's `__init__` -> opened lazily, once per process."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from codemods.gates.h5py_lazy_open import H5_FILE
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.facts import is_dataset_base
from codemods.helpers.scope import ScopeNodes as _Scope
from codemods.helpers.spelling import ImportForm, head, import_forms
from codemods.helpers.statements import is_docstring
from codemods.transforms.h5py_runtime import DESCRIPTOR, LAZY
from codemods.transforms.h5py_runtime import helper as helper_text

# Calls that read a value out of what they are given instead of keeping it (`self.n = len(f["x"])`).
COPYING = frozenset(
    {"len", "int", "float", "str", "bool", "list", "tuple", "set", "dict", "sorted", "sum", "min", "max",
     "numpy.array", "numpy.asarray", "numpy.copy", "torch.tensor", "torch.as_tensor", "torch.from_numpy"}
)


def _read_chain(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, int]:
    """Strip `[key]` and `.get(key)` reads off `expr`: (the innermost object, how many reads)."""
    reads = 0
    while True:
        if isinstance(expr, cst.Subscript) and _navigates(expr):
            expr, reads = expr.value, reads + 1
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "get"
            and len(expr.args) == 1
            and expr.args[0].keyword is None
            and not expr.args[0].star
        ):
            expr, reads = expr.func.value, reads + 1
        else:
            return expr, reads


def _navigates(read: cst.Subscript) -> bool:
    """Whether `x[key]` may give a group or dataset still tied to the file, rather than values read
    out of it (`[:]`, `[()]`, `[0]`, `[...]`, `[i, j]`: numpy data that outlives the handle)."""
    if len(read.slice) != 1 or not isinstance(read.slice[0].slice, cst.Index):
        return False
    return not isinstance(read.slice[0].slice.value, (cst.Integer, cst.Float, cst.Tuple, cst.Ellipsis, cst.UnaryOperation))


# Names the helper's `_H5Lazy.open` binds or reads itself: a module-level spelling of `h5py.File`
# headed by one of them would not reach it.
HELPER_NAMES = frozenset({"self", "pid", "source", "os", LAZY, DESCRIPTOR, "_H5_INHERITED"})

# Attributes of an h5py dataset that are values, not handles (`.value` read it all in h5py < 3).
VALUE_ATTRIBUTES = frozenset({"value", "shape", "dtype", "size", "ndim"})


def _self_attribute(target: cst.BaseExpression, self_name: str) -> str | None:
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == self_name
    ):
        return target.attr.value
    return None


def _single_target(node: cst.Assign) -> cst.BaseExpression | None:
    return node.targets[0].target if len(node.targets) == 1 else None


def _first_param(function: cst.FunctionDef) -> str | None:
    params = function.params.params or function.params.posonly_params
    return params[0].name.value if params else None


@dataclass
class _Plan:
    """What to change in one Dataset class."""

    opens: list[cst.Call] = field(default_factory=list)  # h5py.File(...) calls to make lazy
    attributes: list[str] = field(default_factory=list)  # attributes that now hold an _H5Lazy
    closes: dict[cst.Expr, str] = field(default_factory=dict)  # `self.f.close()` -> the param name


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
    class Frames(Dataset):
        def __init__(self, path):
            self.h5 = h5py.File(path, "r")
            self.n = len(self.h5["x"])

        def __getitem__(self, i):
            return self.h5["x"][i]
    ```

    ## Use instead
    ```python
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

    CODE = "TM201"
    SAFETY = "review"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._migrated: list[str] = []  # class names, in module order
        self._lazy_attributes: dict[str, set[str]] = {}  # class name -> attributes holding an _H5Lazy
        self._loader_classes: set[str] = set()
        self._dataset_classes: set[str] = set()
        self._top_level: set[int] = set()  # id() of the module's own top-level classes
        self._module_handles: dict[str, cst.CSTNode] = {}
        self._open_heads: set[str] = set()  # how the rewritten opens spelled h5py.File: `h5py`, `h5`, `H5File`

    # -- what the module says about itself ----------------------------------------------------

    def _is_open(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and self.qualified_name(node.func) == H5_FILE

    def visit_Module(self, node: cst.Module) -> None:
        self._loader_classes = set(self.file.facts.loader_classes)
        top_level = [s for s in node.body if isinstance(s, cst.ClassDef)]
        self._top_level = set(map(id, top_level))
        self._dataset_classes = {s.name.value for s in top_level if self._is_dataset(s)}
        for statement in node.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and self._is_open(_read_chain(small.value)[0]):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                self._module_handles[target.target.value] = small

    def _is_dataset(self, node: cst.ClassDef) -> bool:
        facts = self.file.facts
        name = node.name.value
        if name in facts.dataset_classes:
            return True
        for base in node.bases:
            qualified = self.qualified_name(base.value)
            if qualified is not None and is_dataset_base(qualified):
                return True
            if isinstance(base.value, (cst.Name, cst.Attribute)):
                bare = self.code_for(base.value).rsplit(".", 1)[-1]
                if bare in facts.dataset_classes:
                    return True
        has_getitem = any(isinstance(s, cst.FunctionDef) and s.name.value == "__getitem__" for s in node.body.body)
        return has_getitem and name in self._loader_classes

    # -- findings outside Dataset classes --------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        """A dataset built from an already opened h5py handle: the handle is shared by workers."""
        known = self._dataset_classes | self.file.facts.dataset_classes | self._loader_classes
        if not (isinstance(node.func, cst.Name) and node.func.value in known):
            return
        for arg in node.args:
            value = _read_chain(arg.value)[0]
            if self._is_open(value):
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
        used = {n.value for n in _names_in(node)}
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
        if id(original_node) not in self._top_level or original_node.name.value not in self._dataset_classes:
            return updated_node
        plan = self._plan(original_node)
        if plan is None or not plan.opens:
            return self._subclass(original_node, updated_node)
        for call in plan.opens:
            self.rewrite(
                call,
                call,
                call,
                review=f"`{original_node.name.value}` now opens this h5py file lazily, once per process"
                " (DataLoader workers each open their own); `__init__` closes what it opened",
            )
        self._migrated.append(original_node.name.value)
        self._open_heads |= {head(call.func) for call in plan.opens} - {None}
        self._lazy_attributes[original_node.name.value] = set(plan.attributes) | self._inherited(original_node)
        return _ClassRewriter(plan, self._init(original_node)).rewrite(original_node)

    def _inherited(self, node: cst.ClassDef) -> set[str]:
        """Lazy attributes this class inherits from classes migrated earlier in the module."""
        found: set[str] = set()
        for base in node.bases:
            if isinstance(base.value, cst.Name):
                found |= self._lazy_attributes.get(base.value.value, set())
        return found

    def _subclass(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        """A subclass whose `__init__` reads a lazy attribute after `super().__init__()` has closed it
        reopens the file there: it must close it again before returning."""
        inherited = self._inherited(original_node)
        init = self._init(original_node)
        self_name = _first_param(init) if init is not None else None
        if not inherited or self_name is None:
            return updated_node
        self._lazy_attributes[original_node.name.value] = inherited
        reads = [
            n
            for n in _Scope.of(init.body).nodes
            if isinstance(n, cst.Attribute) and _self_attribute(n, self_name) in inherited
        ]
        if not reads:
            return updated_node
        self.rewrite(
            reads[0],
            reads[0],
            reads[0],
            review=f"`{original_node.name.value}.__init__` reads an h5py file its base class now opens lazily;"
            " it closes it before returning",
        )
        return _ClassRewriter(_Plan(), init).rewrite(original_node)

    def _init(self, node: cst.ClassDef) -> cst.FunctionDef | None:
        return _methods(node).get("__init__")

    def _plan(self, node: cst.ClassDef) -> _Plan | None:
        """The changes for one Dataset class, or None (with findings) when it cannot be decided."""
        methods = _methods(node)
        init = methods.get("__init__")
        if init is None:
            return None
        self_name = _first_param(init)
        if self_name is None:
            return None
        # __init__ and the methods it calls on `self` (one level: `self._open()`).
        scopes = [init]
        for n in _Scope.of(init.body).nodes:
            if (
                isinstance(n, cst.Call)
                and isinstance(n.func, cst.Attribute)
                and isinstance(n.func.value, cst.Name)
                and n.func.value.value == self_name
                and n.func.attr.value in methods
                and n.func.attr.value != "__init__"
                and methods[n.func.attr.value] not in scopes
            ):
                scopes.append(methods[n.func.attr.value])

        plan = _Plan()
        undecided = False
        for function in scopes:
            name = _first_param(function)
            if name is None:
                continue
            if not self._plan_scope(function, name, plan, methods):
                undecided = True
        if undecided or not plan.opens:
            return None

        taken = _class_level_names(node)
        if "__slots__" in taken:
            self.finding(
                plan.opens[0],
                f"`{node.name.value}` has `__slots__` (no instance `__dict__` for the lazy handle); open it lazily by hand",
            )
            return None
        clash = [a for a in plan.attributes if a in taken]
        if clash:
            self.finding(
                plan.opens[0],
                f"`{clash[0]}` is also defined at class level in `{node.name.value}`; open the h5py file lazily by hand",
            )
            return None
        for function in methods.values():
            name = _first_param(function)
            if name is None:
                continue
            for n in _Scope.of(function.body).nodes:
                if isinstance(n, cst.Expr) and isinstance(n.value, cst.Call) and not n.value.args:
                    func = n.value.func
                    if isinstance(func, cst.Attribute) and func.attr.value == "close":
                        attribute = _self_attribute(func.value, name)
                        if attribute in plan.attributes:
                            plan.closes[n] = name
        return plan

    def _plan_scope(self, function: cst.FunctionDef, self_name: str, plan: _Plan, methods: dict[str, cst.FunctionDef]) -> bool:
        """Add the lazy opens of one method to `plan`; False (with a finding) if undecidable."""
        scope = _Scope.of(function.body)
        opens = [n for n in scope.nodes if self._is_open(n) and not self.suppressed(n)]
        ok = True
        for call in opens:
            kind = self._classify(call, scope, self_name)
            if kind is None:
                continue  # not kept on self (a `with` block, a value read and dropped): fine as is
            if isinstance(kind, str):
                self.finding(call, kind, suggestion="keep the arguments on self and open the file on first use")
                ok = False
                continue
            kind = [a for a in kind if not self._closed_in(function, a, self_name, call, methods)]
            if not kind:
                continue  # read in full, then closed before `__init__` returns: nothing is kept
            plan.opens.append(call)
            for attribute in kind:
                if attribute not in plan.attributes:
                    plan.attributes.append(attribute)
        return ok

    def _closed_in(
        self, function: cst.FunctionDef, attribute: str, self_name: str, call: cst.Call, methods: dict[str, cst.FunctionDef]
    ) -> bool:
        """Whether `function` itself closes `self.<attribute>` on every path (a `self.f.close()`
        among its own statements, or in the `finally:` of one): then nothing is kept and there
        is nothing to migrate. A finding when the class reads the closed handle elsewhere (unless
        that method opens it again itself), or when the closed handle stays on `self`."""
        if not isinstance(function.body, cst.IndentedBlock):
            return False
        statements = list(function.body.body)
        statements += [line for s in statements if isinstance(s, cst.Try) and s.finalbody for line in s.finalbody.body.body]
        if not any(_closes(s, attribute, self_name) for s in statements):
            return False
        for method in methods.values():
            name = _first_param(method)
            if method is function or name is None:
                continue
            nodes = _Scope.of(method.body).nodes
            reads = [n for n in nodes if isinstance(n, cst.Attribute) and _self_attribute(n, name) == attribute]
            reopens = any(self._is_open(n) for n in nodes)
            if reads and not reopens:
                self.finding(
                    call,
                    f"`__init__` closes `{self_name}.{attribute}`, yet `{method.name.value}` reads it: reopen"
                    " the h5py file on first use in each process by hand",
                    suggestion="keep the file name on self and open the file lazily where it is read",
                )
                return True
        if not any(_drops(s, attribute, self_name) for s in statements):
            self.finding(
                call,
                f"`{self_name}.{attribute}` still holds the closed h5py file, which cannot be pickled: DataLoader"
                " workers started with spawn or forkserver fail; drop it once closed or read in a `with` block",
                suggestion=f"del {self_name}.{attribute}",
            )
        return True

    def _classify(self, call: cst.Call, scope: _Scope, self_name: str) -> list[str] | str | None:
        """The attributes this open ends up in; a reason string if undecidable; None if not kept."""
        top = _chain_top(call, scope)
        parent = scope.parents.get(top)
        if isinstance(parent, cst.Assign) and parent.value is top:
            target = _single_target(parent)
            attribute = _self_attribute(target, self_name) if target is not None else None
            if attribute is not None:
                return [attribute]
            if isinstance(target, cst.Name):
                return self._classify_local(target.value, parent, scope, self_name)
        if self._kept_on_self(top, scope, self_name):
            return "this h5py file ends up on `self` in a shape TM201 cannot relocate; open it lazily by hand"
        return None

    def _kept_on_self(self, node: cst.CSTNode, scope: _Scope, self_name: str) -> bool:
        """Whether `node`'s value may be stored on `self` (not just read through a value-making call)."""
        while node in scope.parents:
            parent = scope.parents[node]
            if isinstance(parent, cst.Subscript) and parent.value is node and not _navigates(parent):
                return False  # `h5py.File(p)["x"][:]`: the data is kept, not the file
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in VALUE_ATTRIBUTES:
                return False
            if isinstance(parent, cst.Call) and parent.func is not node:
                if self.code_for(parent.func) in COPYING or (self.qualified_name(parent.func) or "") in COPYING:
                    return False
            if isinstance(parent, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
                return any(self_name in {n.value for n in _names_in(t)} for t in targets)
            if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.WithItem)):
                return False
            node = parent
        return False

    def _classify_local(self, local: str, assign: cst.Assign, scope: _Scope, self_name: str) -> list[str] | str | None:
        """`hf = h5py.File(p)`: fine when every use of `hf` is `self.x = hf` / `hf[...]` / `hf.get(...)`."""
        defining = _single_target(assign)
        binds = [
            n for n in scope.nodes if isinstance(n, cst.Assign) and any(_binds(t.target, local) for t in n.targets)
        ]
        uses = [n for n in scope.nodes if isinstance(n, cst.Name) and n.value == local and n is not defining]
        attributes: list[str] = []
        other = closed = False
        for use in uses:
            if any(use is t.target for b in binds for t in b.targets):
                continue
            top = _chain_top(use, scope)
            parent = scope.parents.get(top)
            if top is use and isinstance(parent, cst.Attribute) and parent.attr.value == "close":
                closed = True
            target = _single_target(parent) if isinstance(parent, cst.Assign) and parent.value is top else None
            attribute = _self_attribute(target, self_name) if target is not None else None
            if attribute is None:
                other = True
            elif attribute not in attributes:
                attributes.append(attribute)
        if not attributes:
            return None  # a local handle that is not kept: closed when it goes away
        if len(binds) > 1:
            return f"`{local}` is assigned more than once; open the h5py file lazily by hand"
        if closed:
            return (
                f"`{self_name}.{attributes[0]}` keeps a group or dataset of `{local}`, which is closed here, so"
                " reading it later fails: read its values (`[:]`) or open the h5py file lazily by hand"
            )
        if other:
            return (
                f"`{local}` (an h5py file) is kept on `self` and also read directly here:"
                " read metadata in a `with h5py.File(...)` block and open the file lazily by hand"
            )
        return attributes

    # -- the module-level helper -------------------------------------------------------------------

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._migrated or _defines(updated_node, LAZY):
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
        helper = list(cst.parse_module(helper_text(self._h5py_file(forms))).body)
        blank = (cst.EmptyLine(indent=False), cst.EmptyLine(indent=False))
        helper[0] = helper[0].with_changes(leading_lines=blank if at else ())
        cls = body[at]
        blanks = sum(1 for line in cls.leading_lines if line.comment is None)
        if blanks < 2:  # two blank lines between the helper and the class, not three
            body[at] = cls.with_changes(leading_lines=(*blank[blanks:], *cls.leading_lines))
        return updated_node.with_changes(body=[*body[:at], *helper, *body[at:]])

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


def _chain_top(node: cst.CSTNode, scope: _Scope) -> cst.CSTNode:
    """The largest `node[key]...`/`node.get(key)...` read chain that starts at `node`."""
    while True:
        parent = scope.parents.get(node)
        if isinstance(parent, cst.Subscript) and parent.value is node and _read_chain(parent)[0] is _read_chain(node)[0]:
            node = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "get":
            call = scope.parents.get(parent)
            if isinstance(call, cst.Call) and call.func is parent and _read_chain(call)[1] > _read_chain(node)[1]:
                node = call
                continue
        return node


def _closes(statement: cst.BaseStatement, attribute: str, self_name: str) -> bool:
    """`self.<attribute>.close()` as a statement of its own."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute):
            if call.func.attr.value == "close" and _self_attribute(call.func.value, self_name) == attribute:
                return True
    return False


def _drops(statement: cst.BaseStatement, attribute: str, self_name: str) -> bool:
    """`del self.<attribute>` or `self.<attribute> = None`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Del):
            targets = [e.value for e in small.target.elements] if isinstance(small.target, cst.Tuple) else [small.target]
            if any(_self_attribute(t, self_name) == attribute for t in targets):
                return True
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "None":
            if any(_self_attribute(t.target, self_name) == attribute for t in small.targets):
                return True
    return False


def _binds(target: cst.BaseExpression, name: str) -> bool:
    return any(n.value == name for n in _names_in(target)) and not isinstance(target, (cst.Attribute, cst.Subscript))


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(Names())
    return found


def _methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}


def _class_level_names(node: cst.ClassDef) -> set[str]:
    names: set[str] = set()
    for statement in node.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        names |= {n.value for n in _names_in(target.target)}
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    names |= {n.value for n in _names_in(small.target)}
    return names


def _defines(module: cst.Module, name: str) -> bool:
    return any(isinstance(s, cst.ClassDef) and s.name.value == name for s in module.body)


def _close_call(self_name: str, *names: str) -> cst.Expr:
    args = ", ".join([self_name, *(repr(n).replace("'", '"') for n in names)])
    return cst.Expr(cst.parse_expression(f"{DESCRIPTOR}.close({args})"))


class _ClassRewriter(cst.CSTTransformer):
    """Apply a `_Plan` to its class: lazy opens, descriptors, closes, and the close at the end of __init__."""

    def __init__(self, plan: _Plan, init: cst.FunctionDef | None) -> None:
        super().__init__()
        self.plan = plan
        self.init = init
        self.opens = set(map(id, plan.opens))
        self.closes = {id(k): v for k, v in plan.closes.items()}
        self._functions: list[cst.FunctionDef] = []

    def rewrite(self, node: cst.ClassDef) -> cst.ClassDef:
        new = node.visit(self)
        assert isinstance(new, cst.ClassDef)
        return self._with_descriptors(new)

    def _in_init(self) -> bool:
        return bool(self._functions) and self._functions[-1] is self.init

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._functions.append(node)
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) in self.opens:
            return updated_node.with_changes(func=cst.Name(LAZY))
        return updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        name = self.closes.get(id(original_node))
        if name is None:
            return updated_node
        attribute = original_node.value.func.value.attr.value  # type: ignore[union-attr]
        return updated_node.with_changes(value=_close_call(name, attribute).value)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel:
        if not self._in_init() or not any(isinstance(s, cst.Return) for s in updated_node.body):
            return updated_node
        if len(updated_node.body) == 1:  # a `return` on its own line: the close goes on the line before
            close = cst.SimpleStatementLine(body=[_close_call(_first_param(self.init))], leading_lines=updated_node.leading_lines)
            return cst.FlattenSentinel([close, updated_node.with_changes(leading_lines=())])
        return updated_node.with_changes(body=self._before_returns(updated_node.body))

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        if not self._in_init() or not any(isinstance(s, cst.Return) for s in updated_node.body):
            return updated_node
        return updated_node.with_changes(body=self._before_returns(updated_node.body))

    def _before_returns(self, body):
        name = _first_param(self.init)
        out = []
        for small in body:
            if isinstance(small, cst.Return):
                out.append(_close_call(name).with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))))
            out.append(small)
        return out

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._functions.pop()
        if original_node is not self.init:
            return updated_node
        close = _close_call(_first_param(original_node))
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            if isinstance(body.body[-1], (cst.Return, cst.Raise)):
                return updated_node
            last = body.body[-1].with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated_node.with_changes(body=body.with_changes(body=[*body.body[:-1], last, close]))
        last = body.body[-1]
        if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise)):
            return updated_node
        return updated_node.with_changes(
            body=body.with_changes(body=[*body.body, cst.SimpleStatementLine(body=[close])])
        )

    def _with_descriptors(self, node: cst.ClassDef) -> cst.ClassDef:
        body = list(node.body.body)
        at = 1 if body and is_docstring(body[0]) else 0
        lines = [
            cst.SimpleStatementLine(
                body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(a))], value=cst.parse_expression(f"{DESCRIPTOR}()"))]
            )
            for a in self.plan.attributes
        ]
        if not lines:
            return node
        if at:
            lines[0] = lines[0].with_changes(leading_lines=(cst.EmptyLine(indent=False),))
        if at < len(body) and not any(line.comment is None for line in body[at].leading_lines):
            body[at] = body[at].with_changes(leading_lines=(cst.EmptyLine(indent=False), *body[at].leading_lines))
        return node.with_changes(body=node.body.with_changes(body=[*body[:at], *lines, *body[at:]]))
