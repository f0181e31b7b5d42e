"""TM000: the repair stage before parsing, and how the engine uses it."""

from __future__ import annotations

from pathlib import Path

from codemods import registry
from codemods.api import Options, migrate, transform_source
from codemods.transforms.legacy_syntax.repair import repair

TM000, TM001 = registry.get("TM000"), registry.get("TM001")

LEGACY = """\
import torch.nn as nn


def step(model, x, y):
    x = x.cuda(async=True)
    criterion = nn.MSELoss(size_average=False)
    return criterion(model(x), y)
"""


def test_repaired_file_is_migrated_by_the_rest_of_the_pipeline() -> None:
    result = transform_source(LEGACY, [TM000, TM001])
    assert result.problem is None
    assert "x.cuda(non_blocking=True)" in result.code
    assert "nn.MSELoss(reduction=\"sum\")" in result.code
    assert result.rewrites == {"TM000": 1, "TM001": 1}
    compile(result.code, "<migrated>", "exec")
    reviews = [f for f in result.findings if f.code == "TM000"]
    assert [(f.line, f.kind) for f in reviews] == [(5, "review")]


def test_repair_counts_as_a_change_on_its_own() -> None:
    result = transform_source("y = x.to(d, async=True)\n", [TM000])
    assert result.changed and result.code == "y = x.to(d, non_blocking=True)\n"
    assert result.rewrites == {"TM000": 1}


def test_without_tm000_selected_the_syntax_error_stays() -> None:
    result = transform_source(LEGACY, [TM001])
    assert result.problem is not None and "syntax error" in result.problem.reason
    assert result.code == LEGACY


def test_file_still_broken_after_repair_keeps_the_original_error() -> None:
    source = "def f(x, async=False):\n    print x\n"
    result = transform_source(source, [TM000, TM001])
    assert result.code == source and not result.changed
    # The original error (the `async` parameter, line 1), not the print statement the repair exposed.
    assert result.problem is not None and result.problem.line == 1
    assert result.problem.reason.startswith("syntax error")


def test_import_of_a_module_named_async_is_not_repaired() -> None:
    source = "from tornado.platform import async\nx.cuda(async=True)\n"
    assert repair(source) is None
    assert transform_source(source, [TM000]).problem is not None


def test_existing_async_underscore_name_blocks_the_rename() -> None:
    source = "async_ = 1\ndef f(async=False):\n    return async\n"
    assert repair(source) is None
    result = transform_source(source, [TM000])
    assert result.problem is not None and result.code == source


def test_parseable_file_with_real_async_is_never_touched() -> None:
    source = "async def f(q):\n    async with q:\n        return await q.get()\n"
    result = transform_source(source, [TM000])
    assert result.problem is None and not result.changed and not result.findings


def test_keyword_use_followed_by_a_def_on_the_next_line() -> None:
    fixed = repair("class A:\n    x = async\n    def f(self):\n        pass\n")
    assert fixed is not None and "x = async_\n" in fixed.text


def test_self_call_of_the_files_own_cuda_keeps_agreeing_with_its_definition() -> None:
    source = (
        "class W:\n"
        "    def cuda(self, async=False):\n"
        "        return self.t.cuda(async=async)\n"
        "    def go(self):\n"
        "        return self.cuda(async=True)\n"
    )
    fixed = repair(source)
    assert fixed is not None
    assert "def cuda(self, async_=False)" in fixed.text
    assert "self.t.cuda(non_blocking=async_)" in fixed.text
    assert "self.cuda(async_=True)" in fixed.text


def test_migrate_writes_the_repaired_file_and_a_second_run_is_clean(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    report = migrate([tmp_path], Options(mode="write", select=("TM000", "TM001"), use_config=False))
    assert report.problems == [] and len(report.changed) == 1
    assert "non_blocking=True" in target.read_text()
    again = migrate([tmp_path], Options(mode="check", select=("TM000", "TM001"), use_config=False))
    assert again.changed == [] and again.exit_code == 0
