# codemods: TM006
# emits: torch.linalg.lu_factor, torch.linalg.lu_factor_ex, torch.linalg.lu_solve, torch.linalg.solve_triangular, torch.linalg.svd, torch.linalg.vector_norm, torch.linalg.matrix_norm, torch.linalg.eigvalsh
# The rest of the torch 1.x linear algebra (issue 16 item 6) that torch 1.13 still runs, against
# torch.linalg: LU, triangular solves, SVD (V from Vh), norms, symeig's values unpacked.
import torch

torch.manual_seed(0)
eye = torch.eye(5, dtype=torch.float64)
a = torch.randn(5, 5, dtype=torch.float64) + 5 * eye
b = torch.randn(5, 3, dtype=torch.float64)
t = torch.randn(5, 5, dtype=torch.float64).triu() + 5 * eye
r = torch.randn(6, 4, dtype=torch.float64)
sym = (a + a.T) / 2

LU, pivots = torch.lu(a)
LU_i, pivots_i, info = torch.lu(a, get_infos=True)
x = torch.lu_solve(b, LU, pivots)
x_star = torch.lu_solve(b, *torch.lu(a))
y = torch.triangular_solve(b, t)[0]
y_t = torch.triangular_solve(b, t, True, True)[0]
y_lower = torch.triangular_solve(b, t.T, upper=False, unitriangular=True).solution
Y, copy = torch.triangular_solve(b, t)
U, S, V = torch.svd(r)
U_full, S_full, V_full = torch.svd(r, some=False)
v_only = torch.svd(r)[2]
reconstructed = U @ torch.diag(S) @ V.T
n = torch.norm(r)
n_rows = torch.norm(r, 1, dim=1, keepdim=True)
n_fro = torch.norm(r, p="fro", dim=(0, 1))
n_inf = torch.norm(r, float("inf"))
n_nuc = torch.norm(r, "nuc")


def eigenvalues(matrix):
    values, _ = torch.symeig(matrix)  # `_` is never read: the migrated code drops it
    return values


values = eigenvalues(sym)
