"""The engine's promises: bad input is reported and never loses a byte; good output is exact."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import libcst as cst
import pytest

from codemods import registry
from codemods.api import Options, migrate, transform_source
from codemods.engine import pipeline, runner
from codemods.base import MigrationCodemod
from codemods.results import Status

LEGACY = "import torch.nn as nn\ncriterion = nn.MSELoss(size_average=False)\n"
MIGRATED = 'import torch.nn as nn\ncriterion = nn.MSELoss(reduction="sum")\n'


def _run(paths, **kw):
    return migrate([str(p) for p in paths], Options(use_config=False, **kw))


def test_rewrites_in_place_and_reports(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    report = _run([tmp_path])
    assert target.read_text() == MIGRATED
    assert report.rewrites == {"TM001": 1}
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("py2.py", b"import torch.nn as nn\nprint 'size_average'\n", "Missing parentheses"),
        ("unclosed.py", b"x = nn.MSELoss(size_average=False\ny = t.cuda()\n", "syntax error"),
        # async as a name that TM000 cannot repair (inside an f-string expression)
        ("asyncarg.py", b"x = nn.MSELoss(size_average=False)\ny = f'{t.cuda(async=True)}'\n", "syntax error"),
        ("tabs.py", b"import torch.nn as nn\nif True:\n        a = nn.MSELoss(size_average=False)\n\tb = 1\n", "inconsisten"),
        ("latin.py", b"import torch.nn as nn\n# caf\xe9\nc = nn.MSELoss(size_average=False)\n", "cannot decode as utf-8"),
        ("nul.py", b"import torch.nn as nn\x00\nc = nn.MSELoss(size_average=False)\n", "NUL"),
        ("cookie.py", b"# -*- coding: klingon -*-\nc = nn.MSELoss(size_average=False)\n", "encoding"),
    ],
)
def test_bad_input_is_reported_untouched_and_others_still_migrate(tmp_path: Path, name, data, reason) -> None:
    bad = tmp_path / name
    bad.write_bytes(data)
    good = tmp_path / "good.py"
    good.write_text(LEGACY)
    report = _run([tmp_path])
    assert bad.read_bytes() == data
    assert good.read_text() == MIGRATED
    (problem,) = report.problems
    assert problem.path.endswith(name)
    assert reason.lower() in problem.reason.lower()
    assert problem.line >= 1 or "encoding" in reason
    assert report.exit_code == 2


def test_file_over_the_size_limit_is_reported(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_text(LEGACY + "x = 1\n" * 100)
    report = migrate([str(big)], Options(use_config=False, max_bytes=200))
    (problem,) = report.problems
    assert "limit" in problem.reason
    assert big.read_text().startswith(LEGACY)


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "locked.py"
    target.write_text(LEGACY)
    real = runner.read_limited

    def denied(path, limit):
        if Path(path).name == "locked.py":
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(runner, "read_limited", denied)
    report = _run([tmp_path], jobs=1)
    (problem,) = report.problems
    assert "cannot read: Permission denied" in problem.reason
    assert target.read_text() == LEGACY


def test_crlf_bom_mode_and_cookie_are_kept(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(LEGACY.replace("\n", "\r\n").encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + LEGACY.encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEGACY.encode())
    script = tmp_path / "script.py"
    script.write_text("#!/usr/bin/env python\n" + LEGACY)
    script.chmod(0o755)
    _run([tmp_path])
    assert crlf.read_bytes() == MIGRATED.replace("\n", "\r\n").encode()
    assert bom.read_bytes() == b"\xef\xbb\xbf" + MIGRATED.encode()
    assert latin.read_bytes() == b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + MIGRATED.encode()
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "#!/usr/bin/env python\n" + MIGRATED


def test_unchanged_files_are_never_rewritten(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text('import torch.nn as nn\nc = nn.MSELoss(reduction="sum")\n')
    findings_only = tmp_path / "finding.py"
    findings_only.write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=flag)\n")
    old = 1_000_000_000
    for f in (clean, findings_only):
        os.utime(f, (old, old))
    report = _run([tmp_path])
    assert clean.stat().st_mtime == old and findings_only.stat().st_mtime == old
    assert not report.changed and len(report.findings) == 1


def test_diff_and_check_write_nothing(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    diff = _run([tmp_path], mode="diff")
    check = _run([tmp_path], mode="check")
    assert target.read_text() == LEGACY
    assert '+criterion = nn.MSELoss(reduction="sum")' in diff.changed[0].diff
    assert diff.exit_code == check.exit_code == 1
    assert check.changed[0].diff == diff.changed[0].diff  # kept to locate pending rewrites (SARIF regions)


def test_jobs_do_not_change_results_or_order(tmp_path: Path) -> None:
    for i in range(24):
        (tmp_path / f"m{i:02d}.py").write_text(LEGACY if i % 3 else "x = 1\n")
    (tmp_path / "m99.py").write_text("print 'size_average'\n")
    one = _run([tmp_path], mode="diff", jobs=1)
    two = _run([tmp_path], mode="diff", jobs=2)
    assert one.to_dict() == two.to_dict()
    assert [f.diff for f in one.files] == [f.diff for f in two.files]
    assert [f.path for f in one.files] == sorted(f.path for f in one.files)


class _Breaks(MigrationCodemod):
    """A deliberately broken codemod: `await` outside a function parses but does not compile."""

    CODE = "TM099"
    DESCRIPTION = "broken on purpose"

    def leave_Call(self, original_node, updated_node):
        if self.qualified_name(original_node.func) == "torch.nn.MSELoss":
            return self.rewrite(original_node, updated_node, cst.Await(expression=updated_node))
        return updated_node


class _Crashes(MigrationCodemod):
    CODE = "TM098"
    DESCRIPTION = "raises"

    def leave_Call(self, original_node, updated_node):
        raise RuntimeError("boom")


def test_output_guard_blocks_code_that_does_not_compile(tmp_path: Path, monkeypatch) -> None:
    broken = registry.Spec("TM099", "broken", _Breaks, registry.Safety.SAFE, ("MSELoss",))
    result = transform_source(LEGACY, [registry.get("TM001"), broken])
    # TM001 rewrote the call into MSELoss(reduction=...), TM099 then broke it: nothing comes back.
    assert result.code == LEGACY and not result.changed
    assert result.problem.code == "TM099"
    assert "would not compile" in result.problem.reason

    target = tmp_path / "train.py"
    target.write_text(LEGACY)
    monkeypatch.setattr(registry, "PIPELINE", (*registry.PIPELINE, broken))
    report = migrate([str(tmp_path)], Options(use_config=False, select=("TM001", "TM099")))
    assert target.read_text() == LEGACY
    assert report.problems[0].code == "TM099" and report.exit_code == 2


def test_a_crashing_codemod_is_an_internal_error_naming_it() -> None:
    crash = registry.Spec("TM098", "crash", _Crashes, registry.Safety.SAFE, ("MSELoss",))
    result = transform_source(LEGACY, [crash])
    assert result.code == LEGACY
    assert result.problem.code == "TM098" and "boom" in result.problem.reason


def test_prefilter_never_parses_files_without_triggers(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(pipeline, "_parse", lambda text, path, *lazy: calls.append(path))
    result = transform_source("import torch\nx = torch.zeros(3)\n", [registry.get("TM001")])
    assert calls == [] and not result.parsed


def test_noqa_keeps_the_line_and_silences_findings() -> None:
    source = (
        "import torch.nn as nn\n"
        "a = nn.MSELoss(size_average=False)  # noqa: TM001\n"
        "b = nn.MSELoss(size_average=flag)  # noqa\n"
        "c = nn.MSELoss(size_average=False)  # noqa: TM101\n"
    )
    result = transform_source(source, [registry.get("TM001")])
    assert result.code.splitlines()[1:3] == source.splitlines()[1:3]
    assert result.code.splitlines()[3] == 'c = nn.MSELoss(reduction="sum")  # noqa: TM101'
    assert result.findings == ()


def test_noqa_for_other_tools_rewrites_without_looking_up_lines(monkeypatch) -> None:
    # `# noqa: F401, E501` (most noqa comments of real code) cannot silence a TM code: the node's
    # lines are not looked up for it, and the rewrite happens
    from codemods.base import MigrationCodemod

    looked_up = []
    real = MigrationCodemod.lines
    monkeypatch.setattr(MigrationCodemod, "lines", lambda self, node: looked_up.append(node) or real(self, node))
    source = "import torch.nn as nn\nimport os  # noqa: F401, E501\na = nn.MSELoss(size_average=False)\n"
    result = transform_source(source, [registry.get("TM001")])
    assert result.code.splitlines()[2] == 'a = nn.MSELoss(reduction="sum")'
    assert looked_up == []
    # a code list with TM001, a `*`, or a bare noqa elsewhere in the file: lines are looked up
    for comment in ("# noqa: F401,TM001", "# noqa: *", "# noqa"):
        looked_up.clear()
        result = transform_source(source.replace("# noqa: F401, E501", comment), [registry.get("TM001")])
        assert result.code.splitlines()[2] == 'a = nn.MSELoss(reduction="sum")' and looked_up


def _misparsed(monkeypatch, spelled: str, as_: str) -> None:
    """libcst's tree of every text is the tree of the text with `spelled` written `as_`: a
    tree whose code is not the text it was parsed from."""
    real = pipeline._parse
    monkeypatch.setattr(pipeline, "_parse", lambda text, path, *lazy: real(text.replace(spelled, as_), path))


def test_a_rewritten_statement_libcst_cannot_round_trip_is_reported_not_rewritten(monkeypatch) -> None:
    _misparsed(monkeypatch, "nn.MSELoss(", "nn.MSELoss( ")
    result = transform_source(LEGACY, [registry.get("TM001")])
    assert result.code == LEGACY
    assert "byte-for-byte" in result.problem.reason


def test_a_kept_statement_libcst_cannot_round_trip_is_copied_from_the_source(monkeypatch) -> None:
    # the output keeps the statement: its text is the source's, whatever libcst would write
    _misparsed(monkeypatch, "import torch", "import  torch")
    result = transform_source(LEGACY, [registry.get("TM001")])
    assert result.problem is None
    assert result.code == MIGRATED


def test_without_a_trailing_newline_the_whole_file_must_round_trip(monkeypatch) -> None:
    # nothing is cut from such a text (libcst writes its end itself): the whole input is checked
    _misparsed(monkeypatch, "import torch", "import  torch")
    result = transform_source(LEGACY.rstrip("\n"), [registry.get("TM001")])
    assert result.code == LEGACY.rstrip("\n")
    assert "byte-for-byte" in result.problem.reason


def test_migrated_file_stays_unchanged_on_second_run(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LEGACY)
    _run([tmp_path])
    again = _run([tmp_path], mode="check")
    assert again.exit_code == 0 and not again.changed
