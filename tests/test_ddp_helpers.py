"""The helpers TM103/TM104 generate into migrated files: added once, only what is needed, and
they behave as one process when not launched by torchrun."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.helpers import ddp

SOURCE = '"""Doc."""\nimport os\nimport torch\n\nx = 1\n'


def _defined(module: cst.Module) -> list[str]:
    return [s.name.value for s in module.body if isinstance(s, cst.FunctionDef)]


def test_only_what_is_needed_and_never_twice() -> None:
    once = ddp.with_helpers(cst.parse_module(SOURCE), {"unwrap_model"})
    assert _defined(once) == ["unwrap_model"]
    assert ddp.with_helpers(once, {"unwrap_model"}).code == once.code
    more = ddp.with_helpers(once, {"ddp_wrap", "unwrap_model"}, setup_call=True)
    assert _defined(more) == ["unwrap_model", "ddp_cleanup", "ddp_setup", "ddp_wrap"]
    assert more.code.count("ddp_setup()  #") == 1
    assert ddp.with_helpers(more, {"ddp_wrap"}, setup_call=True).code == more.code
    assert more.code.startswith('"""Doc."""\nimport os\nimport torch\n')


def test_a_user_function_of_the_same_name_is_a_clash() -> None:
    module = cst.parse_module("def is_main_process():\n    return True\n")
    assert ddp.clashes(module, {"is_main_process"}) == ["is_main_process"]
    assert ddp.clashes(module, {"unwrap_model"}) == []
    ours = ddp.with_helpers(cst.parse_module(""), {"is_main_process"})
    assert ddp.clashes(ours, {"is_main_process"}) == []


def test_helpers_run_as_one_process_without_torchrun(monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    module = ddp.with_helpers(
        cst.parse_module("import atexit\nimport os\nimport torch\n"), set(ddp.ORDER), setup_call=True
    )
    namespace: dict = {}
    exec(compile(module.code, "helpers.py", "exec"), namespace)
    net = torch.nn.Linear(2, 2)
    assert namespace["ddp_wrap"](net) is net
    assert namespace["ddp_sampler"](list(range(4)), shuffle=True) is None
    assert namespace["is_main_process"]()
    assert namespace["unwrap_model"](torch.nn.DataParallel(net)) is net
    assert namespace["unwrap_model"](net) is net
    assert not torch.distributed.is_initialized()
    monkeypatch.setenv("RANK", "1")
    assert not namespace["is_main_process"]()


def test_the_helpers_are_the_functions_of_the_runtime_module_in_its_order() -> None:
    """codemods/runtime/ddp_helpers.py is what a migrated file gets: each helper copied verbatim."""
    import ast
    import inspect

    pytest.importorskip("torch")
    from codemods.runtime import ddp_helpers

    defined = [n.name for n in ast.parse(inspect.getsource(ddp_helpers)).body if isinstance(n, ast.FunctionDef)]
    assert list(ddp.ORDER) == defined
    for name in ddp.ORDER:
        assert ddp._SOURCES[name] == "\n" + inspect.getsource(getattr(ddp_helpers, name)), name


def test_each_helper_needs_only_the_imports_and_helpers_it_declares() -> None:
    """A copied helper runs in the user's file: what it reads at module level must be an import
    `imports_for` adds, or a helper `closure` copies with it."""
    import ast
    import builtins

    for name in ddp.ORDER:
        func = ast.parse(ddp._SOURCES[name]).body[0]
        local = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        read = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        free = read - local - set(dir(builtins))
        assert free <= ddp.imports_for({name}) | (ddp.closure({name}) - {name}), name
