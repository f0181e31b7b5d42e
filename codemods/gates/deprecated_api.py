"""TM006 deprecated-api: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
from functools import lru_cache

from codemods.gates import Gate, Safety, Spec, Stage, data_table
from codemods.helpers.scan import Scan


# Short names that are also everyday words (or current torch names) trigger only in the spellings
# the deprecated function can have: `init.normal(`, `F.sigmoid(`, `torch.range(`, or an import.
_INIT_COMMON = ("normal", "uniform", "constant", "eye", "sparse")
_TORCH_COMMON = ("sigmoid", "tanh")  # torch.sigmoid is current; F.sigmoid is not
_DOTTED_COMMON = ("range", "ger")
_LINALG_COMMON = ("solve", "eig", "qr", "lu", "svd", "norm")  # torch.linalg.solve is current; x.norm() too
_COMMON = frozenset(_INIT_COMMON + _TORCH_COMMON + _DOTTED_COMMON + _LINALG_COMMON)


# Tensor methods of the 0.4 era that torch removed, with what to write instead. Whether the
# receiver is a tensor cannot be told from the text, so these are findings, never rewrites; every
# name here is also a table entry (torch.potrf & co.), so the triggers cover them.
REMOVED_METHODS = {
    "gesv": "B.gesv(A) returned (X, LU): X = torch.linalg.solve(A, B)",
    "potrf": "a.potrf() (upper=True by default) -> torch.linalg.cholesky(a, upper=True)",
    "potrs": "b.potrs(u) (upper=True by default) -> torch.cholesky_solve(b, u, upper=True)",
    "potri": "u.potri() (upper=True by default) -> torch.cholesky_inverse(u, upper=True)",
    "trtrs": "b.trtrs(A, upper=True) returned (X, A.clone()): X = torch.linalg.solve_triangular(A, b, upper=True)"
    " (A.mT and upper=not upper for transpose=True)",
    "btrifact": "A.btrifact(pivot=True) -> torch.linalg.lu_factor(A, pivot=True)",
    "btrifact_with_info": "A.btrifact_with_info(pivot=True) -> torch.linalg.lu_factor_ex(A, pivot=True)",
    "btrisolve": "b.btrisolve(LU, pivots) with a batch of vectors b (B, n) ->"
    " torch.linalg.lu_solve(LU, pivots, b.unsqueeze(-1)).squeeze(-1)",
    "gels": "B.gels(A)[0][:A.size(1)] -> torch.linalg.lstsq(A, B).solution",
    "symeig": 'A.symeig(eigenvectors=True) -> torch.linalg.eigh(A, UPLO="U"); the values only:'
    ' torch.linalg.eigvalsh(A, UPLO="U")',
}


@lru_cache(maxsize=None)
def table() -> dict[str, dict]:
    """Qualified name (and every alias) -> entry."""
    data = data_table("deprecated_api.json")
    by_name = {}
    for name, entry in data.items():
        entry = {**entry, "name": name}
        by_name[name] = entry
        for alias in entry["aliases"]:
            by_name[alias] = entry
    return by_name


def triggers() -> tuple[str, ...]:
    short = sorted({name.rsplit(".", 1)[-1] for name in table()})
    rare = [n for n in short if n not in _COMMON]
    return (
        rf"\b(?:{'|'.join(rare)})\b",
        rf"\binit\s*\.\s*(?:{'|'.join(_INIT_COMMON)})\s*\(",
        r"\binit\s+as\b",  # `from torch.nn import init as winit`
        rf"(?<!torch)\.\s*(?:{'|'.join(_TORCH_COMMON)})\s*\(",
        rf"\.\s*(?:{'|'.join(_DOTTED_COMMON)})\s*\(",
        rf"(?<!linalg)\.\s*(?:{'|'.join(_LINALG_COMMON)})\s*\(",
        rf"\bfrom\s+torch[\w.]*\s+import\s+(?:\([^)]*|[^\n]*)\b(?:{'|'.join(sorted(_COMMON))})\b",
    )


def may_act(scan: Scan, words, facts) -> bool:
    """A call that may resolve to a table entry, or a removed tensor method (everything this
    codemod does starts in leave_Call); `x.normal_(...)`, `np.eye(3)`, `x.norm()` and
    `torch.linalg.qr` on the trigger lines are not."""
    if scan.calls(words, table().keys()):
        return True
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in REMOVED_METHODS
        for n in scan.nodes(words)
    )


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM006",
    name="deprecated-api",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.deprecated_api:DeprecatedApi",
    triggers=triggers(),
    summary="F.upsample -> F.interpolate, nn.init.xavier_uniform -> xavier_uniform_, torch.range -> arange,"
    " torch.solve/svd/lu/potrf/... -> torch.linalg (argument order and tuple results kept), ...",
    gate=GATE,
    emits=(
        "torch.outer",
        "torch.linalg.cholesky",
        "torch.linalg.cholesky(upper)",
        "torch.linalg.eigh",
        "torch.linalg.eigvalsh",
        "torch.linalg.matrix_rank",
        "torch.linalg.matrix_rank(atol)",
        "torch.linalg.multi_dot",
        "torch.linalg.qr",
        "torch.linalg.solve",
        "torch.linalg.lu_factor",
        "torch.linalg.lu_factor_ex",
        "torch.linalg.lu_solve",
        "torch.linalg.solve_triangular",
        "torch.linalg.svd",
        "torch.linalg.vector_norm",
        "torch.linalg.matrix_norm",
        "torch.Tensor.mH",
        "torch.Tensor.mT",
        "torch.cholesky_solve",
        "torch.cholesky_inverse",
        "torch.lu_unpack",
        "torch.testing.assert_close",
    ),
)
