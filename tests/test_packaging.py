"""The package as it would be published (issue #41 item 5): metadata ready for an index, a wheel
that holds the package and its data and nothing else, and no claim that it is published already.

The sdist and `twine check` of the README's rendering run in .ci/run (a scratch venv with build
and twine); the wheel is built here, from a copy of the tree, with the venv's own setuptools.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.conftest import ROOT

SUPPORTED = ("3.10", "3.11", "3.12", "3.13")


def _metadata() -> configparser.SectionProxy:
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config["metadata"]


def test_metadata_is_ready_for_an_index() -> None:
    meta = _metadata()
    assert meta.get("author") and meta.get("keywords") and meta.get("license") == "MIT"
    assert meta.get("license_files") == "LICENSE" and "MIT License" in (ROOT / "LICENSE").read_text()
    classifiers = meta["classifiers"].split()
    versions = {c for c in meta["classifiers"].splitlines() if c.strip().startswith("Programming Language :: Python :: 3.")}
    assert {v.strip().rsplit(" ", 1)[-1] for v in versions} == set(SUPPORTED)
    assert classifiers and meta.get("long_description") == "file: README.md"


# What would tell a user to install from an index, or send them to an index page.
_PUBLISHED = re.compile(r"pip install\s+(-\S+\s+)*['\"]?torch-migrate\b|pypi\.org/project/torch-migrate")


@pytest.mark.parametrize("top", ["codemods", "README.md", "CONTRIBUTING.md", "setup.cfg"])
def test_nothing_claims_the_tool_is_published(top: str) -> None:
    path = ROOT / top
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    claims = [
        f"{f.relative_to(ROOT)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1)
        if _PUBLISHED.search(line) and "is not published" not in line
    ]
    assert not claims


def test_the_wheel_holds_the_package_its_data_and_its_metadata(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "codemods", source / "codemods", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    build = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", build, str(tmp_path / "dist")], cwd=source, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    wheel = tmp_path / "dist" / done.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode("utf-8"))
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode("utf-8")
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"codemods"}  # no tests/, fixtures/ or scripts/ (the import name is another issue's)
    packaged = set(names)
    for module in ("codemods/cli.py", "codemods/runtime/ddp_helpers.py", "codemods/data/losses.json"):
        assert module in packaged
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    assert metadata["Requires-Python"] == ">=3.10" and metadata["Author"]
    assert {f"Programming Language :: Python :: {v}" for v in SUPPORTED} <= set(metadata.get_all("Classifier"))
    assert metadata.get_content_type() == "text/plain" and metadata["Description-Content-Type"] == "text/markdown"
    assert "torch-migrate = codemods.cli:main" in entry_points


def test_ci_runs_the_readmes_full_test_command_verbatim() -> None:
    """The README shows a quick test command and the full one; .ci/run runs the full one as written."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if line.startswith("python3 -m venv .venv") and "pytest" in line]
    full = [c for c in commands if c.endswith("python -m pytest --full")]
    quick = [c for c in commands if c.endswith("python -m pytest")]
    assert len(full) == 1 and len(quick) == 1, commands
    assert full[0] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


# -- the quick run and the full run (tests/conftest.py) ---------------------------------------------

SAMPLE = '''
import pytest

@pytest.mark.corpus
def test_corpus(): pass

@pytest.mark.realsuites
def test_suites(): pass

@pytest.fixture
def old_torch_python(): return "python"

def test_old(old_torch_python): pass

def test_unit(): pass
'''


def _selected(tmp_path: Path, *args: str, env: dict | None = None) -> set[str]:
    if not (tmp_path / "tests").exists():
        (tmp_path / "tests").mkdir()
        shutil.copy2(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
        (tmp_path / "tests" / "test_sample.py").write_text(SAMPLE)
        (tmp_path / "tests" / "test_other.py").write_text("import pytest\n\n@pytest.mark.corpus\ndef test_named(): pass\n")
    environ = {k: v for k, v in os.environ.items() if k != "TORCH_MIGRATE_CORPUS_REQUIRED"} | (env or {})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--co", "-W", "ignore", *args],
        cwd=tmp_path, capture_output=True, text=True, env=environ,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stdout + done.stderr
    return {line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line}


def test_the_default_run_is_quick_and_full_runs_everything(tmp_path: Path) -> None:
    assert _selected(tmp_path, "tests") == {"test_unit"}
    assert _selected(tmp_path, "tests", "--full") == {"test_corpus", "test_suites", "test_old", "test_unit", "test_named"}
    assert _selected(tmp_path, "tests", "-m", "corpus") == {"test_corpus", "test_named"}  # an explicit -m decides
    assert _selected(tmp_path, "tests/test_other.py") == {"test_named"}  # a file named runs whole
    # CI's TORCH_MIGRATE_CORPUS_REQUIRED: a required corpus is never left out unnoticed.
    required = _selected(tmp_path, "tests", env={"TORCH_MIGRATE_CORPUS_REQUIRED": "1"})
    assert required == {"test_corpus", "test_suites", "test_unit", "test_named"}
