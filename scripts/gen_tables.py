"""Regenerate the data tables under codemods/data/ from the installed torch.

    python scripts/gen_tables.py            # write the tables
    python scripts/gen_tables.py --check    # exit 1 if a checked-in table differs from torch

The rewriting path never imports torch; it reads these files. tests/test_tables.py runs --check.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "codemods" / "data"
LEGACY = ("size_average", "reduce")


def _entry(signature: inspect.Signature, skip_self: bool) -> dict:
    params = list(signature.parameters.values())[1 if skip_self else 0 :]
    return {
        "positional": [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD],
        "keywords": [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)],
    }


def losses() -> dict:
    import torch.nn as nn
    import torch.nn.functional as F

    table: dict[str, dict] = {}
    for name in sorted(dir(nn)):
        obj = getattr(nn, name)
        if inspect.isclass(obj) and issubclass(obj, nn.Module):
            sig = inspect.signature(obj.__init__)
            if any(p in sig.parameters for p in LEGACY):
                entry = _entry(sig, skip_self=True)
                entry["aliases"] = sorted({f"{obj.__module__}.{name}", f"torch.nn.modules.{name}"})
                table[f"torch.nn.{name}"] = entry
    for name in sorted(dir(F)):
        obj = getattr(F, name)
        if callable(obj) and not name.startswith("_"):
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            if any(p in sig.parameters for p in LEGACY):
                entry = _entry(sig, skip_self=False)
                entry["aliases"] = []
                table[f"torch.nn.functional.{name}"] = entry
    return table


def legacy_tensor_types() -> dict:
    """`torch.cuda.FloatTensor` & co. -> the dtype name (`float32`) their instances have."""
    import torch

    table = {}
    for name in sorted(dir(torch.cuda)):
        obj = getattr(torch.cuda, name)
        if name.endswith("Tensor") and inspect.isclass(obj) and isinstance(getattr(obj, "dtype", None), torch.dtype):
            table[name] = str(obj.dtype).replace("torch.", "")
    return table


TABLES = {"losses.json": losses, "legacy_tensor_types.json": legacy_tensor_types}


def render(build) -> str:
    return json.dumps(build(), indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    stale = []
    for filename, build in TABLES.items():
        text = render(build)
        path = DATA / filename
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(filename)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale tables (run scripts/gen_tables.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
