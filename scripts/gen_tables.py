"""Regenerate the data tables under codemods/data/ from the installed torch.

    python scripts/gen_tables.py            # write the tables
    python scripts/gen_tables.py --check    # exit 1 if a checked-in table differs from torch

The rewriting path never imports torch; it reads these files. tests/test_tables.py runs --check.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "codemods" / "data"
LEGACY = ("size_average", "reduce")


def _entry(signature: inspect.Signature, skip_self: bool) -> dict:
    params = list(signature.parameters.values())[1 if skip_self else 0 :]
    return {
        "positional": [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD],
        "keywords": [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)],
    }


def losses() -> dict:
    import torch.nn as nn
    import torch.nn.functional as F

    table: dict[str, dict] = {}
    for name in sorted(dir(nn)):
        obj = getattr(nn, name)
        if inspect.isclass(obj) and issubclass(obj, nn.Module):
            sig = inspect.signature(obj.__init__)
            if any(p in sig.parameters for p in LEGACY):
                entry = _entry(sig, skip_self=True)
                entry["aliases"] = sorted({f"{obj.__module__}.{name}", f"torch.nn.modules.{name}"})
                table[f"torch.nn.{name}"] = entry
    for name in sorted(dir(F)):
        obj = getattr(F, name)
        if callable(obj) and not name.startswith("_"):
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            if any(p in sig.parameters for p in LEGACY):
                entry = _entry(sig, skip_self=False)
                entry["aliases"] = []
                table[f"torch.nn.functional.{name}"] = entry
    return table


def legacy_tensor_types() -> dict:
    """`torch.cuda.FloatTensor` & co. -> the dtype name (`float32`) their instances have."""
    import torch

    table = {}
    for name in sorted(dir(torch.cuda)):
        obj = getattr(torch.cuda, name)
        if name.endswith("Tensor") and inspect.isclass(obj) and isinstance(getattr(obj, "dtype", None), torch.dtype):
            table[name] = str(obj.dtype).replace("torch.", "")
    return table


# Hand-kept facts about deprecated APIs; deprecated_api() adds what torch itself can tell (every
# deprecated `nn.init` alias) and checks each entry against the installed torch.
# handler: "rename" (generic: new name, `positional` old order, `keyword_from` = the first old
# positional that the replacement only takes by keyword, `rename` keywords, `add` [keyword, source] pairs, in order), a
# special rewrite in codemods/transforms/deprecated_api/, or "finding" (never rewritten).
_DOCS = "https://pytorch.org/docs/stable/"
_LINALG = "https://github.com/pytorch/pytorch/issues/70081"
DEPRECATED: dict[str, dict] = {
    "torch.nn.functional.upsample": dict(
        replacement="torch.nn.functional.interpolate", handler="rename",
        positional=["input", "size", "scale_factor", "mode", "align_corners"],
        arguments="same arguments in the same order", safety="safe", deprecated="0.4.1",
        reference=_DOCS + "generated/torch.nn.functional.interpolate.html"),
    "torch.nn.functional.upsample_nearest": dict(
        replacement="torch.nn.functional.interpolate", handler="rename",
        positional=["input", "size", "scale_factor"], add=[["mode", '"nearest"']],
        arguments='adds mode="nearest"', safety="safe", deprecated="0.4.1",
        reference=_DOCS + "generated/torch.nn.functional.upsample_nearest.html"),
    "torch.nn.functional.upsample_bilinear": dict(
        replacement="torch.nn.functional.interpolate", handler="rename",
        positional=["input", "size", "scale_factor"], add=[["mode", '"bilinear"'], ["align_corners", "True"]],
        arguments='adds mode="bilinear", align_corners=True (what upsample_bilinear always used)',
        safety="safe", deprecated="0.4.1",
        reference=_DOCS + "generated/torch.nn.functional.upsample_bilinear.html"),
    "torch.nn.functional.sigmoid": dict(
        replacement="torch.sigmoid", handler="rename", positional=["input"],
        arguments="same argument", safety="safe", deprecated="0.4.1",
        reference=_DOCS + "generated/torch.nn.functional.sigmoid.html"),
    "torch.nn.functional.tanh": dict(
        replacement="torch.tanh", handler="rename", positional=["input"],
        arguments="same argument", safety="safe", deprecated="0.4.1",
        reference=_DOCS + "generated/torch.nn.functional.tanh.html"),
    "torch.nn.utils.clip_grad_norm": dict(
        replacement="torch.nn.utils.clip_grad_norm_", handler="rename",
        aliases=["torch.nn.utils.clip_grad.clip_grad_norm"],
        positional=["parameters", "max_norm", "norm_type", "error_if_nonfinite", "foreach"],
        arguments="same arguments; the old name only forwards them", safety="safe", deprecated="0.4.0",
        reference=_DOCS + "generated/torch.nn.utils.clip_grad_norm_.html"),
    "torch.ger": dict(
        replacement="torch.outer", handler="rename", positional=["input", "vec2"],
        arguments="same arguments", safety="safe", deprecated="1.7.0",
        reference=_DOCS + "generated/torch.ger.html"),
    "torch.cholesky": dict(
        replacement="torch.linalg.cholesky", handler="rename", positional=["input", "upper"], keyword_from=1,
        arguments="`upper` becomes keyword-only", safety="safe", deprecated="1.9.0",
        reference=_DOCS + "generated/torch.cholesky.html"),
    "torch.testing.assert_allclose": dict(
        replacement="torch.testing.assert_close", handler="assert_allclose",
        positional=["actual", "expected", "rtol", "atol", "equal_nan", "msg"],
        arguments="rtol/atol given: passed on with equal_nan=True, check_dtype=False, check_stride=False;"
        " without them the default tolerances differ (finding)",
        safety="review", deprecated="1.12.0", reference="https://github.com/pytorch/pytorch/issues/61844"),
    "torch.range": dict(
        replacement="torch.arange", handler="range", positional=["start", "end", "step"],
        arguments="end + 1 (end - 1 for a negative step), dtype=torch.get_default_dtype(); only with an"
        " integer literal step; a finding otherwise",
        safety="safe", deprecated="0.4.0", reference=_DOCS + "generated/torch.range.html"),
    "torch.chain_matmul": dict(
        replacement="torch.linalg.multi_dot", handler="chain_matmul", positional=[],
        arguments="the matrices become one list; needs two or more, no out=", safety="safe", deprecated="1.9.0",
        reference=_DOCS + "generated/torch.chain_matmul.html"),
    "torch.qr": dict(
        replacement="torch.linalg.qr", handler="qr", positional=["input", "some"],
        arguments='some=True -> mode="reduced" (the default), some=False -> mode="complete"',
        safety="safe", deprecated="1.9.0", reference=_DOCS + "generated/torch.qr.html"),
    "torch.symeig": dict(
        replacement="torch.linalg.eigh", handler="symeig", positional=["input", "eigenvectors", "upper"],
        arguments='eigenvectors=True -> linalg.eigh(A, UPLO="U"|"L"); symeig(A)[0] ->'
        ' linalg.eigvalsh(A, UPLO=...); other uses of the (values, empty) pair: finding',
        safety="safe", deprecated="1.9.0", removed="2.0.0", reference=_LINALG),
    "torch.solve": dict(
        replacement="torch.linalg.solve", handler="solve", positional=["input", "A"],
        arguments="solve(B, A)[0] -> linalg.solve(A, B) (arguments swap, no LU in the result); other uses:"
        " finding",
        safety="safe", deprecated="1.9.0", removed="1.13.0", reference=_LINALG),
    "torch.matrix_rank": dict(
        replacement="torch.linalg.matrix_rank", handler="matrix_rank", positional=["input", "tol", "symmetric"],
        arguments="symmetric -> hermitian; a positive literal tol -> atol; any other tol: finding",
        safety="safe", deprecated="1.9.0", removed="1.13.0", reference=_LINALG),
    "torch.eig": dict(
        replacement="torch.linalg.eig", handler="finding", positional=["input", "eigenvectors"],
        arguments="linalg.eig returns complex tensors instead of (n, 2) real pairs: the old eigenvalues are"
        " torch.view_as_real(torch.linalg.eigvals(A)); the old real-packed eigenvectors have no exact"
        " counterpart: L, V = torch.linalg.eig(A) and adapt the code that reads them",
        safety="finding", deprecated="1.9.0", removed="1.13.0", reference=_LINALG),
    "torch.lstsq": dict(
        replacement="torch.linalg.lstsq", handler="finding", positional=["input", "A"],
        arguments="arguments swap and the solution is (n, k), not the first n rows of an (max(m, n), k)"
        " tensor: torch.lstsq(B, A)[0][:A.size(1)] -> torch.linalg.lstsq(A, B).solution, by hand",
        safety="finding", deprecated="1.9.0", removed="1.13.0", reference=_LINALG),
    # The rest of the torch.linalg migration (issue 16 item 6), and the names of the 0.4 era that
    # torch 1.0/1.1 renamed (gesv -> solve, potrf -> cholesky, ...) and later removed: the old
    # signatures and defaults are the 0.4.1 documentation's (potrf/potrs/potri default upper=True).
    "torch.gesv": dict(
        replacement="torch.linalg.solve", handler="solve", positional=["B", "A"],
        arguments="as torch.solve (its 0.4 name): gesv(B, A)[0] -> linalg.solve(A, B); X, LU = gesv(B, A) ->"
        " X, LU = linalg.solve(A, B), linalg.lu_factor(A).LU",
        safety="safe", deprecated="1.1.0", removed="1.2.0", reference=_LINALG),
    "torch.lu": dict(
        replacement="torch.linalg.lu_factor", handler="lu", aliases=["torch.functional.lu"],
        positional=["A", "pivot", "get_infos", "out"],
        arguments="lu(A) -> linalg.lu_factor(A); get_infos=True -> linalg.lu_factor_ex(A) (the same (LU, pivots,"
        " info)); linalg.lu_factor raises on a singular matrix (review); pivot=False, out=: finding",
        safety="safe", deprecated="1.13.0", reference=_DOCS + "generated/torch.lu.html"),
    "torch.btrifact": dict(
        replacement="torch.linalg.lu_factor", handler="lu", positional=["A", "info", "pivot"],
        arguments="as torch.lu (its 0.4 name); the deprecated info= out-argument: finding",
        safety="safe", deprecated="1.1.0", removed="1.2.0", reference=_DOCS + "generated/torch.lu.html"),
    "torch.btrifact_with_info": dict(
        replacement="torch.linalg.lu_factor_ex", handler="lu", positional=["A", "pivot"],
        arguments="-> linalg.lu_factor_ex(A): the same (LU, pivots, info); pivot=False: finding",
        safety="safe", deprecated="1.1.0", removed="1.2.0", reference=_DOCS + "generated/torch.lu.html"),
    "torch.lu_solve": dict(
        replacement="torch.linalg.lu_solve", handler="lu_solve", positional=["input", "LU_data", "LU_pivots"],
        arguments="lu_solve(b, LU, pivots) -> linalg.lu_solve(LU, pivots, b): the right-hand side goes last",
        safety="safe", deprecated="1.13.0", reference=_DOCS + "generated/torch.lu_solve.html"),
    "torch.btrisolve": dict(
        replacement="torch.linalg.lu_solve", handler="finding", positional=["b", "LU_data", "LU_pivots"],
        arguments="in torch 0.4 b was a batch of vectors (B, n): torch.linalg.lu_solve(LU, pivots,"
        " b.unsqueeze(-1)).squeeze(-1); a (*, n, k) b: torch.linalg.lu_solve(LU, pivots, b)",
        safety="finding", deprecated="1.1.0", removed="1.2.0", reference=_DOCS + "generated/torch.lu_solve.html"),
    "torch.btriunpack": dict(
        replacement="torch.lu_unpack", handler="rename",
        positional=["LU_data", "LU_pivots", "unpack_data", "unpack_pivots"],
        arguments="same arguments, the same (P, L, U)", safety="safe", deprecated="1.1.0", removed="1.2.0",
        reference=_DOCS + "generated/torch.lu_unpack.html"),
    "torch.triangular_solve": dict(
        replacement="torch.linalg.solve_triangular", handler="triangular_solve",
        positional=["input", "A", "upper", "transpose", "unitriangular"],
        arguments="triangular_solve(b, A, upper, transpose, unitriangular)[0] -> linalg.solve_triangular(A, b,"
        " upper=upper, unitriangular=...) (A.mT and upper=not upper for transpose=True); X, M = ... keeps M ="
        " A.clone(); a transpose that is not a literal: finding",
        safety="safe", deprecated="1.11.0", reference=_DOCS + "generated/torch.triangular_solve.html"),
    "torch.trtrs": dict(
        replacement="torch.linalg.solve_triangular", handler="triangular_solve",
        positional=["b", "A", "upper", "transpose", "unitriangular"],
        arguments="as torch.triangular_solve (its 0.4 name)", safety="safe", deprecated="1.1.0", removed="1.2.0",
        reference=_DOCS + "generated/torch.triangular_solve.html"),
    "torch.potrf": dict(
        replacement="torch.linalg.cholesky", handler="potrf", positional=["a", "upper", "out"],
        arguments="potrf(a) (upper=True by default) -> linalg.cholesky(a, upper=True); upper=False ->"
        " linalg.cholesky(a)",
        safety="safe", deprecated="1.0.0", removed="1.2.0", reference=_DOCS + "generated/torch.cholesky.html"),
    "torch.potrs": dict(
        replacement="torch.cholesky_solve", handler="potrf", positional=["b", "u", "upper", "out"],
        arguments="potrs(b, u) (upper=True by default) -> cholesky_solve(b, u, upper=True) (whose default is"
        " upper=False)",
        safety="safe", deprecated="1.1.0", removed="1.2.0", reference=_DOCS + "generated/torch.cholesky_solve.html"),
    "torch.potri": dict(
        replacement="torch.cholesky_inverse", handler="potrf", positional=["u", "upper", "out"],
        arguments="potri(u) (upper=True by default) -> cholesky_inverse(u, upper=True) (whose default is"
        " upper=False)",
        safety="safe", deprecated="1.1.0", removed="1.2.0", reference=_DOCS + "generated/torch.cholesky_inverse.html"),
    "torch.gels": dict(
        replacement="torch.linalg.lstsq", handler="finding", positional=["B", "A"],
        arguments="as torch.lstsq (its 0.4 name): arguments swap and the solution is (n, k), not the first n rows"
        " of an (max(m, n), k) tensor: torch.gels(B, A)[0][:A.size(1)] -> torch.linalg.lstsq(A, B).solution,"
        " by hand",
        safety="finding", deprecated="1.2.0", removed="1.3.0", reference=_LINALG),
    "torch.svd": dict(
        replacement="torch.linalg.svd", handler="svd", positional=["input", "some", "compute_uv"],
        arguments="some -> full_matrices=not some; linalg.svd returns Vh = V.mH: U, S, V = torch.svd(A) ->"
        " U, S, V = torch.linalg.svd(A, full_matrices=False) and V = V.mH; svd(A)[2]/.V -> .Vh.mH;"
        " compute_uv=False or a result kept whole: finding",
        safety="safe", deprecated="1.9.0", reference=_LINALG),
    "torch.norm": dict(
        replacement="torch.linalg.vector_norm", handler="norm", aliases=["torch.functional.norm"],
        positional=["input", "p", "dim", "keepdim", "out", "dtype"],
        arguments="a numeric p (or none, or 'fro' over at most two dims) -> linalg.vector_norm(x, p, dim=...,"
        " keepdim=..., dtype=...); 'nuc' -> linalg.matrix_norm; a p that is not a literal: finding (a string"
        " makes it a matrix norm)",
        safety="review", deprecated="1.9.0", reference=_DOCS + "generated/torch.norm.html"),
    "torch.set_default_tensor_type": dict(
        replacement="torch.set_default_dtype", handler="set_default_tensor_type", positional=["t"],
        arguments='"torch.FloatTensor"/torch.DoubleTensor (CPU types) -> torch.float32/float64; CUDA'
        " types are TM101's",
        safety="review", deprecated="2.1.0", reference=_DOCS + "generated/torch.set_default_tensor_type.html"),
}


def deprecated_api() -> dict:
    import importlib
    import torch.nn.init as init

    table = {name: {"aliases": [], "add": [], "rename": {}, "keyword_from": None, "removed": None, **entry}
             for name, entry in DEPRECATED.items()}
    for name in sorted(dir(init)):
        obj = getattr(init, name)
        if name.startswith("_") or not callable(obj) or not hasattr(init, name + "_"):
            continue
        if "deprecated in favor of" not in (obj.__doc__ or ""):
            continue
        table[f"torch.nn.init.{name}"] = {
            "replacement": f"torch.nn.init.{name}_", "handler": "rename", "aliases": [], "positional": [],
            "add": [], "rename": {}, "keyword_from": None,
            "arguments": "same arguments; the old name only forwards them", "safety": "safe",
            "deprecated": "0.4.0", "removed": None,
            "reference": _DOCS + f"nn.init.html#torch.nn.init.{name}_",
        }

    def resolve(qualified: str):
        module, _, attr = qualified.rpartition(".")
        return getattr(importlib.import_module(module), attr)

    for name, entry in table.items():
        resolve(entry["replacement"])  # raises if the replacement is not in this torch
        for alias in entry["aliases"]:
            if resolve(alias) is not resolve(name):
                raise SystemExit(f"{alias} is not {name} in this torch")
    return table


TABLES = {
    "losses.json": losses,
    "legacy_tensor_types.json": legacy_tensor_types,
    "deprecated_api.json": deprecated_api,
}


def render(build) -> str:
    return json.dumps(build(), indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    stale = []
    for filename, build in TABLES.items():
        text = render(build)
        path = DATA / filename
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(filename)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale tables (run scripts/gen_tables.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
