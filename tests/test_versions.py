"""codemods/versions.py: reading versions and the minimum table's lookups."""

from __future__ import annotations

import pytest

from codemods import versions
from tests.conftest import ROOT


def test_versions_read_as_major_minor() -> None:
    assert versions.parse_version("1.13") == (1, 13)
    assert versions.parse_version("2.0.0+cu117") == (2, 0)
    assert versions.parse_version(" 1.13.1 ") == (1, 13)
    for bad in ("1", "latest", "1.x", ""):
        with pytest.raises(ValueError, match="not a torch version"):
            versions.parse_version(bad)


def test_a_target_must_be_a_release_the_tables_know() -> None:
    assert versions.target_version("1.13") == (1, 13)
    for outside in ("0.4", "3.0", f"2.{versions.NEWEST[1] + 1}"):
        with pytest.raises(ValueError, match="outside the releases"):
            versions.target_version(outside)


def test_a_symbol_without_an_entry_needs_what_its_longest_listed_prefix_needs() -> None:
    table = versions.minimums()
    assert versions.needed("torch.amp.GradScaler") == table["torch.amp.GradScaler"] == (2, 3)
    assert versions.needed("torch.linalg.svd") == table["torch.linalg"]
    # a keyword the table does not list needs at least its callable
    assert versions.needed("torch.amp.GradScaler(not_a_listed_keyword)") == (2, 3)
    assert versions.needed("torch.testing.assert_close(not_listed)") == table["torch.testing.assert_close"]
    assert versions.needed("numpy.float") is None


def test_releases_are_ordered_and_end_at_the_newest() -> None:
    assert list(versions.RELEASES) == sorted(versions.RELEASES)
    assert versions.RELEASES[-1] == versions.NEWEST and (1, 13) in versions.RELEASES


def _declared(spec, symbol: str) -> bool:
    """Whether `symbol` is in the codemod's `emits`, itself or as a keyword of a callable there
    that needs the same torch."""
    if symbol in spec.emits:
        return True
    callee = symbol.partition("(")[0]
    return callee != symbol and callee in spec.emits and versions.needed(symbol) == versions.needed(callee)


def test_every_symbol_a_codemod_writes_is_in_its_declared_emits() -> None:
    """A codemod that starts writing something newer than torch 1.0 must say so in the registry
    (the README's "output needs torch" column comes from it); checked on every fixture output,
    for the default target, 1.13 and the fixture's own target."""
    import ast
    import glob

    from codemods import api, registry
    from codemods.helpers import emitted
    from tests.test_fixtures import target_of

    missing = set()
    for path in sorted(glob.glob(str(ROOT / "fixtures" / "TM*" / "*.in.py"))):
        spec = registry.get(path.split("/")[-2].split("-", 1)[0])
        source = open(path).read()
        try:
            before = emitted.symbols(ast.parse(source))
        except SyntaxError:  # TM000's Python 2 era inputs: their output is checked elsewhere
            continue
        for target in {None, "1.13", target_of(source)}:
            after = emitted.symbols(ast.parse(api.transform_source(source, [spec], target_torch=target).code))
            for symbol in set(after) - set(before):
                version = versions.needed(symbol)
                if version is not None and version > versions.OLDEST and not _declared(spec, symbol):
                    missing.add((spec.code, symbol, path.split("fixtures/")[1]))
    assert not missing, sorted(missing)


def test_declared_emits_are_table_entries_and_cover_the_rename_tables() -> None:
    import json

    from codemods import registry

    table = versions.minimums()
    for spec in registry.all_specs():
        for symbol in spec.emits:
            assert symbol in table, f"{spec.code} declares {symbol}, which torch_minimums.json lacks"
    data = ROOT / "codemods" / "data"
    replacements = [e["replacement"] for e in json.loads((data / "deprecated_api.json").read_text()).values() if e["handler"] != "finding"]
    renames = [e["to"] for e in json.loads((data / "removed_internals.json").read_text())["renames"].values()]
    for code, targets in (("TM006", replacements), ("TM008", renames)):
        spec = registry.get(code)
        for target in targets:
            version = versions.needed(target)
            if target.startswith("torch.") and version is not None and version > versions.OLDEST:
                assert target in spec.emits, f"{code} may write {target} (torch {version}) but does not declare it"
