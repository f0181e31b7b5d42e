"""TM014 moved-apis: its declaration (SPEC) and table and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Gate, Safety, Spec, Stage, data_table


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("moved_apis.json")


def triggers() -> tuple[str, ...]:
    return (
        r"\bfunctorch\b",
        r"\b_register_pytree_node\b",
        r"\b(?:remove_)?weight_norm\b",
        r"\bsdp_kernel\b",
        r"\bUpsampling(?:Nearest|Bilinear)2d\b",
        r"\brequire_grad\b",
    )


# `.weight_g`/`.weight_v` reads are reported (in a file that applies weight_norm) off trigger lines.
GATE = Gate(sites=(r"\bweight_[gv]\b",))


SPEC = Spec(
    code="TM014",
    name="moved-apis",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.moved_apis:MovedApis",
    triggers=triggers(),
    summary="functorch.vmap -> torch.func.vmap; weight_norm -> parametrizations.weight_norm; sdp_kernel -> sdpa_kernel; x.require_grad -> requires_grad",
    gate=GATE,
    emits=(
        "torch.func.vmap",
        "torch.func.grad",
        "torch.func.grad_and_value",
        "torch.func.vjp",
        "torch.func.jvp",
        "torch.func.jacrev",
        "torch.func.jacfwd",
        "torch.func.hessian",
        "torch.func.functionalize",
        "torch.nn.utils.parametrizations.weight_norm",
        "torch.nn.utils.parametrize.remove_parametrizations",
        "torch.nn.attention.sdpa_kernel",
        "torch.nn.attention.SDPBackend",
        "torch.nn.attention.SDPBackend.FLASH_ATTENTION",
        "torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION",
        "torch.nn.attention.SDPBackend.MATH",
        "torch.nn.attention.SDPBackend.CUDNN_ATTENTION",
        "torch.utils._pytree.register_pytree_node",
    ),
)
