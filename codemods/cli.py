"""The command line: parse and validate options, call the API, render, exit. Nothing else.

Heavy modules (libcst, rich, the codemods) are imported inside the commands so that
`torch-migrate --help` starts fast.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Callable

import click

from codemods import __version__
from codemods.cli_errors import Commands, output_writable, write_report
from codemods.cli_options import check_output_options, progress_bar, run_output_options, split_values, verbose_lines
from codemods.doctor_cli import doctor

FORMATS = ("text", "grouped", "json", "sarif")
TEXT_FORMATS = ("text", "grouped")  # text: one `path:line:col: CODE [safety] message` line per finding


_codes = split_values  # `--select A,B --select C`: repeats add up (ruff's lists)


def selection_options(command: Callable) -> Callable:
    """--select/--ignore/--unsafe, shared by every command that runs codemods."""
    command = click.option(
        "--unsafe/--no-unsafe", default=None, help="Also run codemods marked unsafe (off unless configured)."
    )(command)
    command = click.option(
        "--ignore", metavar="CODES", multiple=True, help="Codes, names or prefixes to skip (repeatable, comma-separated)."
    )(command)
    command = click.option(
        "--select", metavar="CODES", multiple=True,
        help="Codes, names or prefixes to run, comma-separated (TM001,TM1,cuda-to-device); repeats add up.",
    )(command)  # fmt: skip
    return command


def _target_torch(ctx, param, value: str | None) -> str | None:
    """--target-torch X.Y: a release the tables know, else a usage error (exit 2) saying which are."""
    if value is None:
        return None
    from codemods.versions import format_version, target_version

    try:
        return format_version(target_version(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def target_option(command: Callable) -> Callable:
    """--target-torch, shared by `run` and `verify`."""
    return click.option(
        "--target-torch", "target_torch", metavar="X.Y", callback=_target_torch,
        help="The torch the output must run on (default: the config's target-torch, under --verify the"
        " interpreter's torch, else the repository's torch requirement, else the newest release known).",
    )(command)  # fmt: skip


def verify_options(command: Callable) -> Callable:
    """--tests/--probe/--python/--device/--timeout/--rerun, shared by `verify` and `run --verify`."""
    for decorator in reversed(
        (
            click.option("--tests", metavar="CMD", help="Test command (default: python -m pytest when there are tests)."),
            click.option("--probe", metavar="CMD", help="A command whose printed numbers must match before and after."),
            click.option("--smoke", is_flag=True,
                         help="Also run the generated smoke check (imports, models, scripts' --help) beside the tests;"
                         " without tests it runs anyway."),
            click.option("--python", "python", metavar="EXE", help="Interpreter of the target (default: active venv's, else this one)."),
            click.option("--before-python", "before_python", metavar="EXE",
                         help="Interpreter the original code runs on today (its torch): three sides, before / baseline / after."),
            click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True,
                         help="cpu hides GPUs; cuda fails unless a GPU is visible; auto uses one if there is one."),
            click.option("--timeout", type=click.FloatRange(min=1), default=1200, show_default=True, metavar="S",
                         help="Seconds allowed per side and per run."),
            click.option("--rerun", type=click.IntRange(min=0), default=2, show_default=True, metavar="N",
                         help="Reruns of each changed test on both sides, to tell flaky tests from real changes."),
            click.option("--coverage/--no-coverage", default=True, show_default=True,
                         help="Measure which rewrites the proof executed (coverage.py on the after side)."),
        )
    ):
        command = decorator(command)
    return command


def _verify_options(select, ignore, unsafe, tests, probe, python, before_python, device, timeout, rerun, **extra):
    from codemods.verify import VerifyOptions

    return VerifyOptions(
        tests=tests, probe=probe, python=python, before_python=before_python, device=device, timeout=timeout, rerun=rerun,
        select=_codes(select), ignore=_codes(ignore), unsafe=unsafe, **extra,
    )  # fmt: skip


def _events(enabled: bool):
    if not enabled:
        return None
    return lambda message: click.echo(f"… {message}", err=True)


def _interrupted(exc: KeyboardInterrupt, mode: str) -> None:
    """Ctrl-C or SIGTERM: say which files were rewritten (each other file is as it was), exit 130
    (143 for SIGTERM)."""
    results = getattr(exc, "results", None)  # api.Interrupted: the files finished before it stopped
    if mode != "write":
        click.echo("interrupted; nothing was written", err=True)
    elif results is None:
        click.echo("interrupted; every file is either as it was or fully migrated", err=True)
    else:
        changed = [r.path for r in results if r.changed]
        click.echo(f"interrupted: {len(changed)} file(s) already rewritten; every other file is as it was", err=True)
        for path in changed:
            click.echo(f"  {path}", err=True)
    sys.exit(128 + getattr(exc, "signum", signal.SIGINT))


def _verify_stopped(exc: KeyboardInterrupt) -> None:
    """Ctrl-C, SIGTERM or SIGHUP during verify: its commands are stopped and its copies gone; exit 128 + the signal."""
    click.echo("interrupted: the tests were stopped and the copies removed", err=True)
    sys.exit(128 + getattr(exc, "signum", signal.SIGINT))


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torch-migrate")
def main() -> None:
    """Upgrade legacy PyTorch code, then prove behaviour did not change.

    An internal error exits 2 with one line; TORCH_MIGRATE_DEBUG=1 prints its traceback too.
    """


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--diff", "mode", flag_value="diff", help="Write nothing; print a unified diff.")
@click.option("--check", "mode", flag_value="check", help="Write nothing; exit 1 if a file would be rewritten.")
@click.option("--fail-on-findings", is_flag=True, help="Exit 1 also when findings (cases left as they are) remain.")
@selection_options
@target_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: CPU count).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: one line per finding; grouped: findings under their file.")
@click.option("--color", "color", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Colour the diff. auto: on a terminal, unless NO_COLOR is set; FORCE_COLOR turns it on.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), callback=output_writable,
              help="Write the report here.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable).")
@click.option("--no-config", is_flag=True, help="Ignore [tool.torch-migrate] in the target.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the per-file result cache.")
@run_output_options
@click.option("--verify", "verify_first", is_flag=True, help="Verify in copies first; write only if no test regresses.")
@verify_options
@click.option("--drop-culprits", is_flag=True, help="With --verify: on regressions, write the migration minus the culprit codemods.")
def run(paths, mode, fail_on_findings, select, ignore, unsafe, target_torch, jobs, fmt, color, output, exclude, no_config, no_cache,
        exit_zero, statistics, quiet, verbose, config_file, stdin_filename, verify_first, drop_culprits, **verify_args) -> None:  # fmt: skip
    """Migrate every Python file under PATHS (in place unless --diff/--check); `-` reads one
    from stdin and prints it migrated (or, with --diff, its diff).

    Exit code (bit flags): 0 clean; 1 a file would be rewritten (with --diff/--check), findings
    remain (with --fail-on-findings), or, with --verify, regressions; 2 a file could not be
    processed (a read-only one among them), or verification could not run. The last line of the
    report says which. 130: interrupted by Ctrl-C (143: by SIGTERM); the files already rewritten are listed.
    --exit-zero keeps only bit 2.
    """
    from codemods import api, registry
    from codemods.config import ConfigError
    from codemods.engine.interrupt import terminate_as_interrupt

    check_output_options(paths, fmt, quiet, verbose, statistics, config_file, no_config, stdin_filename, verify_first)
    if verify_first and fail_on_findings:
        raise click.UsageError("--fail-on-findings sets run's exit code; --verify's is its verdict")
    if verify_first:
        _run_verified(
            paths, mode, fmt, output, exclude, no_config, drop_culprits, select, ignore, unsafe, target_torch, verify_args
        )
        return
    if drop_culprits:
        raise click.UsageError("--drop-culprits needs --verify")

    options = api.Options(
        mode=mode or "write",
        select=_codes(select),
        ignore=_codes(ignore),
        unsafe=unsafe,
        exclude=split_values(exclude) or (),
        jobs=jobs,
        use_config=not no_config,
        cache=not no_cache,
        fail_on_findings=fail_on_findings,
        target_torch=target_torch,
        config_file=config_file,
    )
    shown = {"quiet": quiet, "statistics": statistics}
    if paths == ("-",):
        from codemods.cli_stdin import run_stdin

        run_stdin(options, stdin_filename, exit_zero, lambda report, err: _emit(report, fmt, output, color, **shown, err=err))
    on_start, on_result, stop = progress_bar(fmt in TEXT_FORMATS and sys.stderr.isatty() and output is None and not verbose)
    on_result, finish = verbose_lines(verbose) if verbose else (on_result, lambda count: None)
    try:
        with terminate_as_interrupt():  # SIGTERM ends the run as Ctrl-C does: what was written is listed
            report = api.migrate(paths, options, on_start=on_start, on_result=on_result)
    except (ConfigError, registry.SelectionError) as exc:
        raise click.UsageError(str(exc)) from None  # exit 2
    except KeyboardInterrupt as exc:
        stop()
        _interrupted(exc, options.mode)
    finally:
        stop()
    finish(len(report.files))
    report.exit_zero = exit_zero
    for warning in report.warnings if not quiet else ():
        click.echo(f"warning: {warning}", err=True)
    _emit(report, fmt, output, color, **shown)
    sys.exit(report.exit_code)


def _colour(choice: str, output: str | None) -> bool:
    """--color: always/never as told; auto: NO_COLOR wins, then FORCE_COLOR (the order CPython
    gives them), else whether stdout is a terminal. A report file is coloured only when `always`."""
    if choice != "auto" or output is not None:
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def _emit(report, fmt: str, output: str | None, color: str = "auto", quiet: bool = False, statistics: bool = False, err: bool = False) -> None:
    """The report in `fmt`, to `output`, else to stdout (stderr with `err`: `run -` prints the code there)."""
    from codemods.report import sarif, text
    from codemods.report.statistics import statistics as counts

    colour = _colour(color, output)
    if fmt == "json":
        rendered = json.dumps(counts(report) if statistics else report.to_dict(), indent=2)
    elif fmt == "sarif":
        rendered = json.dumps(sarif.render(report), indent=2)
    else:
        diff = text.render_diff(report, colour)
        if diff and output is None:
            click.echo(diff, nl=False, color=colour)  # click strips colour on a pipe unless told
        rendered = text.render(report, grouped=fmt == "grouped", quiet=quiet, statistics=statistics)
        if output is not None and diff:
            rendered = diff + rendered
    if output is not None:
        write_report(output, rendered)
        if fmt in TEXT_FORMATS and not quiet:
            if report.target_warning:  # a pinned repository is never broken silently
                click.echo(f"warning: {report.target_warning}", err=True)
            click.echo("\n".join(rendered.splitlines()[-2:]), err=True)  # the counts and the exit reason
    elif rendered or not quiet:
        click.echo(rendered, err=err)


def _run_verified(paths, mode, fmt, output, exclude, no_config, drop_culprits, select, ignore, unsafe, target_torch, verify_args):
    from pathlib import Path

    from codemods import registry
    from codemods.config import ConfigError
    from codemods.verify import apply_verified, render, verify

    if mode is not None:
        raise click.UsageError("--verify writes the verified migration; it cannot be combined with --diff/--check")
    if len(paths) != 1 or not Path(paths[0]).is_dir():
        raise click.UsageError("--verify takes one PATH: the project's folder")
    if fmt in ("sarif", "grouped"):
        raise click.UsageError("--verify reports as text or json")
    options = _verify_options(
        select, ignore, unsafe, exclude=split_values(exclude) or (), use_config=not no_config, target_torch=target_torch, **verify_args
    )
    try:
        report = verify(paths[0], options, on_event=_events(fmt == "text" and sys.stderr.isatty()))
        applied = apply_verified(paths[0], report, options, drop_culprits=drop_culprits)
    except (ConfigError, registry.SelectionError) as exc:
        raise click.UsageError(str(exc)) from None
    except KeyboardInterrupt as exc:
        _verify_stopped(exc)
    if fmt == "json":
        data = {"verify": report.to_dict(), "written": applied.written, "message": applied.message,
                "dropped": applied.dropped, "migration": applied.migration.to_dict() if applied.migration else None,
                "exit_code": applied.exit_code}  # fmt: skip
        rendered = json.dumps(data, indent=2)
    else:
        rendered = render.text(report) + "\n" + applied.message
    if output is not None:
        write_report(output, rendered)
        if report.target_warning:
            click.echo(f"warning: {report.target_warning}", err=True)
        click.echo(applied.message, err=True)
    else:
        click.echo(rendered)
    sys.exit(applied.exit_code)


@main.command("verify")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=str))
@verify_options
@selection_options
@target_option
@click.option("--rtol", type=click.FloatRange(min=0), default=1e-5, show_default=True, help="Probe: relative tolerance.")
@click.option("--atol", type=click.FloatRange(min=0), default=1e-8, show_default=True, help="Probe: absolute tolerance.")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), callback=output_writable,
              help="Write the report here.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable).")
@click.option("--no-config", is_flag=True, help="Ignore [tool.torch-migrate] in the target.")
@click.option("--no-culprits", is_flag=True, help="Do not search for the codemods behind regressions.")
@click.option("--keep-copies", is_flag=True, help="Keep the before/after copies (their folder is printed).")
def verify_(path, select, ignore, unsafe, target_torch, rtol, atol, fmt, output, exclude, no_config, no_culprits, keep_copies, **verify_args):
    """Prove a migration: run PATH's tests (or --probe) in a copy before and one after migrating.

    The project is never modified. Changed tests are rerun to tell flaky from real; a real
    regression is traced to the codemod(s) and files that cause it.

    With --before-python the original code also runs on the interpreter it runs on today: a test
    that passed there and fails after is a regression when it passes on the original code with the
    target (the baseline), else unfixed (the torch upgrade broke it; no codemod repaired it).

    Exit code: 0 every test that passed before passes after; 1 regressions or unfixed; 2 could not
    run (setup failure, timeout).
    """
    from codemods import registry
    from codemods.config import ConfigError
    from codemods.verify import render, verify

    options = _verify_options(
        select, ignore, unsafe, rtol=rtol, atol=atol, exclude=split_values(exclude) or (), use_config=not no_config,
        find_culprits=not no_culprits, keep_copies=keep_copies, target_torch=target_torch, **verify_args,
    )  # fmt: skip
    try:
        report = verify(path, options, on_event=_events(fmt == "text" and sys.stderr.isatty()))
    except (ConfigError, registry.SelectionError) as exc:
        raise click.UsageError(str(exc)) from None
    except KeyboardInterrupt as exc:
        _verify_stopped(exc)
    rendered = render.RENDERERS[fmt](report).rstrip("\n")
    if output is not None:
        write_report(output, rendered)
        if report.target_warning:
            click.echo(f"warning: {report.target_warning}", err=True)
        click.echo(render.text(report).splitlines()[-1], err=True)
    else:
        click.echo(rendered)
    sys.exit(report.exit_code)


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
    from codemods.batch import ManifestError, SchedulerError, run_batch
    from codemods.batch.render import print_summary

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
    except SchedulerError as exc:  # not a usage error: the same command works once the cluster is up
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(json.dumps(outcome.to_dict(), indent=2))
    else:
        print_summary(outcome.results, outcome.resumed)  # a table, or one line per repository when narrow
        click.echo(f"reports: {workdir}/reports/<repo>/REPORT.md")
    sys.exit(outcome.exit_code)


main.add_command(doctor)


@main.command("list")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def list_(fmt: str) -> None:
    """The pipeline, in the order it runs: code, name, safety, summary."""
    from codemods.registry import all_specs

    if fmt == "json":
        rows = [{"code": s.code, "name": s.name, "safety": s.label, "summary": s.summary} for s in all_specs()]
        click.echo(json.dumps(rows, indent=2))
        return
    for spec in all_specs():
        click.echo(f"{spec.code}  {spec.name:<26} {spec.label:<13} {spec.summary}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """A codemod's documentation: what, why, example, use instead, fix safety, references."""
    from codemods import docs, registry

    try:
        spec = registry.get(code)
    except registry.SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"{spec.code} {spec.name} ({spec.label})\n")
    click.echo(docs.page(spec))


if __name__ == "__main__":  # pragma: no cover
    main()
