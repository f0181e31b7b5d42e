"""TM000: `async` used as a name (a syntax error since Python 3.7) -> `non_blocking=` / `async_`.

The work happens before parsing, on tokens (`repair.py`); this class carries the codemod's
documentation and hands the engine that repair (a text stage: see codemods/gates/__init__.py).
"""

from __future__ import annotations

from codemods.base import MigrationCodemod
from codemods.transforms.legacy_syntax.repair import Repaired, repair


class LegacySyntax(MigrationCodemod):
    """Repair `async` used as a name, so that 0.3-era files parse again.

    ## What it does
    When a file does not parse and the tokenizer shows `async` used as a name, rewrites
    `async=` passed to the tensor methods torch renamed (`.cuda()`, `.to()`, `.type()`, `.copy_()`)
    into `non_blocking=`, and every other use of `async` as a name (parameters, variables, keyword
    arguments, attributes) into `async_`, consistently within the file. Then the file is parsed
    again and the rest of the pipeline migrates it. Every repair is listed for review.

    ## Why is this bad?
    `async` became a reserved keyword in Python 3.7. A file that uses it as a name is a syntax
    error: it cannot be imported, and no other codemod can even read it.

    ## Example
    ```python
    def fetch(batch, async=False):
        return batch.cuda(async=async)
    ```

    ## Use instead
    ```python
    def fetch(batch, async_=False):
        return batch.cuda(non_blocking=async_)
    ```

    ## Fix safety
    Safe. `non_blocking` is the same flag under torch's new name. Renaming the other uses to
    `async_` keeps the file self-consistent, and since every file this stage repairs gets the same
    spelling, a parameter renamed in one file and the keyword passed to it in another still
    agree. A keyword passed to a callee, or an attribute read, whose other half is not in this file
    is renamed too and flagged for review. Strings that spell `"async"` (`kwargs["async"]`,
    argparse's `"--async"`) are left as they are, with a finding. A file that imports a module
    named `async`, already uses the name `async_`, or still does not parse after the repair is left
    untouched, with the original syntax error reported.

    ## References
    - https://docs.python.org/3/whatsnew/3.7.html (async and await are reserved keywords)
    - https://github.com/pytorch/pytorch/releases/tag/v0.4.0 (`async` renamed to `non_blocking`)
    """

    @staticmethod
    def repair_text(text: str) -> Repaired | None:
        """The text stage: `text` repaired (the engine parses it again), or None."""
        return repair(text)
