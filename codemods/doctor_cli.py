"""The `torch-migrate doctor` command (registered in cli.py with `main.add_command(doctor)`)."""

from __future__ import annotations

import json

import click


@click.command("doctor")
@click.argument("path", required=False, default=".", type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def doctor(ctx: click.Context, path: str, fmt: str) -> None:
    """Check the environment and PATH for operational pitfalls.

    torch and CUDA, /dev/shm size versus the DataLoader workers the code starts, and `docker run`
    lines or docker-compose services without --shm-size/--ipc=host. Exit code 1 when a problem is found.
    """
    # Imported here, not with the CLI: every other command would pay for it at start-up. Its
    # probes are looked up at call time, so tests can stand in for the machine (a 64 MB /dev/shm, a GPU).
    from codemods import doctor as checks

    report = checks.diagnose(path, probe=checks.probe_torch, shm=checks.shm_bytes)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(checks.render_text(report))
    ctx.exit(report.exit_code)
