"""Words: the fast search of trigger regexes finds exactly what `re` finds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codemods import registry
from codemods.helpers import patterns
from codemods.helpers.patterns import Words, _branches, _probes_of, _trie, needles, text_words, word_clauses

FIXTURES = sorted(Path(__file__).resolve().parent.parent.joinpath("fixtures").rglob("*.py"))
PATTERNS = sorted({p for spec in registry.all_specs() for p in (*spec.triggers, *spec.gate.sites)})


def _texts() -> list[str]:
    return [path.read_text(encoding="utf-8", errors="replace") for path in FIXTURES]


@pytest.fixture(params=["short texts scanned", "every text's words"])
def words_from(request, monkeypatch) -> None:
    """Each search test twice: as texts under _WORDS_FROM characters are searched (scans only),
    and with every text's words asked first (most fixtures are shorter than a real module)."""
    if request.param == "every text's words":
        monkeypatch.setattr(patterns, "_WORDS_FROM", 0)


@pytest.mark.usefixtures("words_from")
@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_trigger_finds_what_re_finds_on_every_fixture(pattern: str) -> None:
    words, plain = Words(pattern), re.compile(pattern)
    for text in _texts():
        assert words.search(text) == (plain.search(text) is not None)
        # every match re reports is among the offsets (more may be: overlapping ones)
        assert {m.start() for m in plain.finditer(text)} <= set(words.starts(text))


@pytest.mark.usefixtures("words_from")
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


@pytest.mark.usefixtures("words_from")
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


@pytest.mark.usefixtures("words_from")
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_words_with_needles_find_what_re_finds(data) -> None:
    pattern = data.draw(st.sampled_from([p for p in PATTERNS if needles(p) is not None]))
    pieces = [n for alternative in needles(pattern) for n in alternative]
    glue = st.sampled_from([" ", "\n", "(", ")", ".", "_", "x", "torch", "=", "import ", "nn."])
    text = "".join(data.draw(st.lists(st.one_of(st.sampled_from(pieces), glue), max_size=12)))
    words, plain = Words(pattern), re.compile(pattern)
    assert words.search(text) == (plain.search(text) is not None), (pattern, text)


PROBED = [p for p in PATTERNS if _probes_of(p) is not None]


def test_patterns_with_branches_or_word_lists_are_searched_by_probes() -> None:
    assert len(PROBED) >= 10  # triggers with a top-level `|` or a long list of names


@pytest.mark.usefixtures("words_from")
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_probes_find_what_re_finds(data) -> None:
    pattern = data.draw(st.sampled_from(PROBED))
    pieces = re.findall(r"[A-Za-z_]\w*", pattern)  # the pattern's own words, whole...
    parts = [w[:cut] for w in pieces for cut in (1, len(w) // 2, len(w) - 1) if cut > 0]  # ...and cut short
    glue = st.sampled_from([" ", "\n", "(", ")", ".", "_", "x", "torch", "=", "import ", "nn.", "\\", "[7:]", "'"])
    text = "".join(data.draw(st.lists(st.one_of(st.sampled_from(pieces + parts), glue), max_size=14)))
    assert Words(pattern).search(text) == (re.search(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize(
    "words",
    [
        ["add", "addcmul", "addcdiv", "sub", "sub_", "subtract"],
        ["upsample", "upsample_bilinear", "upsample_nearest", "Upsample", "u", "up"],
        ["a1", "a2", "a3", "b", "bb", "bbb"],
    ],
)
def test_a_trie_matches_exactly_its_words(words: list[str]) -> None:
    trie = re.compile(f"(?:{_trie(words)})")
    near = {w + tail for w in words for tail in ("", "x", "_")} | {w[:-1] for w in words} | {"", "zz"}
    assert {w for w in near if trie.fullmatch(w)} == set(words)


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (r"\butils\.ffi\b|\bimport\s+ffi\b", [r"\butils\.ffi\b", r"\bimport\s+ffi\b"]),
        (r"a[|]b|(c|d)|\||e", ["a[|]b", "(c|d)", r"\|", "e"]),  # a class, a group, an escape
        (r"[]|]x|y", ["[]|]x", "y"]),  # `]` first in a class is a literal
        (r"(?i)a|b", [r"(?i)a|b"]),  # a global flag: kept whole
        (r"(a)|\1", [r"(a)|\1"]),  # a back-reference: kept whole
        (r"ab", ["ab"]),
    ],
)
def test_top_level_branches(pattern: str, expected: list[str]) -> None:
    assert _branches(pattern) == expected


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (r"\bsize_average\b", [{"size_average"}]),
        (r"size_average\b", []),  # `my_size_average`: no whole word known
        (r"\.cuda\s*\(", [{"cuda"}]),  # delimited by the pattern's own characters
        (r"\b(?:i?r?fft)\s*\(", [{"fft", "rfft", "ifft", "irfft"}]),
        (r"\bimport\s+torch\.cuda\b", [{("cuda", "import", "torch")}]),  # all three, in one string
        (r"\bfrom\s+torch\s+import\s+[^\n]*\bload\b", [{("from", "import", "torch")}, {"load"}]),
        (r"\butils\.ffi\b|\bcreate_extension\b", [{("ffi", "utils"), "create_extension"}]),
        (r"collections(?=[\s\S]*\b(?:Mapping|Callable)\b)", [{"Mapping", "Callable"}]),  # a lookahead's needs
        (r"\bx\w+\b|\bsize_average\b", []),  # one branch needs no whole word: nothing known
        (r"(?i)\bsize_average\b", []),  # case-insensitive
        (r"(?a)\bsize_average\b", []),  # an ASCII \b is not the boundary of Unicode words
        (r"(?a)\.cuda\(", [{"cuda"}]),  # ...but its own characters still delimit
        (r"\bfoo\s*bar\b", [{("bar", "foo"), "foobar"}]),  # `\s*` may be nothing at all
        (r"\bfoo[,;]+bar\b", [{("bar", "foo")}]),
    ],
)
def test_word_clauses_are_what_a_match_needs(pattern: str, expected: list[set]) -> None:
    found = [set(singles) | {tuple(sorted(words)) for words in sets} for singles, sets in word_clauses(pattern)]
    assert found == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab_9 .(\n\t-é∂x"), max_size=40))
def test_text_words_are_the_word_runs(text: str) -> None:
    assert text_words(text) == frozenset(re.findall(r"\w+", text))
    ascii_text = text.encode("ascii", "ignore").decode()
    assert text_words(ascii_text) == frozenset(re.findall(r"\w+", ascii_text))


# The triggers and gate sites, and shapes none of them has yet
WORDED = [p for p in PATTERNS if word_clauses(p)] + [
    r"\bfoo\s*bar\b",
    r"\bfoo[,; ]+bar(?:baz)?\b",
    r"(?:\bab|cd)\b",
    r"\b(?:ab|cd)\s*(?:\(|=)",
    r"x(?=[\s\S]*\bfoo\b)",
    r"(?<!\.)\bab(?:cd)?\b|\bfoo\s+\w+\s+bar\b",
]


@pytest.mark.usefixtures("words_from")
@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_a_search_that_asks_the_words_first_finds_what_re_finds(data) -> None:
    """The words of a pattern, whole, cut short, and glued to word characters (ASCII or not) and
    to non-word ones: the set lookups never say no where `re` finds a match."""
    pattern = data.draw(st.sampled_from(WORDED))
    pieces = re.findall(r"\w+", pattern.replace(r"\b", " ").replace(r"\s", " ").replace(r"\w", " "))
    parts = [w[:cut] for w in pieces for cut in (1, len(w) - 1) if cut > 0]
    glue = st.sampled_from([" ", "\n", "(", ")", ".", "_", "x", "é", "—", "=", "[7:]", "'", "\t", "import ", "torch."])
    text = "".join(data.draw(st.lists(st.one_of(st.sampled_from(pieces + parts), glue), max_size=16)))
    assert Words(pattern).search(text) == (re.search(pattern, text) is not None), (pattern, text)


def test_most_triggers_are_asked_of_the_words_first() -> None:
    triggers = sorted({p for spec in registry.all_specs() for p in spec.triggers})
    assert len([p for p in triggers if word_clauses(p)]) >= 0.8 * len(triggers)


def test_a_pickled_pattern_still_answers() -> None:
    # A plan sent to a worker pickles its Words; the lazy parts must not arrive as a foreign
    # "not made yet" marker (it read as a value: "TypeError: 'object' object is not iterable").
    import pickle

    from codemods.helpers.patterns import Words

    for pattern in (r"\bcuda\b", r"size_average|reduce\s*=", r"\.data\[0\]"):
        fresh = Words(pattern)
        copy = pickle.loads(pickle.dumps(fresh))
        for text in ("x.cuda()", "F.nll_loss(a, b, size_average=False)", "loss.data[0]", "nothing here"):
            assert copy.search(text) == Words(pattern).search(text)
            assert list(copy.starts(text)) == list(Words(pattern).starts(text))
