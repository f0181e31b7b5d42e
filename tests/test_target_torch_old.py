"""`--target-torch 1.13` held to a real torch 1.13.1 (issue 24).

The cached torch 1.13.1 venv (scripts/old_torch.py, tests/conftest.py's `old_torch_python`; its
absence fails, never skips) runs tests/old_torch_probe.py, one process per test module fixture:

1. The table is honest: every entry of codemods/data/torch_minimums.json declared at or below 1.13
   exists in torch 1.13.1 (a keyword entry: the callable takes it), every entry declared above
   1.13 is absent there (a keyword entry: the callable is there and refuses it, or the callable
   itself is newer than 1.13 by its own entry); a keyword is never older than its callable.
2. The table is complete: every symbol (helpers/emitted.py) that a fixture's output uses and its
   input did not has an entry of its own, for the default target, for 1.13 and for the target the
   fixture declares; under 1.13 no output uses a symbol newer than 1.13 that its input did not.
3. The outputs run on torch 1.13.1 with the same numbers: every fixture pair migrated for 1.13,
   and the behaviour pairs of tests/data/target_old/ (which run end to end on the CPU).
4. The corpus under target 1.13 (marker `corpus`): no output uses a symbol newer than 1.13 that
   its original did not; the counts against the default expectation go to
   /tmp/target113_corpus.json.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import warnings
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from codemods import registry, versions
from codemods.api import transform_source
from codemods.helpers import emitted
from tests.conftest import ROOT
from tests.test_fixtures import CASES, target_of

PROBE = ROOT / "tests" / "old_torch_probe.py"
PAIRS = ROOT / "tests" / "data" / "target_old"
OLD: versions.Version = (1, 13)
OLD_TEXT = versions.format_version(OLD)
HELD_BACK = re.compile(r"not rewritten: the rewrite uses `(?P<symbol>[^`]+)`")
GUARDED = re.compile(r"not applied to this file: (?P<why>.*)")  # engine/name_guard.py dropped a codemod

# Fixture pairs whose original runs through on torch 1.13.1, so that the output is held to it
# (observed: 82 of 173; the others stop at an undefined name, a missing file or package, a CUDA
# call, or are legacy code 1.13 itself refuses), and of those, pairs with module-level numbers to
# compare (observed: 3). Floors, so that the test cannot quietly compare nothing.
EXECUTED_FLOOR = 75
NUMBERS_FLOOR = 2


def ask(python: str, command: str, request: dict, scratch: Path) -> dict:
    """One run of the probe in the old venv: `request` in, its answer out (JSON files)."""
    question, answer = scratch / f"{command}.request.json", scratch / f"{command}.answer.json"
    question.write_text(json.dumps(request))
    # The companion modules a migration writes beside the files that import them (TM103's
    # ddp_helpers.py, engine/companions.py) are importable, as they are where a run wrote them.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "codemods" / "runtime")}
    done = subprocess.run(
        [python, str(PROBE), command, str(question), str(answer)], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0 and answer.exists(), f"the probe failed in the torch 1.13.1 venv:\n{done.stderr[-3000:]}"
    result = json.loads(answer.read_text())
    assert result["torch"].startswith("1.13.1"), result["torch"]
    return result


# -- 1. the table is honest ----------------------------------------------------------------------

# Wrong annotations the judgement must refuse (one problem each), probed with the real table.
WRONG = {
    "torch.amp.GradScaler": (1, 13),  # absent in 1.13.1
    "torch.linalg.solve": (2, 0),  # present in 1.13.1
    "torch.load(weights_only)": (2, 0),  # accepted in 1.13.1
    "torch.utils.checkpoint.checkpoint_sequential(use_reentrant)": (1, 11),  # refused (ValueError)
    "torch.nn.MSELoss(no_such_keyword)": (1, 0),  # refused by the signature
    "torch.linalg.cholesky(no_such_keyword)": (1, 8),  # refused by the builtin's docstring signature
    "torch.amp.GradScaler(enabled)": (1, 13),  # the callable is not even there
    "torch.no_such_function": (1, 0),
    "torch.no_such_function(keyword)": (2, 5),  # above 1.13, but its callable has no entry > 1.13
    "torch.hub.load(no_such_keyword)": (1, 0),  # **kwargs and no trial call: undecided
    "torch.testing.assert_close(rtol)": (1, 8),  # older than its callable's own entry (1.9)
}


def torch_entries() -> dict[str, versions.Version]:
    """The entries the torch 1.13.1 venv can judge: torch's own. The torchvision entries (TM009's
    `*_Weights` enums and `weights=` keywords, at the torch paired with torchvision 0.13) are
    generated with TM009's table from torchvision's source; the venv has no torchvision, and
    tests/test_torchvision_weights_table.py holds them to the table instead."""
    return {k: v for k, v in versions.minimums().items() if not k.startswith("torchvision.")}


@pytest.fixture(scope="module")
def probed(old_torch_python, tmp_path_factory) -> dict[str, dict]:
    keys = sorted(set(torch_entries()) | set(WRONG))
    return ask(old_torch_python, "symbols", {"keys": keys}, tmp_path_factory.mktemp("probe"))["symbols"]


def judge(table: dict[str, versions.Version], answers: dict[str, dict]) -> list[str]:
    """What is wrong with `table` by torch 1.13.1's `answers`, one line per wrong entry."""
    problems = []
    for key, version in sorted(table.items()):
        answer = answers[key]
        callee, keyword = key.partition("(")[0], "(" in key
        declared = f"{key} is declared {versions.format_version(version)}"
        if answer["state"] == "undecided":
            problems.append(f"{declared} and the probe cannot tell whether 1.13.1 has it: {answer['how']}")
        elif version <= OLD and answer["state"] != "present":
            problems.append(f"{declared} but torch 1.13.1 lacks it: {answer['how']}")
        elif version > OLD and answer["state"] != "absent":
            problems.append(f"{declared} but torch 1.13.1 has it ({answer['how']})")
        elif version > OLD and keyword and answer["callee"] != "present":
            own = table.get(callee) or versions.minimums().get(callee)
            if own is None or own <= OLD:
                problems.append(f"{declared}, and its callable is missing from 1.13.1 without an entry above 1.13: {answer['how']}")
        if keyword:
            own = table.get(callee) or versions.minimums().get(callee)
            if own is not None and version < own:
                problems.append(f"{declared}, older than its callable {callee} ({versions.format_version(own)})")
    return problems


def test_every_declared_minimum_holds_on_torch_1_13_1(probed) -> None:
    problems = judge(torch_entries(), probed)
    assert not problems, "codemods/data/torch_minimums.json disagrees with torch 1.13.1:\n" + "\n".join(problems)


def test_the_table_has_entries_on_both_sides_of_1_13() -> None:
    table = versions.minimums()
    assert sum(v <= OLD for v in table.values()) >= 50
    assert sum(v > OLD for v in table.values()) >= 5
    assert sum("(" in k and v > OLD for k, v in table.items()) >= 1  # a keyword the probe must refuse


def test_a_wrong_annotation_fails(probed) -> None:
    for key, version in WRONG.items():
        problems = judge({key: version}, probed)
        assert problems and all(key in p for p in problems), (key, problems)


# -- 2. the table is complete --------------------------------------------------------------------


def _specs(case: Path) -> list[registry.Spec]:
    return [registry.get(case.parent.name.split("-", 1)[0])]


def _parses(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except SyntaxError:
        return None


@lru_cache(maxsize=None)
def migrated(case: Path, target: str | None) -> str:
    result = transform_source(case.read_text(), _specs(case), path=case.name, target_torch=target)
    assert result.problem is None, result.problem
    return result.code


def _targets(case: Path) -> list[str | None]:
    declared = target_of(case.read_text())
    return [None, OLD_TEXT] + ([declared] if declared not in (None, OLD_TEXT) else [])


PARSED = [case for case in CASES if _parses(case.read_text()) is not None]


def _case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name[:-6]}"


def test_only_legacy_syntax_inputs_are_not_python_3() -> None:
    # Their symbols cannot be read; TM000 repairs syntax and emits no torch symbol.
    unparsed = {c for c in CASES if c not in PARSED}
    assert unparsed and all(c.parent.name.startswith("TM000-") for c in unparsed), sorted(map(_case_id, unparsed))


@pytest.mark.parametrize("case", PARSED, ids=_case_id)
def test_every_symbol_an_output_adds_has_an_entry(case: Path) -> None:
    table = versions.minimums()
    before = _parses(case.read_text())
    used_before = set(emitted.symbols(before))
    too_new_before = {symbol for symbol, _, _ in emitted.too_new(before, OLD)}
    for target in _targets(case):
        after = _parses(migrated(case, target))
        assert after is not None, f"the output for target {target} does not parse"
        added = set(emitted.symbols(after)) - used_before
        missing = sorted(s for s in added if s not in table)
        assert not missing, (
            f"target {target or 'default'}: the output uses {missing}, which its input did not and"
            " codemods/data/torch_minimums.json has no entry for"
        )
        if target == OLD_TEXT:
            newer = [(s, line) for s, _, line in emitted.too_new(after, OLD) if s not in too_new_before]
            assert not newer, f"under target 1.13 the output uses symbols newer than 1.13: {newer}"


# -- 3. the outputs run on torch 1.13.1 ------------------------------------------------------------


def _header(text: str, field: str) -> list[str]:
    match = re.search(rf"^# {field}:(?P<items>.*)$", text, re.MULTILINE)
    return [item.strip() for item in match.group("items").split(",") if item.strip()] if match else []


BEHAVIOUR = sorted(PAIRS.glob("*.py"))


@lru_cache(maxsize=None)
def behaviour_result(path: Path):
    source = path.read_text()
    specs = [registry.get(code) for code in _header(source, "codemods")]
    result = transform_source(source, specs, path=path.name, target_torch=OLD_TEXT)
    assert result.problem is None, result.problem
    return result


# Outputs the judgement must refuse, run with the others: (original, broken output).
BROKEN = {
    "control/too_new_import": (
        "from torch.optim.lr_scheduler import _LRScheduler\n",
        "from torch.optim.lr_scheduler import LRScheduler\n",
    ),
    "control/other_numbers": ("import torch\nx = torch.ones(3) * 2\n", "import torch\nx = torch.ones(3) * 2.001\n"),
    "control/value_gone": ("import torch\nv = torch.zeros(2)\n", "import torch\n"),
    "control/hangs": ("x = 1\n", "x = 1\nwhile True:\n    pass\n"),
}


@pytest.fixture(scope="module")
def ran(old_torch_python, tmp_path_factory) -> dict[str, dict]:
    """Every fixture pair (migrated for 1.13), every behaviour pair and the broken controls, run
    in one old process."""
    pairs = [{"id": _case_id(c), "before": c.read_text(), "after": migrated(c, OLD_TEXT)} for c in CASES]
    pairs += [{"id": f"target_old/{p.stem}", "before": p.read_text(), "after": behaviour_result(p).code} for p in BEHAVIOUR]
    pairs += [{"id": i, "before": before, "after": after} for i, (before, after) in BROKEN.items()]
    answer = ask(old_torch_python, "run", {"pairs": pairs}, tmp_path_factory.mktemp("run"))
    return {r["id"]: r for r in answer["pairs"]}


def _failure(result: dict) -> str | None:
    if "probe_error" in result:
        return f"the probe could not run the pair: {result['probe_error']}"
    if result["before_error"] is not None:
        return None
    if result["after_error"] is not None:
        return f"the original runs on torch 1.13.1, the output raises {result['after_error']}"
    if result["missing"]:
        return f"the output no longer defines {result['missing']}"
    if result["differ"]:
        return f"different numbers: {result['differ']}"
    return None


def test_fixture_outputs_run_on_torch_1_13_1_with_the_same_numbers(ran) -> None:
    fixtures = {i: r for i, r in ran.items() if not i.startswith(("target_old/", "control/"))}
    assert len(fixtures) == len(CASES)
    failures = {i: f for i, r in sorted(fixtures.items()) if (f := _failure(r)) is not None}
    executed = sorted(i for i, r in fixtures.items() if r.get("before_error", "") is None)
    with_numbers = [i for i in executed if fixtures[i]["compared"]]
    values = sum(len(fixtures[i]["compared"]) for i in executed)
    print(
        f"\n{len(executed)} of {len(fixtures)} fixture originals ran through on torch 1.13.1, their outputs"
        f" were held to them; {len(with_numbers)} pairs had module-level numbers ({values} values compared)"
    )
    assert not failures, "\n".join(f"{i}: {f}" for i, f in failures.items())
    assert len(executed) >= EXECUTED_FLOOR, f"only {len(executed)} fixture originals ran on 1.13.1: {executed}"
    assert len(with_numbers) >= NUMBERS_FLOOR, f"only {with_numbers} had numbers to compare"


def test_a_broken_output_fails(ran) -> None:
    for i in BROKEN:
        assert ran[i]["before_error"] is None and _failure(ran[i]) is not None, ran[i]


@pytest.mark.parametrize("path", BEHAVIOUR, ids=lambda p: p.stem)
def test_behaviour_pair_on_torch_1_13_1(path: Path, ran) -> None:
    source = path.read_text()
    result = behaviour_result(path)
    assert result.changed, "the codemods changed nothing for target 1.13"
    used = set(emitted.symbols(ast.parse(result.code)))
    assert set(_header(source, "emits")) <= used, sorted(set(_header(source, "emits")) - used)
    held = {m.group("symbol") for f in result.findings if (m := HELD_BACK.search(f.message))}
    assert held == set(_header(source, "holds back")), held
    assert not held & used
    assert not emitted.too_new(ast.parse(result.code), OLD)

    run = ran[f"target_old/{path.stem}"]
    assert run["before_error"] is None, f"the original must run on torch 1.13.1: {run['before_error']}"
    assert _failure(run) is None, _failure(run)
    assert len(run["compared"]) >= 2, run
    assert run["stdout_same"]


# -- 4. the corpus under target 1.13 ----------------------------------------------------------------

CORPUS_COUNTS = Path("/tmp/target113_corpus.json")


@pytest.mark.corpus
def test_corpus_under_target_1_13_uses_nothing_newer(tmp_path_factory) -> None:
    from codemods import api
    from tests import test_real_corpus as real

    dirs = real.corpus_dirs()
    work = real.copy_python_files(dirs, tmp_path_factory.mktemp("corpus-1.13"))
    before = {p.resolve(): p.read_bytes() for root in work.values() for p in root.rglob("*.py")}
    options = api.Options(mode="write", jobs=2, use_config=False, cache=False, target_torch=OLD_TEXT)
    expected = json.loads(real.EXPECTED.read_text())

    newer, counts = {}, {}
    for name, root in sorted(work.items()):
        report = api.migrate([root], options)
        for problem in report.problems:
            assert not problem.reason.startswith("internal error"), problem
        for f in report.changed:
            path = Path(f.path).resolve()
            original = _parses(before[path].decode("utf-8-sig", "replace"))
            output = _parses(path.read_bytes().decode("utf-8-sig", "replace"))
            assert output is not None, f"{path} does not parse after the migration"
            old = {s for s, _, _ in emitted.too_new(original, OLD)} if original is not None else set()
            found = [(s, line) for s, _, line in emitted.too_new(output, OLD) if s not in old]
            if found:
                newer[str(path)] = found
        summary = real.corpus.summarise(report.files, root)
        held = Counter(f.code for f in report.open_findings if HELD_BACK.search(f.message))
        symbols = Counter(m.group("symbol") for f in report.open_findings if (m := HELD_BACK.search(f.message)))
        guarded = Counter(f.code for f in report.open_findings if GUARDED.search(f.message))
        default = expected[name]["default"]
        counts[name] = {
            "default": {k: default[k] for k in ("changed_files", "rewrites", "findings", "reviews")},
            "target_1_13": {k: summary[k] for k in ("changed_files", "rewrites", "findings", "reviews")},
            "held_back": dict(sorted(held.items())),
            "held_back_symbols": dict(sorted(symbols.items())),
            "dropped_by_the_output_guard": dict(sorted(guarded.items())),
        }
    totals = {
        side: dict(sorted(sum((Counter(c[side]["rewrites"]) for c in counts.values()), Counter()).items()))
        for side in ("default", "target_1_13")
    }
    held_total = sum((Counter(c["held_back"]) for c in counts.values()), Counter())
    guarded_total = sum((Counter(c["dropped_by_the_output_guard"]) for c in counts.values()), Counter())
    overall = {
        "rewrites_total": totals,
        "held_back_total": dict(sorted(held_total.items())),
        "dropped_by_the_output_guard_total": dict(sorted(guarded_total.items())),
        "changed_files_total": {s: sum(c[s]["changed_files"] for c in counts.values()) for s in ("default", "target_1_13")},
    }
    CORPUS_COUNTS.write_text(json.dumps({**overall, "projects": counts}, indent=1) + "\n")
    print(f"\ncorpus under target 1.13 ({CORPUS_COUNTS}): {json.dumps(overall)}")
    assert not newer, f"outputs under target 1.13 use symbols newer than 1.13 that their originals did not: {newer}"
    assert sum(sum(c["target_1_13"]["rewrites"].values()) for c in counts.values()) > 0
