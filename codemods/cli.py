"""The command line: parse and validate options, call the API, render, exit. Nothing else.

Heavy modules (libcst, rich, the codemods) are imported inside the commands so that
`torch-migrate --help` starts fast.
"""

from __future__ import annotations

import json
import sys
from typing import Callable

import click

from codemods import __version__
from codemods.doctor_cli import doctor

FORMATS = ("text", "json", "sarif")


def _codes(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(v.strip() for v in value.split(",") if v.strip())


def selection_options(command: Callable) -> Callable:
    """--select/--ignore/--unsafe, shared by every command that runs codemods."""
    command = click.option(
        "--unsafe/--no-unsafe", default=None, help="Also run codemods marked unsafe (off unless configured)."
    )(command)
    command = click.option("--ignore", metavar="CODES", help="Codes, names or prefixes to skip.")(command)
    command = click.option(
        "--select", metavar="CODES", help="Codes, names or prefixes to run, comma-separated (TM001,TM1,cuda-to-device)."
    )(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torch-migrate")
def main() -> None:
    """Upgrade legacy PyTorch code, then prove behaviour did not change."""


def _progress(enabled: bool):
    """(on_start, on_result, stop) callbacks drawing a rich progress bar on stderr, or no-ops."""
    if not enabled:
        return None, None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("migrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    )  # fmt: skip
    task = {}

    def on_start(total: int) -> None:
        progress.start()
        task["id"] = progress.add_task("files", total=total)

    def on_result(_result) -> None:
        progress.advance(task["id"])

    return on_start, on_result, progress.stop


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--diff", "mode", flag_value="diff", help="Write nothing; print a unified diff.")
@click.option("--check", "mode", flag_value="check", help="Write nothing; exit 1 if anything would change.")
@selection_options
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: CPU count).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report here.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable).")
@click.option("--no-config", is_flag=True, help="Ignore [tool.torch-migrate] in the target.")
def run(paths, mode, select, ignore, unsafe, jobs, fmt, output, exclude, no_config) -> None:
    """Migrate every Python file under PATHS (in place unless --diff/--check).

    Exit code: 0 clean; 1 changes or findings remain (with --diff/--check); 2 a file could not
    be processed (bit flags, so 3 is both).
    """
    from codemods import api, registry
    from codemods.config import ConfigError

    options = api.Options(
        mode=mode or "write",
        select=_codes(select),
        ignore=_codes(ignore),
        unsafe=unsafe,
        exclude=tuple(exclude),
        jobs=jobs,
        use_config=not no_config,
    )
    on_start, on_result, stop = _progress(fmt == "text" and sys.stderr.isatty() and output is None)
    try:
        report = api.migrate(paths, options, on_start=on_start, on_result=on_result)
    except (ConfigError, registry.SelectionError) as exc:
        raise click.UsageError(str(exc)) from None  # exit 2
    finally:
        stop()
    _emit(report, fmt, output)
    sys.exit(report.exit_code)


def _emit(report, fmt: str, output: str | None) -> None:
    from codemods.report import sarif, text

    if fmt == "json":
        rendered = json.dumps(report.to_dict(), indent=2)
    elif fmt == "sarif":
        rendered = json.dumps(sarif.render(report), indent=2)
    else:
        colour = output is None and sys.stdout.isatty()
        diff = text.render_diff(report, colour)
        if diff and output is None:
            click.echo(diff, nl=False)
        rendered = text.render(report)
        if output is not None and diff:
            rendered = diff + rendered
    if output is not None:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(rendered + "\n")
        if fmt == "text":
            click.echo(rendered.splitlines()[-1], err=True)
    else:
        click.echo(rendered)


@main.command()
@click.argument("manifest", type=click.Path(dir_okay=False, path_type=str))
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True, help="Repositories in parallel.")
@click.option("--dask-scheduler", metavar="ADDR", help="Run one task per repository on this Dask cluster (tcp://host:port).")
@click.option("--workdir", type=click.Path(file_okay=False), default="torch-migrate-work", show_default=True)
@click.option("--resume", is_flag=True, help="Skip repositories already done with the same entry and tool version.")
@click.option("--no-verify", is_flag=True, help="Migrate and commit without running the tests.")
@click.option("--allow-regressions", is_flag=True, help="Commit even when verification finds regressions.")
@click.option("--push", is_flag=True, help="Push the branch of `url` repositories to their origin.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def batch(manifest, jobs, dask_scheduler, workdir, resume, no_verify, allow_regressions, push, fmt) -> None:
    """Migrate every repository of MANIFEST: a branch, a commit and a REPORT.md each.

    Exit code: 0 all migrated and verified; 1 some with regressions or failures; 2 nothing could run.
    """
    from codemods.batch import ManifestError, run_batch
    from codemods.batch.render import summary_table

    def progress(result) -> None:
        if fmt == "text":
            click.echo(f"{result.name}: {result.status} ({result.seconds:.0f}s)", err=True)

    try:
        outcome = run_batch(
            manifest, workdir, jobs=jobs, dask_scheduler=dask_scheduler, resume=resume,
            verify=not no_verify, allow_regressions=allow_regressions, push=push, on_result=progress,
        )  # fmt: skip
    except ManifestError as exc:
        raise click.UsageError(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps(outcome.to_dict(), indent=2))
    else:
        from rich.console import Console

        Console(width=160 if not sys.stdout.isatty() else None).print(summary_table(outcome.results, outcome.resumed))
        click.echo(f"reports: {workdir}/reports/<repo>/REPORT.md")
    sys.exit(outcome.exit_code)


main.add_command(doctor)


@main.command("list")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def list_(fmt: str) -> None:
    """The pipeline, in the order it runs: code, name, safety, summary."""
    from codemods.registry import all_specs

    if fmt == "json":
        rows = [{"code": s.code, "name": s.name, "safety": s.kind, "summary": s.summary} for s in all_specs()]
        click.echo(json.dumps(rows, indent=2))
        return
    for spec in all_specs():
        click.echo(f"{spec.code}  {spec.name:<26} {spec.kind:<7} {spec.summary}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """A codemod's documentation: what, why, example, use instead, fix safety, references."""
    import inspect

    from codemods import registry

    try:
        spec = registry.get(code)
    except registry.SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"{spec.code} {spec.name} ({spec.kind})\n")
    click.echo(inspect.cleandoc(spec.doc))


if __name__ == "__main__":  # pragma: no cover
    main()
