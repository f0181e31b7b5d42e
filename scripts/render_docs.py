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

from codemods.registry import OPT_IN, all_specs  # noqa: E402
from codemods.versions import format_version  # noqa: E402

README = ROOT / "README.md"
START, END = "<!-- codemods:start -->", "<!-- codemods:end -->"


def _needs(spec) -> str:
    """What the codemod's output may need of torch, by release: `1.13: load(weights_only=)`."""
    if not spec.needs:
        return "any"
    by_version: dict[tuple[int, int], list[str]] = {}
    for symbol, version in spec.needs:
        shown = symbol.removeprefix("torch.")
        if "(" in shown:
            shown = shown.replace(")", "=)")
        by_version.setdefault(version, []).append(f"`{shown}`")
    return "; ".join(f"{format_version(v)}: {_listed(names)}" for v, names in by_version.items())


LISTED = 40  # more symbols than this for one release (a generated table, TM009's) are summed up


def _listed(names: list[str]) -> str:
    if len(names) <= LISTED:
        return ", ".join(names)
    parts = [name.strip("`").split("(")[0].split(".") for name in names]
    common = []
    for column in zip(*parts):
        if len(set(column)) > 1:
            break
        common.append(column[0])
    under = f" under `{'.'.join(common)}`" if common else ""
    return f"{len(names)} symbols{under} (codemods/data/torch_minimums.json)"


def table() -> str:
    rows = ["| code | name | safety | what it does | output needs torch |", "|---|---|---|---|---|"]
    for spec in all_specs():
        summary = spec.summary.replace("|", "\\|")
        label = f"{spec.label}, opt-in (`--select {spec.code}`)" if spec.code in OPT_IN else spec.label
        rows.append(f"| {spec.code} | `{spec.name}` | {label} | {summary} | {_needs(spec)} |")
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
