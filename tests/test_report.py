"""The report renderers' own logic: where a pending rewrite changes a file (SARIF regions)."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from codemods.engine.runner import unified_diff
from codemods.report.sarif import changed_lines

LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "\n"]), max_size=30)


def _expected(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """From difflib's opcodes: edits with no unchanged line between them are one change; a change
    spans the original lines it removes or replaces, a pure insertion the line it follows (or 1)."""
    runs: list[list[tuple[int, int]]] = []
    end = None
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag != "equal":
            if end != i1 or not runs:
                runs.append([])
            runs[-1].append((i1, i2))
            end = i2
    spans = []
    for run in runs:
        removed = [line for i1, i2 in run for line in range(i1 + 1, i2 + 1)]
        spans.append((removed[0], removed[-1]) if removed else (max(run[0][0], 1),) * 2)
    return spans


@given(LINES, LINES)
def test_changed_lines_are_the_lines_the_diff_changes(old: list[str], new: list[str]) -> None:
    assert changed_lines(unified_diff("".join(old), "".join(new), "x.py")) == _expected(old, new)


def test_changed_lines_of_a_file_without_a_final_newline() -> None:
    diff = unified_diff("a\nb", "a\nc", "x.py")
    assert "\\ No newline at end of file" in diff
    assert changed_lines(diff) == [(2, 2)]
