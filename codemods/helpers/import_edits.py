"""Adding and removing imports after a codemod, as libcst's AddImportsVisitor and
RemoveImportsVisitor decide it, made to cost what their job costs.

A codemod that calls `add_needed_import`/`remove_unused_import` gets these two run after it
(codemods/base.py): `TopImportsAdder` (helpers/import_adder.py) and `UsedNamesRemover`
(helpers/import_remover.py). They are our own transformers, not subclasses of libcst's: importing
`libcst.codemod` pulls in `libcst.matchers`, which costs more start-up time than the two visitors
are worth, and libcst's remover runs a scope analysis of the whole module for each use.
"""

from codemods.helpers.import_adder import ImportItem, TopImportsAdder
from codemods.helpers.import_remover import UsedNamesRemover

__all__ = ["ImportItem", "TopImportsAdder", "UsedNamesRemover"]
