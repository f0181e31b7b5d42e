"""How the command line fails: a bad --output before any work, an unforeseen error as exit 2.

Exit 1 means "would change", findings or regressions; it is also what Python and click give an
uncaught exception, so none may escape as one.
"""

from __future__ import annotations

import os
import sys

import click

DEBUG = "TORCH_MIGRATE_DEBUG"  # set: an internal error prints its traceback too


class Commands(click.Group):
    """The command group: an error no command foresaw exits 2, never 1 (which means "would
    change", findings or regressions, and is what Python gives an uncaught exception)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt as exc:  # click would make it Abort, exit 1
            interrupted(exc)
        except Exception as exc:
            failed(exc)


def interrupted(exc: KeyboardInterrupt) -> None:
    """A Ctrl-C (or a signal made one) no command handled itself: one line, exit 128 + the signal."""
    import signal

    click.echo("interrupted", err=True)
    sys.exit(128 + getattr(exc, "signum", signal.SIGINT))


def failed(exc: Exception) -> None:
    """One line on stderr (the traceback too with TORCH_MIGRATE_DEBUG set), exit 2."""
    if isinstance(exc, BrokenPipeError):  # the reader went away (`| head`): nothing more to say there
        sys.stdout = click.utils.PacifyFlushWrapper(sys.stdout)
        sys.exit(2)
    if os.environ.get(DEBUG):
        import traceback

        traceback.print_exception(exc)
    reason = (str(exc).strip().splitlines() or [""])[0]
    hint = "" if os.environ.get(DEBUG) else f" ({DEBUG}=1 shows the traceback)"
    click.echo(f"error: {type(exc).__name__}{': ' + reason if reason else ''}{hint}", err=True)
    sys.exit(2)


def output_writable(ctx, param, value: str | None) -> str | None:
    """--output must be a file this process can write, in a folder that exists: checked before any
    file is migrated, by trying (permissions, a read-only mount and root's exemption all decide it)."""
    if value is None:
        return value
    import tempfile
    from pathlib import Path

    folder = Path(value).parent
    if not folder.is_dir():
        raise click.BadParameter(f"cannot write {value}: folder {folder} does not exist", ctx, param)
    try:
        if Path(value).exists():
            open(value, "ab").close()  # appends nothing: the file is as it was
        else:
            tempfile.TemporaryFile(dir=folder).close()  # unnamed where the system allows, and gone
    except OSError as exc:
        raise click.BadParameter(f"cannot write {value}: {exc.strerror or exc}", ctx, param) from None
    return value


def write_report(output: str, rendered: str) -> None:
    """Write --output; a failure the check before the run could not foresee (a full disk, a
    file-size limit) is an error naming the file, exit 2."""
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(rendered + "\n")
    except OSError as exc:
        failure = click.ClickException(f"cannot write the report to {output}: {exc.strerror or exc}")
        failure.exit_code = 2
        raise failure from None
