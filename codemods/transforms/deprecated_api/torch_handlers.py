"""TM006's handlers for deprecated functions outside `torch.linalg`: `torch.range` (the end made
exclusive), `set_default_tensor_type` (a dtype) and `assert_allclose` (its tolerances spelled out)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.spelling import reference
from codemods.transforms.deprecated_api.expressions import _arg, _call, int_value, provably_int, shifted


# set_default_tensor_type's CPU tensor types -> dtypes. CUDA types belong to TM101 (cuda-to-device).
_CPU_TYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}


class TorchHandlers:
    """The handlers `DeprecatedApi.leave_Call` picks by the table's `handler` (`self` is the
    codemod): each returns (replacement, review) or None, declining with a finding."""

    def _range(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or "start" not in bound or "end" not in bound or "out" in bound:
            self._decline(original, entry, "write torch.arange(start, end + step, step) by hand")
            return None
        step = int_value(bound["step"].arg.value) if "step" in bound else 1
        start, end = bound["start"].arg.value, bound["end"].arg.value
        if not step or isinstance(start, cst.Float) or isinstance(end, cst.Float):
            self._decline(
                original,
                entry,
                "torch.arange excludes the end; with a step that is not an integer literal (or float bounds)"
                " `end + step` can add an element, so adjust the end by hand",
            )
            return None
        args = list(call.args)
        args[bound["end"].index] = args[bound["end"].index].with_changes(value=shifted(end, 1 if step > 0 else -1))
        new_call = call.with_changes(func=self._func(original.func, entry), args=args)
        if "dtype" not in bound:  # torch.range always returned the default float dtype
            dtype = cst.Call(func=reference(self, "torch.get_default_dtype", self.forms))
            new_call = append_args(new_call, [keyword_arg("dtype", dtype)])
        if provably_int(start) and provably_int(end):
            return new_call, None
        return new_call, "torch.range -> torch.arange is exact when end - start is a whole number (always for ints)"

    def _set_default_tensor_type(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = arguments.bind(call, entry["positional"])
        if set(bound) != {"t"} or arguments.has_star_args(call):
            self._decline(original, entry, entry["arguments"])
            return None
        value = bound["t"].arg.value
        kind = value.evaluated_value if isinstance(value, cst.SimpleString) else self.qualified_name(value)
        if isinstance(kind, str) and kind.startswith("torch.cuda."):
            return None  # TM101 (cuda-to-device) owns the CUDA tensor types
        dtype = _CPU_TYPES.get(kind) if isinstance(kind, str) else None
        if dtype is None:
            self._decline(original, entry, "use torch.set_default_dtype(<float dtype>) (and torch.set_default_device)")
            return None
        new = _call(self._func(original.func, entry), [_arg(reference(self, dtype, self.forms))])
        return new, "set_default_tensor_type also made CPU the default device; add torch.set_default_device if needed"

    def _assert_allclose(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or "rtol" not in bound or "atol" not in bound:
            self._decline(
                original,
                entry,
                "assert_close has tighter default tolerances; pass them explicitly, e.g."
                " assert_close(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True, check_dtype=False)"
                " for float32",
            )
            return None
        value = lambda p: bound[p].arg.value  # noqa: E731
        args = [_arg(value("actual")), _arg(value("expected"))]
        args += [_arg(value("rtol"), "rtol"), _arg(value("atol"), "atol")]
        args.append(_arg(value("equal_nan") if "equal_nan" in bound else cst.Name("True"), "equal_nan"))
        args += [_arg(cst.Name("False"), "check_dtype"), _arg(cst.Name("False"), "check_stride")]
        if "msg" in bound:
            msg = arguments.literal(value("msg"))
            if msg != "":
                args.append(_arg(value("msg") if isinstance(msg, str) else cst.parse_expression(
                    f"({self.code_for(value('msg'))}) or None"), "msg"))
        new = _call(self._func(original.func, entry), args)
        return new, "assert_close does not convert numbers or lists: both sides must be tensors"
