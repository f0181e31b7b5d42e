"""Hostile input at scale: over a thousand broken, odd or adversarial files in one run.

Inputs are scripts/hostile.py's mutations of real files (the corpus from scripts/corpus.py; the
bundled fixtures and this package's own sources when the corpus cannot be had): truncated at a
random byte, NUL and invalid UTF-8 injected, tabs and spaces swapped, line endings stripped,
doubled or changed, Python 2 constructs, legacy idioms in `match` cases, f-strings and blocks
nested to CPython's limit; plus a 5 MB generated file, read-only files, a symlink loop, a FIFO, a
dangling link and a directory named `x.py`. For every one: no crash and no traceback, the file
byte-for-byte untouched or rewritten into code that compiles, and a reason for every file that
could not be processed. The counts are printed at the end. A CI-sized share of the script's
checks (notebooks, two CLI runs, idempotence) runs here too; the script runs all 3,000 files.
"""

from __future__ import annotations

import os
import runpy
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from codemods import registry
from codemods.api import Options, migrate, transform_source
from codemods.cli import main
from codemods.results import Status

ROOT = Path(__file__).resolve().parents[1]
TARGET_INPUTS = 1100
CI_FILES, CI_NOTEBOOKS = 240, 185  # the CLI check's share: `python scripts/hostile.py` runs 3,000 files


# scripts/ is no package: its generator and checks, run as a file
hostile = SimpleNamespace(**runpy.run_path(str(ROOT / "scripts" / "hostile.py")))


def _specials(root: Path) -> dict[str, str]:
    """Odd things on disk: name -> what it is."""
    made: dict[str, str] = {}
    huge = root / "huge_generated.py"
    block = "import torch.nn as nn\n" + "".join(f"loss_{i} = nn.MSELoss(size_average=False)\n" for i in range(1000))
    huge.write_text(block * (5 * 2**20 // len(block) + 1))
    made[huge.name] = "5 MB generated file"
    ro = root / "read_only.py"
    ro.write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n")
    ro.chmod(0o444)
    made[ro.name] = "read-only file"
    ro_dir = root / "ro_dir"
    ro_dir.mkdir()
    (ro_dir / "inside.py").write_text("import torch.nn as nn\nc = nn.L1Loss(reduce=False)\n")
    ro_dir.chmod(0o555)
    made["ro_dir/inside.py"] = "file in a read-only directory"
    (root / "x.py").mkdir()
    (root / "x.py" / "real.py").write_text("import torch.nn as nn\nc = nn.NLLLoss(size_average=True)\n")
    made["x.py/real.py"] = "file under a directory named x.py"
    os.symlink("loop_b.py", root / "loop_a.py")
    os.symlink("loop_a.py", root / "loop_b.py")
    os.symlink(".", root / "self_loop_dir")
    os.symlink("missing.py", root / "dangling.py")
    os.mkfifo(root / "fifo.py")
    (root / "empty.py").write_bytes(b"")
    (root / "bom_only.py").write_bytes(b"\xef\xbb\xbf")
    (root / "deep.py").write_text("import torch.nn as nn\nx = " + "(" * 5000 + "nn.MSELoss(size_average=False)" + ")" * 5000 + "\n")
    (root / "long_line.py").write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)" + "+ 1" * 200_000 + "\n")
    (root / "binary.py").write_bytes(bytes(range(256)) * 16)
    made.update({"empty.py": "empty", "bom_only.py": "BOM only", "deep.py": "5000 nested parentheses",
                 "long_line.py": "800 kB line", "binary.py": "binary"})  # fmt: skip
    return made


def _compiles(path: Path) -> bool:
    return hostile.compiles(path.read_bytes())


@pytest.fixture(scope="module")
def hostile_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    origin, kinds = hostile.generate_files(root, TARGET_INPUTS)
    inputs = {path: path.read_bytes() for path in kinds}
    specials = _specials(root)
    yield root, origin, inputs, kinds, specials
    (root / "ro_dir").chmod(0o755)
    (root / "read_only.py").chmod(0o644)


def test_hostile_inputs(hostile_tree) -> None:
    root, origin, inputs, kinds, specials = hostile_tree
    report = migrate([str(root)], Options(mode="write", use_config=False, jobs=2, cache=False))
    by_path = {Path(f.path).resolve(): f for f in report.files}

    migrated = reported = untouched = 0
    for path, before in inputs.items():
        result = by_path.get(path.resolve())
        assert result is not None, f"{path.name} was not considered at all"
        after = path.read_bytes()
        if result.status is Status.ERROR:
            reported += 1
            assert result.problem and result.problem.reason.strip(), path
            assert after == before, f"{path.name}: reported ({result.problem.reason}) but modified"
        elif result.status is Status.CHANGED:
            migrated += 1
            assert _compiles(path), f"{path.name} ({kinds[path]}) was rewritten into code that does not compile"
        else:
            untouched += 1
            assert after == before, f"{path.name}: {result.status} but modified"
    for problem in report.problems:
        assert "Traceback" not in problem.reason
        assert not problem.reason.startswith("internal error"), str(problem)

    # The specials.
    huge = by_path[(root / "huge_generated.py").resolve()]
    assert huge.status is Status.ERROR and "limit" in huge.problem.reason
    read_only = by_path[(root / "read_only.py").resolve()]
    assert read_only.status is Status.ERROR and read_only.problem.reason == "read-only; left untouched"
    assert stat.S_IMODE((root / "read_only.py").stat().st_mode) == 0o444  # mode kept
    inside = by_path[(root / "ro_dir" / "inside.py").resolve()]
    assert inside.status in (Status.CHANGED, Status.ERROR)  # ERROR ("cannot write") unless running as root
    if inside.status is Status.ERROR:
        assert "cannot write" in inside.problem.reason
    assert by_path[(root / "x.py" / "real.py").resolve()].status is Status.CHANGED
    names = {Path(f.path).name for f in report.files}
    assert not names & {"x.py", "loop_a.py", "loop_b.py", "dangling.py", "fifo.py"}  # not files: never opened
    for name in ("empty.py", "bom_only.py", "binary.py", "deep.py", "long_line.py"):
        result = by_path[(root / name).resolve()]
        assert result.status is not Status.CHANGED or _compiles(root / name), name
        assert result.status is not Status.ERROR or result.problem.reason

    total = len(inputs) + len(specials) + 5
    print(
        f"\nhostile inputs from the {origin}: {total} inputs ({len(inputs)} mutations, {len(specials)} odd files,"
        f" 2 symlink loops, a dangling link, a FIFO, a directory named x.py); "
        f"mutations: {migrated} migrated, {reported} reported with a reason, {untouched} untouched; "
        f"whole run: {len(report.changed)} changed, {len(report.problems)} problems"
    )
    assert len(inputs) >= 1000
    assert migrated and reported and untouched  # each outcome really happened


def test_hostile_tree_through_the_cli_has_no_traceback(hostile_tree) -> None:
    root = hostile_tree[0]
    result = CliRunner().invoke(main, ["run", str(root / "d00"), str(root / "d01"), "--diff", "--no-config", "-j", "2"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code in (2, 3)  # some files could not be processed: bit 2 is set


def test_hostile_corpus_and_notebooks_through_the_cli(tmp_path: Path) -> None:
    """scripts/hostile.py's checks on a CI-sized share of its corpus, with every notebook kind:
    two CLI runs, no traceback, no internal error on valid input, output that compiles, and a
    second run that changes nothing."""
    _, kinds = hostile.generate_files(tmp_path / "files", CI_FILES)
    kinds.update(hostile.generate_notebooks(tmp_path / "notebooks", CI_NOTEBOOKS))
    outcome = hostile.check(tmp_path, kinds, jobs=2)
    print(f"\nhostile CLI check: {outcome.counts}; valid inputs left as they are: {({k: len(v) for k, v in outcome.reported.items()})}")
    assert not outcome.failures, "\n".join(outcome.failures)
    assert outcome.counts["changed"] and outcome.counts["error"] and outcome.counts["valid"]


def test_a_file_that_kills_its_worker_is_reported_and_the_rest_migrate(tmp_path: Path, monkeypatch) -> None:
    """A native crash (the process dies, no exception) must not take the run down."""
    import multiprocessing

    from codemods.engine import runner

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the crash is injected through fork-inherited state")
    real = runner.transform_source

    def crash_on_marker(text, *args, **kwargs):
        if "KILL_THE_WORKER" in text:
            os._exit(139)  # what a segfault in the native parser looks like from outside
        return real(text, *args, **kwargs)

    monkeypatch.setattr(runner, "transform_source", crash_on_marker)
    for i in range(16):
        (tmp_path / f"m{i:02d}.py").write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n")
    (tmp_path / "m05.py").write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)  # KILL_THE_WORKER\n")
    report = migrate([str(tmp_path)], Options(mode="write", use_config=False, jobs=2, cache=False))
    (problem,) = report.problems
    assert problem.path.endswith("m05.py") and "crashed" in problem.reason
    assert "KILL_THE_WORKER" in (tmp_path / "m05.py").read_text()
    # Every other file is migrated on disk. (A file written by a worker whose batch of results
    # died with it is re-run in isolation and then reports "unchanged": the count can be short.)
    others = [p for p in tmp_path.glob("m*.py") if p.name != "m05.py"]
    assert all('reduction="sum"' in p.read_text() for p in others)
    assert sorted(Path(f.path).name for f in report.files) == sorted(p.name for p in tmp_path.glob("m*.py"))


def _nested(depth: int, header: str, body: list[str]) -> str:
    lines = ["import torch", "import torch.nn as nn", "from torch.autograd import Variable"]
    lines += ["    " * i + header.format(i=i) for i in range(depth)]
    return "\n".join(lines + ["    " * depth + line for line in body]) + "\n"


@pytest.mark.parametrize("header", ["if x{i}:", "def f{i}():", "class C{i}:"])
def test_code_nested_as_deep_as_python_allows_is_migrated(header: str) -> None:
    """99 nested blocks compile (CPython's limit is 100 levels of indentation); the walks over
    such a tree need more than the default 1000 frames."""
    body = ["c = nn.MSELoss(size_average=False)", "x = Variable(torch.zeros(1)).cuda()"]
    source = _nested(99, header, body)
    compile(source, "deep.py", "exec")
    result = transform_source(source, registry.select())
    assert result.problem is None, result.problem
    assert 'reduction="sum"' in result.code and ".cuda()" not in result.code
    compile(result.code, "deep.py", "exec")
