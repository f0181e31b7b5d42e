"""Jupyter notebooks through the same pipeline: code cells migrated as one module.

The code cells are joined into one module, so a `device` or an import is defined once, in the
first cell that needs it. IPython syntax that is not Python (`%magic`, `!shell`, `obj?`, the
line of a `%%time`-like cell magic) is masked before parsing and restored afterwards, byte for
byte. A cell whose body is not Python run in the kernel (`%%bash`, `%%writefile`) is left as
it is, with a finding when a codemod would have applied to it. Cells are numbered from 1.
Only changed cells' `source` values change: the notebook is re-serialised only when its unchanged
form round-trips exactly (same indent, key order, escaping, LF or CRLF), so outputs and metadata
stay as they are. A file that is no nbformat 4 notebook, or whose code cells' `source` is neither
text nor a list of text, is a per-file problem saying what is wrong (`_malformed`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Sequence

from codemods.engine.pipeline import Result, transform_source
from codemods.helpers.context import FileContext
from codemods.registry import Spec
from codemods.results import Finding, Problem

# `%magic`, `!shell`, `?obj`, `obj?`, `files = !ls`, `t = %timeit f()`: IPython, not Python.
_MAGIC = re.compile(r"^\s*(?:[%!?]|[\w.]+\?\??\s*$|[\w.,\s]+=\s*[%!]\w)")
_CELL = "__tm_cell__({})"
_MARK = "#__tm_magic__{}"
_MARKED_LINE = re.compile(r"^[ \t]*#__tm_magic__\d+.*\n?", re.MULTILINE)
# Cell magics whose body IPython runs as Python in the notebook's own namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})


def cell_label(index: int) -> str:
    """How messages name the cell at `index` of a notebook's cells: from 1, as Jupyter shows them."""
    return f"cell {index + 1}"


def _cell_magic(cell: str) -> str | None:
    """The cell magic a cell starts with (`time` for `%%time -n 3`), else None."""
    match = re.match(r"%%(\S*)", cell.lstrip())
    return match.group(1) if match else None


@dataclass(frozen=True)
class NotebookResult:
    text: str
    result: Result
    changed_cells: tuple[int, ...] = ()
    cells_before: tuple[str, ...] = ()
    cells_after: tuple[str, ...] = ()


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _set_source(cell: dict, text: str) -> None:
    if isinstance(cell.get("source"), list):
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["source"] = text


def _indent(text: str) -> int | None:
    match = re.search(r"\n( +)\"", text.replace("\r\n", "\n"))
    return len(match.group(1)) if match else None


def _dump(notebook: dict, indent: int | None, trailing_newline: bool, newline: str = "\n") -> str:
    text = json.dumps(notebook, indent=indent, ensure_ascii=False)
    text = text + "\n" if trailing_newline else text
    return text.replace("\n", newline) if newline != "\n" else text


def _mask(cell: str, magics: list[str]) -> str | None:
    """The cell with IPython-only lines replaced by unique comments; None for a cell whose body
    is not Python (a `%%bash` cell); a `%%time` cell's magic line is masked like a line magic."""
    magic = _cell_magic(cell)
    if magic is not None and magic not in _PYTHON_CELL_MAGICS:
        return None
    lines = []
    for line in cell.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if _MAGIC.search(body) and not body.lstrip().startswith("#"):
            ending = line[len(body) :]
            indent = body[: len(body) - len(body.lstrip())]
            lines.append(f"{indent}{_MARK.format(len(magics))}{ending}")
            magics.append(body)
        else:
            lines.append(line)
    return "".join(lines)


def _magic_first(text: str) -> str:
    """A cell magic's line stays its cell's first: what a codemod inserted at the top of the cell
    (an import, `device = ...`) goes into the body the magic runs."""
    match = _MARKED_LINE.search(text)
    if match is None or not text[: match.start()].strip():
        return text
    line = match.group(0) if match.group(0).endswith("\n") else match.group(0) + "\n"
    return line + text[: match.start()] + text[match.end() :]


def _not_python(index: int, cell: str, specs: Sequence[Spec], file: FileContext) -> Finding | None:
    """A finding for a cell left alone because its body is not Python, if a codemod would apply."""
    spec = next((s for s in specs if s.fires_on(cell)), None)
    if spec is None:
        return None
    message = (
        f"{cell_label(index)}: not migrated: a `%%{_cell_magic(cell)}` cell is not run as Python in the"
        f" notebook, and {spec.code} ({spec.name}) may apply to it"
    )
    return Finding(spec.code, file.path, 1, 0, message, spec.label, "migrate this cell by hand")


def _unmask(text: str, magics: list[str]) -> str:
    return re.sub(r"[ \t]*#__tm_magic__(\d+)", lambda m: magics[int(m.group(1))], text)


def _malformed(notebook: object) -> str | None:
    """Why a parsed JSON value is no nbformat 4 notebook whose code cells can be read, else None.
    Only the code cells' `source` is read: other cells and keys may hold anything."""
    if not isinstance(notebook, dict):
        return f"not a notebook: its JSON is {_kind(notebook)}, not an object"
    version = notebook.get("nbformat")
    if type(version) is not int or version != 4:
        if "nbformat" not in notebook:
            return "not a notebook: it has no `nbformat` version"
        hint = " (convert it with `jupyter nbconvert --to notebook --nbformat 4`)" if version in (1, 2, 3) else ""
        return f"nbformat {version!r} is not supported: only nbformat 4 notebooks are migrated{hint}"
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        return f"not a notebook: `cells` is {_kind(cells)}, not a list" if "cells" in notebook else "not a notebook: it has no `cells`"
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            return f"{cell_label(index)} is {_kind(cell)}, not an object: not a notebook cell"
        source = cell.get("source", "")
        if cell.get("cell_type") == "code" and not isinstance(source, str):
            if not isinstance(source, list):
                return f"{cell_label(index)}: its `source` is {_kind(source)}, not text or a list of text"
            odd = [line for line in source if not isinstance(line, str)]
            if odd:
                return f"{cell_label(index)}: its `source` list holds {_kind(odd[0])}, not only text"
    return None


def _kind(value: object) -> str:
    """`a list`, `null`, `the number 3`: a JSON value's kind, for a message."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def _line_ending(text: str) -> str | None:
    """The line ending the notebook's JSON is laid out with (inside its strings a newline is
    `\\n`), or None when it mixes them."""
    crlf = text.count("\r\n")
    if not crlf:
        return "\n"
    return "\r\n" if crlf == text.count("\n") else None


def transform_notebook(text: str, specs: Sequence[Spec], file: FileContext) -> NotebookResult:
    unchanged = NotebookResult(text, Result(code=text))
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return replace(unchanged, result=Result(code=text, problem=Problem(file.path, 0, f"not a notebook: {exc}")))
    reason = _malformed(notebook)
    if reason is not None:
        return replace(unchanged, result=Result(code=text, problem=Problem(file.path, 0, reason)))
    cells = notebook["cells"]

    code_cells = [i for i, c in enumerate(cells) if isinstance(c, dict) and c.get("cell_type") == "code"]
    magics: list[str] = []
    masked = {i: _mask(_source(cells[i]), magics) for i in code_cells}
    joinable = [i for i in code_cells if masked[i] is not None]
    module = "".join(f"{_CELL.format(i)}\n{masked[i]}" + ("" if masked[i].endswith("\n") or not masked[i] else "\n") for i in joinable)
    result = transform_source(module, specs, file)
    left_alone = (_not_python(i, _source(cells[i]), specs, file) for i in code_cells if masked[i] is None)
    findings = (*(f for f in left_alone if f is not None), *(_locate(f, module, joinable) for f in result.findings))
    if result.problem is not None:
        problem = result.problem
        located = _locate_line(problem.line, module, joinable)
        reason = f"{cell_label(located[0])}: {problem.reason}" if located else problem.reason
        return replace(unchanged, result=replace(result, code=text, findings=findings, problem=replace(problem, line=located[1] if located else 0, reason=reason)))
    if not result.changed:
        return replace(unchanged, result=replace(result, code=text, findings=findings))

    parts = re.split(r"^__tm_cell__\((\d+)\)\n", result.code, flags=re.MULTILINE)
    head, rest = parts[0], parts[1:]
    new_sources = {int(rest[k]): rest[k + 1] for k in range(0, len(rest), 2)}
    if sorted(new_sources) != joinable:
        reason = "internal error: notebook cell boundaries changed during migration; not rewritten"
        return replace(unchanged, result=Result(code=text, problem=Problem(file.path, 0, reason)))
    if head.strip():  # something was inserted before the first cell (an import): it joins that cell
        new_sources[joinable[0]] = head + new_sources[joinable[0]]
    for i in joinable:
        if _cell_magic(_source(cells[i])) is not None:
            new_sources[i] = _magic_first(new_sources[i])

    indent, trailing, newline = _indent(text), text.endswith("\n"), _line_ending(text)
    if newline is None or _dump(json.loads(text), indent, trailing, newline) != text:
        reason = "notebook JSON is formatted in a way that cannot be re-written exactly; not rewritten"
        return replace(unchanged, result=Result(code=text, problem=Problem(file.path, 0, reason)))

    before, after, changed = [], [], []
    for i in joinable:
        old = _source(cells[i])
        new = _unmask(new_sources[i], magics)
        if not old.endswith("\n") and new.endswith("\n"):
            new = new[:-1]
        if new != old:
            _set_source(cells[i], new)
            changed.append(i)
            before.append(old)
            after.append(new)
    new_text = _dump(notebook, indent, trailing, newline)
    return NotebookResult(new_text, replace(result, code=new_text, findings=findings), tuple(changed), tuple(before), tuple(after))


def _locate_line(line: int, module: str, joinable: list[int]) -> tuple[int, int] | None:
    """(cell index, line within the cell) of a line of the joined module."""
    cell, start = None, 0
    for number, text in enumerate(module.splitlines(), start=1):
        if number > line:
            break
        match = re.fullmatch(r"__tm_cell__\((\d+)\)", text)
        if match:
            cell, start = int(match.group(1)), number
    return (cell, line - start) if cell is not None and line > start else None


def _locate(finding: Finding, module: str, joinable: list[int]) -> Finding:
    located = _locate_line(finding.line, module, joinable)
    if located is None:
        return finding
    return replace(finding, line=located[1], message=f"{cell_label(located[0])}: {finding.message}")
