"""The per-file result cache: a hit is the same result as a miss, nothing in the cache is ever fatal."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.api import Options, migrate
from codemods.cli import main
from codemods.engine import cache as cache_mod
from codemods.engine import runner
from codemods.helpers.facts import RepoFacts

LEGACY = "import torch.nn as nn\ncriterion = nn.MSELoss(size_average=False)\nother = nn.L1Loss(reduce=flag)\n"
MIGRATED_LINE = 'criterion = nn.MSELoss(reduction="sum")'


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "train.py").write_text(LEGACY)
    (root / "pkg" / "clean.py").write_text("x = 1\n")
    (root / "pkg" / "py2.py").write_text("import torch.nn as nn\nprint 'size_average'\n")
    (root / "pkg" / "findings_only.py").write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=avg)\n")
    return root


def _run(root: Path, **kw):
    return migrate([str(root)], Options(use_config=False, jobs=1, **kw))


def _entries(root: Path) -> dict[str, str]:
    """key -> stored text of the per-file entries (the repo-facts entries are another kind)."""
    return cache_mod.Cache(root / cache_mod.DIRNAME).entries()


def _get(database: Path, key: str) -> str:
    with closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()[0]


def _set(database: Path, key: str, value: str) -> None:
    """Overwrite one entry's stored text, as a damaged or foreign writer might."""
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (value, key))


def _comparable(report):
    return [(f.path, f.status, f.rewrites, f.findings, f.problem, f.diff, f.notes) for f in report.files]


def test_a_hit_reproduces_the_result_exactly(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    assert cold.rewrites == {"TM001": 1} and cold.findings and cold.problems  # every kind of result
    entries = _entries(root)
    assert len(entries) == 4
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    warm = _run(root, mode="diff")
    assert _comparable(warm) == _comparable(cold)
    assert warm.exit_code == cold.exit_code


def test_a_warm_diff_run_reads_each_file_once(tmp_path: Path, monkeypatch) -> None:
    """The facts pass reads every file for its digest; the lookups key on that digest instead of
    reading and hashing each file again. An edit in between is not hidden: its digest differs."""
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    reads: list[str] = []
    real_read = runner.read_limited

    def counting(path: Path, limit: int) -> bytes:
        reads.append(path.name)
        return real_read(path, limit)

    monkeypatch.setattr(runner, "read_limited", counting)
    warm = _run(root, mode="diff")
    assert _comparable(warm) == _comparable(cold)
    assert [name for name in reads if name.endswith(".py")] == []  # the facts pass uses open()

    (root / "pkg" / "train.py").write_text(LEGACY.replace("size_average=False", "size_average=True"))
    edited = _run(root, mode="diff")
    assert 'reduction="mean"' in next(f.diff for f in edited.files if f.path.endswith("train.py"))


def test_a_warm_diff_run_takes_sizes_from_the_facts_pass_and_keeps_the_limit(tmp_path: Path, monkeypatch) -> None:
    """The facts pass's read gives each file's size with its digest: a warm lookup needs no stat,
    and a file grown past --max-bytes since the last run is still refused."""
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    stats: list[str] = []
    real_stat = Path.stat

    def counting(self: Path, *args, **kwargs):
        stats.append(self.name)
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", counting)
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)
    assert [name for name in stats if name.endswith(".py")] == []
    monkeypatch.undo()

    (root / "pkg" / "train.py").write_text(LEGACY + "x = 1\n" * 100)
    grown = _run(root, mode="diff", max_bytes=len(LEGACY) + 50)
    (problem,) = [f.problem for f in grown.files if f.path.endswith("train.py")]
    assert "limit" in problem.reason


def test_write_mode_on_a_warm_cache_writes_the_file(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    target = root / "a.py"
    target.write_text(LEGACY)
    os.chmod(target, 0o640)
    diff = _run(root, mode="diff")
    assert target.read_text() == LEGACY
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    written = _run(root, mode="write")
    assert MIGRATED_LINE in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert written.rewrites == diff.rewrites
    assert [f.findings for f in written.files] == [f.findings for f in diff.files]
    assert written.files[0].diff is None


def test_no_cache_neither_reads_nor_writes(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    _run(root, mode="diff", cache=False)
    assert not (root / cache_mod.DIRNAME).exists()
    _run(root, mode="diff")  # now warm
    calls = []
    real = runner.transform_source
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: calls.append(1) or real(*a, **k))
    _run(root, mode="diff", cache=False)
    assert len(calls) == 4  # every file went to the pipeline again


def test_cli_no_cache_flag(tmp_path: Path) -> None:
    root = _project(tmp_path)
    result = CliRunner().invoke(main, ["run", str(root), "--diff", "--no-cache", "--no-config", "-j", "1"])
    assert result.exit_code == 3, result.output
    assert not (root / cache_mod.DIRNAME).exists()
    result = CliRunner().invoke(main, ["run", str(root), "--diff", "--no-config", "-j", "1"])
    assert result.exit_code == 3
    assert _entries(root)


@pytest.mark.parametrize(
    "garbage",
    ["", "{", "\x00\xff\xfe binary", "[]", '{"key": "other", "outcome": {}}', "null", "WRONG_SHAPE"],
)
def test_a_corrupt_entry_is_a_miss_never_an_error(tmp_path: Path, garbage) -> None:
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    database = root / cache_mod.DIRNAME / cache_mod.DATABASE
    for key, text in _entries(root).items():
        if garbage == "WRONG_SHAPE":  # right key, wrong content
            raw = json.loads(text)
            raw["outcome"]["findings"] = [{"no": "such field"}]
            raw["outcome"]["status"] = "changed"
            _set(database, key, json.dumps(raw))
        else:
            _set(database, key, garbage)
    again = _run(root, mode="diff")
    assert _comparable(again) == _comparable(cold)
    # ...and the bad entries were replaced by good ones.
    third = _run(root, mode="diff")
    assert _comparable(third) == _comparable(cold)
    assert all(json.loads(text)["key"] == key for key, text in _entries(root).items())


@pytest.mark.parametrize("garbage", [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_database_that_is_not_one_is_replaced(tmp_path: Path, garbage, monkeypatch) -> None:
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    database = root / cache_mod.DIRNAME / cache_mod.DATABASE
    runner._cache.cache_clear()  # as a new process meets it: this one's connection is closed
    for suffix in ("-wal", "-shm"):
        Path(str(database) + suffix).unlink(missing_ok=True)
    database.write_bytes(garbage)
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)  # every file a miss, no error
    assert len(_entries(root)) == 4  # a new database, with this run's entries
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)


def test_a_read_only_cache_still_answers(tmp_path: Path, monkeypatch) -> None:
    """A cache restored read-only (CI) or in a checkout this user cannot write: hits, no error."""
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    folder = root / cache_mod.DIRNAME
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    runner._cache.cache_clear()
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    real_connect = sqlite3.connect

    def as_for_another_user(target, *args, **kwargs):
        # root may write anyway (CI runs as either): refuse as SQLite refuses a WAL database
        # whose folder it cannot write, unless opened read-only and immutable
        if not kwargs.get("uri"):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(cache_mod.sqlite3, "connect", as_for_another_user)
    try:
        assert _comparable(_run(root, mode="diff")) == _comparable(cold)
        assert _comparable(_run(root, mode="check")) == _comparable(cold)
    finally:
        folder.chmod(0o755)


def test_a_cache_path_that_is_a_file_or_read_only_is_ignored(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / cache_mod.DIRNAME).write_text("not a directory")
    first = _run(root, mode="diff")
    assert first.rewrites == {"TM001": 1}
    (root / cache_mod.DIRNAME).unlink()
    (root / cache_mod.DIRNAME).mkdir(mode=0o500)  # unwritable, except for root (CI runs as either)
    try:
        assert _comparable(_run(root, mode="diff")) == _comparable(first)
    finally:
        (root / cache_mod.DIRNAME).chmod(0o700)


def test_key_covers_content_options_and_the_tool(tmp_path: Path, monkeypatch) -> None:
    store = cache_mod.Cache(tmp_path)
    digest = cache_mod.content_digest
    base = dict(content=digest(b"x = 1\n"), display="a.py", codes=["TM001"], device_name="device", facts=None)
    key = store.key(**base)
    assert store.key(**base) == key
    for change in (
        {"content": digest(b"x = 2\n")},
        {"display": "b.py"},
        {"codes": ["TM001", "TM002"]},
        {"codes": []},
        {"device_name": "dev"},
        {"facts": RepoFacts(module_classes=frozenset({"Net"}))},
    ):
        assert store.key(**{**base, **change}) != key, change
    monkeypatch.setattr(cache_mod, "tool_digest", lambda: "another version of the tool")
    assert store.key(**base) != key


def test_tool_digest_follows_the_package_source() -> None:
    from codemods import __version__

    cache_mod.tool_digest.cache_clear()
    digest = cache_mod.tool_digest()
    assert len(digest) == 64 and cache_mod.tool_digest() == digest
    assert __version__  # part of the digest input


def test_changed_selection_is_a_miss(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _run(root, mode="diff")
    before = set(_entries(root))
    _run(root, mode="diff", device_name="dev")
    assert len(set(_entries(root)) - before) == 4


def test_location_default_env_override_and_gitignore(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    monkeypatch.delenv(cache_mod.ENV, raising=False)
    assert cache_mod.default_dir([root]) == root / cache_mod.DIRNAME
    assert cache_mod.default_dir([root / "pkg" / "train.py"]) == root / "pkg" / cache_mod.DIRNAME
    assert cache_mod.default_dir([root / "pkg"], config_source=root / "pyproject.toml") == root / cache_mod.DIRNAME
    _run(root, mode="diff")
    assert (root / cache_mod.DIRNAME / ".gitignore").read_text().splitlines()[-1] == "*"
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(cache_mod.ENV, str(elsewhere))
    assert cache_mod.default_dir([root]) == elsewhere
    _run(root, mode="diff", device_name="other")
    assert (elsewhere / cache_mod.DATABASE).is_file()
    assert cache_mod.Cache(elsewhere).entries()


def test_the_cache_is_not_migrated_itself(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _run(root, mode="diff")
    report = _run(root, mode="diff")
    assert not [f for f in report.files if cache_mod.DIRNAME in f.path]


def test_facts_round_trip_and_corruption(tmp_path: Path) -> None:
    store = cache_mod.Cache(tmp_path)
    facts = RepoFacts(module_classes=frozenset({"Net", "Head"}), dataparallel_files=frozenset({"a.py"}))
    key = store.facts_key([("a.py", cache_mod.content_digest(b"class Net(nn.Module): pass\n"))])
    assert key != store.facts_key([("a.py", cache_mod.content_digest(b"class Net(nn.Module): pass  \n"))])
    assert store.get_facts(key) is None
    store.put_facts(key, facts)
    assert store.get_facts(key) == facts
    # the digest stored with them is the one made from the facts themselves: a file's entry made
    # in a cold run (facts computed) is found by a warm one (facts read)
    fresh = RepoFacts(module_classes=frozenset({"Head", "Net"}), dataparallel_files=frozenset({"a.py"}))
    assert cache_mod._facts_digest(store.get_facts(key)) == cache_mod._sorted_digest(
        {name: sorted(value) for name, value in cache_mod._values(fresh).items()}
    )
    record = json.loads(_get(store.database, key))
    for damaged in ({**record, "digest": 3}, {**record, "facts": {**record["facts"], "module_classes": [1]}}):
        _set(store.database, key, json.dumps(damaged))
        assert store.get_facts(key) is None
    _set(store.database, key, "{")
    assert store.get_facts(key) is None


def test_parallel_run_uses_the_cache_too(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(12):
        (root / f"m{i}.py").write_text(LEGACY)
    cold = migrate([str(root)], Options(use_config=False, jobs=2, mode="diff"))
    assert len(_entries(root)) == 12
    import concurrent.futures  # runner imports it where a pool starts

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", lambda *a, **k: pytest.fail("a warm run started a pool"))
    warm = migrate([str(root)], Options(use_config=False, jobs=2, mode="diff"))
    assert _comparable(warm) == _comparable(cold)
    (root / "m3.py").write_text(LEGACY + "x = 1\n")  # one miss among hits: computed, in order
    monkeypatch.undo()
    mixed = migrate([str(root)], Options(use_config=False, jobs=2, mode="diff"))
    assert [f.path for f in mixed.files] == [f.path for f in cold.files]
    at = next(i for i, f in enumerate(cold.files) if f.path.endswith("m3.py"))
    assert mixed.files[at].diff != cold.files[at].diff
    assert [c for i, c in enumerate(_comparable(mixed)) if i != at] == [c for i, c in enumerate(_comparable(cold)) if i != at]


def test_a_warm_diff_is_read_from_the_entry_not_made_again(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    _run(root, mode="write")  # an entry without a diff: a write run makes none
    (root / "pkg" / "train.py").write_text(LEGACY)  # back to the legacy text, whose entry exists
    first = _run(root, mode="diff")  # a hit: makes the diff once, and keeps it in the entry
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    monkeypatch.setattr(runner, "unified_diff", lambda *a, **k: pytest.fail("the diff was made again"))
    again = _run(root, mode="diff")
    assert _comparable(again) == _comparable(first)
    assert MIGRATED_LINE in next(f.diff for f in again.files if f.diff)
    check = _run(root, mode="check")
    assert [f.diff for f in check.files] == [f.diff for f in first.files]


def test_a_lookup_without_the_text_reads_the_diff_or_else_the_text(tmp_path: Path) -> None:
    """A --diff or --check lookup needs a changed file's diff, or its text to make one: the other
    stays in the database (the migrated text of every changed file was decoded on each warm run)."""
    from codemods.results import Status

    store = cache_mod.Cache(tmp_path)
    with_diff = cache_mod.FileOutcome(Status.CHANGED, {"TM001": 1}, code="new\n", diff="@@ -1 +1 @@\n-old\n+new\n")
    store.put("a" * 64, with_diff)
    store.put("b" * 64, replace(with_diff, diff=None))  # a write run's entry: no diff yet
    assert store.get("a" * 64) == with_diff
    assert store.get("a" * 64, text=False) == replace(with_diff, code=None)
    assert store.get("b" * 64, text=False) == replace(with_diff, diff=None)
    store.put("c" * 64, cache_mod.FileOutcome(Status.UNCHANGED, {}))
    assert store.get("c" * 64, text=False) == cache_mod.FileOutcome(Status.UNCHANGED, {})
