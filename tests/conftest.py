from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
PROJECTS = FIXTURES / "projects"

# -- the quick run and the full run ----------------------------------------------------------------
#
# `python -m pytest` is the contributor's quick run: the tests marked with one of FULL_ONLY are
# deselected. `python -m pytest --full` (what .ci/run runs) runs every test. An explicit `-m EXPR`
# decides for itself, and a test file named on the command line always runs whole.
# TORCH_MIGRATE_CORPUS_REQUIRED=1 (CI) keeps its meaning, that a missing corpus is a failure and not
# a skip: it selects the corpus and real-suite tests too, so they can never be absent unnoticed.

FULL_ONLY = ("corpus", "realsuites", "slow")
# `slow` is given here, by rule, to tests that take tens of seconds to minutes each or build what
# they need (the reasons beside each), so that no test file has to remember it.
SLOW_FIXTURES = {
    "old_torch_python": "runs code on the cached torch 1.13.1 venv (scripts/old_torch.py), built on first use",
    "hostile_tree": "migrates over a thousand mutated files, in the engine and through the CLI",
}
E2E = "runs `verify` end to end: copies, two or three sides of subprocesses importing torch, reruns"
SLOW_FILES = {
    "test_gpu_check_script.py": "installs the project and torch from wheels into fresh virtualenvs",
    "test_verify_e2e.py": E2E,
    "test_verify_smoke.py": E2E,
    "test_verify_coverage.py": E2E,
    "test_verify_processes.py": E2E,
    "test_verify_suites.py": E2E,
    "test_verify_new_files.py": E2E,
    "test_verify_versions.py": E2E,
    "test_batch.py": "batch end to end: clones, migrations, verifications and commits of several repositories",
    "test_batch_applies_verified.py": "batch end to end with verification",
    "test_precommit.py": "pre-commit installs the hook into repositories and runs it",
    "test_packaging.py": "builds the sdist and the wheel and installs them",
}
SLOW_TESTS = {  # test function names (every parametrization)
    "test_batch.py::test_dask_cluster_gives_the_same_summary_as_the_local_pool": "starts a Dask cluster",
    "test_batch_dask.py::test_dask_workers_migrate_a_large_repository_as_the_local_pool_does": "starts a Dask cluster",
    "test_batch.py::test_batch_commits_fixes_refuses_regressions_and_reports_bad_files":
        "verifies three repositories end to end, with a culprit search",
    "test_behaviour_dataparallel_to_ddp.py::test_torchrun_two_cpu_processes": "starts torchrun with two processes",
    "test_behaviour_ddp_placement.py::test_library_module_under_torchrun_starts_no_process_group":
        "starts torchrun with two processes",
    "test_precommit.py::test_readme_example_pinned_by_autoupdate_rewrites_staged_files_but_not_excluded_ones":
        "pre-commit builds the hook's environment",
    "test_verify_e2e.py::test_regression_is_reported_with_its_culprit_and_the_tree_is_untouched":
        "a verification with its culprit search",
    "test_verify_e2e.py::test_readme_example_is_fixed_by_the_migration": "the README's verify example, end to end",
    "test_hostile.py::test_hostile_corpus_and_notebooks_through_the_cli": "a large hostile run through the CLI",
    "test_gc_pause.py::test_migrating_files_leaves_no_codemod_checker_or_tree_to_the_cycle_collector":
        "migrates every fixture while watching the cycle collector",
    "test_lazy.py::test_every_fixture_runs_the_same_with_lazy_bodies_and_without": "every fixture, twice",
    "test_pipeline_fixed_point.py::test_a_second_run_over_every_fixture_changes_nothing": "every fixture, twice",
}

# Equivalence tests parametrized over every fixture and every source file (a shortcut against
# libcst's slow path, a table against the fixtures): the quick run keeps one parametrization in
# SAMPLE_EVERY, the same ones every time (by a hash of the test id), and deselects the others;
# --full runs them all. The fixture tests themselves (test_fixtures.py) always run whole.
SAMPLE_EVERY = 8
SAMPLED_TESTS = (
    "test_engine_speed.py::test_statement_import_scan_equals_a_full_visit",
    "test_engine_speed.py::test_statement_class_scan_equals_a_full_visit",
    "test_engine_speed.py::test_import_edits_equal_libcsts",
    "test_codegen.py::test_seeded_statements_are_what_libcst_writes_for_them",
    "test_codegen.py::test_same_code_as_libcst_before_and_after_a_change",
    "test_report_fixes.py::test_edits_of_every_fixture_reproduce_its_output",
    "test_name_guard.py::test_every_codemod_fixture_output_passes_the_guard",
    "test_traverse.py::test_same_callbacks_and_output_as_libcst",
    "test_target_torch_old.py::test_every_symbol_an_output_adds_has_an_entry",
    "test_patterns.py::test_every_trigger_finds_what_re_finds_on_every_fixture",
    "test_behaviour_loss_reduction.py::test_every_loss_class_keeps_its_reduction",
    "test_facts_collectors.py::test_a_part_is_json_data_so_the_cache_gives_back_what_collect_made",
)


def _sampled_out(item: pytest.Item) -> bool:
    """A parametrization of a SAMPLED_TESTS test that the quick run leaves to --full."""
    name = "/" + item.nodeid.split("[", 1)[0]
    if "[" not in item.nodeid or not any(name.endswith("/" + test) for test in SAMPLED_TESTS):
        return False
    return zlib.crc32(item.nodeid.encode()) % SAMPLE_EVERY != 0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full", action="store_true",
        help=f"run every test, also those marked {', '.join(FULL_ONLY)} (what CI runs); default: a quick run without them",
    )  # fmt: skip


def _named_files(config: pytest.Config) -> set[Path]:
    base = config.invocation_params.dir
    named = set()
    for arg in config.args:
        path = (base / arg.split("::", 1)[0]).resolve()
        if path.is_file():
            named.add(path)
    return named


def _full_only(item: pytest.Item) -> str | None:
    return next((name for name in FULL_ONLY if item.get_closest_marker(name) is not None), None)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the markers given here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        why = (
            next((SLOW_FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in SLOW_FIXTURES), None)
            or SLOW_FILES.get(item.path.name)
            or next((reason for test, reason in SLOW_TESTS.items() if ("/" + item.nodeid.split("[", 1)[0]).endswith("/" + test)), None)
        )
        if why:
            item.add_marker(pytest.mark.slow(reason=why))
    if config.getoption("--full") or config.option.markexpr:
        return
    required = os.environ.get("TORCH_MIGRATE_CORPUS_REQUIRED")
    named = _named_files(config)
    kept, deselected = [], []
    for item in items:
        marker = _full_only(item)
        if item.path in named or (required and marker in ("corpus", "realsuites")):
            kept.append(item)
        elif marker is None and not _sampled_out(item):
            kept.append(item)
        else:
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("--full") or config.option.markexpr:
        return None
    return (
        f"quick run: tests marked {', '.join(FULL_ONLY)} are deselected, and all but one in {SAMPLE_EVERY} "
        "parametrizations of the every-fixture equivalence tests (--full runs every test, as CI does)"
    )


@pytest.fixture(scope="session", autouse=True)
def _own_config_folder(tmp_path_factory: pytest.TempPathFactory):
    """The user's config folder, where the result cache's secret is made (engine/cache_trust.py),
    is the session's own: no test writes into the real ~/.config (nor %APPDATA%). Set in
    os.environ, so that the command-line children the tests start inherit it; a test that wants
    another one sets its own with monkeypatch."""
    config = tmp_path_factory.mktemp("config-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(config))
        patch.setenv("APPDATA", str(config))
        yield config


@pytest.fixture
def project(tmp_path: Path):
    """Copy a bundled fixture project into a temp dir and return its path."""
    import shutil

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(PROJECTS / name, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        return target

    return copy


def load_script(name: str):
    """scripts/<name>.py as a module, loaded once (so its classes are the same in every test module)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def old_torch_python() -> str:
    """The interpreter of the cached torch 1.13.1 venv (scripts/old_torch.py), built on first use.

    A cross-version test without it fails, never skips: the proof across versions is the promise.
    """
    old_torch = load_script("old_torch")
    try:
        return str(old_torch.build())
    except old_torch.SetupError as exc:
        pytest.fail(f"the torch 1.13.1 venv could not be built: {exc}", pytrace=False)
