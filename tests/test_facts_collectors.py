"""Repository facts as collectors (codemods/helpers/facts/): each fact a `Collector` (what it
reads, collects from one file and merges), `RepoFacts` one attribute per collector, and the cache
keeping every file's parts so that a run after an edit reads only the edited files again."""

from __future__ import annotations

import json
import pickle
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from codemods import api, registry
from codemods.engine.cache import Cache, content_digest
from codemods.helpers import facts as facts_module
from codemods.helpers.facts import COLLECTORS, RepoFacts, collect_facts, collectors_for, file_parts

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_INPUTS = sorted((ROOT / "fixtures").glob("*/*.in.py"))

REPO = {
    "models.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    def cuda(self):\n        return self\n",
    "net.py": "from models import Base\n\n\nclass Net(Base):\n    pass\n",
    "data.py": (
        "import torch\nfrom torch.utils.data import Dataset, DataLoader\n\n\nclass Frames(Dataset):\n    pass\n\n\n"
        "loader = DataLoader(Frames())\n"
    ),
    "train.py": (
        "import torch\nfrom utils import *\n\n\nclass Trainer:\n    def __init__(self, model):\n"
        "        self.model = torch.nn.DataParallel(model)\n\n\nwith torch.no_grad():\n    pass\n"
    ),
    "utils.py": "from torch.autograd import Variable\n",
    "notes.py": "print 'not python 3'\n",
}


def _repo(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in REPO.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _sources(root: Path):
    return [(str(p), p.read_text()) for p in sorted(root.glob("*.py"))]


def test_the_registry_names_each_collector_once_and_repofacts_has_its_attribute() -> None:
    names = [collector.name for collector in COLLECTORS]
    assert len(set(names)) == len(names)
    empty = RepoFacts()
    for collector in COLLECTORS:
        assert getattr(empty, collector.name) == frozenset()
        assert collector.summary and collector.name in RepoFacts.__doc__
    with pytest.raises(TypeError):
        RepoFacts(no_such_fact=frozenset())


def test_repofacts_is_plain_data(tmp_path: Path) -> None:
    """The plan carries it to worker processes (pickle), the result cache digests it (hash)."""
    facts = collect_facts(_sources(_repo(tmp_path)))
    assert pickle.loads(pickle.dumps(facts)) == facts
    assert hash(facts) == hash(RepoFacts(**{c.name: getattr(facts, c.name) for c in COLLECTORS}))
    with pytest.raises(AttributeError):
        facts.module_classes = frozenset()  # frozen


def test_each_fact_of_a_small_repository(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    facts = collect_facts(_sources(root))
    assert facts.module_classes == {"Base", "Net"}  # Net through Base, in another file
    assert facts.dataset_classes == {"Frames"}
    assert facts.loader_classes == {"Frames"}
    assert facts.cuda_classes == {"Base", "Net"}  # Net inherits Base's own cuda
    assert facts.dataparallel_files == {str(root / "train.py")}
    assert facts.wrapped_attributes == {"model"}
    assert any(entry.startswith(f"torch.no_grad\t{root / 'train.py'}\t") for entry in facts.idioms)
    assert f"S\t{root / 'train.py'}\t{root / 'utils.py'}" in facts.imported_names


@pytest.mark.parametrize("path", FIXTURE_INPUTS[:: max(1, len(FIXTURE_INPUTS) // 60)], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_part_is_json_data_so_the_cache_gives_back_what_collect_made(path: Path) -> None:
    parts = file_parts(str(path), path.read_text(encoding="utf-8"))
    assert set(parts) == {collector.name for collector in COLLECTORS}
    assert json.loads(json.dumps(parts)) == parts


def test_a_file_no_collector_reads_is_not_parsed_and_one_that_does_not_parse_adds_nothing(monkeypatch) -> None:
    parsed = []
    real = facts_module.ast.parse
    monkeypatch.setattr(facts_module.ast, "parse", lambda text: parsed.append(text) or real(text))
    assert file_parts("a.py", "x = 1\n") == dict.fromkeys(c.name for c in COLLECTORS)
    assert not parsed
    assert set(file_parts("b.py", "import torch\nprint 'py2'\n").values()) == {None}
    assert parsed == ["import torch\nprint 'py2'\n"]  # once, for every collector that reads it


def test_collectors_follow_the_selection() -> None:
    """What the engine reads for every codemod (the names star imports and re-exports give),
    and what the selected codemods declare (`Spec.facts`; "era" reads the idioms)."""
    by_code = {s.code: s for s in registry.all_specs()}
    plain = [s for s in registry.all_specs() if not s.facts]
    assert [c.name for c in collectors_for(plain)] == ["imported_names"]
    assert [c.name for c in collectors_for([by_code["TM015"]])] == ["idioms", "imported_names"]
    assert [c.name for c in collectors_for([by_code["TM201"], *plain])] == ["dataset_classes", "loader_classes", "imported_names"]
    assert {c.name for c in collectors_for(registry.all_specs())} == {c.name for c in COLLECTORS}
    with pytest.raises(ValueError, match="no collector"):
        collectors_for([registry.Spec("TM090", "x", "x:Y", registry.Safety.SAFE, ("x",), facts=("nonsense",))])


@pytest.mark.parametrize("spec", registry.all_specs(), ids=lambda s: s.code)
def test_each_codemod_needs_only_the_facts_it_declares(spec, tmp_path: Path) -> None:
    """Run alone, with only its declared facts gathered, a codemod gives every fixture project and
    its own fixture inputs (as one repository) what it gives with every fact gathered: a fact it
    reads without declaring would come back empty here and change an output."""
    from codemods.engine import pipeline
    from codemods.helpers.context import FileContext

    repos = [p for p in sorted((ROOT / "fixtures" / "projects").iterdir()) if p.is_dir()]
    repos += [p for p in (ROOT / "fixtures").glob(f"{spec.code}-*") if p.is_dir()]
    compared = 0
    for repo in repos:
        files = sorted(repo.rglob("*.py"))
        sources = [(str(f), f.read_text()) for f in files]
        own = api._facts(files, [spec], None, jobs=1)
        every = collect_facts(sources)
        for path, text in sources:
            alone = pipeline.transform_source(text, [spec], FileContext(path=path, facts=own))
            full = pipeline.transform_source(text, [spec], FileContext(path=path, facts=every))
            assert (alone.code, alone.findings) == (full.code, full.findings), path
            compared += alone.changed or bool(alone.findings)
    assert compared, f"nothing in the fixtures exercises {spec.code}"


def _engine_facts(root: Path, cache_dir: Path | None, codes=None) -> RepoFacts:
    specs = registry.select(codes) if codes else registry.select()
    return api._facts(sorted(root.glob("*.py")), specs, cache_dir, jobs=1)


def test_the_engine_and_collect_facts_agree_with_and_without_the_cache(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    expected = collect_facts(_sources(root))
    assert _engine_facts(root, None) == expected
    assert _engine_facts(root, tmp_path / "cache") == expected  # cold
    assert _engine_facts(root, tmp_path / "cache") == expected  # warm: the whole facts' entry


def test_a_pooled_facts_pass_runs_in_a_child_and_agrees(tmp_path: Path, monkeypatch) -> None:
    # past the pool threshold the parts and their merge are made in a forked child (this process
    # stays small for the pipeline's workers): same facts, cold and warm, and its cache entries
    # are this process's to read
    root = _repo(tmp_path / "repo")
    monkeypatch.setattr(api, "_FACTS_POOL_THRESHOLD", 2)
    children = []
    real = api.apart
    monkeypatch.setattr(api, "apart", lambda *args: children.append(args[0]) or real(*args))
    expected = collect_facts(_sources(root))
    files, specs = sorted(root.glob("*.py")), registry.select()
    assert api._facts(files, specs, None, jobs=2) == expected
    assert api._facts(files, specs, tmp_path / "cache", jobs=2) == expected  # cold: the child writes the entries
    assert len(children) == 2
    read = []
    monkeypatch.setattr(api, "file_parts", lambda path, *a: read.append(path))
    assert api._facts(files, specs, tmp_path / "cache", jobs=2) == expected  # warm: read here, no child
    assert len(children) == 2 and read == []


def test_after_an_edit_only_the_edited_file_is_read_again(tmp_path: Path, monkeypatch) -> None:
    root = _repo(tmp_path / "repo")
    cache_dir = tmp_path / "cache"
    _engine_facts(root, cache_dir)
    read = []
    real = api.file_parts
    monkeypatch.setattr(api, "file_parts", lambda path, *a: read.append(Path(path).name) or real(path, *a))
    (root / "net.py").write_text("from models import Base\n\n\nclass Net(Base):\n    pass\n\n\nclass Other(Net):\n    pass\n")
    edited = _engine_facts(root, cache_dir)
    assert edited.module_classes == {"Base", "Net", "Other"}
    assert edited == collect_facts(_sources(root))
    # net.py, and the files that add nothing (not cached: they are cheap to read again)
    assert sorted(read) == ["net.py", "notes.py"]


def test_a_parts_entry_made_for_other_collectors_is_a_miss_and_is_kept(tmp_path: Path) -> None:
    store = Cache(tmp_path)
    key = store.parts_key("a.py", content_digest(b"import torch\n"))
    assert key != store.parts_key("b.py", content_digest(b"import torch\n"))
    assert key != store.parts_key("a.py", content_digest(b"import torch \n"))
    store.put_parts(key, {"imported_names": {"events": [], "all": None}})
    assert store.get_parts(key, ["imported_names"]) == {"imported_names": {"events": [], "all": None}}
    assert store.get_parts(key, ["imported_names", "idioms"]) is None
    store.put_parts(key, {"idioms": []})
    assert store.get_parts(key, ["imported_names", "idioms"]) == {"imported_names": {"events": [], "all": None}, "idioms": []}
    with closing(sqlite3.connect(store.database)) as db, db:
        db.execute("UPDATE entries SET value = '{' WHERE key = ?", (key,))  # a damaged entry
    assert store.get_parts(key, ["idioms"]) is None


def test_facts_entries_are_per_selection_of_collectors(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    names_only = _engine_facts(root, tmp_path / "cache", codes=("TM001",))
    assert names_only.imported_names and not names_only.module_classes
    assert _engine_facts(root, tmp_path / "cache") == collect_facts(_sources(root))
    assert _engine_facts(root, tmp_path / "cache", codes=("TM001",)) == names_only
