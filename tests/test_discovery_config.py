"""Which files a run sees, and how the target's configuration steers it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codemods import registry
from codemods.api import Options, migrate, plan_for
from codemods.config import ConfigError, find_config
from codemods.engine.discovery import discover

LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _rel(found, root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in found.files]


def test_skips_environments_builds_and_caches(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pkg/model.py": "", "pkg/data.ipynb": "", "notes.txt": "",
            ".git/hooks/x.py": "", "venv/lib/a.py": "", "env2/pyvenv.cfg": "", "env2/lib/b.py": "",
            "build/lib/c.py": "", "dist/d.py": "", "lib/site-packages/e.py": "",
            "node_modules/f.py": "", "pkg/__pycache__/g.py": "",
        },
    )  # fmt: skip
    (tmp_path / "x.py").mkdir()  # a directory named like a module
    assert _rel(discover([tmp_path]), tmp_path) == ["pkg/data.ipynb", "pkg/model.py"]


def test_symlinks_out_of_the_tree_and_loops_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, {"secret.py": LEGACY})
    root = tmp_path / "repo"
    _tree(root, {"inside.py": LEGACY})
    (root / "link.py").symlink_to(outside / "secret.py")
    (root / "same.py").symlink_to(root / "inside.py")
    (root / "loop").symlink_to(root)
    (root / "dangling.py").symlink_to(root / "missing.py")
    assert _rel(discover([root]), root) == ["inside.py"]


def test_gitignore_is_honoured_inside_a_git_repository(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "", "generated/b.py": "", "c_pb2.py": "", ".gitignore": "generated/\n*_pb2.py\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert _rel(discover([tmp_path]), tmp_path) == ["a.py"]


def test_exclude_globs(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "", "legacy/b.py": "", "tests/data/c.py": "", "d_test.py": ""})
    found = discover([tmp_path], exclude=["legacy", "tests/data/*", "*_test.py"])
    assert _rel(found, tmp_path) == ["a.py"]


def test_exclude_applies_to_named_files_relative_to_the_config_folder(tmp_path: Path, monkeypatch) -> None:
    files = {"a.py": LEGACY, "third_party/v.py": LEGACY, "gen/x_pb2.py": LEGACY, "src/gen/y_pb2.py": LEGACY}
    _tree(tmp_path, {"pyproject.toml": '[tool.torch-migrate]\nexclude = ["third_party", "gen/*_pb2.py"]\n', **files})
    monkeypatch.chdir(tmp_path / "src")  # patterns are the config's, not the working directory's
    named = [str(tmp_path / rel) for rel in files]
    report = migrate(named, Options(mode="check"))
    assert sorted(Path(f.path).resolve().relative_to(tmp_path).as_posix() for f in report.changed) == ["a.py", "src/gen/y_pb2.py"]
    report = migrate(named, Options(mode="check", exclude=("a.py",)))  # and --exclude too
    assert [Path(f.path).name for f in report.changed] == ["y_pb2.py"]


def test_missing_path_is_reported(tmp_path: Path) -> None:
    report = migrate([str(tmp_path / "nope")], Options(use_config=False))
    assert report.exit_code == 2 and "no such file" in report.problems[0].reason


def test_pyproject_config_selects_ignores_and_excludes(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.torch-migrate]\nignore = ["TM001"]\nexclude = ["vendored"]\n',
            "a.py": LEGACY,
            "vendored/b.py": LEGACY,
        },
    )
    assert migrate([str(tmp_path)], Options(mode="check")).exit_code == 0
    # Flags override the configuration.
    report = migrate([str(tmp_path)], Options(mode="check", ignore=()))
    assert [Path(f.path).name for f in report.changed] == ["a.py"]


def test_setup_cfg_config_and_per_file_ignores(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "setup.cfg": "[torch-migrate]\nper-file-ignores =\n    tests/*: TM001\n",
            "src/a.py": LEGACY,
            "tests/test_a.py": LEGACY,
        },
    )
    report = migrate([str(tmp_path)], Options(mode="check"))
    assert [Path(f.path).name for f in report.changed] == ["a.py"]


def test_config_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.torch-migrate]\ndevice-name = "dev"\n', "src/pkg/a.py": ""})
    config = find_config(tmp_path / "src" / "pkg")
    assert config.device_name == "dev" and config.source == tmp_path / "pyproject.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tool.torch-migrate]\nunsafe = "maybe"\n', "unsafe"),
        ('[tool.torch-migrate]\nselect = 3\n', "select"),
        ('[tool.torch-migrate]\nspeed = "fast"\n', "unknown option"),
        ('[tool.torch-migrate]\ndevice-name = "1dev"\n', "identifier"),
        ("[tool.torch-migrate\n", "invalid TOML"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        plan_for([tmp_path], Options())
    assert "pyproject.toml" in str(info.value)


def test_selection_by_code_name_prefix_and_unsafe_gate(monkeypatch) -> None:
    assert [s.code for s in registry.select(["TM0"])] == [s.code for s in registry.PIPELINE if s.code.startswith("TM0") and s.safety is not registry.Safety.UNSAFE]
    assert [s.code for s in registry.select(["loss-reduction"])] == ["TM001"]
    assert "TM001" not in [s.code for s in registry.select(ignore=["TM001"])]
    unsafe = registry.Spec("TM090", "risky", registry.get("TM001").codemod, registry.Safety.UNSAFE, ("x",))
    monkeypatch.setattr(registry, "PIPELINE", (*registry.PIPELINE, unsafe))
    assert "TM090" not in [s.code for s in registry.select(["TM090"])]
    assert "TM090" in [s.code for s in registry.select(["TM090"], unsafe=True)]
    with pytest.raises(registry.SelectionError, match="TM7"):
        registry.select(["TM7"])
