"""TM401 python-compat: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
import re

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


# The ABCs that `collections` re-exported until Python 3.10.
COLLECTIONS_ABCS = frozenset(
    "Awaitable Coroutine AsyncIterable AsyncIterator AsyncGenerator Hashable Iterable Iterator"
    " Generator Reversible Sized Container Callable Collection Set MutableSet Mapping"
    " MutableMapping MappingView KeysView ItemsView ValuesView Sequence MutableSequence"
    " ByteString".split()
)


# NumPy names removed by NumPy 1.24 (the Python-builtin aliases) and 2.0 (NEP 52), each with the
# object it was an alias of. `np.bool` and `np.long` are absent on purpose: NumPy 2 defines them
# again (as `np.bool_` and the C long), so code that uses them today may mean the new ones.
NUMPY: dict[str, str] = {
    "Inf": "numpy.inf",
    "Infinity": "numpy.inf",
    "infty": "numpy.inf",
    "PINF": "numpy.inf",
    "NINF": "-numpy.inf",
    "NaN": "numpy.nan",
    "NAN": "numpy.nan",
    "PZERO": "0.0",
    "NZERO": "-0.0",
    "float_": "numpy.float64",
    "complex_": "numpy.complex128",
    "cfloat": "numpy.complex128",
    "singlecomplex": "numpy.complex64",
    "longfloat": "numpy.longdouble",
    "longcomplex": "numpy.clongdouble",
    "clongfloat": "numpy.clongdouble",
    "string_": "numpy.bytes_",
    "unicode_": "numpy.str_",
    "int0": "numpy.intp",
    "uint0": "numpy.uintp",
    "bool8": "numpy.bool_",
    "object0": "numpy.object_",
    "str0": "numpy.str_",
    "bytes0": "numpy.bytes_",
    "void0": "numpy.void",
    "float": "float",
    "int": "int",
    "object": "object",
    "str": "str",
    "complex": "complex",
    "unicode": "str",
    "round_": "numpy.round",
    "product": "numpy.prod",
    "cumproduct": "numpy.cumprod",
    "sometrue": "numpy.any",
    "alltrue": "numpy.all",
    "mat": "numpy.asmatrix",
    "issubclass_": "issubclass",
}


# A receiver of `.next()` that is plausibly a DataLoader iterator, by its name (`val_iter`,
# `dataiter`, `self.loader_it`): reported when it is not shown to be `iter(...)`.
ITERATOR_NAMES = re.compile(r"iter|loader", re.IGNORECASE)


def _attribute_or_import(names: str) -> tuple[str, ...]:
    """Where a removed module member can be named: `.X`, or an import line (also parenthesized).

    Each pattern starts with a literal, which Python's `re` scans for quickly; a leading `\\b`
    or a lookahead over the whole file costs several times more.
    """
    return (rf"\.(?:{names})\b", rf"import[^\n(]*\b(?:{names})\b", rf"import\s*\([^)]*\b(?:{names})\b")


def triggers() -> tuple[str, ...]:
    abcs = "|".join(sorted(COLLECTIONS_ABCS))
    numpy = "|".join(sorted(NUMPY) + ["asscalar"])
    # collections: both its name and an ABC name (an alias `import collections as C` counts).
    return (rf"collections(?=[\s\S]*\b(?:{abcs})\b)", *_attribute_or_import(numpy), r"\.next\(\s*\)")


def replacement(qualified: str) -> str | None:
    """The dotted replacement for a removed name (None: not one of ours)."""
    module, _, name = qualified.rpartition(".")
    if module == "collections" and name in COLLECTIONS_ABCS:
        return f"collections.abc.{name}"
    if module == "numpy" and name in NUMPY:
        return NUMPY[name]
    return None


def applies(text: str, facts) -> bool:
    # The triggers match `.float`/`.int` attributes anywhere (fast regexes); only a file that
    # names numpy or collections, or calls `.next()`, can hold what this rewrites.
    return "numpy" in text or "collections" in text or ".next(" in text


def may_act(scan: Scan, words, facts) -> bool:
    """A reference that may resolve to a removed name (or np.asscalar), or a `from` import
    of one: most `.float`/`.int` on the trigger lines are `x.float()` and `torch.int`."""
    for node in scan.nodes(words):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "next":
            if not node.args and not node.keywords:
                return True
        elif isinstance(node, (ast.Attribute, ast.Name)):
            if any(q == "numpy.asscalar" or replacement(q) is not None for q in scan.qualified(node)):
                return True
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any(replacement(f"{node.module}.{a.name}") is not None for a in node.names):
                return True
    return False


GATE = Gate(applies=applies, may_act=may_act)


SPEC = Spec(
    code="TM401",
    name="python-compat",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.python_compat:PythonCompat",
    triggers=triggers(),
    summary="collections.Mapping -> collections.abc.Mapping; np.Inf/np.float/... -> np.inf/float/...; iter(loader).next() -> next(iter(loader))",
    gate=GATE,
)
