"""The whole pipeline over real projects nobody here wrote (scripts/corpus.py, ~460k lines).

For the default pipeline and for `--unsafe`, on a scratch copy of every project's `.py` files:
no crash; every file the run rewrote compiles, every other file is byte-for-byte untouched; a
second run changes nothing; the files that cannot be processed are exactly the known ones, each
with its reason; per-project, per-codemod rewrite/finding/review counts, and a digest of every
written file and every finding (so a changed byte of an output or a message shows even where
the counts stay), equal the reviewed expectation in tests/data/corpus_expected.json.

After changing a codemod on purpose: `python scripts/corpus.py --update-expected`, read the diff
of the expectation file, commit it.

The corpus is downloaded on first use (pip, network) into the user cache dir or
$TORCH_MIGRATE_CORPUS_DIR. Without network and without a warm cache these tests are skipped,
unless $TORCH_MIGRATE_CORPUS_REQUIRED=1 (CI), where that is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path

import pytest

from codemods.engine import name_guard
from codemods.helpers.facts import collect_facts

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "tests" / "data" / "corpus_expected.json"

pytestmark = pytest.mark.corpus


def load_corpus_module():
    spec = importlib.util.spec_from_file_location("tm_corpus", ROOT / "scripts" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tm_corpus", module)
    spec.loader.exec_module(module)
    return module


corpus = load_corpus_module()


def corpus_dirs() -> dict[str, Path]:
    """The unpacked corpus (downloading it if needed), or skip/fail when it cannot be had."""
    try:
        return corpus.ensure(log=lambda *_: None)
    except Exception as exc:  # no network, no pip, a changed archive...
        if os.environ.get("TORCH_MIGRATE_CORPUS_REQUIRED"):
            pytest.fail(f"the real-world corpus is required here but unavailable: {exc}")
        pytest.skip(f"real-world corpus unavailable (no network and no warm cache?): {exc}")


@pytest.fixture(scope="module")
def dirs() -> dict[str, Path]:
    return corpus_dirs()


copy_python_files = corpus.copy_python_files


def _compiles(text: str, path: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("label", list(corpus.MODES))
def test_pipeline_over_the_corpus(dirs, tmp_path_factory, label: str) -> None:
    unsafe = corpus.MODES[label]
    work = copy_python_files(dirs, tmp_path_factory.mktemp(f"corpus-{label}"))
    before = {p: p.read_bytes() for root in work.values() for p in root.rglob("*.py")}

    report, summary = corpus.run_corpus(work, unsafe, mode="write", jobs=2, cache=True)

    # Every rewritten file compiles; every other file is byte-for-byte as it was.
    changed = {Path(f.path).resolve() for f in report.changed}
    assert changed, "the pipeline changed nothing at all on ~460k lines of legacy code"
    broken = {}
    for path, data in before.items():
        if path.resolve() in changed:
            error = _compiles(path.read_text(encoding="utf-8"), str(path))
            if error:
                broken[str(path)] = error
        else:
            assert path.read_bytes() == data, f"{path} was modified but not reported as changed"
    assert not broken, broken

    # No rewritten file uses a name it does not bind, leaves an import unused or doubled, or
    # calls `.to()` with arguments torch refuses, where its original did not (engine/name_guard.py;
    # the kinds a codemod is known to leave, name_guard.PENDING, are listed there).
    # Held against each project's own facts, as the engine holds them: an import another file of
    # the repository takes from this one is used, however unused here.
    rewrote = {Path(f.path).resolve(): tuple(f.rewrites) for f in report.changed}
    facts = {
        root: collect_facts((str(p), data.decode("utf-8-sig", "replace")) for p, data in before.items() if root in p.parents)
        for root in work.values()
    }
    introduced = {}
    for path, data in before.items():
        if path.resolve() in changed:
            texts = (data.decode("utf-8-sig", "replace"), path.read_bytes().decode("utf-8-sig", "replace"))
            project = next(facts[root] for root in work.values() if root in path.parents)
            new = name_guard.introduced(*texts, str(path), facts=project)
            new = [b.reason for b in new if not name_guard.tolerated(b, rewrote[path.resolve()])]
            if new:
                introduced[str(path)] = new
    assert not introduced, introduced

    # Every file that could not be processed has a reason, and nothing crashed.
    for problem in report.problems:
        assert problem.reason and "Traceback" not in problem.reason
        assert not problem.reason.startswith("internal error"), problem

    # A second run of the whole pipeline changes nothing, in any project: one run reaches the
    # fixed point (an interrupted migration, run again, ends where an uninterrupted one does).
    second, second_summary = corpus.run_corpus(work, unsafe, mode="check", jobs=2, cache=True)
    assert _moved(second) == {}
    assert {n: s["errors"] for n, s in second_summary.items()} == {n: s["errors"] for n, s in summary.items()}

    # The reviewed expectation: per project, per codemod.
    assert EXPECTED.exists(), "no expectation yet: run `python scripts/corpus.py --update-expected` and review it"
    expected = json.loads(EXPECTED.read_text())
    actual = {name: summary[name] for name in sorted(summary)}
    wanted = {name: expected.get(name, {}).get(label) for name in sorted(summary)}
    if actual != wanted:
        lines = []
        for name in actual:
            if actual[name] != wanted[name]:
                lines.append(f"{name}: expected {json.dumps(wanted[name], sort_keys=True)}")
                lines.append(f"{' ' * len(name)}  actual   {json.dumps(actual[name], sort_keys=True)}")
        pytest.fail(
            f"{label} pipeline: the corpus results differ from {EXPECTED.relative_to(ROOT)}.\n"
            + "\n".join(lines)
            + "\nIf the change is intended: python scripts/corpus.py --update-expected, review the diff, commit."
        )


def _moved(report) -> dict[str, dict[str, int]]:
    """The files a run would change, with the codemods that would change each."""
    return {f.path: dict(f.rewrites) for f in report.changed}


# fastai 0.7.0: its core.py only parses once TM000 has repaired `async=True`, and takes its names
# (`Variable`, `collections`) from star imports of its package; the facts of such a file were
# once gathered from its unrepaired text, so a second run rewrote it again. Not in the pinned
# corpus (its expectation is keyed by project name, and fastai 1.0.61 is there): fetched alone.
FASTAI_0_7 = corpus.Entry(
    "fastai", "0.7.0", "sdist", "fastai-0.7.0.tar.gz",
    "98466faea074f5b0b5d90798f25f8c948ca832de0313a097c7bc9feb8b694d59",
    "async=True in core.py, Variable and collections.Iterable from star imports",
)  # fmt: skip


def _ensure_entry(entry) -> Path:
    """`corpus.ensure` for an entry outside the pinned list (the same download, hash, unpack)."""
    directory = corpus.default_dir()
    target = directory / "src" / entry.key
    stamp = target / ".torch-migrate-corpus"
    if stamp.exists() and stamp.read_text().strip() == entry.sha256:
        return target
    archive = directory / "archives" / entry.filename
    if not archive.exists() or corpus.sha256(archive) != entry.sha256:
        corpus._download(entry, archive)
    if corpus.sha256(archive) != entry.sha256:
        archive.unlink()
        raise corpus.CorpusError(f"{entry.filename}: sha256 does not match the pinned {entry.sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    corpus._unpack(archive, target)
    stamp.write_text(entry.sha256 + "\n")
    return target


@pytest.mark.parametrize("label", list(corpus.MODES))
def test_fastai_0_7_reaches_its_fixed_point_in_one_run(tmp_path: Path, label: str) -> None:
    try:
        source = _ensure_entry(FASTAI_0_7)
    except Exception as exc:
        if os.environ.get("TORCH_MIGRATE_CORPUS_REQUIRED"):
            pytest.fail(f"fastai 0.7.0 is required here but unavailable: {exc}")
        pytest.skip(f"fastai 0.7.0 unavailable (no network and no warm cache?): {exc}")
    work = copy_python_files({"fastai": source}, tmp_path)
    first, _ = corpus.run_corpus(work, corpus.MODES[label], mode="write", jobs=1)
    core = next(f for f in first.changed if f.path.endswith("core.py") and "/fastai/" in f.path.replace("\\", "/"))
    assert {"TM000", "TM002", "TM401"} <= set(core.rewrites)  # the star-imported names, on the first run
    for f in first.changed:
        assert _compiles(Path(f.path).read_text(encoding="utf-8"), f.path) is None, f.path
    second, _ = corpus.run_corpus(work, corpus.MODES[label], mode="check", jobs=1)
    assert _moved(second) == {}


def test_expectation_covers_exactly_the_pinned_corpus() -> None:
    expected = json.loads(EXPECTED.read_text())
    assert sorted(expected) == sorted(e.name for e in corpus.CORPUS)
    assert all(set(entry) == set(corpus.MODES) for entry in expected.values())


def test_ensure_is_a_no_op_when_warm(dirs, monkeypatch) -> None:
    def no_download(*args, **kwargs):
        raise AssertionError("downloaded although the cache is warm")

    monkeypatch.setattr(corpus, "_download", no_download)
    monkeypatch.setattr(corpus, "_unpack", no_download)
    assert corpus.ensure(log=lambda *_: None) == dirs


def test_a_tampered_archive_is_refused(tmp_path: Path, dirs) -> None:
    entry = corpus.BY_NAME["torchsummary"]
    cache = corpus.default_dir()
    archive = tmp_path / "archives" / entry.filename
    archive.parent.mkdir(parents=True)
    archive.write_bytes((cache / "archives" / entry.filename).read_bytes() + b"tampered")

    def fake_download(e, dest):
        return dest  # "downloads" the tampered file that is already there

    original = corpus._download
    corpus._download = fake_download
    try:
        with pytest.raises(corpus.CorpusError, match="sha256"):
            corpus.ensure(["torchsummary"], tmp_path, log=lambda *_: None)
    finally:
        corpus._download = original
    assert not (tmp_path / "src" / entry.key).exists()
