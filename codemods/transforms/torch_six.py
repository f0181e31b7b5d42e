"""TM007: `torch._six` (removed in PyTorch 2.0) -> the standard library."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.names import dotted
from codemods.helpers.references import ReferenceCodemod
from codemods.base import traverse

SIX = "torch._six"

# name -> (replacement expression, module it needs imported or None). Each is what the name was
# on Python 3 in every torch release that had it.
VALUES: dict[str, tuple[str, str | None]] = {
    "PY2": ("False", None),
    "PY3": ("True", None),
    "PY37": ("True", None),  # `sys.version_info >= (3, 7)` from torch 1.3 on; always true today
    "string_classes": ("(str, bytes)", None),
    "int_classes": ("int", None),
    "inf": ("math.inf", "math"),
    "nan": ("math.nan", "math"),
    "container_abcs": ("collections.abc", "collections.abc"),
    "FileNotFoundError": ("FileNotFoundError", None),
    "queue": ("queue", "queue"),
    "imap": ("map", None),
    "exec_": ("exec", None),
    "builtins": ("builtins", "builtins"),
    "StringIO": ("io.StringIO", "io"),
}
# Functions whose calls are rewritten in place; any other use of them is a finding.
CALLS = {"istuple", "get_function_from_type", "bind_method", "raise_from", "with_metaclass"}
KNOWN = set(VALUES) | CALLS


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _simple(expr: cst.BaseExpression) -> bool:
    """Evaluating it has no effect, so it may be dropped."""
    return dotted(expr) is not None or isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float))


class TorchSix(ReferenceCodemod):
    """Replace `torch._six` names with what they always were on Python 3.

    ## What it does
    Rewrites every name imported from `torch._six` (`from torch._six import ...`,
    `import torch._six`, `from torch import _six`) to its standard-library value, and removes
    the import: `string_classes` -> `(str, bytes)`, `int_classes` -> `int`, `inf`/`nan` ->
    `math.inf`/`math.nan`, `container_abcs` -> `collections.abc`, `PY2`/`PY3`/`PY37` ->
    `False`/`True`/`True`, `FileNotFoundError`, `queue`, `imap` -> `map`, `exec_` -> `exec`,
    `builtins`, `StringIO` -> `io.StringIO`; calls `istuple(x)` -> `isinstance(x, tuple)`,
    `get_function_from_type(c, n)` -> `getattr(c, n, None)`, `bind_method(f, o, t)` ->
    `types.MethodType(f, o)`, the statement `raise_from(e, c)` -> `raise e from c`, and the class
    base `with_metaclass(Meta, *bases)` -> `class X(*bases, metaclass=Meta)`.

    ## Why is this bad?
    `torch._six` was PyTorch's private Python 2/3 compatibility module. PyTorch 2.0 deleted it,
    so `from torch._six import string_classes` (pytorch-ignite 0.1, many 2018-2021 projects)
    stops the whole package from importing with `ModuleNotFoundError`.

    ## Example
    ```python
    from torch._six import string_classes, inf

    if isinstance(x, string_classes) or x == inf: ...
    ```

    ## Use instead
    ```python
    import math

    if isinstance(x, (str, bytes)) or x == math.inf: ...
    ```

    ## Fix safety
    Safe: each replacement is the value `torch._six` held on Python 3. A use that cannot be
    rewritten exactly (a `with_metaclass(...)` outside a class's bases, `raise_from` used as a
    value, a name the table does not know) is a finding, and its import is kept. `PY37` meant
    "exactly 3.7" in torch 1.1-1.2 and "3.7 or newer" afterwards; it becomes `True`.

    ## References
    - https://github.com/pytorch/pytorch/releases/tag/v2.0.0 (release notes: `torch._six` removed)
    """

    PRUNE = True  # its sites are `torch._six` names and what was imported from it

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.blocked: set[str] = set()  # local names (or "<module>") whose imports must stay
        self.kept: set[str] = set()  # local names (or "<module>") of imports a `# noqa` keeps: their uses stay too
        self._bases: set[int] = set()  # ids of `with_metaclass(...)` calls that are class bases
        self._statements: set[int] = set()  # ids of calls that are a whole expression statement

    # -- bookkeeping -----------------------------------------------------------------------

    def _member(self, expr: cst.BaseExpression) -> str | None:
        name = self.qualified_name(expr)
        if name is None or not name.startswith(SIX + "."):
            return None
        member = name[len(SIX) + 1 :]
        return None if "." in member else member

    def _origin(self, expr: cst.BaseExpression) -> str:
        return expr.value if isinstance(expr, cst.Name) else "<module>"

    def _noqa(self, node: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """Whether a `# noqa` keeps `node` (a use of what `expr` names): then its import stays."""
        if self._origin(expr) in self.kept or self.suppressed(node):
            self.blocked.add(self._origin(expr))
            return True
        return False

    def _decline(self, node: cst.CSTNode, expr: cst.BaseExpression, message: str, suggestion: str | None = None) -> None:
        self.blocked.add(self._origin(expr))
        self.finding(node, message, suggestion=suggestion)

    # -- references ------------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> bool:
        if any(dotted(alias.name) == SIX for alias in node.names) and self.suppressed(node):
            self.kept.add("<module>")  # `torch._six.inf` is kept where this import is
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        module = dotted(node.module) if node.module is not None and not node.relative else None
        if module in (SIX, "torch") and not isinstance(node.names, cst.ImportStar) and self.suppressed(node):
            for alias in node.names:  # a `# noqa` keeps the import, so the names it binds keep their uses
                if module == SIX or dotted(alias.name) == "_six":
                    self.kept.add(alias.asname.name.value if alias.asname else dotted(alias.name) if module == SIX else "<module>")
        if module == SIX:
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if dotted(alias.name) not in KNOWN:
                        self.finding(node, f"`torch._six.{dotted(alias.name)}` was removed in PyTorch 2.0 and has no known replacement")
            else:
                self.finding(node, "`from torch._six import *`: torch._six was removed in PyTorch 2.0; import what is used from the standard library")
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        if len(node.bases) == 1 and isinstance(node.bases[0].value, cst.Call) and not node.keywords:
            self._bases.add(id(node.bases[0].value))

    def visit_Expr(self, node: cst.Expr) -> None:
        self._statements.add(id(node.value))

    def replace_reference(self, qualified, original, updated):
        if not qualified.startswith(SIX + "."):
            return None
        member = qualified[len(SIX) + 1 :]
        if "." in member or self._noqa(original, original):
            return None
        if member in VALUES:
            text, module = VALUES[member]
            if module is not None:
                spelled = self.module_spelling(module)
                if spelled is None:
                    self._decline(original, original, f"`{module}` is bound to something else here; replace `{member}` by hand")
                    return None
                text = spelled + text[len(module) :] if text.startswith(module) else text
            return _expr(text)
        if member in CALLS and id(original) in self.called:
            return None  # leave_Call decides
        self._decline(original, original, f"`torch._six.{member}` was removed in PyTorch 2.0 and has no exact replacement here")
        return None

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        member = self._member(original_node.func)
        if member not in CALLS or self._noqa(original_node, original_node.func):
            return updated_node
        args = updated_node.args
        positional = [a.value for a in args if a.keyword is None and not a.star]
        plain = len(positional) == len(args)
        new: cst.BaseExpression | None = None
        if member == "istuple" and plain and len(positional) == 1:
            new = cst.Call(func=cst.Name("isinstance"), args=[cst.Arg(positional[0]), cst.Arg(cst.Name("tuple"))])
        elif member == "get_function_from_type" and plain and len(positional) == 2:
            new = cst.Call(func=cst.Name("getattr"), args=[cst.Arg(positional[0]), cst.Arg(positional[1]), cst.Arg(cst.Name("None"))])
        elif member == "bind_method" and plain and len(positional) == 3 and _simple(positional[2]):
            types = self.module_spelling("types")
            if types is not None:
                new = cst.Call(func=_expr(f"{types}.MethodType"), args=[cst.Arg(positional[0]), cst.Arg(positional[1])])
        elif member in ("raise_from", "with_metaclass"):
            if id(original_node) in (self._statements if member == "raise_from" else self._bases):
                return updated_node  # rewritten by the statement or class around it
        if new is None:
            self._decline(original_node, original_node.func, f"`torch._six.{member}(...)` cannot be rewritten exactly here; replace it by hand")
            return updated_node
        return self.rewrite(original_node, updated_node, new)

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        call = original_node.value
        if not isinstance(call, cst.Call) or self._member(call.func) != "raise_from" or self._noqa(original_node, call.func):
            return updated_node
        args = updated_node.value.args
        if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
            self._decline(original_node, call.func, "`raise_from(...)` with unusual arguments; write `raise e from cause`")
            return updated_node
        new = cst.Raise(exc=args[0].value, cause=cst.From(item=args[1].value), semicolon=updated_node.semicolon)
        return self.rewrite(original_node, updated_node, new)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        if len(original_node.bases) != 1:
            return updated_node
        call = original_node.bases[0].value
        if not isinstance(call, cst.Call) or self._member(call.func) != "with_metaclass" or id(call) not in self._bases:
            return updated_node
        if self._noqa(original_node, call.func):
            return updated_node
        args = updated_node.bases[0].value.args
        if not args or any(a.keyword is not None or a.star for a in args):
            self._decline(original_node, call.func, "`with_metaclass(...)` with unusual arguments; use `class X(Base, metaclass=Meta)`")
            return updated_node
        meta, *bases = (a.value for a in args)
        new_bases = [cst.Arg(value=b) for b in bases]
        keywords = [arguments.keyword_arg("metaclass", meta)]
        return self.rewrite(original_node, updated_node, updated_node.with_changes(bases=new_bases, keywords=keywords))

    # -- imports ---------------------------------------------------------------------------

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        # the import itself is what fails on torch >= 2.0: removing it is a rewrite (noqa keeps it)
        return traverse(updated_node, _SixImports(self, _binds_torch_elsewhere(original_node)))


def _binds_torch_elsewhere(module: cst.Module) -> bool:
    """Whether an import other than `import torch._six` binds the name `torch`."""

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found = False

        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                name = dotted(alias.name) or ""
                if alias.asname is None and name.split(".")[0] == "torch" and name != SIX:
                    self.found = True

    finder = Finder()
    traverse(module, finder)
    return finder.found


class _SixImports(cst.CSTTransformer):
    """Drop the `torch._six` imports whose every use was rewritten, each through the codemod's
    `rewrite` (a `# noqa` on the import keeps it)."""

    def __init__(self, codemod: TorchSix, torch_bound: bool) -> None:
        self.codemod = codemod
        self.blocked = codemod.blocked
        self.torch_bound = torch_bound

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if original_node.relative or original_node.module is None or isinstance(original_node.names, cst.ImportStar):
            return updated_node
        module = dotted(original_node.module)
        keep = []
        for alias in original_node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname else name
            if module == SIX:
                if name in KNOWN and local not in self.blocked:
                    continue
            elif module == "torch" and name == "_six" and "<module>" not in self.blocked:
                continue
            keep.append(alias)
        if len(keep) == len(original_node.names):
            return updated_node
        return self._without(original_node, updated_node, keep)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        if "<module>" in self.blocked:
            return updated_node
        keep = []
        for alias in original_node.names:
            if dotted(alias.name) != SIX:
                keep.append(alias)
            elif alias.asname is None and not self.torch_bound:
                keep.append(alias.with_changes(name=cst.Name("torch")))  # it bound `torch` too
                self.torch_bound = True
        if len(keep) == len(original_node.names) and all(a is b for a, b in zip(keep, original_node.names)):
            return updated_node
        return self._without(original_node, updated_node, keep)

    def _without(self, original_node, updated_node, keep: list[cst.ImportAlias]):
        if not keep:
            return self.codemod.rewrite(original_node, updated_node, cst.RemoveFromParent())
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return self.codemod.rewrite(original_node, updated_node, updated_node.with_changes(names=keep))
