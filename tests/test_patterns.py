"""Words: the fast search of trigger regexes finds exactly what `re` finds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codemods import registry
from codemods.helpers.patterns import Words, needles

FIXTURES = sorted(Path(__file__).resolve().parent.parent.joinpath("fixtures").rglob("*.py"))
PATTERNS = sorted({p for spec in registry.all_specs() for p in (*spec.triggers, *spec.gate.sites)})


def _texts() -> list[str]:
    return [path.read_text(encoding="utf-8", errors="replace") for path in FIXTURES]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_trigger_finds_what_re_finds_on_every_fixture(pattern: str) -> None:
    words, plain = Words(pattern), re.compile(pattern)
    for text in _texts():
        assert words.search(text) == (plain.search(text) is not None)
        # every match re reports is among the offsets (more may be: overlapping ones)
        assert {m.start() for m in plain.finditer(text)} <= set(words.starts(text))


@pytest.mark.parametrize(
    "pattern, text, expected",
    [
        (r"\bsize_average\b", "x.size_average = 1", [2]),
        (r"\bsize_average\b", "my_size_average = 1", []),  # the \b before the word still holds
        (r"\bsize_average\b", "size_average", [0]),  # at the very start
        (r"(?<!torch)\.eye\(", "torch.eye(3) + np.eye(3)", [17]),  # the lookbehind still holds
        (r"\bab", "aab ab", [4]),  # a first try that fails does not hide a later match
        (r"\bfoo|bar", "xfoo bar", [5]),  # a top-level `|`
        (r"(?<![\w.])load\b", "x.load load", [7]),  # a character class inside the lookbehind
        (r"\b", "ab", [0, 2]),  # nothing after the assertion: searched as it is
    ],
)
def test_assertions_keep_their_meaning(pattern: str, text: str, expected: list[int]) -> None:
    assert list(Words(pattern).starts(text)) == expected
    assert Words(pattern).search(text) == bool(expected)


def test_a_spec_fires_exactly_when_its_combined_regex_does() -> None:
    for spec in registry.all_specs():
        combined = re.compile("|".join(f"(?:{t})" for t in spec.triggers))
        for text in _texts():
            assert spec.fires_on(text) == (combined.search(text) is not None), (spec.code, text[:80])


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (r"\butils\.ffi\b|\bimport\s+ffi\b|\bcreate_extension\b", (("utils.ffi",), ("import", "ffi"), ("create_extension",))),
        (r"\b(?:remove_)?weight_norm\b", (("weight_norm",),)),  # an optional part needs nothing
        (r"\b(?:i?r?fft)\s*\(", (("fft", "("),)),
        (r"(?<!torch)\.\s*(?:sigmoid|tanh)\s*\(", ((".", "(", "sigmoid"), (".", "(", "tanh"))),
        (r"a\bb", (("ab",),)),  # a zero-width assertion keeps the run
        (r"(?i)size_average", None),  # case-insensitive: its literals are not the text's
        (r"x(?i:abc)", (("x",),)),
        (r"a|b*", None),  # a branch that needs nothing
        (r"[ab]+c?", None),
        (r"(?:ab)+", (("ab",),)),
        ("|".join(f"{c}word" for c in "abcdefghijklm"), None),  # too many alternatives to scan for
        (r"w0|w1", (("w",),)),  # re factors out the common prefix
    ],
)
def test_needles_are_what_a_match_cannot_do_without(pattern: str, expected) -> None:
    assert needles(pattern) == expected


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_words_with_needles_find_what_re_finds(data) -> None:
    pattern = data.draw(st.sampled_from([p for p in PATTERNS if needles(p) is not None]))
    pieces = [n for alternative in needles(pattern) for n in alternative]
    glue = st.sampled_from([" ", "\n", "(", ")", ".", "_", "x", "torch", "=", "import ", "nn."])
    text = "".join(data.draw(st.lists(st.one_of(st.sampled_from(pieces), glue), max_size=12)))
    words, plain = Words(pattern), re.compile(pattern)
    assert words.search(text) == (plain.search(text) is not None), (pattern, text)
