"""TM908: `import torchvision.models as models` and `torch.library.Library` in tests (findings only)."""

from __future__ import annotations


import libcst as cst

from codemods.gates.import_style import LIBRARIES, SUBMODULES
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted


class ImportStyle(MigrationCodemod):
    """Report the two spellings TorchFix flags that are neither removed nor deprecated APIs.

    ## What it does
    Reports `import torchvision.models as models` (also `datasets`, `transforms`) — the
    spelling `from torchvision import models` says the same — and, in a test file (a path with a
    `test` folder or a `test_*.py`/`*_test.py` name), `torch.library.Library(...)`, which stays
    registered for the rest of the process. It rewrites nothing.

    ## Why is this bad?
    `import torchvision.models as models` binds the same module as `from torchvision import
    models` in more words (TorchFix TOR203). A `Library` made in a test keeps its operators
    registered after the test, so the next test that defines the same operator fails with
    "already registered" (TorchFix TOR901): `torch.library._scoped_library` unregisters them when
    its `with` block ends.

    ## Example
    ```python
    import torchvision.models as models
    ```

    ## Use instead
    ```python
    from torchvision import models
    ```

    ## Fix safety
    Findings only. The import spellings are equivalent; `_scoped_library` is a private helper of
    torch (what PyTorch's own tests use), so outside a test suite a module-level `Library` is
    right and is not reported.

    ## References
    - https://pytorch.org/docs/stable/library.html
    - https://docs.python.org/3/reference/simple_stmts.html#the-import-statement
    """

    PRUNE = True  # its sites are the import statements and calls on trigger lines

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
            package, _, sub = (name or "").rpartition(".")
            if package == "torchvision" and sub in SUBMODULES and local == sub:
                self.finding(node, f"`import {name} as {sub}` is `from torchvision import {sub}`", suggestion=f"from torchvision import {sub}")

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) in LIBRARIES and _is_test(self.file.path):
            self.finding(
                node,
                "a torch.library.Library made in a test stays registered after it: later tests defining the same operator fail",
                suggestion="with torch.library._scoped_library(...) as lib:",
            )


def _is_test(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return any(p in ("test", "tests") for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py")
