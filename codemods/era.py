"""The torch a repository's code was written for: its era, which decides what a default meant.

    era = detect_era(Path("path/to/repo"))   # Era((1, 0), "requirements.txt: torch>=1.0") or None

A default that changed between releases (`align_corners` of `grid_sample` in 1.3) computed what
the torch the code was *written for* computed. That is not the migration's target: for the target
a pin's newest allowed release matters (the output must run there, codemods/pins.py); for the era
its **lowest** allowed release does. `torch>=0.4` was written when 0.4 was current, against 0.4's
defaults; nothing says its author ever ran 1.3. So:

1. **A pin** (the same files and readers as codemods/pins.py: `requirements*.txt`, `setup.py`,
   `setup.cfg`, `pyproject.toml`, `environment.yml`) gives the era: its lowest allowed release
   (`torch>=0.4` -> 0.4, `torch==1.2.0` -> 1.2, `torch>=1.0,<1.3` -> 1.0). Several requirements:
   the lowest of them. A pin without a lower bound (`torch<1.3`) only bounds the era from above.
2. **Else the idioms** of its `.py` files, each a bound (`IDIOMS`): an API that appeared in
   release R means the code ran on R or newer (`torch.no_grad` 0.4, `torch.cuda.amp` 1.6); an idiom
   that stopped working, or was replaced, at release R means it was written for an older one
   (`Variable`/`volatile=`/`loss.data[0]` < 0.4, `size_average=`/`reduce=` < 0.4.1). When the two
   disagree, the newer API wins: old idioms keep running as leftovers (a `Variable` wrapper still
   works on 2.x), a new API never runs on an old torch.
3. **Else** the era is unknown (None): a codemod that needs it reports a finding.

Only evidence that no codemod of this tool writes counts as an idiom (`reduction=`, `.item()`,
`torch.device`, `torch.linalg` are all written by rewrites), so that a file read again after a
migration, or after an earlier codemod of the same run, shows no era it did not show before.

Plain text reading, no libcst and no torch: the engine calls `detect_era` once per run and hands
the result to every file (FileContext.era).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from codemods import pins, specifiers
from codemods.engine.discovery import discover
from codemods.versions import RELEASES, Version, format_version


@dataclass(frozen=True)
class Era:
    """The torch a repository's code was written for, and the evidence."""

    version: Version | None
    """The release it was written against: a pin's lowest allowed release. None when only bounds
    are known (idioms, a pin without a lower bound)."""
    source: str
    """Where it came from: `requirements.txt: torch>=1.0`, or the idioms and where they are."""
    oldest: Version | None = None
    """It ran on this release or a newer one (None: no lower bound known)."""
    newest: Version | None = None
    """It was written for this release or an older one (None: no upper bound known)."""

    def before(self, release: Version) -> bool | None:
        """Whether the code was written for a torch older than `release`: True, False, or None
        when the evidence allows both."""
        if self.version is not None:
            return self.version < release
        if self.newest is not None and self.newest < release:
            return True
        if self.oldest is not None and self.oldest >= release:
            return False
        return None

    @property
    def shown(self) -> str:
        """`torch 1.0`, `torch < 0.4`, `torch >= 1.6`, `torch 0.4 to 1.2`."""
        if self.version is not None:
            return f"torch {format_version(self.version)}"
        if self.oldest is not None and self.newest is not None:
            if self.oldest == self.newest:
                return f"torch {format_version(self.oldest)}"
            return f"torch {format_version(self.oldest)} to {format_version(self.newest)}"
        if self.oldest is not None:
            return f"torch >= {format_version(self.oldest)}"
        if self.newest is not None:
            return f"torch < {format_version(_next(self.newest))}"
        return "torch (any)"

    def __str__(self) -> str:
        return f"{self.shown} ({self.source})"


def _next(version: Version) -> Version:
    later = [r for r in RELEASES if r > version]
    return later[0] if later else (version[0], version[1] + 1)


# -- pins: the lowest allowed release ----------------------------------------------------------


def lowest_allowed(specifier: str, style: str = "pep") -> Version | None:
    """The oldest release line `specifier` allows; None when it is unreadable, says nothing, or
    has no lower bound (it allows the oldest release the tables know, 0.1: nobody writes for it)."""
    parsed = specifiers.parse_specifier(specifier, style)
    if parsed is None or parsed == [[]]:
        return None
    for line in RELEASES:
        if specifiers.allows(line, parsed):
            return None if line == RELEASES[0] and not _names_oldest(parsed) else line
    return None


def _names_oldest(alternatives: list[list[specifiers.Clause]]) -> bool:
    return any(c.op in ("==", ">=", ">") and c.release[:2] == RELEASES[0] for clauses in alternatives for c in clauses)


_POETRY_LABEL = re.compile(r'^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) = "(?P<constraint>.*)"$')
_PEP_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", re.DOTALL)


def _lowest_of(requirement: str, newest: Version) -> Version | None:
    """The lowest release of a requirement as codemods/pins.py shows it in a pin's source (a PEP
    508 requirement, poetry's `torch = "^1.8"`, a conda spec); `newest` is what pins.py read."""
    poetry = _POETRY_LABEL.match(requirement)
    if poetry:
        return lowest_allowed(poetry.group("constraint"), "poetry")
    if "@" in requirement or requirement.endswith(".whl") or "://" in requirement:
        return newest  # a wheel: exactly its version
    spec = requirement.split("::", 1)[-1].strip()
    match = _PEP_NAME.match(spec)
    rest = match.group(3).strip() if match else ""
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    found = lowest_allowed(rest) if rest else None
    if found is not None or not rest:
        return found
    # conda: `pytorch=1.13`, `pytorch==1.13.1=build`, `pytorch 1.13.*` (as pins.conda_spec reads them)
    if rest.startswith("=") and not rest.startswith("=="):
        rest = "=" + rest[1:].split("=", 1)[0]
    elif rest.startswith("=="):
        rest = "==" + rest[2:].split("=", 1)[0]
    elif re.match(r"^\d", rest):
        rest = rest.split(" ", 1)[0]
    return lowest_allowed(rest, "conda")


def _pinned_folder(root: Path) -> Path | None:
    """The folder whose files bound torch, as pins.find_pin looks for it: `root` and upwards to
    the repository's root."""
    here = root.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in [here, *here.parents]:
        if pins.pin_in(folder) is not None:
            return folder
        if (folder / ".git").exists() or (folder / "pyproject.toml").is_file() or (folder / "setup.cfg").is_file():
            return None
    return None


def era_of_pins(root: Path) -> Era | None:
    """The era a repository's torch requirements give: the lowest allowed release of each, the
    lowest of them; None without a pin."""
    folder = _pinned_folder(root)
    if folder is None:
        return None
    best: tuple[Version | None, str] | None = None
    newest: Version | None = None
    for reader in pins.READERS:
        for source, top in reader(folder):
            requirement = source.split(": ", 1)[1] if ": " in source else source
            low = _lowest_of(requirement, top)
            newest = top if newest is None else min(newest, top)
            if best is None or (low is not None and (best[0] is None or low < best[0])):
                best = (low, source)
    if best is None:
        return None
    low, source = best
    if low is not None and newest is not None and low > newest:
        low = None  # two requirements no release satisfies together: only the bound is told
    return Era(low, source, oldest=low, newest=newest)


# -- idioms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Idiom:
    name: str
    needles: tuple[str, ...]  # plain text one of which a match contains: most files lack them (a fast `in`)
    pattern: re.Pattern
    oldest: Version | None = None  # the code ran on this release or newer
    newest: Version | None = None  # the code was written for this release or older

    def search(self, text: str) -> re.Match | None:
        return self.pattern.search(text) if any(n in text for n in self.needles) else None


def _idiom(name: str, needles: tuple[str, ...], pattern: str, *, oldest: Version | None = None, newest: Version | None = None) -> Idiom:
    return Idiom(name, needles, re.compile(pattern, re.MULTILINE), oldest, newest)


IDIOMS: tuple[Idiom, ...] = (
    # Replaced in 0.4.0, when tensors and Variables merged: `volatile` stopped having an effect and
    # `loss.data[0]` (a 0-dim tensor since 0.4) warned, then failed in 1.0.
    _idiom("Variable", ("Variable",), r"^[ \t]*from\s+torch\.autograd(?:\.variable)?\s+import\s[^\n]*\bVariable\b|\btorch\.autograd\.Variable\s*\(", newest=(0, 3)),
    _idiom("volatile=", ("volatile",), r"[(,]\s*volatile\s*=\s*[^=,)\s][^,)]*[,)]", newest=(0, 3)),
    _idiom("loss.data[0]", (".data[0]",), r"\w*loss\w*\.data\[0\]", newest=(0, 3)),
    # `reduction=` replaced them in 0.4.1 (still in the 0.4 line)
    _idiom("size_average=/reduce=", ("size_average", "reduce=", "reduce ="), r"\b(?:size_average|reduce)\s*=\s*(?:True|False)\b", newest=(0, 4)),
    # removed in 1.0
    _idiom("torch.utils.ffi", ("utils.ffi",), r"\btorch\.utils\.ffi\b", newest=(0, 4)),
    # new APIs: the code ran on their release or a newer one
    _idiom("torch.no_grad", ("no_grad",), r"\btorch\.no_grad\b|^[ \t]*from\s+torch\s+import\s[^\n]*\bno_grad\b", oldest=(0, 4)),
    _idiom("torch.cuda.amp", ("torch.cuda.amp", "torch.amp", "torch.autocast"), r"\btorch\.cuda\.amp\b|\btorch\.amp\b|\btorch\.autocast\b", oldest=(1, 6)),
    _idiom("torch.inference_mode", ("inference_mode",), r"\btorch\.inference_mode\b", oldest=(1, 9)),
    _idiom("torch.compile", ("torch.compile",), r"\btorch\.compile\s*\(", oldest=(2, 0)),
)


def _hits(text: str) -> Iterator[tuple[Idiom, int]]:
    """(idiom, line) for the first use of each idiom in `text`."""
    for idiom in IDIOMS:
        match = idiom.search(text)
        if match is not None:
            yield idiom, text.count("\n", 0, match.start()) + 1


def idiom_lines(text: str) -> tuple[tuple[str, int], ...]:
    """(idiom name, line) for the first use of each idiom in `text`: what one file contributes
    to the repository's facts (helpers/facts.py), so that a run reads the files once."""
    return tuple((idiom.name, line) for idiom, line in _hits(text))


def era_of_idioms(texts: Iterable[tuple[str, str]]) -> Era | None:
    """The era the idioms of `texts` ((label, text) pairs) imply; None when they imply none."""
    return _era_of_uses((label, idiom.name, line) for label, text in texts for idiom, line in _hits(text))


def era_of_facts(entries: Iterable[str], root: Path) -> Era | None:
    """The era from RepoFacts.idioms (`name\tpath\tline` entries), paths shown relative to `root`."""
    uses = []
    for entry in entries:
        name, path, line = entry.split("\t")
        try:
            label = Path(os.path.relpath(path, root if root.is_dir() else root.parent)).as_posix()
        except ValueError:
            label = path
        uses.append((label, name, int(line)))
    return _era_of_uses(sorted(uses))


def _era_of_uses(uses: Iterable[tuple[str, str, int]]) -> Era | None:
    """The era of the idiom uses (label, idiom name, line), the first of each idiom quoted."""
    by_name = {idiom.name: idiom for idiom in IDIOMS}
    first: dict[str, tuple[Idiom, str]] = {}
    for label, name, line in uses:
        first.setdefault(name, (by_name[name], f"{label}:{line}"))
    if not first:
        return None
    lows = [(i.oldest, f"{i.name} at {where}") for i, where in first.values() if i.oldest is not None]
    highs = [(i.newest, f"{i.name} at {where}") for i, where in first.values() if i.newest is not None]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    if low is not None and high is not None and high[0] < low[0]:
        # a new API beside an old idiom: the code ran on the new torch, the old idiom is a leftover
        return Era(None, f"idioms: {low[1]}; older idioms such as {high[1]} are taken as leftovers", oldest=low[0])
    shown = ", ".join(s for _, s in [*(([low]) if low else []), *(([high]) if high else [])])
    return Era(None, f"idioms: {shown}", oldest=low[0] if low else None, newest=high[0] if high else None)


def era_of_text(text: str, label: str = "this file") -> Era | None:
    """The era one module's own idioms imply (when the engine gave none for the repository)."""
    return era_of_idioms([(label, text)])


def _python_files(root: Path) -> Iterator[tuple[str, str]]:
    """(label, text) of the `.py` files a run over `root` covers (discovery's walk and skip list)."""
    if root.is_file():
        yield root.name, root.read_text(encoding="utf-8", errors="replace")
        return
    yield from _read(discover([root], suffixes=(".py",)).files, root)


def _read(files: Iterable[Path], root: Path) -> Iterator[tuple[str, str]]:
    for path in files:
        if path.suffix != ".py":
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        try:
            label = Path(os.path.relpath(path, root)).as_posix()
        except ValueError:
            label = str(path)
        yield label, text


def detect_era(root: Path, files: Iterable[Path] | None = None, facts=None) -> Era | None:
    """The era of the repository at `root` (a folder or one file): its pins, else the idioms of
    its `.py` files (`files`, e.g. the ones the run discovered, honouring its excludes; else
    every `.py` a run over `root` would cover: outside virtual environments, caches, build
    folders and what git ignores), else None (unknown)."""
    pinned = era_of_pins(root)
    if pinned is not None:
        return pinned
    if facts is not None:  # the run's facts pass read every file already (RepoFacts.idioms)
        return era_of_facts(facts.idioms, root)
    return era_of_idioms(_read(files, root) if files is not None else _python_files(root))
