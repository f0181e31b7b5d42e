"""Move names of a `from M import ...` statement to another module, in place.

Used where the import statement itself is what breaks (`from collections import Mapping`,
`from torch._six import string_classes`): the new import takes the old one's place (inside a
`try:` or a function body too), so nothing moves to the top of the file and no other statement
changes. Only the names asked for move; the rest of the statement stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Callable, Sequence

import libcst as cst

from codemods.helpers.names import attribute_chain, dotted


@dataclass(frozen=True)
class Move:
    """Where one imported name goes: `from module import name`, or nowhere (`module=None`)."""

    module: str | None
    name: str = ""


@dataclass
class Moved:
    """What a rewrite of one statement line did."""

    lines: list[cst.SimpleStatementLine] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # old local name -> new local name
    changed: bool = False


def local_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else None
    return dotted(alias.name)


def _alias(name: str, local: str) -> cst.ImportAlias:
    asname = None if local == name else cst.AsName(name=cst.Name(local))
    return cst.ImportAlias(name=cst.Name(name), asname=asname)


def move_names(
    line: cst.SimpleStatementLine,
    decide: Callable[[str, str, str], Move | None],
    taken: Callable[[str], bool] = lambda name: True,
    interface: Collection[str] = (),
) -> Moved:
    """Rewrite the `from M import ...` statements of one line.

    `decide(M, name, local)` says where `name` goes (None: stays). A moved name keeps its local
    name (`as` is added when the new name differs) unless the new name is free (`taken(new)` is False),
    in which case the local name becomes the new name and `renamed` says so: the caller renames
    the uses. A local name in `interface` (other files import it from this module) is always
    kept. Returns `changed=False` when nothing in the line is affected.
    """
    out = Moved()
    kept_small: list[cst.BaseSmallStatement] = []
    added: list[cst.SimpleStatementLine] = []
    for small in line.body:
        if not isinstance(small, cst.ImportFrom) or small.relative or small.module is None:
            kept_small.append(small)
            continue
        if isinstance(small.names, cst.ImportStar):
            kept_small.append(small)
            continue
        module = dotted(small.module)
        stays: list[cst.ImportAlias] = []
        by_target: dict[str, list[cst.ImportAlias]] = {}
        last_gone = False
        for index, alias in enumerate(small.names):
            last_gone = index == len(small.names) - 1  # reset below when it stays
            name = dotted(alias.name)
            local = local_name(alias)
            move = decide(module, name, local) if module and name and local else None
            if move is None:
                stays.append(alias)
                last_gone = False
                continue
            out.changed = True
            if move.module is None:
                continue
            new_local = local
            if alias.asname is None and move.name != name and not taken(move.name) and local not in interface:
                new_local = move.name
                out.renamed[local] = move.name
            if move.module == module:
                # Same module, new name: edit the alias where it stands (keeps the layout).
                asname = None if new_local == move.name else cst.AsName(name=cst.Name(new_local))
                stays.append(alias.with_changes(name=cst.Name(move.name), asname=asname))
                last_gone = False
                continue
            by_target.setdefault(move.module, []).append(_alias(move.name, new_local))
        if not out.changed or (not by_target and stays == list(small.names)):
            kept_small.append(small)
            continue
        if stays:
            if last_gone:
                # The last alias went: the new last one takes its comma (a trailing comma and
                # the newline before `)` in a parenthesized import).
                stays[-1] = stays[-1].with_changes(comma=small.names[-1].comma)
            kept_small.append(small.with_changes(names=stays))
        for target, aliases in by_target.items():
            statement = cst.ImportFrom(module=attribute_chain(target), names=aliases)
            added.append(cst.SimpleStatementLine(body=[statement]))
    if not out.changed:
        return out
    if kept_small:
        first = line.with_changes(body=_fix_semicolons(kept_small))
        out.lines = [first, *added]
    elif added:
        # The first new line takes the original's place (and its leading comments).
        out.lines = [added[0].with_changes(leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace), *added[1:]]
    return out


def _fix_semicolons(body: Sequence[cst.BaseSmallStatement]) -> list[cst.BaseSmallStatement]:
    body = list(body)
    if body and not isinstance(body[-1].semicolon, cst.MaybeSentinel):
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return body


def replace_line(moved: Moved) -> cst.SimpleStatementLine | cst.FlattenSentinel | cst.RemovalSentinel:
    if not moved.lines:
        return cst.RemoveFromParent()
    if len(moved.lines) == 1:
        return moved.lines[0]
    return cst.FlattenSentinel(moved.lines)
