"""codemods/versions.py: reading versions and the minimum table's lookups."""

from __future__ import annotations

import pytest

from codemods import versions


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
