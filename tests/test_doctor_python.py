"""`doctor` asks the project's interpreter about torch, not its own, and counts only real
`docker run` command lines (issue #41 item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods import doctor as D
from codemods.doctor_cli import doctor

ENVIRONMENTS = ("VIRTUAL_ENV", "CONDA_PREFIX")


@pytest.fixture(autouse=True)
def no_active_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENTS:
        monkeypatch.delenv(name, raising=False)


def _fake_python(folder: Path, torch: str | None, log: Path | None = None) -> Path:
    """An interpreter that answers the torch probe as one with `torch` installed (None: without)."""
    from codemods import torch_probe

    folder.mkdir(parents=True, exist_ok=True)
    answer = {
        "python": "3.11.0", "executable": str(folder / "python"), "torch": torch, "cuda_available": False,
        "cuda_version": None, "devices": [], "imported": torch is not None, "pytest": True,
        "error": None if torch else "ModuleNotFoundError: No module named 'torch'",
    }  # fmt: skip
    record = f'pwd > "{log}"\n' if log else ""
    script = folder / "python"
    script.write_text(f"#!/bin/sh\n{record}echo '{torch_probe.MARKER}{json.dumps(answer)}'\n")
    script.chmod(0o755)
    return script


def _torch_check(root: Path, *args: str) -> tuple[dict, dict]:
    result = CliRunner().invoke(doctor, [str(root), "--format", "json", *args])
    data = json.loads(result.output)
    return next(c for c in data["checks"] if c["name"] == "torch"), data["python"]


def test_python_option_reports_that_interpreters_torch(tmp_path: Path) -> None:
    log = tmp_path / "cwd.txt"
    fake = _fake_python(tmp_path / "env" / "bin", "1.13.1", log)
    (tmp_path / "project").mkdir()
    check, python = _torch_check(tmp_path / "project", "--python", str(fake))
    assert check["status"] == "warn" and "torch 1.13.1" in check["message"] and str(fake) in check["message"]
    assert python == {"path": str(fake), "source": "--python"}
    # The probe still runs in an empty folder, never in the project.
    ran_in = Path(log.read_text().strip())
    assert ran_in != tmp_path / "project" and not any(ran_in.iterdir() if ran_in.exists() else ())


def test_the_active_virtualenv_is_read_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_python(tmp_path / "venv" / "bin", "2.5.1")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "venv"))
    check, python = _torch_check(tmp_path)
    assert check["status"] == "ok" and check["message"] == "torch 2.5.1"
    assert python == {"path": str(fake), "source": "VIRTUAL_ENV"}


def test_a_conda_environment_is_read_when_active(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_python(tmp_path / "conda" / "bin", "2.4.0")
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "conda"))
    (tmp_path / "project").mkdir()
    assert D.project_python(tmp_path / "project") == D.Interpreter(str(fake), "CONDA_PREFIX")
    # A project's own venv says more than conda's (base is active in every conda user's shell).
    local = _fake_python(tmp_path / "project" / ".venv" / "bin", "2.4.0")
    assert D.project_python(tmp_path / "project") == D.Interpreter(str(local), "the project's .venv")


def test_the_projects_venv_is_read_by_default_even_from_the_tools_own_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_python(tmp_path / "venv" / "bin", "2.6.0")
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)  # the tool run from its own activated venv
    assert D.project_python(tmp_path) == D.Interpreter(str(fake), "the project's venv")
    check, _ = _torch_check(tmp_path)
    assert "torch 2.6.0" in check["message"]


def test_without_any_environment_it_says_it_looked_at_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(D, "probe_torch", lambda python=None: D.TorchInfo(installed=False, error="No module named 'torch'"))
    check, python = _torch_check(tmp_path)
    assert python == {"path": sys.executable, "source": D.OWN}
    assert check["status"] == "fail" and "--python" in check["fix"]


def test_a_missing_interpreter_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(doctor, [str(tmp_path), "--python", str(tmp_path / "nope" / "python")])
    assert result.exit_code == 2 and "no such interpreter" in result.output


def test_a_real_venv_other_than_its_own(tmp_path: Path) -> None:
    """A real virtualenv of the base interpreter (which has no torch), found as the project's .venv,
    while the tool's own interpreter has torch: doctor reports the project's."""
    pytest.importorskip("torch")
    project = tmp_path / "project"
    project.mkdir()
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", "--system-site-packages", str(project / ".venv")], check=True)
    venv_python = project / ".venv" / "bin" / "python"
    if subprocess.run([str(venv_python), "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip("the base interpreter has torch too: nothing to tell apart")
    check, python = _torch_check(project)
    assert python["source"] == "the project's .venv" and python["path"] == str(venv_python)
    assert check["status"] == "fail" and "No module named 'torch'" in check["message"]
    own, _ = _torch_check(project, "--python", sys.executable)
    assert own["status"] in ("ok", "warn") and "torch " in own["message"]


# -- docker run: command lines only ----------------------------------------------------------------

README = """# project

Train it in Docker: docker run --gpus all myimage python train.py, or see run.sh.

```python
subprocess.run("docker run myimage", shell=True)
```

    docker run indented-code-is-not-fenced

```sh
# docker run in-a-comment
docker run --rm fenced-shell
```

~~~
docker run unmarked-fence
~~~

```console
$ docker run --ipc=host console-ok
```
"""


def _launches(root: Path) -> dict[str, str]:
    return {launch.where: launch.command for launch in D.scan_docker(root)}


def test_prose_and_non_shell_blocks_are_not_launches(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "docs.rst").write_text("Use docker run myimage to train.\n")
    (tmp_path / "notes.txt").write_text("docker run myimage\n")
    assert _launches(tmp_path) == {
        "README.md:13": "docker run --rm fenced-shell",
        "README.md:17": "docker run unmarked-fence",
        "README.md:21": "docker run --ipc=host console-ok",
    }


def test_prose_mention_is_not_flagged(tmp_path: Path) -> None:
    (tmp_path / "loader.py").write_text("DataLoader(ds, num_workers=4)\n")
    (tmp_path / "README.md").write_text("Run it with `docker run myimage` on a GPU machine.\n")
    report = D.diagnose(tmp_path, probe=lambda: D.TorchInfo(True, "2.13.0"), shm=lambda: 16 * D.GiB)
    docker = next(c for c in report.checks if c.name == "docker")
    assert docker.status == D.OK and not docker.where


def test_dockerfiles_count_only_instructions_that_run_commands(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        'FROM python:3.11\nLABEL usage="docker run this-image"\n# docker run commented\n'
        "RUN apt-get update && \\\n    docker run --rm helper\n"
        'CMD ["docker", "run", "exec-form"]\n'
    )
    assert _launches(tmp_path) == {"Dockerfile:4": "docker run --rm helper", "Dockerfile:6": "docker run exec-form"}


def test_scripts_makefiles_and_shebang_files_count_but_not_their_comments(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/sh\n# docker run commented\ndocker run --rm a\n")
    (tmp_path / "Makefile").write_text("# docker run commented\ntrain:\n\tdocker run b\n")
    (tmp_path / "launch").write_text("#!/usr/bin/env bash\ndocker run c\n")
    (tmp_path / "LICENSE").write_text("docker run is mentioned in this text\n")
    (tmp_path / "compose.yaml").write_text("services:\n  t:\n    command: docker run d\n")
    assert _launches(tmp_path) == {
        "run.sh:3": "docker run --rm a",
        "Makefile:3": "docker run b",
        "launch:2": "docker run c",
        "compose.yaml:2": "service t",
        "compose.yaml:3": "docker run d",
    }
