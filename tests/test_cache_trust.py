"""A cache may only make a run faster: what a repository brings, or a damaged or locked cache,
never changes what a run writes or shows, and never stops it."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from codemods.api import Options, migrate
from codemods.engine import cache as cache_mod
from codemods.engine import runner

LEGACY = "import torch.nn as nn\ncriterion = nn.MSELoss(size_average=False)\n"
MIGRATED = 'import torch.nn as nn\ncriterion = nn.MSELoss(reduction="sum")\n'
EVIL = "import os\nos.system('echo pwned')\n"  # compiles: only the cache's trust can refuse it


@pytest.fixture(autouse=True)
def installation(tmp_path: Path, monkeypatch) -> None:
    """This user's config folder (where the cache secret lives), apart from the real one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "victim-config"))
    monkeypatch.delenv(cache_mod.ENV, raising=False)
    _new_process()


def _new_process() -> None:
    """Forget what this process learned of caches, as a new run in a new process would."""
    runner._cache.cache_clear()
    if hasattr(cache_mod, "take_notices"):
        cache_mod.take_notices()


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(LEGACY)
    (root / "clean.py").write_text("x = 1\n")
    return root


def _run(root: Path, **kw):
    return migrate([str(root)], Options(use_config=False, jobs=1, **kw))


def _comparable(report):
    return [(f.path, f.status, f.rewrites, f.findings, f.problem, f.diff, f.notes) for f in report.files]


def _database(root: Path) -> Path:
    (found,) = (root / cache_mod.DIRNAME).glob("v*.sqlite3")
    return found


def _rows(database: Path) -> list[dict]:
    with closing(sqlite3.connect(database)) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM entries")]


def _update(database: Path, key: str, **columns) -> None:
    with closing(sqlite3.connect(database)) as db, db:
        for name, value in columns.items():
            db.execute(f"UPDATE entries SET {name} = ? WHERE key = ?", (value, key))


def _changed_entry(database: Path) -> dict:
    (row,) = [r for r in _rows(database) if r["code"] is not None]
    return row


def _forge(database: Path, code: str, secret: bytes) -> None:
    """Replace the changed file's migrated text with `code`, as a forger who knows the format
    (and signs with `secret`, the only one a forger has) would: the diff stays the genuine one,
    the entry's digest of the text and its signature are made again."""
    row = _changed_entry(database)
    blob = code.encode() if isinstance(row["code"], bytes) else code
    value = json.loads(row["value"])
    if "code" in value:
        value["code"] = hashlib.sha256(blob).hexdigest()
    payload = json.dumps(value, separators=(",", ":"))
    columns = {"code": blob, "value": payload}
    if "mac" in row:
        from codemods.engine import cache_trust

        columns["mac"] = cache_trust.sign(cache_trust.keyed(secret, b"entry"), (row["key"] + payload).encode())
    _update(database, row["key"], **columns)


def _secret_of(config: Path) -> bytes:
    found = config / "torch-migrate" / "cache-key"
    return found.read_bytes() if found.exists() else b"no secret in this version"


def test_a_committed_cache_made_elsewhere_changes_nothing(tmp_path: Path, monkeypatch) -> None:
    """A repository ships a cache another installation made and signed, with a forged migrated
    text beside the genuine diff: the run neither uses it nor touches it, and `run --diff`
    shows exactly what `run` writes."""
    root = _project(tmp_path)
    attacker = tmp_path / "attacker-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(attacker))
    _run(root, mode="diff")
    _forge(_database(root), EVIL, _secret_of(attacker))
    shipped = {p.name: p.read_bytes() for p in (root / cache_mod.DIRNAME).iterdir()}

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "victim-config"))
    _new_process()
    shown = _run(root, mode="diff")
    assert MIGRATED.splitlines()[1] in next(f.diff for f in shown.files if f.diff)
    written = _run(root, mode="write")
    assert (root / "train.py").read_text() == MIGRATED
    assert written.rewrites == shown.rewrites == {"TM001": 1}
    assert any("not made by torch-migrate" in w for w in written.warnings), written.warnings
    assert {p.name: p.read_bytes() for p in (root / cache_mod.DIRNAME).iterdir()} == shipped  # left as it came


def test_a_forged_entry_in_the_users_own_cache_is_dropped(tmp_path: Path) -> None:
    """An entry rewritten in place by someone without this user's secret: a miss, and the file
    is migrated afresh (the forged text is replaced by the genuine one)."""
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    _forge(_database(root), EVIL, b"a secret that is not this user's")
    _new_process()
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)
    written = _run(root, mode="write")
    assert (root / "train.py").read_text() == MIGRATED
    assert written.warnings == ()
    assert "pwned" not in _changed_entry(_database(root))["code"].decode()


def _flip(data, needle: str):
    """`data` with one bit changed: in the last character of the first `needle` in it."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    at = raw.index(needle.encode()) + len(needle) - 1
    flipped = raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :]
    return flipped.decode() if isinstance(data, str) else flipped


@pytest.mark.parametrize(
    "column, needle",
    [
        ("code", "MSELoss("),  # `(` becomes `)`: a text that no longer compiles
        ("code", '"sum'),  # "sul": a text that compiles, and is wrong
        ("diff", '"sum'),  # the diff a --diff run shows
        ("value", '"TM001":1'),  # the record: 0 rewrites
        ("mac", ""),
    ],
)
def test_a_flipped_byte_in_an_entry_drops_it(tmp_path: Path, column: str, needle: str) -> None:
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    row = _changed_entry(_database(root))
    if column not in row:
        pytest.fail(f"no {column} column: entries are not signed")
    needle = needle or row[column][:4]
    _update(_database(root), row["key"], **{column: _flip(row[column], needle)})
    _new_process()
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)
    _update(_database(root), row["key"], **{column: _flip(row[column], needle)})  # damaged again
    written = _run(root, mode="write")
    assert (root / "train.py").read_text() == MIGRATED
    assert written.exit_code == 0 and written.rewrites == {"TM001": 1}


def test_a_signed_entry_whose_text_does_not_compile_is_dropped(tmp_path: Path) -> None:
    """The output guard holds for cached output too: even an entry this user's own tool signed
    (an older, buggy version of it) is not written unless it compiles."""
    root = _project(tmp_path)
    _run(root, mode="diff")
    _forge(_database(root), MIGRATED.replace(")", ""), _secret_of(tmp_path / "victim-config"))
    _new_process()
    _run(root, mode="write")
    assert (root / "train.py").read_text() == MIGRATED


def test_a_cache_folder_that_is_a_symlink_is_not_used(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(cache_mod.ENV, str(elsewhere))
    cold = _run(root, mode="diff")  # this user's own, genuine cache: still not used through a link
    monkeypatch.delenv(cache_mod.ENV)
    (root / cache_mod.DIRNAME).symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    _new_process()
    calls = []
    real = runner.transform_source
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: calls.append(1) or real(*a, **k))
    report = _run(root, mode="diff")
    assert _comparable(report) == _comparable(cold)
    assert len(calls) == 2  # every file migrated afresh
    assert [w for w in report.warnings if "symbolic link" in w] == [report.warnings[0]] and len(report.warnings) == 1
    _run(root, mode="write")
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before  # nothing written through it


def test_a_folder_without_this_users_marker_is_left_alone(tmp_path: Path) -> None:
    """Made by another user, an older torch-migrate, or by hand: not read, not written, said once."""
    root = _project(tmp_path)
    folder = root / cache_mod.DIRNAME
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n")
    report = _run(root, mode="diff")
    assert report.rewrites == {"TM001": 1}
    assert len(report.warnings) == 1 and "not made by torch-migrate" in report.warnings[0]
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore"]


def test_an_empty_folder_is_made_a_cache(tmp_path: Path, monkeypatch) -> None:
    """$TORCH_MIGRATE_CACHE_DIR made empty beforehand (a CI cache step): nothing to distrust."""
    root = _project(tmp_path)
    folder = tmp_path / "ci-cache"
    folder.mkdir()
    monkeypatch.setenv(cache_mod.ENV, str(folder))
    cold = _run(root, mode="diff")
    assert cold.warnings == ()
    _new_process()
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    assert _comparable(_run(root, mode="diff")) == _comparable(cold)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_an_empty_folder_others_can_write_in_is_not_claimed(tmp_path: Path, monkeypatch) -> None:
    """$TORCH_MIGRATE_CACHE_DIR in a shared folder (another user's, or world-writable): they could
    put a link where SQLite writes next; the run goes uncached, the folder as it was."""
    root = _project(tmp_path)
    folder = tmp_path / "shared-cache"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv(cache_mod.ENV, str(folder))
    report = _run(root, mode="diff")
    assert report.rewrites == {"TM001": 1}
    assert len(report.warnings) == 1 and "only this user can write in" in report.warnings[0]
    assert list(folder.iterdir()) == []


def test_the_secret_is_private_and_made_once(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _run(root, mode="diff")
    key = tmp_path / "victim-config" / "torch-migrate" / "cache-key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    made = key.read_bytes()
    _new_process()
    _run(root, mode="diff")
    assert key.read_bytes() == made


def test_a_secret_others_can_read_is_not_used(tmp_path: Path) -> None:
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    key = tmp_path / "victim-config" / "torch-migrate" / "cache-key"
    key.chmod(0o644)
    _new_process()
    from codemods.engine import cache_trust

    cache_trust._secret.cache_clear()
    report = _run(root, mode="diff")
    assert _comparable(report) == _comparable(cold)
    assert len(report.warnings) == 1 and "cache-key" in report.warnings[0]


LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
else:
    db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("mode", ["immediate", "exclusive"])
def test_a_cache_locked_by_another_process_is_given_up_at_once(tmp_path: Path, mode: str) -> None:
    """A cache another process holds locked: the run goes on uncached after a short wait, and
    says so once (it waited 30 s per entry written, in silence)."""
    root = _project(tmp_path)
    cold = _run(root, mode="diff")
    (root / "other.py").write_text(LEGACY)  # a miss: its entry must be written
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, str(_database(root)), mode], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        _new_process()
        started = time.monotonic()
        report = _run(root, mode="diff")
        elapsed = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    # 30 s per write before; a loaded CI machine may take a few seconds for the run itself
    assert elapsed < 20, f"waited {elapsed:.1f} s on the lock"
    assert [f for f in _comparable(report) if not f[0].endswith("other.py")] == _comparable(cold)
    assert report.rewrites == {"TM001": 2}
    assert len(report.warnings) == 1 and "locked by another process" in report.warnings[0]


NON_UTF8 = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n\n\nmodel = nn.DataParallel(Net())\nc = nn.MSELoss(size_average=False)\n"


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The command line as users run it (a terminal's streams, not CliRunner's)."""
    command = [sys.executable, "-m", "codemods", "run", ".", "--no-config", "-j", "1", *args]
    return subprocess.run(command, capture_output=True, timeout=300)


def test_a_non_utf8_file_name_is_cached_without_a_crash(tmp_path: Path, monkeypatch) -> None:
    """b'caf\\xe9.py': its name reaches the cache's keys, facts and diff (it crashed every cached
    run, exit 1, which --check reads as "would change")."""
    root = tmp_path / "proj"
    root.mkdir()
    name = os.path.join(os.fsencode(root), b"caf\xe9.py")
    try:
        with open(name, "w") as handle:
            handle.write(NON_UTF8)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a file name that is not UTF-8")
    monkeypatch.chdir(root)
    uncached = _run(Path("."), mode="diff", cache=False)  # as the command line names it
    assert 'reduction="sum"' in uncached.files[0].diff
    assert _comparable(_run(Path("."), mode="diff")) == _comparable(uncached)  # cold: computed and stored
    _new_process()
    real = runner.transform_source
    monkeypatch.setattr(runner, "transform_source", lambda *a, **k: pytest.fail("not a cache hit"))
    assert _comparable(_run(Path("."), mode="diff")) == _comparable(uncached)
    monkeypatch.setattr(runner, "transform_source", real)

    # the command line's exit codes, with the cache on: 1 would change, then 0 once written
    checked = _cli("--check")
    assert (checked.returncode, checked.stderr) == (1, b""), checked.stderr.decode(errors="replace")
    written = _cli()
    assert (written.returncode, written.stderr) == (0, b""), written.stderr.decode(errors="replace")
    with open(name) as handle:
        assert 'reduction="sum"' in handle.read()
    assert _cli("--check").returncode == 0


def test_a_secret_that_cannot_be_written_leaves_nothing_behind(tmp_path: Path) -> None:
    """Under a file-size limit (or on a full disk) the secret is not made: the run goes uncached,
    says why, and leaves no half-made key file in the user's config folder."""
    resource = pytest.importorskip("resource")
    root = _project(tmp_path)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

    command = [sys.executable, "-m", "codemods", "run", str(root), "--check", "--no-config", "-j", "1"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=300, preexec_fn=limited)
    assert ran.returncode == 1, ran.stderr  # train.py would change
    assert "cache-key" in ran.stderr and "uncached" in ran.stderr
    assert os.listdir(tmp_path / "victim-config" / "torch-migrate") == []
