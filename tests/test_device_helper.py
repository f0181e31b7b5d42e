"""codemods/helpers/device.py: finding, reusing and defining `device` (shared by TM101/TM102/TM103)."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods import registry
from codemods.engine.pipeline import transform_source as run_pipeline
from codemods.helpers import device as dev
from codemods.helpers.bindings import collect_scopes
from codemods.base import FileContext
from codemods.helpers.names import Imports


def _plan(source: str, preferred: str = "device") -> dev.DevicePlan:
    module = cst.parse_module(source)
    return dev.plan_device(module, collect_scopes(module), Imports.of(module), preferred)


@pytest.mark.parametrize(
    ("source", "name", "defined"),
    [
        ("import torch\n", "device", False),
        ("import torch\ndevice = torch.device('cpu')\n", "device", True),
        ("import torch\ndevice = 'cuda'\n", "torch_device", False),
        ("from torch import device\n", "torch_device", False),
        ("import torch\ndef f(device=None):\n    pass\n", "torch_device", False),
        ("import torch\ndef f(device):\n    pass\n", "device", False),
        ("import torch\nfor device in devices:\n    pass\n", "torch_device", False),
        ("from config import *\nprint(device)\n", "torch_device", False),
        ("import torch\ndevice = 1\ntorch_device = torch.device('cpu')\n", "torch_device", True),
        ("import torch\ntorch_device = 0\ndevice = args.device\n", "torch_device_2", False),
    ],
)
def test_the_module_level_name(source: str, name: str, defined: bool) -> None:
    plan = _plan(source)
    assert (plan.global_name, plan.defined) == (name, defined)


def test_module_device_name_finds_what_tm101_defined() -> None:
    migrated = run_pipeline(
        "import torch\ndevice = 'cuda:1'\nx = torch.zeros(1).cuda()\n", [registry.get("TM101")]
    ).code
    module = cst.parse_module(migrated)
    assert dev.module_device_name(module, "device", collect_scopes(module)) == "torch_device"
    assert dev.module_device_name(cst.parse_module("import torch\n")) is None


def test_definition_goes_after_docstring_future_and_imports() -> None:
    source = '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\nx = torch.ones(1).cuda()\n'
    out = run_pipeline(source, [registry.get("TM101")]).code
    lines = out.splitlines()
    assert lines[:3] == ['"""Doc."""', "from __future__ import annotations", "import torch"]
    assert lines.index('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")') == 4
    compile(out, "<out>", "exec")


def test_the_name_is_configurable() -> None:
    source = "import torch\nx = torch.ones(1).cuda()\ny = torch.zeros(1).cuda()\n"
    file = FileContext(device_name="dev")
    out = run_pipeline(source, [registry.get("TM101")], file).code
    assert 'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")' in out
    assert "x = torch.ones(1).to(dev)" in out and "y = torch.zeros(1).to(dev)" in out
    assert out.count("torch.device(") == 1  # defined once, reused by every site


def test_tm102_needs_no_device_and_keeps_a_load_where_it_was_saved_on_cuda() -> None:
    # A load that does not feed load_state_dict keeps its behaviour on a CUDA machine (None) and
    # only gains the CPU fallback; it defines no `device`, after TM101 or alone.
    for specs in (["TM102"], ["TM101", "TM102"]):
        out = run_pipeline("import torch\nm = torch.load('a.pt')\n", [registry.get(c) for c in specs]).code
        assert "torch.load('a.pt', map_location=None if torch.cuda.is_available() else \"cpu\")" in " ".join(out.split())
        assert "device = " not in out


def test_a_suppressed_site_defines_nothing() -> None:
    source = "import torch\nx = torch.ones(1).cuda()  # noqa: TM101\n"
    result = run_pipeline(source, [registry.get("TM101")])
    assert not result.changed and result.code == source


def test_a_closure_variable_is_not_rebound() -> None:
    source = "import torch\ndef outer():\n    t = torch.zeros(1)\n    def inner():\n        t.cuda()\n    inner()\n"
    result = run_pipeline(source, [registry.get("TM101")])
    assert "        t.to(device)\n" in result.code
    assert [f.code for f in result.findings if f.kind == "finding"] == ["TM101"]


def test_definition_follows_the_leading_imports_not_a_late_one() -> None:
    source = "import torch\nimport os\n\ndef f(x):\n    return x.cuda()\n\nfrom texttable import Texttable\n"
    out = run_pipeline(source, [registry.get("TM101")]).code
    assert out.index("device = torch.device") < out.index("def f")


def test_definition_waits_for_a_torch_import_after_a_path_hack() -> None:
    source = "import sys\nsys.path.insert(0, '.')\nimport torch\n\ndef f(x):\n    return x.cuda()\n"
    out = run_pipeline(source, [registry.get("TM101")]).code
    assert out.index("import torch") < out.index("device = torch.device") < out.index("def f")
    compile(out, "<out>", "exec")
