"""The DDP helpers TM103/TM104 give migrated files: TM103's scripts import them from the companion
module (its text is codemods/runtime/ddp_helpers.py), TM104 copies `unwrap_model` alone; added
once, only what is needed, and they behave as one process when not launched by torchrun."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.engine import companions
from codemods.helpers import ddp

SOURCE = '"""Doc."""\nimport os\nimport torch\n\nx = 1\n'


def _defined(module: cst.Module) -> list[str]:
    return [s.name.value for s in module.body if isinstance(s, cst.FunctionDef)]


def test_a_copy_only_of_what_is_needed_and_never_twice() -> None:
    once = ddp.with_helpers(cst.parse_module(SOURCE), {"unwrap_model"})
    assert _defined(once) == ["unwrap_model"]
    assert ddp.with_helpers(once, {"unwrap_model"}).code == once.code
    with pytest.raises(ValueError):
        ddp.with_helpers(cst.parse_module(SOURCE), {"ddp_wrap"})  # those live in the companion module only


def test_the_companion_import_is_one_line_extended_never_doubled() -> None:
    once = ddp.with_companion(cst.parse_module(SOURCE), {"ddp_wrap"})
    assert once.code == (
        '"""Doc."""\nimport os\nimport torch\n\nfrom ddp_helpers import ddp_setup, ddp_wrap\n\n'
        "ddp_setup()  # joins the process group under torchrun; a no-op in a plain run\n\n\nx = 1\n"
    )
    assert ddp.with_companion(once, {"ddp_wrap"}).code == once.code
    more = ddp.with_helpers(once, {"unwrap_model"})  # TM104 after TM103: the import grows, no copy
    assert "from ddp_helpers import ddp_setup, ddp_wrap, unwrap_model\n" in more.code
    assert _defined(more) == [] and more.code.count("ddp_setup()") == 1
    assert ddp.top_level_defs(more)["unwrap_model"] is True  # an import of ours counts as ours


def test_a_user_function_of_the_same_name_is_a_clash() -> None:
    module = cst.parse_module("def is_main_process():\n    return True\n")
    assert ddp.clashes(module, {"is_main_process"}) == ["is_main_process"]
    assert ddp.clashes(module, {"unwrap_model"}) == []
    ours = ddp.with_helpers(cst.parse_module(""), {"unwrap_model"})
    assert ddp.clashes(ours, {"unwrap_model"}) == []
    imported = cst.parse_module("from ddp_helpers import is_main_process\n")
    assert ddp.clashes(imported, {"is_main_process"}) == []
    theirs = cst.parse_module("from mine import is_main_process\n")
    assert ddp.clashes(theirs, {"is_main_process"}) == ["is_main_process"]


def test_the_companion_runs_as_one_process_without_torchrun(monkeypatch, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    import builtins
    import runpy

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "ddp_helpers.py"
    path.write_text(companions.text("ddp_helpers"))
    printing = builtins.print
    namespace = runpy.run_path(str(path))
    assert namespace["ddp_setup"]() is False
    net = torch.nn.Linear(2, 2)
    assert namespace["ddp_wrap"](net) is net
    assert namespace["ddp_sampler"](list(range(4)), shuffle=True) is None
    assert namespace["is_main_process"]()
    assert namespace["unwrap_model"](torch.nn.DataParallel(net)) is net
    assert namespace["unwrap_model"](net) is net
    assert not torch.distributed.is_initialized() and builtins.print is printing
    monkeypatch.setenv("RANK", "1")
    assert not namespace["is_main_process"]()


def test_the_companion_is_the_runtime_module_verbatim_and_marked_on_its_first_line() -> None:
    import inspect

    pytest.importorskip("torch")
    from codemods.runtime import ddp_helpers

    text = companions.text("ddp_helpers")
    assert text == inspect.getsource(ddp_helpers)
    assert companions.MARKER in text.splitlines()[0]
    public = [name for name in ddp.sources() if not name.startswith("_")]
    assert public == list(ddp.ORDER)
    assert "torch_migrate" not in text and "codemods" not in text  # it never imports the tool


def test_a_copied_helper_needs_only_the_imports_it_declares() -> None:
    """A copied helper runs in the user's file: what it reads at module level must be an import
    `imports_for` adds."""
    import ast
    import builtins

    for name in ddp.INLINE:
        func = ast.parse(ddp.sources()[name]).body[0]
        local = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        read = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert read - local - set(dir(builtins)) <= ddp.imports_for({name}), name


TRAIN = """import argparse

import torch
import torch.nn as nn

if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    model = nn.DataParallel(nn.Linear(2, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(3, 2)).sum().backward()
    optimizer.step()
    torch.save(model.module.state_dict(), "model.pt")
"""


def test_diff_shows_the_companion_once_as_a_new_file_and_a_write_makes_it(tmp_path) -> None:
    from codemods.api import Options, migrate

    for name in ("train.py", "finetune.py"):
        (tmp_path / name).write_text(TRAIN)
    report = migrate([tmp_path], Options(mode="diff", cache=False, use_config=False))
    new = [f for f in report.files if f.path.endswith("ddp_helpers.py")]
    assert len(new) == 1 and new[0].diff.startswith("--- /dev/null\n+++ b/")
    added = [line[1:] for line in new[0].diff.splitlines()[3:]]
    assert added == companions.text("ddp_helpers").splitlines()
    assert not (tmp_path / "ddp_helpers.py").exists()  # --diff writes nothing
    written = migrate([tmp_path], Options(mode="write", cache=False, use_config=False))
    assert (tmp_path / "ddp_helpers.py").read_text() == companions.text("ddp_helpers")
    assert sum(f.path.endswith("ddp_helpers.py") for f in written.files) == 1
    assert not migrate([tmp_path], Options(mode="check", cache=False, use_config=False)).changed


def test_a_user_file_of_the_companion_name_is_never_overwritten(tmp_path) -> None:
    from codemods.api import Options, migrate

    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "ddp_helpers.py").write_text("def mine():\n    return 1\n")
    report = migrate([tmp_path], Options(mode="write", cache=False, use_config=False))
    assert (tmp_path / "ddp_helpers.py").read_text() == "def mine():\n    return 1\n"
    assert "ddp_wrap" not in (tmp_path / "train.py").read_text()
    assert any(f.code == "TM103" and "ddp_helpers.py" in f.message for f in report.open_findings)
