"""The output guard for names and imports (codemods/engine/name_guard.py).

Each guarded kind has a test-only codemod here that makes exactly that mistake, the way real
wrong rewrites did on code nobody here had seen; none is ever in the shipped pipeline (like
tests/faults.py's TM099, they are given to the engine as Specs, or added to this process's
registry for the length of one test). fixtures/name_guard/<case>.in.py + .out.py are run with
the codemods their first line names (`# codemods: TM091, TM002`): exact output, the findings
marked `# expect: TMxxx`, idempotence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import libcst as cst
import pytest

from codemods import registry
from codemods.api import Options, migrate, transform_source
from codemods.engine import name_guard
from codemods.base import MigrationCodemod
from tests.conftest import FIXTURES
from tests.test_fixtures import _expected_findings

GUARD_FIXTURES = FIXTURES / "name_guard"
CASES = sorted(GUARD_FIXTURES.glob("*.in.py"))
_HEADER = re.compile(r"#\s*codemods:\s*(?P<codes>TM\d+(?:\s*,\s*TM\d+)*)")


def _cuda_call(node: cst.Call) -> bool:
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda"


def _to(call: cst.Call, *args: cst.Arg) -> cst.Call:
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=args)


class _Fault(MigrationCodemod):
    __test__ = False  # not a pytest test class


class UndefinedDevice(_Fault):
    """Test only: `x.cuda()` -> `x.to(device)`, never defining `device` (NameError)."""

    CODE = "TM091"
    DESCRIPTION = "test only: x.cuda() -> x.to(device) without defining device"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _cuda_call(updated) and not updated.args:
            return self.rewrite(original, updated, _to(updated, cst.Arg(cst.Name("device"))))
        return updated


class AssignsInPlace(_Fault):
    """Test only: a bare `model.cuda()` statement -> `model = model.to("cpu")`, which makes `model`
    local to the function that did so (UnboundLocalError where it was a global)."""

    CODE = "TM092"
    DESCRIPTION = "test only: model.cuda() -> model = model.to('cpu') wherever it stands"

    def leave_SimpleStatementLine(self, original, updated):
        body = updated.body
        if len(body) != 1 or not isinstance(body[0], cst.Expr) or not isinstance(body[0].value, cst.Call):
            return updated
        call = body[0].value
        if not _cuda_call(call) or not isinstance(call.func.value, cst.Name):
            return updated
        moved = _to(call, cst.Arg(cst.SimpleString('"cpu"')))
        assign = cst.Assign(targets=[cst.AssignTarget(cst.Name(call.func.value.value))], value=moved)
        return self.rewrite(original, updated, updated.with_changes(body=[assign]))


class ForgetsTheImport(_Fault):
    """Test only: `Variable(x)` -> `x`, leaving the import of `Variable` behind."""

    CODE = "TM093"
    DESCRIPTION = "test only: Variable(x) -> x, keeping the import"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original.func) == "torch.autograd.Variable" and len(updated.args) == 1:
            return self.rewrite(original, updated, updated.args[0].value)
        return updated


class ImportsAgain(_Fault):
    """Test only: `x.cuda()` -> `x.to(torch.device("cuda"))` and `import torch` put first, whether
    or not the module imports torch already."""

    CODE = "TM094"
    DESCRIPTION = "test only: x.cuda() -> x.to(torch.device('cuda')), importing torch again"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _cuda_call(updated) and not updated.args:
            device = cst.parse_expression('torch.device("cuda")')
            return self.rewrite(original, updated, _to(updated, cst.Arg(device)))
        return updated

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.rewrites:
            return updated
        return updated.with_changes(body=[cst.parse_statement("import torch\n"), *updated.body])


class ForwardsArguments(_Fault):
    """Test only: `x.cuda(...)` -> `x.to("cuda", ...)` with every argument passed on, whether
    `.to()` takes it or not (`devices=`, `device_id=`)."""

    CODE = "TM095"
    DESCRIPTION = "test only: x.cuda(**kw) -> x.to('cuda', **kw)"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if _cuda_call(updated) and all(a.keyword is not None for a in updated.args):
            return self.rewrite(original, updated, _to(updated, cst.Arg(cst.SimpleString('"cuda"')), *updated.args))
        return updated


FAULTS = {
    cls.CODE: registry.Spec(cls.CODE, f"guard-{cls.__name__.lower()}", cls, registry.Safety.SAFE, (r"\bcuda\b", r"\bVariable\b"))
    for cls in (UndefinedDevice, AssignsInPlace, ForgetsTheImport, ImportsAgain, ForwardsArguments)
}


def spec(code: str) -> registry.Spec:
    return FAULTS[code] if code in FAULTS else registry.get(code)


def _specs_of(source: str) -> list[registry.Spec]:
    match = _HEADER.search(source.splitlines()[0])
    assert match, "a name-guard fixture names its codemods on its first line: # codemods: TM091"
    return [spec(c.strip()) for c in match.group("codes").split(",")]


def _guard_findings(result) -> list:
    return [f for f in result.findings if "not applied to this file" in f.message]


# -- the fixtures ----------------------------------------------------------------------------


@pytest.mark.parametrize("before", CASES, ids=lambda p: p.name[:-6])
def test_name_guard_fixture(before: Path) -> None:
    source = before.read_text()
    expected = before.with_name(before.name.replace(".in.py", ".out.py")).read_text()
    specs = _specs_of(source)
    result = transform_source(source, specs, path=before.name)
    assert result.problem is None, result.problem
    assert result.code == expected
    compile(result.code, before.name, "exec")
    found = {(f.line, f.code) for f in result.findings if f.kind == "finding"}
    assert found == _expected_findings(source)
    again = transform_source(result.code, specs, path=before.name)
    assert again.code == result.code and not again.changed


def test_the_fixtures_cover_every_kind_with_a_drop_and_a_kept_rewrite() -> None:
    dropped, kept = set(), set()
    for before in CASES:
        source = before.read_text()
        changed = before.with_name(before.name.replace(".in.py", ".out.py")).read_text() != source
        for code in _HEADER.search(source).group("codes").split(","):
            (dropped if f"# expect: {code.strip()}" in source else kept if changed else set()).add(code.strip())
    # an import left unused is retired, not its codemod dropped (a relative one: a test below)
    assert set(FAULTS) - {"TM093"} <= dropped, set(FAULTS) - dropped
    assert set(FAULTS) <= kept, set(FAULTS) - kept
    assert any(" as " in p.read_text() for p in CASES)


# -- each kind: caught, dropped, named ---------------------------------------------------------

REASONS = {
    "TM091": ("device", "NameError", "x = torch.ones(2)\ny = x.cuda()\n"),
    "TM092": ("model", "UnboundLocalError", "import torch\nmodel = torch.nn.Linear(1, 1)\n\n\ndef train():\n    model.cuda()\n    return model\n"),
    "TM094": ("torch", "second time", "import torch\n\n\ndef f(x):\n    return x.cuda()\n"),
    "TM095": ("devices=", "TypeError", "def f(trainer):\n    return trainer.cuda(devices=[0, 1])\n"),
}


@pytest.mark.parametrize("code", sorted(REASONS))
def test_each_guarded_kind_is_caught_and_the_change_dropped_with_a_finding(code: str) -> None:
    name, why, source = REASONS[code]
    unguarded = name_guard.introduced(source, _unguarded_output(source, code))
    assert unguarded, "the test codemod must make its mistake"
    result = transform_source(source, [FAULTS[code]])
    assert result.code == source and not result.changed and result.problem is None
    (finding,) = _guard_findings(result)
    assert finding.code == code and finding.kind == "finding"
    assert f"{code} (guard-" in finding.message and name in finding.message and why in finding.message


def _unguarded_output(source: str, code: str) -> str:
    """What the codemod alone makes of `source`, without the engine's guard."""
    from codemods.base import CodemodContext

    return FAULTS[code].codemod(CodemodContext()).transform_module(cst.parse_module(source)).code


def test_a_correct_rewrite_passes_tm101_adds_device_with_its_import() -> None:
    source = "def train(model, x):\n    model.cuda()\n    return model(x.cuda())\n"
    result = transform_source(source, [registry.get("TM101")])
    assert result.changed and "import torch" in result.code and "device = torch.device(" in result.code
    assert name_guard.introduced(source, result.code) == ()
    assert not _guard_findings(result)


def test_only_the_culprit_is_dropped_the_codemods_before_and_after_it_keep_their_changes() -> None:
    source = (
        "import torch\n"
        "from torch.autograd import Variable\n"
        "import torch.nn.functional as F\n\n\n"
        "def f(x):\n"
        "    y = Variable(x).cuda()\n"
        "    return F.relu(F.sigmoid(y))\n"
    )
    result = transform_source(source, [registry.get("TM002"), FAULTS["TM091"], registry.get("TM006")])
    assert result.rewrites == {"TM002": 1, "TM006": 1}
    assert "y = x.detach().cuda()" in result.code and "F.relu(torch.sigmoid(y))" in result.code
    assert "Variable" not in result.code and "device" not in result.code
    assert [f.code for f in _guard_findings(result)] == ["TM091"]
    assert _guard_findings(result)[0].line == 7  # the line of the input the dropped rewrite was on


def test_two_culprits_in_one_file_are_both_dropped() -> None:
    source = REASONS["TM092"][2] + "\n\n" + REASONS["TM095"][2]
    result = transform_source(source, [FAULTS["TM092"], FAULTS["TM095"]])
    assert result.code == source and not result.changed
    assert sorted(f.code for f in _guard_findings(result)) == ["TM092", "TM095"]


def test_a_name_the_file_binds_later_is_bound() -> None:
    source = "device = 'cpu'\n\n\ndef f(x):\n    return x.cuda()\n"
    result = transform_source(source, [FAULTS["TM091"]])
    assert result.changed and "x.to(device)" in result.code and not _guard_findings(result)


def test_an_import_left_unused_in_a_package_init_is_its_interface() -> None:
    source = "from torch.autograd import Variable\n\n\ndef f(x):\n    return Variable(x)\n"
    result = transform_source(source, [FAULTS["TM093"]], path="pkg/__init__.py")
    assert result.changed and not _guard_findings(result)
    assert transform_source(source, [FAULTS["TM093"]], path="pkg/core.py").code == "\n\ndef f(x):\n    return x\n"  # retired


class ForgetsAnyImport(_Fault):
    """Test only: `Variable(x)`/`m.Variable(x)` -> `x` for any `Variable`, leaving its import behind."""

    CODE = "TM096"
    DESCRIPTION = "test only: Variable(x) -> x for any Variable, keeping the import"

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.code_for(original.func).split(".")[-1] == "Variable" and len(updated.args) == 1:
            return self.rewrite(original, updated, updated.args[0].value)
        return updated


FORGETS_ANY = registry.Spec("TM096", "guard-forgetsanyimport", ForgetsAnyImport, registry.Safety.SAFE, (r"\bVariable\b",))


@pytest.mark.parametrize(
    "imported",
    ["import numpy as np", "import numpy", "import collections", "import torch", "from utils import Variable"],
)
def test_an_import_a_rewrite_left_unused_is_retired_and_the_rewrite_kept(imported: str) -> None:
    # python-compat's `np.float` was the last use of `np`: the guard dropped TM401's every rewrite
    # of the file (keeping its `collections.Mapping` crash) instead of retiring the import
    name = imported.split()[-1]
    use = "Variable(x)" if name == "Variable" else f"{name}.Variable(x)"
    source = f"{imported}\nimport os\n\n\ndef f(x):\n    return os.sep, {use}\n"
    result = transform_source(source, [FORGETS_ANY])
    assert result.changed and not result.findings, result.findings
    assert result.code == "import os\n\n\ndef f(x):\n    return os.sep, x\n"
    assert name_guard.introduced(source, result.code) == ()


def test_a_relative_import_left_unused_drops_the_rewrite_with_a_finding_that_says_why() -> None:
    # the project's own module may be imported for what importing it does: not ours to retire
    source = "from .compat import Variable\n\n\ndef f(x):\n    return Variable(x)\n"
    result = transform_source(source, [FORGETS_ANY], path="pkg/core.py")
    assert result.code == source and not result.changed
    (finding,) = _guard_findings(result)
    assert finding.code == "TM096" and "`.compat.Variable` unused" in finding.message
    assert "torch-migrate bug" not in finding.suggestion and "remove the import" in finding.suggestion


def test_renaming_an_unused_import_does_not_make_it_unused() -> None:
    before = "from torch.optim.lr_scheduler import _LRScheduler\n"
    assert name_guard.introduced(before, "from torch.optim.lr_scheduler import LRScheduler\n") == ()
    assert name_guard.introduced(before, before + "import os\n")[0].kind == "unused-import"


def test_what_the_input_already_had_is_never_held_against_the_output() -> None:
    before = "import os\nimport os\nfrom m import *\nprint(unicode, device)\nt.to(devices=1)\n"
    after = "import os\nimport os\nfrom m import *\nprint(unicode, device, unicode)\nt.to(devices=1)\nt.to(devices=2)\n"
    kinds = [b.kind for b in name_guard.introduced(before, after)]
    assert kinds == ["bad-to-call"]  # only the second `.to(devices=)` is new


def test_an_input_the_ast_cannot_read_is_not_judged() -> None:
    assert name_guard.introduced("print 'py2'\n", "print('py2')\nundefined_name\n") == ()


# -- the allowed `.to()` arguments are torch's own ----------------------------------------------


def test_to_keywords_are_what_the_installed_torch_takes() -> None:
    torch = pytest.importorskip("torch")
    tensor, module = torch.zeros(1), torch.nn.Linear(1, 1)
    values = {
        "device": "cpu", "dtype": torch.float32, "non_blocking": False, "copy": False,
        "memory_format": torch.preserve_format, "tensor": tensor,
    }  # fmt: skip
    assert set(values) == name_guard.TO_KEYWORDS

    def takes(obj, *args, **kwargs) -> bool:
        try:
            obj.to(*args, **kwargs)
        except (TypeError, RuntimeError):
            return False
        return True

    for keyword, value in values.items():
        assert takes(tensor, **{keyword: value}) or takes(module, **{keyword: value}), keyword
    for keyword in ("devices", "device_id", "async", "other"):
        assert not takes(tensor, **{keyword: 0}) and not takes(module, **{keyword: 0}), keyword
    most = ("cpu", torch.float32, False, False)
    assert len(most) == name_guard.TO_MAX_POSITIONAL and takes(tensor, *most)
    assert not takes(tensor, *most, torch.preserve_format) and not takes(module, *most, torch.preserve_format)


# -- every existing fixture passes ---------------------------------------------------------------


@pytest.mark.parametrize("before", sorted(FIXTURES.glob("TM*/*.in.py")), ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_every_codemod_fixture_output_passes_the_guard(before: Path) -> None:
    after = before.with_name(before.name.replace(".in.py", ".out.py")).read_text()
    code = before.parent.name.split("-", 1)[0]
    new = [b for b in name_guard.introduced(before.read_text(), after, before.name) if not name_guard.tolerated(b, [code])]
    assert not new, f"{code}'s fixture output introduces {[b.reason for b in new]}: a bug in {code}"


def test_pending_defects_are_only_import_hygiene() -> None:
    assert all(kinds <= {"unused-import", "duplicate-import"} for kinds in name_guard.PENDING.values())
    assert not {"TM006", "TM008", "TM201"} & set(name_guard.PENDING)  # they retire what they leave unused


def test_tm006_retires_the_import_its_rewrite_left_unused() -> None:
    # fairseq 0.6.2's modules/highway.py: `F.sigmoid` was the last use of `F`
    source = "import torch\nimport torch.nn.functional as F\n\n\ndef gate(x):\n    return F.sigmoid(x)\n"
    result = transform_source(source, [registry.get("TM006")])
    assert result.rewrites == {"TM006": 1} and not _guard_findings(result)
    assert result.code == "import torch\n\n\ndef gate(x):\n    return torch.sigmoid(x)\n"


# -- the engine: reports, notebooks ---------------------------------------------------------------


@pytest.fixture
def with_faults(monkeypatch):
    """The pipeline plus the test-only codemods, for one test."""
    monkeypatch.setattr(registry, "PIPELINE", (*registry.PIPELINE, *FAULTS.values()))


def test_a_run_leaves_the_file_untouched_and_reports_the_dropped_codemod(tmp_path: Path, with_faults) -> None:
    target = tmp_path / "train.py"
    target.write_text("def train(trainer):\n    return trainer.cuda(devices=[0, 1])\n")
    report = migrate([str(tmp_path)], Options(select=("TM095",), use_config=False, jobs=1, cache=False))
    assert target.read_text() == "def train(trainer):\n    return trainer.cuda(devices=[0, 1])\n"
    assert not report.changed and not report.problems
    (finding,) = report.findings
    assert (finding.code, finding.line) == ("TM095", 2) and "`devices=`" in finding.message


def test_a_notebook_cell_is_checked_as_the_engine_assembles_the_cells(tmp_path: Path, with_faults) -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import torch\nfiles = !ls"),
        nbformat.v4.new_code_cell("x = torch.ones(2)\ny = x.cuda()"),
        nbformat.v4.new_code_cell("device = 'cpu'\nz = x.cuda(non_blocking=True)"),
    ]
    target = tmp_path / "train.ipynb"
    target.write_text(json.dumps(notebook, indent=1) + "\n")
    before = target.read_text()
    # TM091's `device` in cell 2 would be unbound (cell 3's comes later): dropped, with a finding there.
    report = migrate([str(tmp_path)], Options(select=("TM091",), use_config=False, jobs=1, cache=False))
    assert target.read_text() == before
    (finding,) = report.findings
    assert finding.line == 2 and finding.message.startswith("cell 2: TM091")
    # `.to("cuda")`, `.to("cuda", non_blocking=True)`: calls torch takes, so the notebook is migrated.
    report = migrate([str(tmp_path)], Options(select=("TM095",), use_config=False, jobs=1, cache=False))
    assert report.rewrites == {"TM095": 2} and not report.findings
    assert 'x.to(\\"cuda\\", non_blocking=True)' in target.read_text()


def test_a_repair_made_before_parsing_stays_when_a_later_codemod_is_dropped() -> None:
    source = "import torch\n\n\ndef f(x):\n    y = x.cuda(async=True)\n    return y.cuda()\n"
    result = transform_source(source, [registry.get("TM000"), FAULTS["TM091"]])
    assert result.rewrites == {"TM000": 1} and "x.cuda(non_blocking=True)" in result.code and "device" not in result.code
    assert [f.code for f in _guard_findings(result)] == ["TM091"]


def test_a_codemod_that_breaks_code_on_purpose_can_opt_out() -> None:
    class OnPurpose(UndefinedDevice):
        NAME_GUARD = False  # what tests/faults.py's TM099 needs: verify's tests want the breakage

    on_purpose = registry.Spec("TM091", "guard-on-purpose", OnPurpose, registry.Safety.SAFE, (r"\bcuda\b",))
    result = transform_source("y = x.cuda()\n", [on_purpose])
    assert result.code == "y = x.to(device)\n" and not _guard_findings(result)
