# codemods: TM006
# emits: torch.linalg.qr, torch.linalg.cholesky, torch.linalg.cholesky(upper), torch.linalg.eigh, torch.linalg.eigvalsh, torch.linalg.multi_dot
# The deprecated linear algebra of torch 1.x still there in 1.13 (torch.solve and torch.matrix_rank
# are not: they raise there) against torch.linalg.
import torch

torch.manual_seed(0)
a = torch.randn(4, 4, dtype=torch.float64)
b = torch.randn(4, 2, dtype=torch.float64)
c = torch.randn(2, 3, dtype=torch.float64)
spd = a @ a.T + 4 * torch.eye(4, dtype=torch.float64)
sym = (a + a.T) / 2

q, r = torch.qr(a)
q_complete, r_complete = torch.qr(a, some=False)
lower = torch.cholesky(spd)
upper = torch.cholesky(spd, True)
eigenvalues, eigenvectors = torch.symeig(sym, eigenvectors=True)
eigenvectors = eigenvectors.abs()  # an eigenvector's sign is arbitrary
values_lower = torch.symeig(sym, upper=False).eigenvalues
product = torch.chain_matmul(a, b, c)
reconstructed = q @ r
