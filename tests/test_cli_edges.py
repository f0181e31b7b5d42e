"""The edges of `run` a new user meets: read-only files, Ctrl-C, a bad --output, selections and
configs that silently do nothing, labels and notebook cells as the user sees them."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods import registry
from codemods.api import transform_source
from codemods.cli import main
from tests.conftest import FIXTURES, ROOT

LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n"
MIGRATED = 'import torch.nn as nn\nc = nn.MSELoss(reduction="sum")\n'


def run(*args: str):
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


# --- data safety ---------------------------------------------------------------------------


def test_read_only_file_is_left_untouched_and_reported(tmp_path: Path) -> None:
    locked, open_ = tmp_path / "locked.py", tmp_path / "open.py"
    locked.write_text(LEGACY)
    open_.write_text(LEGACY)
    locked.chmod(0o444)
    before = locked.stat()
    try:
        result = run(str(tmp_path), "--no-cache")
        after = locked.stat()
    finally:
        locked.chmod(0o644)
    assert f"{locked}: read-only; left untouched" in result.output
    assert result.exit_code & 2
    assert locked.read_text() == LEGACY
    assert (after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_ino, 0o444)  # not replaced by a rename
    assert open_.read_text() == MIGRATED  # the others still migrate


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_rewritten_file_keeps_its_owner_and_group(tmp_path: Path) -> None:
    target = tmp_path / "shared.py"
    target.write_text(LEGACY)
    target.chmod(0o664)
    os.chown(target, 1234, 4321)
    result = run(str(tmp_path), "--no-cache")
    assert result.exit_code == 0 and target.read_text() == MIGRATED
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 4321, 0o664)


def _legacy_module(index: int) -> str:
    """Enough work per file (~30 ms) that a run over a few hundred is still going when interrupted."""
    blocks = "".join(
        f"\n\ndef step_{k}(x, y):\n    crit = nn.MSELoss(size_average=False)\n    x = x.cuda()\n"
        f"    out = F.upsample(x, scale_factor={index % 3 + 2})\n    return crit(out, y.cuda())\n"
        for k in range(12)
    )
    return f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{blocks}"


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "pool"])
def test_ctrl_c_exits_130_and_lists_exactly_the_files_rewritten(tmp_path: Path, jobs: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    originals = {project / f"m{i:03d}.py": _legacy_module(i) for i in range(300)}
    for path, text in originals.items():
        path.write_text(text)
    migrated = {i: transform_source(_legacy_module(i)).code for i in range(3)}  # three variants
    stamps = {path: path.stat().st_mtime_ns for path in originals}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "codemods", "run", "proj", "--no-cache", "-j", jobs]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(path.stat().st_mtime_ns != stamps[path] for path in originals):  # until it is mid-run
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 130, err
    assert "Aborted" not in err and "Traceback" not in err
    listed = {line.strip() for line in err.splitlines() if line.startswith("  ")}
    changed = {path.relative_to(tmp_path).as_posix() for path, text in originals.items() if path.read_text() != text}
    assert listed == changed, err
    assert f"interrupted: {len(changed)} file(s) already rewritten" in err
    assert 0 < len(changed) < len(originals)  # it really stopped mid-run
    for index, path in enumerate(sorted(originals)):
        assert path.read_text() in (originals[path], migrated[index % 3]), path  # never half-migrated


def _session_processes(session: int) -> list[int]:
    """The live processes of a session (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == session:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from Linux's /proc")
def test_ctrl_c_in_the_facts_pass_stops_every_process_quietly(tmp_path: Path) -> None:
    # a terminal's Ctrl-C reaches the whole process group: the main process, the child that
    # gathers the facts of a large repository, and that child's pool; sent as soon as the first
    # of them exists (the facts pass comes before any file's pipeline)
    project = tmp_path / "proj"
    project.mkdir()
    for i in range(400):
        (project / f"m{i:03d}.py").write_text(_legacy_module(i))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "codemods", "run", "proj", "--no-cache", "--diff", "-j", "2"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(_session_processes(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted; nothing was written" in err, err
    deadline = time.monotonic() + 30
    while _session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # workers end with the item they are on
    assert _session_processes(proc.pid) == []


def test_output_into_a_missing_folder_is_a_clean_error_before_any_write(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LEGACY)
    report = tmp_path / "missing" / "report.txt"
    result = CliRunner().invoke(main, ["run", str(tmp_path), "--output", str(report)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)  # not a crash
    assert f"folder {report.parent} does not exist" in result.output
    assert (tmp_path / "a.py").read_text() == LEGACY  # refused before migrating anything


# --- selections and configs that do nothing ------------------------------------------------


def test_selecting_an_unsafe_codemod_without_unsafe_says_so(tmp_path: Path) -> None:
    fixture = FIXTURES / "TM202-loss-accumulation" / "basic.in.py"
    target = tmp_path / "train.py"
    target.write_text(fixture.read_text())
    held = run(str(tmp_path), "--select", "TM202", "--no-cache")
    assert "TM202 (loss-accumulation) is selected but unsafe, so it did not run: it needs --unsafe" in held.stderr
    assert target.read_text() == fixture.read_text()
    ran = run(str(tmp_path), "--select", "TM202", "--unsafe", "--no-cache")
    assert "unsafe" not in ran.stderr
    assert target.read_text() == fixture.with_name("basic.out.py").read_text()


def test_a_folder_without_python_files_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n")
    result = run(str(tmp_path))
    assert result.exit_code == 0
    assert f"no Python files (.py, .ipynb) found in {tmp_path}" in result.stderr


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ('[tool.torch-migrate]\nunsafe = "yes"\n', "unsafe: expected true or false"),
        ('[tool.torch-migrate]\nselect = ["TM999"]\n', "select: unknown codemod or prefix 'TM999'"),
        ('[tool.torch-migrate]\nignore = ["TM999"]\n', "ignore: unknown codemod or prefix 'TM999'"),
        ('[tool.torch-migrate.per-file-ignores]\n"tests/*" = ["TM999"]\n', "per-file-ignores['tests/*']: unknown"),
        ('[tool.torch-migrate.per-file-ignores]\n"tests/*" = 3\n', "per-file-ignores['tests/*']: expected a list"),
    ],
    ids=["unsafe-string", "select", "ignore", "per-file-code", "per-file-type"],
)
def test_bad_pyproject_values_name_the_file(tmp_path: Path, config: str, named: str) -> None:
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "a.py").write_text(LEGACY)
    result = run(str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path / 'pyproject.toml'}: {named}" in result.output
    assert (tmp_path / "a.py").read_text() == LEGACY


def test_setup_cfg_booleans_are_strings_and_still_read(tmp_path: Path) -> None:
    fixture = FIXTURES / "TM202-loss-accumulation" / "basic.in.py"
    (tmp_path / "setup.cfg").write_text("[torch-migrate]\nunsafe = yes\nselect = TM202\n")
    (tmp_path / "train.py").write_text(fixture.read_text())
    assert run(str(tmp_path), "--no-cache").exit_code == 0
    assert (tmp_path / "train.py").read_text() == fixture.with_name("basic.out.py").read_text()


def test_per_file_ignores_read_codes_like_select(tmp_path: Path) -> None:
    config = '[tool.torch-migrate.per-file-ignores]\n"tests/*" = ["tm001"]\n"legacy/*" = ["loss-reduction"]\n'
    (tmp_path / "pyproject.toml").write_text(config)
    for rel in ("tests/test_a.py", "legacy/b.py", "src/c.py"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(LEGACY)
    assert run(str(tmp_path), "--no-cache").exit_code == 0
    assert (tmp_path / "tests" / "test_a.py").read_text() == LEGACY  # lower-case code: still TM001
    assert (tmp_path / "legacy" / "b.py").read_text() == LEGACY  # a name: its code
    assert (tmp_path / "src" / "c.py").read_text() == MIGRATED


# --- labels and notebook cells -------------------------------------------------------------


def test_findings_only_codemods_have_one_label_in_list_and_run(tmp_path: Path) -> None:
    checks = [s for s in registry.all_specs() if s.code.startswith("TM9")]
    listed = CliRunner().invoke(main, ["list"]).output
    rows = {line.split()[0]: line for line in listed.splitlines()}
    for spec in checks:
        assert rows[spec.code].split()[2] == "findings-only", rows[spec.code]
        assert "finding finding" not in rows[spec.code] and not spec.summary.startswith("finding")
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(2).cuda(1)\n")
    result = run(str(tmp_path), "--diff", "--format", "json", "--no-cache")
    (finding,) = [f for file in json.loads(result.output)["files"] for f in file["findings"] if f["code"] == "TM904"]
    listed_json = json.loads(CliRunner().invoke(main, ["list", "--format", "json"]).output)
    assert finding["safety"] == {row["code"]: row["safety"] for row in listed_json}["TM904"] == "findings-only"
    text = run(str(tmp_path), "--diff", "--no-cache").output
    assert "TM904 [findings-only]" in text and "[safe]" not in text


def _write_notebook(path: Path, sources: list[str]) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": s[3:]}
        if s.startswith("md:")
        else {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
        for s in sources
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1) + "\n")


def test_a_time_cell_is_migrated_and_cells_are_counted_from_one(tmp_path: Path) -> None:
    target = tmp_path / "train.ipynb"
    _write_notebook(
        target,
        ["md:# Training", "%%time\nimport torch\nx = torch.zeros(2).cuda()", "y = torch.ones(2).cuda(1)"],
    )
    result = run(str(tmp_path), "--diff", "--no-cache")
    assert "train.ipynb [cell 2]" in result.output  # the second cell, as Jupyter shows it
    assert "+x = torch.zeros(2).to(device)" in result.output
    assert "cell 3: `.cuda(1)`" in result.output
    run(str(tmp_path), "--no-cache")
    cell = json.loads(target.read_text())["cells"][1]["source"]
    assert cell.startswith("%%time\nimport torch\n") and "x = torch.zeros(2).to(device)" in cell


def test_an_import_added_to_a_time_cell_goes_below_the_magic(tmp_path: Path) -> None:
    target = tmp_path / "a.ipynb"
    _write_notebook(target, ["%%time\nimport torch.nn.functional as F\ny = F.sigmoid(x)\n"])
    run(str(tmp_path), "--no-cache")
    cell = json.loads(target.read_text())["cells"][0]["source"]
    assert cell.startswith("%%time\n") and "import torch\n" in cell and "torch.sigmoid(x)" in cell


def test_a_cell_that_is_not_python_gets_a_finding_naming_it(tmp_path: Path) -> None:
    target = tmp_path / "a.ipynb"
    _write_notebook(target, ["import torch", "%%bash\necho done", "%%writefile train.py\nx = torch.zeros(1).cuda()\n"])
    before = target.read_text()
    result = run(str(tmp_path), "--no-cache")
    assert target.read_text() == before
    assert "cell 3: not migrated: a `%%writefile` cell is not run as Python" in result.output
    assert "cell 2" not in result.output  # a %%bash cell with nothing to migrate is not worth a word
