"""The repository's torch requirement (codemods/pins.py): each file kind, each specifier form,
the lowest of several, and how far up the search goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import pins
from codemods.versions import NEWEST, Target


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    "specifier, line",
    [
        pytest.param(">=1.8,<2", (1, 13), id="bounded: the newest line below"),
        pytest.param(">= 1.8, < 2.0", (1, 13), id="spaces"),
        pytest.param("==1.4.0", (1, 4), id="exact"),
        pytest.param("==1.13.1+cu117", (1, 13), id="local label"),
        pytest.param("===1.13.1", (1, 13), id="arbitrary equality"),
        pytest.param("==2.0.0rc1", (2, 0), id="pre-release"),
        pytest.param(">=1.8", NEWEST, id="lower bound only: the newest"),
        pytest.param(">1.13", NEWEST, id="greater"),
        pytest.param("<1.13", (1, 12), id="less"),
        pytest.param("<=1.13", (1, 13), id="less or equal"),
        pytest.param("<1.13.1", (1, 13), id="below a patch: 1.13.0 is allowed"),
        pytest.param("<2.0.0a0", (1, 13), id="below a pre-release"),
        pytest.param("==1.13.*", (1, 13), id="wildcard"),
        pytest.param("!=1.13.*,<2", (1, 12), id="excluded line"),
        pytest.param("!=1.13.0,<1.14", (1, 13), id="excluded patch: 1.13.1 is allowed"),
        pytest.param("~=1.13.1", (1, 13), id="compatible, three numbers"),
        pytest.param("~=1.12", (1, 13), id="compatible, two numbers: any 1.x from 1.12"),
        pytest.param(">=3", NEWEST, id="newer than the tables: the newest they know"),
    ],
)
def test_pep440_specifiers(specifier: str, line) -> None:
    assert pins.evaluate(specifier) == line


@pytest.mark.parametrize("specifier", ["<0.1", ">=2,<1", "*", "", "==banana", "^1.13"])
def test_specifiers_that_give_no_line(specifier: str) -> None:
    # Unsatisfiable, empty, unreadable, or poetry syntax in a PEP 508 file: no pin, never a guess.
    assert pins.evaluate(specifier) is None


@pytest.mark.parametrize(
    "constraint, line",
    [
        ("^1.13", (1, 13)),
        ("^1.13.1", (1, 13)),
        ("^1.8", (1, 13)),
        ("^0.4", (0, 4)),
        ("~1.12", (1, 12)),
        ("~1.12.1", (1, 12)),
        ("~1", (1, 13)),
        ("1.13.1", (1, 13)),
        ("1.12.*", (1, 12)),
        (">=1.8 <1.11", (1, 10)),
        (">=1.8,<1.10 || >=1.12,<1.13", (1, 12)),
        ("~=1.11.0", (1, 11)),
    ],
)
def test_poetry_constraints(constraint: str, line) -> None:
    assert pins.evaluate(constraint, "poetry") == line


@pytest.mark.parametrize(
    "spec, line",
    [
        ("pytorch=1.13", (1, 13)),
        ("pytorch==1.13.1", (1, 13)),
        ("pytorch=1.12.1=py3.9_cuda11.6_cudnn8.3.2_0", (1, 12)),
        ("pytorch::pytorch>=1.8,<1.11", (1, 10)),
        ("conda-forge::pytorch 1.11.*", (1, 11)),
        ("pytorch 1.10", (1, 10)),
        ("pytorch 1.10.2 cuda112py39h4de5995_0", (1, 10)),
        ("pytorch-gpu=1.9", (1, 9)),
    ],
)
def test_conda_match_specs(spec: str, line) -> None:
    assert pins.conda_spec(spec) == (spec, line)


@pytest.mark.parametrize("spec", ["pytorch", "pytorch-cuda=11.7", "pytorch-lightning=1.9", "torchvision=0.14", "pytorch[version='>=1.8']"])
def test_conda_specs_that_are_not_a_torch_pin(spec: str) -> None:
    assert pins.conda_spec(spec) is None


@pytest.mark.parametrize(
    "text, shown, line",
    [
        ('torch==1.13.1; python_version >= "3.8"', "torch==1.13.1", (1, 13)),
        ("torch (>=1.8,<1.12)", "torch (>=1.8,<1.12)", (1, 11)),
        ("torch[opt-einsum]>=1.9,<1.11", "torch[opt-einsum]>=1.9,<1.11", (1, 10)),
        ("Torch==1.7", "Torch==1.7", (1, 7)),
        (
            "torch @ https://download.pytorch.org/whl/cu116/torch-1.12.1%2Bcu116-cp39-cp39-linux_x86_64.whl",
            "torch @ https://download.pytorch.org/whl/cu116/torch-1.12.1%2Bcu116-cp39-cp39-linux_x86_64.whl",
            (1, 12),
        ),
        (
            "https://download.pytorch.org/whl/cu117/torch-1.13.1%2Bcu117-cp39-cp39-linux_x86_64.whl",
            "https://download.pytorch.org/whl/cu117/torch-1.13.1%2Bcu117-cp39-cp39-linux_x86_64.whl",
            (1, 13),
        ),
    ],
)
def test_pep508_requirements(text: str, shown: str, line) -> None:
    assert pins.pep508(text) == (shown, line)


@pytest.mark.parametrize("text", ["torch", "torchvision==0.14.1", "pytorch-lightning<2", "torch-geometric==2.2", "numpy<2"])
def test_requirements_that_are_not_a_torch_pin(text: str) -> None:
    assert pins.pep508(text) is None


# -- the files ---------------------------------------------------------------------------------


def test_requirements_txt_with_comments_markers_options_and_continuations(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": (
        "# training\n"
        "--extra-index-url https://download.pytorch.org/whl/cu117\n"
        "-e .\n"
        "numpy<2  # torch 1.13 wheels need numpy 1\n"
        "torch==1.13.1 \\\n"
        "    --hash=sha256:0123456789abcdef  # the cluster's\n"
        "torchvision==0.14.1\n"
    )})  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 13), "requirements.txt: torch==1.13.1")


def test_a_commented_out_requirement_is_no_pin(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "# torch==1.4.0\nnumpy\ntorch\n"})
    assert pins.pin_in(tmp_path) is None


def test_included_requirement_files_are_followed_and_named(tmp_path: Path) -> None:
    write(tmp_path, {
        "requirements.txt": "-r requirements/base.txt\n-c constraints.txt\n",
        "requirements/base.txt": "numpy\n-r ../requirements.txt\n",  # a cycle is read once
        "constraints.txt": "torch>=1.8,<1.12\n",
    })  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 11), "constraints.txt: torch>=1.8,<1.12")


def test_requirements_folder_and_the_lowest_of_several_files(tmp_path: Path) -> None:
    write(tmp_path, {
        "requirements.txt": "torch>=1.8\n",
        "requirements-gpu.txt": "torch==1.13.1\n",
        "requirements/ci.txt": "torch==1.12.1\n",
    })  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 12), "requirements/ci.txt: torch==1.12.1")


def test_setup_py_is_read_not_run(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": (
        "import pathlib\n"
        "from setuptools import setup\n"
        "pathlib.Path('RAN').write_text('setup.py was executed')\n"
        "BASE = ['numpy']\n"
        "TORCH = ['torch>=1.6,<1.10']\n"
        "setup(name='x', install_requires=BASE + TORCH, extras_require={'dev': ['torch==1.4']})\n"
    )})  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 9), "setup.py: torch>=1.6,<1.10")
    assert not (tmp_path / "RAN").exists()


def test_setup_py_literal_list_and_setuptools_attribute(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": "import setuptools\nsetuptools.setup(install_requires=('torch==1.10.2', 'numpy'))\n"})
    assert pins.pin_in(tmp_path) == Target((1, 10), "setup.py: torch==1.10.2")


def test_a_setup_py_that_does_not_parse_is_no_pin(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": "print 'python 2'\nsetup(install_requires=['torch==1.0'])\n"})
    assert pins.pin_in(tmp_path) is None


def test_setup_cfg_install_requires(tmp_path: Path) -> None:
    write(tmp_path, {"setup.cfg": (
        "[metadata]\nname = x\n\n[options]\ninstall_requires =\n"
        "    numpy\n    # pinned for the cluster\n    torch>=1.8,<1.13; platform_system == 'Linux'\n"
    )})  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 12), "setup.cfg: torch>=1.8,<1.13")


def test_pyproject_project_dependencies(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["numpy", "torch~=1.11.0"]\n'})
    assert pins.pin_in(tmp_path) == Target((1, 11), "pyproject.toml: torch~=1.11.0")


@pytest.mark.parametrize(
    "value, line",
    [
        pytest.param('"^1.13"', (1, 13), id="caret"),
        pytest.param('"~1.12"', (1, 12), id="tilde"),
        pytest.param('{ version = "~1.10", source = "pytorch" }', (1, 10), id="table"),
        pytest.param(
            '[{ version = "1.13.1", markers = "sys_platform == \'linux\'" }, { version = "1.12.1", platform = "darwin" }]',
            (1, 12), id="several: the lowest",
        ),
    ],
)
def test_poetry_dependencies(tmp_path: Path, value: str, line) -> None:
    write(tmp_path, {"pyproject.toml": f'[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\npython = "^3.9"\ntorch = {value}\n'})
    found = pins.pin_in(tmp_path)
    assert found is not None and found.version == line and found.source.startswith("pyproject.toml: torch = ")


def test_environment_yml_conda_and_pip_entries(tmp_path: Path) -> None:
    write(tmp_path, {"environment.yml": (
        "name: train\n"
        "channels:\n  - pytorch\n  - conda-forge\n"
        "dependencies:\n"
        "  - python=3.9  # the cluster's\n"
        "  - pytorch-cuda=11.7\n"
        "  - \"pytorch=1.13\"\n"
        "  - pip\n"
        "  - pip:\n"
        "    - torchmetrics\n"
        "variables:\n  TORCH: '1.4'\n"
    )})  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 13), "environment.yml: pytorch=1.13")


def test_environment_yml_pip_sublist_and_its_includes(tmp_path: Path) -> None:
    write(tmp_path, {
        "environment.yaml": "dependencies:\n- python=3.9\n- pip:\n  - -r requirements-pip.txt\n  - torch==1.12.1\n- numpy\n",
        "requirements-pip.txt": "torch<1.12\n",
    })  # fmt: skip
    # requirements-pip.txt is itself a requirements*.txt file: found both ways, named once.
    assert pins.pin_in(tmp_path) == Target((1, 11), "requirements-pip.txt: torch<1.12")


def test_environment_yml_pip_torch_and_flow_style(tmp_path: Path) -> None:
    write(tmp_path, {"environment.yml": "dependencies:\n  - pip:\n      - torch==1.12.1\n  - pytorch>=1.8\n"})
    assert pins.pin_in(tmp_path) == Target((1, 12), "environment.yml: torch==1.12.1")
    write(tmp_path, {"environment.yml": "name: x\ndependencies: [python=3.9, 'pytorch==1.10.2']\n"})
    assert pins.pin_in(tmp_path) == Target((1, 10), "environment.yml: pytorch==1.10.2")


def test_the_lowest_of_all_file_kinds_wins(tmp_path: Path) -> None:
    write(tmp_path, {
        "requirements.txt": "torch==1.13.1\n",
        "setup.py": "from setuptools import setup\nsetup(install_requires=['torch>=1.8'])\n",
        "environment.yml": "dependencies:\n  - pytorch=1.11\n",
        "pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch<2"]\n',
    })  # fmt: skip
    assert pins.pin_in(tmp_path) == Target((1, 11), "environment.yml: pytorch=1.11")


# -- how far up --------------------------------------------------------------------------------


def test_found_from_a_subfolder_up_to_the_git_root_not_beyond(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "torch==1.4.0\n"})  # outside the repository: never read
    repo = write(tmp_path / "repo", {"requirements.txt": "torch==1.12.1\n", "src/pkg/train.py": "import torch\n"})
    (repo / ".git").mkdir()
    assert pins.find_pin(repo / "src" / "pkg" / "train.py") == Target((1, 12), "requirements.txt: torch==1.12.1")
    (repo / "requirements.txt").unlink()
    assert pins.find_pin(repo / "src" / "pkg") is None


def test_the_nearest_folder_with_a_requirement_wins(tmp_path: Path) -> None:
    repo = write(tmp_path, {"requirements.txt": "torch==1.10.0\n", "app/requirements.txt": "torch==1.13.1\n", "app/main.py": ""})
    (repo / ".git").mkdir()
    assert pins.find_pin(repo / "app") == Target((1, 13), "requirements.txt: torch==1.13.1")


def test_a_project_root_without_git_bounds_the_search(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "torch==1.4.0\n"})
    project = write(tmp_path / "project", {"pyproject.toml": '[project]\nname = "x"\n', "src/x.py": ""})
    assert pins.find_pin(project / "src") is None  # stops at the folder holding pyproject.toml


def test_without_any_root_only_the_start_folder_is_read(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "torch==1.4.0\n", "loose/train.py": ""})
    assert pins.find_pin(tmp_path / "loose") is None
    assert pins.find_pin(tmp_path) == Target((1, 4), "requirements.txt: torch==1.4.0")


def test_an_explicit_boundary_the_config_folder(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "torch==1.9.0\n", "a/b/c.py": ""})
    assert pins.find_pin(tmp_path / "a" / "b", boundary=tmp_path) == Target((1, 9), "requirements.txt: torch==1.9.0")
    assert pins.find_pin(tmp_path / "a" / "b", boundary=tmp_path / "a") is None
