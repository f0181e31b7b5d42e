"""Options `run` shares with ruff and TorchFix users' habits, and what they change in the output:
repeatable comma-separated lists, `--exit-zero`, `--statistics`, `--quiet`/`--verbose`,
`--config FILE` and `--stdin-filename`."""

from __future__ import annotations

import time
from typing import Callable, Iterable

import click


def split_values(values: Iterable[str] | str | None) -> tuple[str, ...] | None:
    """`--select A,B --select C` -> (A, B, C): repeats add up, each may list several, commas
    between (as ruff reads its lists). None when the option was not given."""
    if values is None:
        return None
    if isinstance(values, str):
        values = (values,)
    values = tuple(values)
    if not values:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def run_output_options(command: Callable) -> Callable:
    """The output and input options of `run` (see the module docstring)."""
    for decorator in reversed(
        (
            click.option("--exit-zero", is_flag=True,
                         help="Exit 0 even when rewrites are pending or findings remain; 2 still means a file could not be processed."),
            click.option("--statistics", is_flag=True, help="One line per code with its count, instead of one per finding."),
            click.option("--quiet", "-q", is_flag=True, help="Print only diffs, findings and errors: no summary, no warnings."),
            click.option("--verbose", "-v", is_flag=True, help="Say on stderr what happened to each file (skipped ones and why), and the time taken."),
            click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=str), metavar="FILE",
                         help="Read the settings from FILE (pyproject.toml, setup.cfg or a torch-migrate TOML) instead of looking for one."),
            click.option("--stdin-filename", metavar="NAME",
                         help="With `-` as PATH: the file the input is, for messages, its configuration, exclude and per-file-ignores."),
        )
    ):  # fmt: skip
        command = decorator(command)
    return command


def check_output_options(paths, fmt, quiet, verbose, statistics, config_file, no_config, stdin_filename, verify_first) -> None:
    """Usage errors (exit 2) for combinations that cannot mean anything."""
    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose contradict each other")
    if statistics and fmt == "sarif":
        raise click.UsageError("--statistics prints text or json")
    if config_file is not None and no_config:
        raise click.UsageError("--config names the settings to use; --no-config says to use none")
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` reads one file from stdin: give no other PATH with it")
    if stdin_filename is not None and paths != ("-",):
        raise click.UsageError("--stdin-filename names the input of `-`: give `-` as the PATH")
    if verify_first and (statistics or "-" in paths):
        raise click.UsageError("--verify runs on a project's folder and reports its verdict; not with `-` or --statistics")


_WHY = {
    "skipped": "skipped (no selected codemod's words in it)",
    "unchanged": "unchanged",
}


def verbose_lines(enabled: bool):
    """(on_result, finish): per-file lines on stderr, then the time taken; or no-ops."""
    started = time.perf_counter()
    if not enabled:
        return None, lambda count: None

    def on_result(result) -> None:
        if result.problem is not None:
            what = f"error: {result.problem.reason}"
        elif result.changed:
            what = "changed: " + ", ".join(f"{code} ({n})" for code, n in sorted(result.rewrites.items()))
        else:
            what = _WHY.get(result.status.value, result.status.value)
        findings = f"; {len(result.findings)} finding(s)" if result.findings else ""
        click.echo(f"{result.path}: {what}{findings}", err=True)

    def finish(count: int) -> None:
        click.echo(f"{count} file(s) in {time.perf_counter() - started:.2f}s", err=True)

    return on_result, finish


def progress_bar(enabled: bool):
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
