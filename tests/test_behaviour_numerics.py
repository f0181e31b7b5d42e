"""TM905/TM906 under torch: the code their findings suggest computes what the old code meant.

Both are findings-only, so "the migrated code" here is the snippet with each reported expression
replaced by the finding's suggestion, exactly as a user would paste it; it runs with warnings as
errors. TM906's legacy formulas still run on torch 2.13: both versions are compared with a
float64 reference. The old FFT functions TM905 reports were removed in torch 1.8, so their
semantics are emulated with numpy from the old documentation (torch 1.7 `torch.rfft` & co.:
complex numbers as a trailing dimension of size 2, `normalized=True` scaling by 1/sqrt(n) in
both directions, `onesided` keeping the last signal dimension's first n // 2 + 1 entries).
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.behaviour import run  # noqa: E402


def _findings(source: str, code: str):
    result = transform_source(source, [registry.get(code)])
    assert result.problem is None and not result.changed
    return [f for f in result.findings if f.kind == "finding"]


def _apply_suggestions(source: str, code: str) -> str:
    """`source` with each reported expression (quoted in the message) replaced by its suggestion."""
    findings = _findings(source, code)
    assert findings
    for finding in findings:
        reported = re.match(r"`([^`]+)`", finding.message).group(1)
        assert reported in source, reported
        source = source.replace(reported, finding.suggestion)
    return source


NUMERICS = """
import torch


def formulas(x, big):
    a = torch.log(1 + x)
    b = torch.log(1 - x)
    c = torch.exp(x) - 1
    d = torch.log(torch.sum(torch.exp(big), dim=1))
    e = big.exp().sum(-1, keepdim=True).log()
    return a, b, c, d, e
"""


def _reference(x, big):
    x64, big64 = x.double(), big.double()
    lse = torch.logsumexp(big64, dim=1)
    return torch.log1p(x64), torch.log1p(-x64), torch.expm1(x64), lse, lse.unsqueeze(-1)


def test_numerics_suggestions_are_accurate_where_the_formulas_are_not() -> None:
    migrated = _apply_suggestions(NUMERICS, "TM906")
    assert "log1p(x)" in migrated and "log1p(-x)" in migrated and "expm1(x)" in migrated
    assert migrated.count("torch.logsumexp(big") == 2
    x = torch.tensor([1e-8, 3e-7, 1e-5, 1e-3], dtype=torch.float32)
    big = torch.tensor([[100.0, 99.0, 1.0], [-200.0, -201.0, -210.0]], dtype=torch.float32)
    old = run(NUMERICS, "formulas", x, big)
    new = run(migrated, "formulas", x, big, strict=True)
    expected = _reference(x, big)
    for before, after, exact in zip(old[:3], new[:3], expected[:3]):
        relative_new = ((after.double() - exact) / exact).abs().max().item()
        relative_old = ((before.double() - exact) / exact).abs().max().item()
        assert relative_new < 1e-6  # float32 to the last bits
        assert relative_old > 1e-2  # the legacy formula: percent-level errors on small x
    for before, after, exact in zip(old[3:], new[3:], expected[3:]):
        assert not torch.isfinite(before).all()  # exp(100) overflows float32, exp(-200) underflows
        torch.testing.assert_close(after.double(), exact)


def test_numerics_suggestions_agree_with_the_formulas_on_ordinary_values() -> None:
    migrated = _apply_suggestions(NUMERICS, "TM906")
    torch.manual_seed(0)
    x, big = torch.rand(16) * 0.9, torch.randn(4, 5)
    for before, after in zip(run(NUMERICS, "formulas", x, big), run(migrated, "formulas", x, big, strict=True)):
        torch.testing.assert_close(before, after)


# -- TM905: the old FFT API --------------------------------------------------------------------

OLD_FFT = """
import torch


def spectra(x, pair, half, full):
    a = torch.rfft(x, 2)
    b = torch.rfft(x, 2, normalized=True, onesided=False)
    c = torch.fft(pair, 1)
    d = torch.ifft(pair, 2, True)
    e = torch.irfft(half, 2, signal_sizes=x.shape[-2:])
    f = torch.irfft(full, 2, normalized=True, onesided=False)
    return a, b, c, d, e, f
"""


def _old(kind, x, ndim, normalized=False, onesided=True, signal_sizes=None):
    """torch <= 1.7's fft/ifft/rfft/irfft, from their documentation, in numpy."""
    x = np.asarray(x, dtype=np.float64)
    axes = tuple(range(-ndim, 0))
    if kind in ("fft", "ifft", "irfft"):
        x = x[..., 0] + 1j * x[..., 1]
    if kind == "rfft":
        n = np.prod(x.shape[-ndim:])
        out = np.fft.rfftn(x, axes=axes) if onesided else np.fft.fftn(x, axes=axes)
        out = out / np.sqrt(n) if normalized else out
    elif kind == "fft":
        n = np.prod(x.shape[-ndim:])
        out = np.fft.fftn(x, axes=axes) / (np.sqrt(n) if normalized else 1)
    elif kind == "ifft":
        n = np.prod(x.shape[-ndim:])
        out = np.fft.ifftn(x, axes=axes) * (np.sqrt(n) if normalized else 1)
    else:  # irfft: the onesided half of the last signal dimension; with onesided=False, the input's sizes
        sizes = tuple(signal_sizes) if signal_sizes is not None else None
        if not onesided:
            sizes = x.shape[-ndim:]
            x = x[..., : sizes[-1] // 2 + 1]
        elif sizes is None:
            sizes = (*x.shape[-ndim:-1], 2 * (x.shape[-1] - 1))
        out = np.fft.irfftn(x, s=sizes, axes=axes) * (np.sqrt(np.prod(sizes)) if normalized else 1)
        return torch.from_numpy(out)
    return torch.from_numpy(np.stack([out.real, out.imag], axis=-1))


def test_fft_suggestions_compute_what_the_removed_functions_computed() -> None:
    findings = _findings(OLD_FFT, "TM905")
    assert len(findings) == 6 and all("signal_ndim becomes dim=" in f.message for f in findings)
    migrated = OLD_FFT
    for line, finding in zip(OLD_FFT.splitlines()[5:11], findings):
        call = line.split(" = ", 1)[1]
        migrated = migrated.replace(call, finding.suggestion)
    torch.manual_seed(0)
    x = torch.randn(3, 6, 8, dtype=torch.float64)
    pair = torch.randn(3, 5, 4, 2, dtype=torch.float64)
    half = torch.view_as_real(torch.fft.rfftn(x, dim=(-2, -1)))
    # onesided=False: a Hermitian spectrum, the input irfft is meant for (the old kernel read only
    # its first half, and so does the suggestion)
    full = torch.view_as_real(torch.fft.fftn(x, dim=(-2, -1)))
    got = run(migrated, "spectra", x, pair, half, full, strict=True)
    expected = (
        _old("rfft", x, 2),
        _old("rfft", x, 2, normalized=True, onesided=False),
        _old("fft", pair, 1),
        _old("ifft", pair, 2, normalized=True),
        _old("irfft", half, 2, signal_sizes=x.shape[-2:]),
        _old("irfft", full, 2, normalized=True, onesided=False),
    )
    for after, old in zip(got, expected):
        assert after.shape == old.shape
        torch.testing.assert_close(after, old)
    torch.testing.assert_close(got[4], x)  # and irfft(rfft(x)) is still x
