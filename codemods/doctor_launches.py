"""Where a repository starts containers: `docker run` command lines and docker-compose services.

Only text that a shell, Docker, Make or Compose executes counts: shell scripts, Dockerfile
`RUN`/`CMD`/`ENTRYPOINT` instructions, Makefiles and justfiles, YAML (compose files, CI steps), and
in Markdown the lines of fenced code blocks marked as shell (or not marked at all). Prose that
mentions `docker run`, a comment, or a Python block that spells it is not a launch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

_DOCKER_RUN = re.compile(r"\b(?:nvidia-docker|docker|podman)\s+(?:container\s+)?run\b")
_SHM_FLAG = re.compile(r"--shm-size\b|--ipc[= ]+host\b")
_COMPOSE_FILES = re.compile(r"(?i)^(docker-)?compose[\w.-]*\.ya?ml$")
_COMPOSE_SHM = re.compile(r"^\s*(shm_size\s*:|ipc\s*:\s*['\"]?host\b)", re.MULTILINE)
_SHELL_SUFFIXES = {".sh", ".bash", ".zsh", ".ksh"}
_SHEBANG = re.compile(r"#!\s*\S*(?:/|env\s+)(?:ba|z|k|da)?sh\b")
_MAKEFILES = re.compile(r"(?i)^(gnumakefile|makefile|justfile|procfile)$|\.mk$")
_DOCKERFILES = re.compile(r"(?i)^(dockerfile|containerfile)([.-][\w.-]*)?$|\.dockerfile$")
_DOCKERFILE_EXEC = {"RUN", "CMD", "ENTRYPOINT"}
_MARKDOWN = {".md", ".markdown"}
# A fenced block's language: these (or none) hold command lines; any other holds code or output.
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "zsh", "ksh", "console", "shell-session", "shellsession", "terminal"}
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)")


@dataclass(frozen=True)
class DockerLaunch:
    where: str
    command: str
    kind: str  # "run" (a `docker run` command line) | "compose" (a docker-compose service)
    has_shm: bool


def _logical_lines(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Lines with backslash continuations joined, numbered by their first physical line. Comment
    lines are dropped first: Docker drops them inside a continued instruction, and a shell or Make
    comment is never a command."""
    start, parts = None, []
    for number, line in lines:
        if line.lstrip().startswith("#"):
            continue
        if start is None:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        yield start, " ".join(parts)
        start, parts = None, []
    if parts and start is not None:
        yield start, " ".join(parts)


def _numbered(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), start=1))


def _fenced_shell_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a Markdown file's fenced code blocks whose language is a shell's, or none."""
    fence, shell = None, False
    for number, line in _numbered(text):
        if fence is None:
            opened = _FENCE.match(line)
            if opened:
                fence = opened.group(1)
                shell = opened.group(2).strip("{}.").lower() in SHELL_LANGUAGES
            continue
        if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        elif shell:
            yield number, line


def _dockerfile_command(logical: str) -> str | None:
    """A Dockerfile instruction's command when it runs one (RUN/CMD/ENTRYPOINT; the exec form's
    JSON array read as words), else None."""
    instruction, _, rest = logical.strip().partition(" ")
    if instruction.upper() not in _DOCKERFILE_EXEC:
        return None
    rest = rest.strip()
    if rest.startswith("["):
        try:
            words = json.loads(rest)
        except ValueError:
            return rest
        if isinstance(words, list):
            return " ".join(str(w) for w in words)
    return rest


def _command_lines(name: str, suffix: str, text: str) -> Iterator[tuple[int, str]] | None:
    """The command lines of a file, by its kind; None: a file whose text is not commands."""
    lowered = suffix.lower()
    if _DOCKERFILES.search(name):
        commands = ((n, _dockerfile_command(line)) for n, line in _logical_lines(_numbered(text)))
        return ((n, c) for n, c in commands if c)
    if lowered in _MARKDOWN:
        return _logical_lines(_fenced_shell_lines(text))
    if lowered in _SHELL_SUFFIXES or lowered in (".yml", ".yaml") or _MAKEFILES.search(name):
        return _logical_lines(_numbered(text))
    if not suffix and _SHEBANG.match(text):
        return _logical_lines(_numbered(text))
    return None


def _compose_services(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, service name, its block) for each service under a top-level `services:` key."""
    lines = text.splitlines()
    in_services, indent, current = False, None, None
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            if current:
                current[2].append(line)
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            if current:
                yield current[0], current[1], "\n".join(current[2])
                current = None
            in_services = line.rstrip().startswith("services:")
            indent = None
            continue
        if not in_services:
            continue
        if indent is None:
            indent = depth
        if depth == indent and line.strip().endswith(":"):
            if current:
                yield current[0], current[1], "\n".join(current[2])
            current = (number, line.strip()[:-1].strip("'\""), [])
        elif current:
            current[2].append(line)
    if current:
        yield current[0], current[1], "\n".join(current[2])


def may_launch(path: Path) -> bool:
    """Whether a file's name says it may hold launches (before reading it)."""
    suffix = path.suffix.lower()
    return _named_kind(path.name) or suffix in _SHELL_SUFFIXES or suffix in _MARKDOWN or suffix in (".yml", ".yaml") or not suffix


def _named_kind(name: str) -> bool:
    return bool(_COMPOSE_FILES.match(name) or _DOCKERFILES.search(name) or _MAKEFILES.search(name))


def _has_shebang(path: Path) -> bool:
    """An extension-less file is read only when it starts like a script (`#!`)."""
    try:
        with open(path, "rb") as file:
            return file.read(2) == b"#!"
    except OSError:
        return False


def launches_in(path: Path, rel: str, text: str) -> list[DockerLaunch]:
    """The container launches of one file (`rel` names it in locations)."""
    found = []
    if _COMPOSE_FILES.match(path.name):
        for line, service, block in _compose_services(text):
            found.append(DockerLaunch(f"{rel}:{line}", f"service {service}", "compose", bool(_COMPOSE_SHM.search(block))))
    if "run" not in text:
        return found
    lines = _command_lines(path.name, path.suffix, text)
    for line, logical in lines or ():
        match = _DOCKER_RUN.search(logical)
        if match:
            command = " ".join(logical[match.start() :].split())
            found.append(DockerLaunch(f"{rel}:{line}", command, "run", bool(_SHM_FLAG.search(command))))
    return found


def scan(files: Iterable[Path], read: Callable[[Path], str | None], relative: Callable[[Path], str]) -> tuple[DockerLaunch, ...]:
    """Every launch in `files` (read with `read`, named with `relative`)."""
    found: list[DockerLaunch] = []
    for path in files:
        if not may_launch(path) or (not path.suffix and not _named_kind(path.name) and not _has_shebang(path)):
            continue
        text = read(path)
        if text:
            found += launches_in(path, relative(path), text)
    return tuple(found)
