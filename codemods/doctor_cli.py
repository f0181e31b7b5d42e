"""The `torch-migrate doctor` command (registered in cli.py with `main.add_command(doctor)`)."""

from __future__ import annotations

import json
import os
import shutil

import click


@click.command("doctor")
@click.argument("path", required=False, default=".", type=click.Path(exists=True))
@click.option(
    "--python", "python", metavar="EXE",
    help="The project's interpreter (default: the active virtualenv's, else the project's .venv/venv, "
    "else the active conda environment's, else this one).",
)  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def doctor(ctx: click.Context, path: str, python: str | None, fmt: str) -> None:
    """Check the environment and PATH for operational pitfalls.

    The project's torch and CUDA (asked of the project's interpreter, not torch-migrate's), /dev/shm
    size versus the DataLoader workers the code starts, and `docker run` command lines or
    docker-compose services without --shm-size/--ipc=host. Exit code 1 when a problem is found.
    """
    # Imported here, not with the CLI: every other command would pay for it at start-up. Its
    # probes are looked up at call time, so tests can stand in for the machine (a 64 MB /dev/shm, a GPU).
    from codemods import doctor as checks

    if python and os.sep not in python and (os.altsep is None or os.altsep not in python):
        python = shutil.which(python) or python  # `--python python3.11`: the one on PATH, by its path
    if python and not os.path.exists(python):
        raise click.BadParameter(f"{python}: no such interpreter", param_hint="--python")
    interpreter = checks.project_python(path, python)
    report = checks.diagnose(
        path, python=interpreter, probe=lambda: checks.probe_torch(interpreter.path), shm=checks.shm_bytes
    )
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(checks.render_text(report))
    ctx.exit(report.exit_code)
