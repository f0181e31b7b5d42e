"""TM006 behaviour, linear algebra (issue 16 item 6): the migrated call computes the numbers the
legacy one did, and runs clean with warnings as errors.

Legacy functions torch 2.13 still has (`torch.lu`, `lu_solve`, `triangular_solve`, `svd`, `norm`)
run as they are. Removed ones (`torch.solve`, `symeig`, and the 0.4 names `gesv`, `potrf`,
`potrs`, `potri`, `trtrs`, `btrifact`, `btrifact_with_info`, `btriunpack`) run against reference
implementations written from their old documentation (torch 0.4.1 / 1.x docs) with other current
APIs than the ones the migration writes where that is possible: `potrf(a)` "returns u, upper
triangular, such that a = u^T u" becomes the transposed lower factor, `potrs(b, u)` solves with the
matrix u^T u itself, `trtrs` solves the triangle it was told to read (transposed, unit diagonal) as
a dense system, `symeig(A)` "uses the upper triangle" becomes the eigenvalues of that triangle
mirrored. Matrices are random, well conditioned, float64, seeded.
"""

from __future__ import annotations

import sys
import textwrap
import types
import warnings

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

PRELUDE = """
import torch

torch.manual_seed(0)
eye = torch.eye(5, dtype=torch.float64)
A = torch.randn(5, 5, dtype=torch.float64) + 5 * eye
B = torch.randn(5, 3, dtype=torch.float64)
N = torch.randn(5, 5, dtype=torch.float64)  # not symmetric: symeig read one triangle of it
spd = A @ A.mT + eye
T = torch.randn(5, 5, dtype=torch.float64).triu() + 5 * eye  # upper triangular
R = torch.randn(6, 4, dtype=torch.float64)
batch = torch.randn(2, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
"""


@pytest.fixture(autouse=True)
def warn_always():
    """torch warns once per process for most of these (TORCH_WARN_ONCE): warning always here
    makes the legacy call warn whatever ran before, and leaves the once-flags of the other
    behaviour tests unspent."""
    before = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    yield
    torch.set_warn_always(before)


def legacy(source: str):
    """The legacy snippet's result, its deprecation warnings silenced (they are checked apart)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(source, "main")


def snippet(body: str) -> str:
    return PRELUDE + "\n\ndef main():\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


# -- legacy calls torch 2.13 still runs (with a deprecation warning, except svd and norm) ----------

STILL_THERE = {
    "lu": """
        LU, pivots = torch.lu(A)
        LU2, pivots2, info = torch.lu(A, get_infos=True)
        LU3, pivots3 = torch.lu(batch)
        return LU, pivots, LU2, pivots2, info, LU3, pivots3
    """,
    "lu_solve": """
        LU, pivots = torch.lu(A)
        return torch.lu_solve(B, LU, pivots), torch.lu_solve(B, *torch.lu(A))
    """,
    "triangular_solve": """
        L = T.mT
        y = torch.triangular_solve(B, T)[0]
        y2 = torch.triangular_solve(B, L, upper=False).solution
        y3 = torch.triangular_solve(B, T, True, True)[0]
        y4 = torch.triangular_solve(B, L, False, transpose=True, unitriangular=True)[0]
        y5 = torch.triangular_solve(B, T, unitriangular=True)[0]
        flag = True
        y6 = torch.triangular_solve(B, T, upper=flag, transpose=True)[0]
        Y, M = torch.triangular_solve(B, T)
        Y2, _ = torch.triangular_solve(B, L, upper=False, transpose=True)
        Y3, M3 = torch.triangular_solve(B, T, transpose=True)  # M3 is T itself, not its transpose
        return y, y2, y3, y4, y5, y6, Y, M, Y2, Y3, M3
    """,
    "svd": """
        U, S, V = torch.svd(R)
        U2, S2, V2 = torch.svd(R, some=False)
        U3, S3, _ = torch.svd(A)
        some = False
        v = torch.svd(R, some)[2]
        v2 = torch.svd(R).V
        s = torch.svd(R)[1]
        return U, S, V, U2, S2, V2, U3, S3, v, v2, s
    """,
    "norm": """
        x = torch.randn(3, 4, 5, dtype=torch.float32)
        return (
            torch.norm(x),
            torch.norm(x, 1, dim=0, keepdim=True),
            torch.norm(x, p="fro", dim=(1, 2)),
            torch.norm(x, float("inf")),
            torch.norm(x, p=2, dtype=torch.float64),
            torch.norm(x, 3, 2),
            torch.norm(A, "nuc"),
            torch.norm(x, "nuc", dim=(1, 2)),
            torch.norm(x, dim=1),
        )
    """,
    "cholesky-upper": """
        upper = True
        return torch.cholesky(spd, True), torch.cholesky(spd, upper=upper), torch.cholesky(spd)
    """,
}
SILENT = {"svd", "norm"}  # deprecated in the documentation only: torch 2.13 does not warn


@pytest.mark.parametrize("name", STILL_THERE)
def test_same_numbers_as_the_legacy_call(name: str) -> None:
    old = snippet(STILL_THERE[name])
    new = migrate(old, "TM006")
    if name not in SILENT:
        with pytest.raises(Warning):
            run(old, "main", strict=True)  # the legacy call warns ...
    expected = legacy(old)
    actual = run(new, "main", strict=True)  # ... the migrated one does not
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)  # the same kernels: the same bits


def test_unpacked_svd_keeps_v_not_vh() -> None:
    new = migrate(snippet("U, S, V = torch.svd(R)\nreturn U @ torch.diag(S) @ V.mT"), "TM006")
    assert "V = V.mH" in new
    torch.testing.assert_close(run(new, "main", strict=True), legacy(snippet("return R")))


# -- removed calls, against reference implementations from their documentation -----------------


def _solve(B, A):  # gesv/solve: "X, LU = torch.gesv(B, A) ... LU contains L and U factors for LU factorization of A"
    LU, pivots = torch.linalg.lu_factor(A)
    return torch.linalg.lu_solve(LU, pivots, B), LU


def _symeig(A, eigenvectors=False, upper=True):  # "only the upper triangular portion is used by default"
    half = A.triu() if upper else A.tril()
    mirrored = half + half.mT - torch.diag(torch.diagonal(half))
    values, vectors = torch.linalg.eigh(mirrored)
    return values, vectors if eigenvectors else torch.empty(0, dtype=A.dtype)


def _potrf(a, upper=True):  # "u is upper triangular such that a = u^T u" (upper=True, the default)
    lower = torch.linalg.cholesky(a)
    return lower.mT if upper else lower


def _potrs(b, u, upper=True):  # solves a x = b with a = u^T u (upper) or u u^T
    return torch.linalg.solve(u.mT @ u if upper else u @ u.mT, b)


def _potri(u, upper=True):  # "the inverse of a, from its Cholesky factor u"
    return torch.linalg.inv(u.mT @ u if upper else u @ u.mT)


def _trtrs(b, A, upper=True, transpose=False, unitriangular=False):  # returns (X, a clone of A)
    triangle = A.triu() if upper else A.tril()
    if unitriangular:
        diagonal = torch.diag_embed(torch.diagonal(triangle, dim1=-2, dim2=-1))
        triangle = triangle - diagonal + torch.eye(A.shape[-1], dtype=A.dtype)
    return torch.linalg.solve(triangle.mT if transpose else triangle, b), A.clone()


def _legacy_torch() -> types.ModuleType:
    """torch 2.13 with the removed functions put back, each as its old documentation says."""

    class Legacy(types.ModuleType):
        def __getattr__(self, name: str):
            return getattr(torch, name)

    legacy = Legacy("torch")
    legacy.solve = legacy.gesv = _solve
    legacy.symeig = _symeig
    legacy.potrf, legacy.potrs, legacy.potri, legacy.trtrs = _potrf, _potrs, _potri, _trtrs
    # the 1.1 renames: btrifact -> lu, btrifact_with_info -> lu(get_infos=True), btriunpack -> lu_unpack
    legacy.btrifact = lambda A, pivot=True: torch.lu(A, pivot=pivot)
    legacy.btrifact_with_info = lambda A, pivot=True: torch.lu(A, pivot=pivot, get_infos=True)
    legacy.btriunpack = torch.lu_unpack
    return legacy


REMOVED = {
    "solve": """
        X, LU = torch.solve(B, A)
        X2, _ = torch.solve(B, A)
        x3 = torch.solve(B, A)[0]
        return X, LU, X2, x3
    """,
    "gesv": """
        X, LU = torch.gesv(B, A)
        return X, LU, torch.gesv(B, A)[0]
    """,
    "symeig": """
        e, _ = torch.symeig(N)
        lower, _ = torch.symeig(N, upper=False)
        first = torch.symeig(N)[0]
        e2, v2 = torch.symeig(N, eigenvectors=True)
        return e, lower, first, e2, v2 @ torch.diag(e2) @ v2.mT
    """,
    "potrf-potrs-potri": """
        u = torch.potrf(spd)
        l = torch.potrf(spd, upper=False)
        x = torch.potrs(B, u)
        x2 = torch.potrs(B, l, False)
        return u, l, x, x2, torch.potri(u), torch.potri(l, upper=False)
    """,
    "trtrs": """
        y = torch.trtrs(B, T)[0]
        y2 = torch.trtrs(B, T.mT, False, True)[0]
        y3 = torch.trtrs(B, T, True, False, True)[0]
        Y, M = torch.trtrs(B, T)
        return y, y2, y3, Y, M
    """,
    "btrifact": """
        LU, pivots = torch.btrifact(batch)
        LU2, pivots2, info = torch.btrifact_with_info(batch)
        P, L, U = torch.btriunpack(LU, pivots)
        return LU, pivots, LU2, pivots2, info, P @ L @ U
    """,
}


@pytest.mark.parametrize("name", REMOVED)
def test_removed_call_now_runs_with_the_documented_numbers(name: str, monkeypatch) -> None:
    old = snippet(REMOVED[name])
    with pytest.raises((RuntimeError, AttributeError)):
        legacy(old)  # torch 2.13 no longer runs the legacy code ...
    new = migrate(old, "TM006")
    actual = run(new, "main", strict=True)  # ... the migrated code runs, warning-free
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "torch", _legacy_torch())
        expected = legacy(old)
    torch.testing.assert_close(tuple(actual), tuple(expected))


def test_the_references_agree_with_the_documented_identities() -> None:
    """The reference implementations themselves, on their documentation's own equations."""
    torch.manual_seed(1)
    a = torch.randn(4, 4, dtype=torch.float64)
    spd = a @ a.mT + torch.eye(4, dtype=torch.float64)
    b = torch.randn(4, 2, dtype=torch.float64)
    u = _potrf(spd)
    torch.testing.assert_close(u.mT @ u, spd)
    assert torch.equal(u, u.triu())
    torch.testing.assert_close(spd @ _potrs(b, u), b)
    torch.testing.assert_close(_potri(u) @ spd, torch.eye(4, dtype=torch.float64))
    x, lu = _solve(b, spd)
    torch.testing.assert_close(spd @ x, b)
    P, L, U = torch.lu_unpack(lu, torch.linalg.lu_factor(spd).pivots)
    torch.testing.assert_close(P @ L @ U, spd)
    t = a.triu() + 4 * torch.eye(4, dtype=torch.float64)
    y, copy = _trtrs(b, t, transpose=True)
    torch.testing.assert_close(t.mT @ y, b)
    assert torch.equal(copy, t)
