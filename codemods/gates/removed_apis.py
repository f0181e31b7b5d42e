"""TM905 removed-apis: its declaration (SPEC) and trigger regexes, tables and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan

# module prefix -> (what happened, the way out): imports and uses of these are reported
REMOVED_MODULES = {
    "torch.utils.ffi": (
        "torch.utils.ffi (cffi C extensions) was removed in torch 1.0",
        "rebuild the extension with torch.utils.cpp_extension: in setup.py, "
        "`ext_modules=[CppExtension(name, sources)]` (`CUDAExtension` for .cu files) with "
        "`cmdclass={'build_ext': BuildExtension}`, or `torch.utils.cpp_extension.load(name, sources)` "
        "to build it at import time; C functions taking THFloatTensor* become C++ taking torch::Tensor, "
        "bound with PYBIND11_MODULE",
    ),
    "torch.utils.serialization": (
        "torch.utils.serialization (load_lua, Lua torch .t7 files) was removed in torch 1.0",
        "convert the .t7 file once (e.g. the `torchfile` package reads it into numpy arrays), copy "
        "the weights into the matching torch.nn modules and torch.save their state_dict()",
    ),
    "torch.legacy": (
        "torch.legacy (the Lua-torch style nn and optim) was removed in torch 1.0",
        "use torch.nn modules (legacy nn.Linear -> torch.nn.Linear, nn.SpatialConvolution -> "
        "torch.nn.Conv2d, ...) and torch.optim optimizers, whose forward/step replace "
        "updateOutput/updateGradInput/accGradParameters",
    ),
    # the THNN backend went away during the 1.x releases (none of it is in torch 1.13); what is
    # left of torch.nn.backends is a stub for unpickling
    "torch._thnn": (
        "torch._thnn (the THNN backend: type2backend) no longer exists (gone by torch 1.13)",
        "call the operator through torch.nn.functional or torch.* instead of the backend",
    ),
    "torch.nn.backends.thnn.backend": (
        "the THNN module backend (torch.nn.backends.thnn.backend) no longer exists (gone by torch 1.13)",
        "call the operator through torch.nn.functional or torch.* instead of the backend",
    ),
    "torch.nn._functions.thnn": (
        "torch.nn._functions.thnn no longer exists (gone by torch 1.13)",
        "call the operator through torch.nn.functional or torch.* instead of the backend",
    ),
}

# the old FFT functions (torch <= 1.7), by name -> positional parameters after `input`
OLD_FFT = {
    "fft": ("signal_ndim", "normalized"),
    "ifft": ("signal_ndim", "normalized"),
    "rfft": ("signal_ndim", "normalized", "onesided"),
    "irfft": ("signal_ndim", "normalized", "onesided", "signal_sizes"),
}

V2_TO_TENSOR = "torchvision.transforms.v2.ToTensor"


def triggers() -> tuple[str, ...]:
    return (
        r"\butils\.ffi\b|\bimport\s+ffi\b|\bcreate_extension\b",
        r"\bload_lua\b|\butils\.serialization\b|\bimport\s+serialization\b",
        r"\blegacy\b",
        r"\b_thnn\b|\bnn\.backends\b|\b_functions\.thnn\b|\._backend\.",
        r"\b(?:i?r?fft)\s*\(",
        r"\bv2\b",
    )


def _removed(name: str) -> bool:
    return name == V2_TO_TENSOR or any(name == p or name.startswith(p + ".") for p in REMOVED_MODULES)


def _may_report(node: ast.AST, scan: Scan) -> bool:
    """A superset of the codemod's reports, from the ast."""
    if isinstance(node, ast.Import):
        return any(_removed(a.name) for a in node.names)
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return not node.level and (_removed(module) or any(_removed(f"{module}.{a.name}") for a in node.names))
    if isinstance(node, ast.Attribute):
        return node.attr == "_backend" or any(_removed(n) for n in scan.qualified(node))
    if isinstance(node, ast.Call):
        names = scan.qualified(node.func)
        if any(n.rpartition(".")[0] in ("torch", "torch.Tensor") and n.rpartition(".")[2] in OLD_FFT for n in names):
            return True
        first = node.args[0] if node.args else None
        return (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in OLD_FFT
            and isinstance(first, ast.Constant)
            and type(first.value) is int
        )
    return False


def may_act(scan: Scan, words, facts) -> bool:
    return any(_may_report(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM905",
    name="removed-apis",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.removed_apis:RemovedApis",
    triggers=triggers(),
    summary="torch.utils.ffi, load_lua, torch.legacy, ._backend, the old torch.rfft/fft API: removed, with the code to write instead",
    gate=GATE,
)
