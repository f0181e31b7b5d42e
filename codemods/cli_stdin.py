"""`run -`: the command-line side of migrating stdin (codemods/stdin_source.py does the work).

As ruff and black do with `-`: the migrated source goes to stdout (the input unchanged when
there is nothing to do or it cannot be processed, so an editor's buffer is never emptied) and
the report to stderr; with --diff or --check, stdout carries the diff and the report as for files.
"""

from __future__ import annotations

import sys
from typing import Callable

import click

from codemods.api import Options


def run_stdin(options: Options, filename: str | None, exit_zero: bool, emit: Callable) -> None:
    """Read stdin, migrate it, print, exit with the report's code. `emit(report, err)` prints
    the report (to stderr when `err`)."""
    from codemods import registry
    from codemods.config import ConfigError
    from codemods.stdin_source import migrate_stdin

    data = sys.stdin.buffer.read()
    try:
        migrated = migrate_stdin(data, options, filename)
    except (ConfigError, registry.SelectionError) as exc:
        raise click.UsageError(str(exc)) from None  # exit 2
    report = migrated.report
    report.exit_zero = exit_zero
    if options.mode == "write":
        sys.stdout.buffer.write(migrated.output)
        sys.stdout.buffer.flush()
    emit(report, options.mode == "write")
    sys.exit(report.exit_code)
