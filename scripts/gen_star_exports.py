"""Regenerate codemods/data/torch_star_exports.json: what `from torch.X import *` binds, for the
torch modules old code star-imports (the rewriting path reads the table, never torch).

    python scripts/gen_star_exports.py            # write the table
    python scripts/gen_star_exports.py --check    # exit 1 if the checked-in table differs

A module's `__all__` when it has one, else its public names, as Python's import does.
tests/test_star_imports.py runs --check.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "codemods" / "data" / "torch_star_exports.json"
MODULES = (
    "torch",
    "torch.autograd",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.parallel",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.utils.data",
    "torch.utils.checkpoint",
    "torch.cuda.amp",
)


def star_names(module: str) -> list[str]:
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    return sorted(set(names))


def table() -> dict[str, list[str]]:
    return {module: star_names(module) for module in MODULES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = json.dumps(table(), indent=0, sort_keys=True) + "\n"
    if args.check:
        if TABLE.read_text() != text:
            print(f"{TABLE} differs from the installed torch: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
