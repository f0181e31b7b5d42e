"""git, run on a repository that is not ours to trust: the one way every part of the tool calls it.

A repository carries its own config (`.git/config`, and whatever it includes), and some of its
settings are commands git runs: `core.fsmonitor` runs on every `ls-files`, `status` and `add`;
hooks (`core.hooksPath`, or `.git/hooks`) on checkout and on every ref update; `core.pager` and
the editors when git thinks a person is there. Migrating a downloaded project must not run its
code, so each of these is switched off on the command line, which outranks every config file.

Transport and credential settings (`core.sshCommand`, `credential.helper`) are left alone: they
matter only to clone and push, which run in the clones batch makes, whose config git itself
writes from the user's own; switching them off would break the user's real ones. Drivers named in
`.gitattributes` (filters, diff textconv) need a command set in config too: the same holds.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping

# `-c` settings that turn off what a repository's config can make git execute.
NEUTRAL = ("core.fsmonitor=false", "core.hooksPath=/dev/null")  # no hook is ever found in /dev/null

# Never wait for a person: no credential prompt, no pager, no editor (these outrank any config).
QUIET = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":"}


def command(*args: str) -> list[str]:
    """The argument list of `git ARGS` with the repository's commands switched off."""
    neutral = [part for setting in NEUTRAL for part in ("-c", setting)]
    return ["git", *neutral, *args]


def run(
    *args: str, cwd: Path | None = None, timeout: float, env: Mapping[str, str] | None = None, text: bool = False
) -> subprocess.CompletedProcess:
    """`git ARGS` (see `command`) with its output captured; raises what `subprocess.run` raises
    (OSError when git cannot start, `subprocess.TimeoutExpired`), never for git's exit status."""
    environ = {**os.environ, **QUIET, **(env or {})}
    return subprocess.run(command(*args), cwd=cwd, capture_output=True, timeout=timeout, env=environ, text=text)
