"""Regenerate the codemod table in README.md from the registry.

    python scripts/render_docs.py          # rewrite the table in place
    python scripts/render_docs.py --check  # exit 1 if README.md is stale (tests/test_docs.py)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codemods.registry import all_specs  # noqa: E402

README = ROOT / "README.md"
START, END = "<!-- codemods:start -->", "<!-- codemods:end -->"


def table() -> str:
    rows = ["| code | name | safety | what it does |", "|---|---|---|---|"]
    for spec in all_specs():
        summary = spec.summary.replace("|", "\\|")
        rows.append(f"| {spec.code} | `{spec.name}` | {spec.kind} | {summary} |")
    return "\n".join(rows)


def rendered(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    new = rendered(text)
    if args.check:
        if new != text:
            print("README.md codemod table is stale: run python scripts/render_docs.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
