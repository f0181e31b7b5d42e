"""TM201 beyond single-file fixtures: repo-wide facts, several classes per module, what it declines."""

from __future__ import annotations

import textwrap

from codemods import registry
from codemods.api import Options, migrate, transform_source
from codemods.engine import name_guard
from codemods.helpers.facts import RepoFacts, collect_facts

TM201 = [registry.get("TM201")]


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


DATASET = _src(
    """
    import h5py


    class Patches:
        def __init__(self, path):
            self.store = h5py.File(path, "r")

        def __getitem__(self, index):
            return self.store["x"][index]
    """
)


def test_loader_classes_are_found_through_a_variable_and_a_keyword():
    facts = collect_facts(
        [
            ("train.py", "from torch.utils.data import DataLoader\nds = Patches(p)\nloader = DataLoader(ds)\n"),
            ("eval.py", "import torch.utils.data as tud\nloader = tud.DataLoader(dataset=Other(p), batch_size=2)\n"),
            ("no_loader.py", "ds = Third(p)\n"),
        ]
    )
    assert facts.loader_classes == {"Patches", "Other"}


def test_a_class_handed_to_a_dataloader_in_another_file_is_migrated(tmp_path):
    (tmp_path / "data.py").write_text(DATASET)
    (tmp_path / "train.py").write_text(
        "from torch.utils.data import DataLoader\nfrom data import Patches\n\n"
        "loader = DataLoader(Patches('x.h5'), num_workers=2)\n"
    )
    report = migrate([tmp_path], Options(select=("TM201",), use_config=False, jobs=1))
    assert [f.path.endswith("data.py") for f in report.changed] == [True]
    assert "self.store = _H5Lazy(path, \"r\")" in (tmp_path / "data.py").read_text()


def test_without_facts_a_plain_class_is_not_a_dataset():
    result = transform_source(DATASET, TM201, path="data.py", facts=RepoFacts())
    assert not result.changed and not result.findings


def test_a_subclass_of_a_repo_dataset_is_migrated():
    facts = RepoFacts(dataset_classes=frozenset({"BaseSet", "Frames"}))
    source = _src(
        """
        import h5py
        from .base import BaseSet


        class Frames(BaseSet):
            def __init__(self, path):
                self.h5 = h5py.File(path, "r")
        """
    )
    result = transform_source(source, TM201, path="frames.py", facts=facts)
    assert result.changed and "self.h5 = _H5Lazy(path, \"r\")" in result.code


def test_two_datasets_share_one_helper_written_before_the_first():
    source = _src(
        """
        import h5py
        from torch.utils.data import Dataset


        class A(Dataset):
            def __init__(self, p):
                self.f = h5py.File(p, "r")


        class B(Dataset):
            def __init__(self, p):
                self.g = h5py.File(p, "r")["g"]
        """
    )
    result = transform_source(source, TM201)
    code = result.code
    assert code.count("class _H5Lazy") == 1 and code.count("class _H5PerProcess") == 1
    assert code.index("class _H5PerProcess") < code.index("class A(") < code.index("class B(")
    assert result.rewrites == {"TM201": 2}
    assert code.count("import os") == 1
    compile(code, "<migrated>", "exec")


def test_slots_are_declined_with_a_finding():
    source = _src(
        """
        import h5py
        from torch.utils.data import Dataset


        class A(Dataset):
            __slots__ = ("f",)

            def __init__(self, p):
                self.f = h5py.File(p, "r")
        """
    )
    result = transform_source(source, TM201)
    assert not result.changed
    assert [(f.line, f.kind) for f in result.findings] == [(9, "finding")]


def test_the_helper_opens_files_through_the_module_import_and_the_others_go():
    source = _src(
        """
        import h5py
        from h5py import File as H5File
        from torch.utils.data import Dataset


        class A(Dataset):
            def __init__(self, p):
                self.f = H5File(p, "r")
                self.g = h5py.File(p, "r")["g"]
        """
    )
    result = transform_source(source, TM201)
    code = result.code
    assert result.rewrites == {"TM201": 2} and {f.kind for f in result.findings} == {"review"}  # nothing dropped
    assert "H5File" not in code and code.count("import h5py") == 1  # `import h5py`, at the top
    assert "self._value, self._pid = h5py.File(*self.args, **self.kwargs), pid" in code
    assert name_guard.introduced(source, code) == ()


def test_an_import_still_used_elsewhere_stays_and_a_from_import_can_open_the_files():
    source = _src(
        """
        from h5py import File
        from torch.utils.data import Dataset


        class A(Dataset):
            def __init__(self, p):
                self.f = File(p, "r")


        def count(p):
            with File(p, "r") as f:
                return len(f)
        """
    )
    code = transform_source(source, TM201).code
    assert code.startswith("from h5py import File\n") and "= File(*self.args, **self.kwargs), pid" in code
    assert "import h5py" not in code
    assert name_guard.introduced(source, code) == ()
