"""TM905: APIs torch removed with no mechanical replacement (findings only, each with its way out)."""

from __future__ import annotations

import libcst as cst

from codemods.gates.removed_apis import OLD_FFT, REMOVED_MODULES, V2_TO_TENSOR
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted

_NORM = {False: None, True: '"ortho"'}  # old `normalized=` -> new `norm=` (None: the default, "backward")


def _removed(name: str | None) -> str | None:
    """The REMOVED_MODULES prefix `name` lies under, if any."""
    for prefix in REMOVED_MODULES:
        if name is not None and (name == prefix or name.startswith(prefix + ".")):
            return prefix
    return None


def _head(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


def _dims(ndim: int) -> str:
    return "dim=-1" if ndim == 1 else "dim=(" + ", ".join(str(d) for d in range(-ndim, 0)) + ")"


def fft_replacement(kind: str, x: str, ndim: int, normalized: bool, sizes: str | None, onesided: bool = True) -> str:
    """The torch.fft expression computing what the old `torch.<kind>(x, ndim, ...)` computed,
    from the old documentation: complex numbers as a trailing dimension of size 2, `normalized`
    scaling both directions by 1/sqrt(n), the onesided half of the last signal dimension."""
    extra = f", {_dims(ndim)}" + (f", norm={_NORM[normalized]}" if normalized else "")
    complex_in = f"torch.view_as_complex({x})"
    if kind == "fft":
        return f"torch.view_as_real(torch.fft.fftn({complex_in}{extra}))"
    if kind == "ifft":
        return f"torch.view_as_real(torch.fft.ifftn({complex_in}{extra}))"
    if kind == "rfft":
        function = "rfftn" if onesided else "fftn"
        return f"torch.view_as_real(torch.fft.{function}({x}{extra}))"
    # irfft: the old call read only the onesided half of the last dimension, as irfftn does;
    # with onesided=False, `sizes` is the input's signal sizes, the length of the output
    s = f", s={sizes}" if sizes is not None else ""
    return f"torch.fft.irfftn({complex_in}{s}{extra})"


class RemovedApis(MigrationCodemod):
    """Report APIs torch removed without a one-to-one replacement, each with the code to write.

    ## What it does
    Reports, with a suggestion for each:
    - `torch.utils.ffi` (`create_extension`: cffi C extensions) -> a `torch.utils.cpp_extension`
      build (`CppExtension`/`CUDAExtension` with `BuildExtension`, or `cpp_extension.load`);
    - `torch.utils.serialization.load_lua` (Lua torch `.t7` files) and `torch.legacy` (Lua-style
      `nn`/`optim`) -> a one-time conversion, `torch.nn` modules and `torch.optim`;
    - the THNN backend: `self._backend.X(...)` in torch classes, `m._backend.Embedding.apply(...)`
      on any module (its functions were classes: a capitalised name), `torch._thnn`,
      `torch.nn.backends.thnn.backend`, `torch.nn._functions.thnn`;
    - the old FFT functions `torch.fft/ifft/rfft/irfft(x, signal_ndim, normalized, onesided,
      signal_sizes)` and their tensor methods -> the `torch.fft` module, with the exact
      expression when `signal_ndim`, `normalized` and `onesided` are literals;
    - torchvision's `transforms.v2.ToTensor` (deprecated) -> `ToImage()` + `ToDtype(torch.float32,
      scale=True)`.
    It rewrites nothing: each replacement changes types, files or build steps, not one call.

    ## Why is this bad?
    All but the last were removed: `ffi`, `serialization` and `legacy` in torch 1.0, the THNN
    backend during the 1.x releases, the FFT functions in 1.8 (`torch.fft` is now a module, and
    calling it is a `TypeError`): the code fails at import or at the call. The new FFT functions
    take and return complex tensors, where the old ones used a trailing dimension of size 2;
    `normalized=True` is `norm="ortho"`; `onesided=True` is `rfftn`/`irfftn`; the signal
    dimensions are named with `dim=`.

    ## Example
    ```python
    import torch
    from torch.utils.ffi import create_extension

    spec = torch.rfft(x, 2, normalized=True)
    y = torch.irfft(spec, 2, signal_sizes=x.shape[-2:])
    ```

    ## Use instead
    ```python
    import torch
    from torch.utils.cpp_extension import BuildExtension, CppExtension  # in setup.py

    spec = torch.view_as_real(torch.fft.rfftn(x, dim=(-2, -1), norm="ortho"))
    y = torch.fft.irfftn(torch.view_as_complex(spec), s=x.shape[-2:], dim=(-2, -1))
    ```

    ## Fix safety
    Findings only. The FFT suggestions compute the old results exactly (tests/test_behaviour_numerics.py
    checks them against a reference written from the old documentation); `view_as_complex`
    needs a float32/float64 input whose last dimension has stride 1 (`.contiguous()` if not).
    A C extension must be ported from TH's C API to ATen's C++ by hand.

    ## References
    - https://pytorch.org/docs/stable/cpp_extension.html
    - https://pytorch.org/docs/stable/fft.html
    - https://github.com/pytorch/pytorch/issues/42175 (the torch.fft migration guide)
    - https://pytorch.org/vision/stable/generated/torchvision.transforms.v2.ToTensor.html
    """

    PRUNE = True  # every site is an import or a call on a trigger line

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._torch_classes: list[bool] = []  # per enclosing class: does it derive from torch?

    # -- imports ---------------------------------------------------------------------------

    def _report_module(self, node: cst.CSTNode, name: str, prefix: str) -> None:
        what, way_out = REMOVED_MODULES[prefix]
        self.finding(node, f"`{name}`: {what}", suggestion=way_out)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted(alias.name)
            prefix = _removed(name)
            if prefix is not None:
                self._report_module(node, name, prefix)
                break
        return False  # its dotted names are not uses

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = dotted(node.module)
        names = [] if isinstance(node.names, cst.ImportStar) else [a.name.value for a in node.names]
        for full in [module] + [f"{module}.{n}" for n in names]:
            prefix = _removed(full)
            if prefix is not None:
                self._report_module(node, full, prefix)
                break
            if full == V2_TO_TENSOR:
                self._report_to_tensor(node)
                break
        return False

    # -- uses ------------------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = (self.qualified_name(b.value) or "" for b in node.bases)
        self._torch_classes.append(any(b.split(".")[0] == "torch" for b in bases))

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._torch_classes.pop()
        return updated_node

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = self.qualified_name(node)
        if name == V2_TO_TENSOR:
            self._report_to_tensor(node)
            return False
        prefix = _removed(name)
        if prefix is None:
            return True
        # `lnn.Linear` after `import torch.legacy.nn as lnn`: the import was reported
        if _removed(self.qualified_name(_head(node))) is None:
            self._report_module(node, name, prefix)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self._backend_call(node):
            return
        self._old_fft(node)

    def _report_to_tensor(self, node: cst.CSTNode) -> None:
        self.finding(
            node,
            "torchvision's `transforms.v2.ToTensor` is deprecated and will be removed",
            suggestion="v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])",
        )

    def _backend_call(self, node: cst.Call) -> bool:
        func, below = node.func, ""
        while isinstance(func, cst.Attribute):
            if func.attr.value == "_backend":
                owner = func.value
                torch_owner = (self.qualified_name(owner) or "").split(".")[0] == "torch"
                in_torch_class = isinstance(owner, cst.Name) and owner.value == "self" and any(self._torch_classes[-1:])
                # `e._backend.Embedding.apply(...)` on any module: the backend's functions were classes
                thnn_function = below[:1].isupper()
                if not (torch_owner or in_torch_class or thnn_function):
                    return False
                self.finding(
                    node,
                    f"`{self.code_for(node.func)}`: `Module._backend` (the THNN backend) no longer exists (gone by torch 1.13)",
                    suggestion="call the operator through torch.nn.functional (e.g. F.conv2d, F.threshold) or torch.*",
                )
                return True
            func, below = func.value, func.attr.value
        return False

    def _fft_function(self, node: cst.Call) -> tuple[str, tuple[str, ...], bool] | None:
        """(old FFT function, its positional parameters, called as a method) for a call of one."""
        name = self.qualified_name(node.func)
        if name is not None:
            for owner in ("torch.", "torch.Tensor."):
                kind = name[len(owner):] if name.startswith(owner) else ""
                if kind in OLD_FFT:
                    return kind, ("input", *OLD_FFT[kind]), False
            return None
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in OLD_FFT:
            # `x.rfft(2)` on a receiver no import names: a tensor method only with an int signal_ndim
            signal_ndim = arguments.literal(node.args[0].value) if node.args and node.args[0].keyword is None else None
            if type(signal_ndim) is int and 1 <= signal_ndim <= 3:
                return node.func.attr.value, OLD_FFT[node.func.attr.value], True
        return None

    def _old_fft(self, node: cst.Call) -> None:
        found = None if arguments.has_star_args(node) else self._fft_function(node)
        if found is None:
            return
        kind, params, is_method = found
        bound = arguments.bind(node, params)
        signal = node.func.value if is_method else bound["input"].arg.value if "input" in bound else cst.Name("x")
        x = self.code_for(signal)
        shown = f"{x}.{kind}(signal_ndim, ...)" if is_method else f"torch.{kind}(x, signal_ndim, ...)"
        message = (
            f"`{shown}` was removed in torch 1.8; torch.fft takes and returns complex tensors "
            "(the old API: a trailing dimension of size 2), signal_ndim becomes dim= (the last signal_ndim dims), "
            "normalized=True is norm=\"ortho\", onesided=True (rfft/irfft's default) is rfftn/irfftn"
        )
        literal = {"signal_ndim": None, "normalized": False, "onesided": True}
        for key in literal:
            if key in bound:
                literal[key] = arguments.literal(bound[key].arg.value)
        ndim, normalized, onesided = literal.values()
        if type(ndim) is int and 1 <= ndim <= 3 and isinstance(normalized, bool) and isinstance(onesided, bool):
            sizes = self.code_for(bound["signal_sizes"].arg.value) if "signal_sizes" in bound else None
            if sizes is None and kind == "irfft" and not onesided:
                # the output has the input's signal sizes (irfftn trims the input to their half)
                owner = x if isinstance(signal, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or signal.lpar else f"({x})"
                sizes = f"{owner}.shape[{-ndim - 1}:-1]"
            suggestion = fft_replacement(kind, x, ndim, normalized, sizes, onesided)
        else:
            suggestion = (
                "torch.view_as_real(torch.fft.fftn(torch.view_as_complex(x), dim=<the last signal_ndim dims>, "
                "norm=\"ortho\" if normalized else None)); rfft: rfftn(x, ...); irfft: irfftn(view_as_complex(x), s=signal_sizes, ...)"
            )
        self.finding(node, message, suggestion=suggestion)
