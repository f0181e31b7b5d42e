"""Spell a qualified name with the module's imports, and retire imports a rewrite left unused.

A codemod that replaces `torch.cuda.amp.autocast` with `torch.amp.autocast` must never write a
reference to a name the module does not bind (TorchFix writes `torch.amp...` into files that only
`from torch.cuda.amp import autocast`). `reference()` reuses an existing import when one can spell
the name, and otherwise asks libcst's AddImportsVisitor for `import torch`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.helpers.names import attribute_chain, dotted


@dataclass(frozen=True)
class ImportForm:
    """How one local name was imported: `import module as asname` or `from module import obj as asname`."""

    module: str
    obj: str | None
    asname: str | None


def import_forms(module: cst.Module) -> dict[str, ImportForm]:
    """Local name -> the import statement form that binds it (module level and nested)."""
    forms: dict[str, ImportForm] = {}

    class Collector(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            for alias in node.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                forms[asname or full.split(".")[0]] = ImportForm(full, None, asname)
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return False
            mod = dotted(node.module)
            for alias in node.names:
                name = dotted(alias.name)
                if mod is None or name is None:
                    continue
                asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                forms[asname or name] = ImportForm(mod, name, asname)
            return False

    module.visit(Collector())
    return forms


def reference(codemod, qualified: str, forms: dict[str, ImportForm]) -> cst.BaseExpression:
    """An expression for `qualified` (a `torch.` name) that the module will be able to resolve.

    Uses the module's own spelling (`F.interpolate`, `tamp.autocast`) when an import provides one;
    otherwise writes the full dotted name and queues `import torch`. The import behind a reused
    spelling is queued too (a no-op when it is already at module level): the resolver also sees
    imports inside functions, which do not bind the name where the rewrite may be.
    """
    local = codemod.imports.local_name_for(qualified)
    form = forms.get(local.split(".")[0]) if local is not None else None
    if local is not None and form is not None:
        codemod.add_needed_import(form.module, form.obj, form.asname)
        return attribute_chain(local)
    codemod.add_needed_import(qualified.split(".")[0])
    return attribute_chain(qualified)


def head(expr: cst.BaseExpression) -> str | None:
    """The leftmost name of a dotted expression (`F` in `F.upsample`)."""
    name = dotted(expr)
    return None if name is None else name.split(".")[0]


def retire(codemod, forms: dict[str, ImportForm], local: str | None) -> None:
    """Queue removal of the import binding `local`; libcst removes it only if nothing uses it."""
    form = forms.get(local) if local else None
    if form is None or (form.obj is None and form.asname is None):
        return  # `import torch` / `import torch.nn`: the package name, never ours to drop
    codemod.remove_unused_import(form.module, form.obj, form.asname)
