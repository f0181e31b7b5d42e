"""Spell a qualified name with the module's imports, and retire imports a rewrite left unused.

A codemod that replaces `torch.cuda.amp.autocast` with `torch.amp.autocast` must never write a
reference to a name the module does not bind (TorchFix writes `torch.amp...` into files that only
`from torch.cuda.amp import autocast`). `reference()` reuses an existing import when one can spell
the name, and otherwise asks libcst's AddImportsVisitor for `import torch`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.engine.lazy import import_free
from codemods.helpers.names import attribute_chain, dotted


@dataclass(frozen=True)
class ImportForm:
    """How one local name was imported: `import module as asname` or `from module import obj as asname`."""

    module: str
    obj: str | None
    asname: str | None
    module_level: bool = True
    """False when the import is inside a function or class body (it binds nothing at module level)."""


def _asname(alias: cst.ImportAlias) -> str | None:
    return alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None


def _record(statement: cst.BaseSmallStatement, module_level: bool, forms: dict[str, ImportForm]) -> None:
    if isinstance(statement, cst.Import):
        for alias in statement.names:
            full = dotted(alias.name)
            if full is not None:
                asname = _asname(alias)
                local = asname or full.split(".")[0]
                if module_level or local not in forms:
                    forms[local] = ImportForm(full, None, asname, module_level)
    elif isinstance(statement, cst.ImportFrom):
        if statement.relative or statement.module is None or isinstance(statement.names, cst.ImportStar):
            return
        mod = dotted(statement.module)
        for alias in statement.names:
            name = dotted(alias.name)
            if mod is not None and name is not None:
                asname = _asname(alias)
                local = asname or name
                if module_level or local not in forms:
                    forms[local] = ImportForm(mod, name, asname, module_level)


def import_forms(module: cst.Module) -> dict[str, ImportForm]:
    """Local name -> the import statement that binds it; a module-level import wins over a nested one.

    Walks statements only (never into expressions): this runs for every file a codemod parses.
    """
    forms: dict[str, ImportForm] = {}

    def walk(body, module_level: bool) -> None:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    _record(small, module_level, forms)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                if not import_free(statement.body):  # a body not parsed yet that holds no import
                    walk(_statements(statement.body), False)
            elif isinstance(statement, cst.BaseCompoundStatement):
                for block in _blocks(statement):
                    walk(_statements(block), module_level)

    walk(module.body, True)
    return forms


def _statements(block: cst.BaseSuite) -> list:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [block]


def _blocks(statement: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    blocks = [statement.body] if hasattr(statement, "body") else []  # a `match` has only its cases
    for name in ("orelse", "finalbody"):
        extra = getattr(statement, name, None)
        if extra is not None:
            blocks.append(extra.body if not isinstance(extra, cst.If) else cst.IndentedBlock(body=[extra]))
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    blocks += [case.body for case in getattr(statement, "cases", ())]
    return blocks


def reference(codemod, qualified: str, forms: dict[str, ImportForm]) -> cst.BaseExpression:
    """An expression for `qualified` (a `torch.` name) that the module will be able to resolve.

    Uses the module's own spelling (`F.interpolate`, `tamp.autocast`) when a module-level import
    provides one; otherwise writes the full dotted name and queues `import torch` (libcst adds it
    once, and only if the module lacks it).
    """
    local = codemod.imports.local_name_for(qualified)
    form = forms.get(local.split(".")[0]) if local is not None else None
    if local is not None and form is not None:
        if not form.module_level:  # bound only inside a function: bind it where we use it
            codemod.add_needed_import(form.module, form.obj, form.asname)
        return attribute_chain(local)
    if local is not None and local.split(".")[0] in codemod.imports.names.star_names():
        return attribute_chain(local)  # bound by a star import (`from utils import *` gives `torch`)
    codemod.add_needed_import(qualified.split(".")[0])
    return attribute_chain(qualified)


def respelled(codemod, original: cst.BaseExpression, qualified: str) -> cst.BaseExpression | None:
    """`qualified` spelled through the head of `original`, the call's own spelling: a rename of
    `torch.nn.init.constant` is `torch.nn.init.constant_`, of `init.constant` is `init.constant_`
    (spelling it through another import could leave the one the call used unused). None when
    the head does not lead to `qualified` (`F.sigmoid` -> `torch.sigmoid`)."""
    chain = dotted(original)
    if chain is None or "." not in chain:
        return None
    first = chain.split(".")[0]
    prefix = codemod.qualified_name(cst.Name(first))
    if prefix is None or not qualified.startswith(prefix + "."):
        return None
    return attribute_chain(first + qualified[len(prefix):])


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
