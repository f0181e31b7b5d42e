#!/usr/bin/env python
"""Side-by-side speed on the real-world corpus (scripts/corpus.py): torch-migrate vs its floor and peers.

    python scripts/bench.py                      # everything, 3 repetitions, writes bench-results.json
    python scripts/bench.py --repeat 5 --jobs 2
    python scripts/bench.py --only pyro-ppl --only fastai --no-torchfix    # a quick look

Measured, each as its own process, in one run, interleaved by repetition:
  1. `torch-migrate run --diff` (all default codemods), cold cache, --jobs 1 and --jobs N;
  2. the same with a warm cache (--jobs N), as this environment runs Python (from source, see 7)
     and with our modules' bytecode (as an installed package has it);
  3. the floor: libcst parsing of the same files alone (no metadata, no codemods), 1 and N processes;
  4. TorchFix 0.7.0 (check only), installed by this script into its own venv (a peer, never a
     dependency of torch-migrate), --jobs N;
  5. ruff `check --select ALL --no-cache` as the compiled-tool reference.
For each: median and min-max wall time, peak RSS of the whole process tree (sampled from /proc),
lines per second; then the ratios torch-migrate/floor, TorchFix/torch-migrate and cold/warm.

Beside the corpus (issue 18; `--no-corpus` measures only these):
  6. start-up: `list`, `explain TM104`, `run --check` of one clean file and of an empty folder
     (warm cache, as pre-commit meets them), the bare interpreter (`python -c pass`) and ruff on
     the clean file; each a fresh process, `--startup-repeat` times, interleaved; medians; ours
     both from source and with our modules' bytecode (see 7);
  7. small repositories (`--small`, default: a few corpus projects of 2,700-7,800 lines, and
     fixtures/projects/): `run --diff` cold against the libcst parse floor of the same files,
     both --jobs 1, side by side; the ratio of their medians per project (target < 1.5), in wall
     and in CPU seconds, each measured both as this environment runs Python (here
     PYTHONDONTWRITEBYTECODE=1: our modules compiled from source at every run) and with bytecode
     for every module (as an installed package has it). `--baseline DIR` adds another checkout's
     run (e.g. `git worktree add DIR HEAD~1`), interleaved, for a before/after in one session.

With `--dense`, also legacy-dense code: a copy of the corpus files the default pipeline changes
(most hold several legacy idioms), measured as the corpus is (1-3), beside it. With `--baseline
DIR`, the baseline checkout's cold runs (-j1 and -jN) are measured in the same rounds, on the
corpus and the dense set too, and the speed-ups printed with the other ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import corpus  # noqa: E402

TORCHFIX = "torchfix==0.7.0"
RUFF = "ruff"
SMALL = ("pytorch-ignite", "pytorch3dunet", "robustness")  # a few thousand lines each
FIXTURE_PROJECTS = ROOT / "fixtures" / "projects"


# -- measuring one command ----------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants (Linux /proc); 0 when unavailable."""
    total = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(c) for c in handle.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(command: list[str], env: dict | None = None, ok_codes=(0, 1, 2, 3)) -> dict:
    """Wall seconds, CPU seconds (user + system, of every process of the tree that was waited
    for) and peak RSS (MB) of the process tree of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = proc.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    done.set()
    sampler.join()
    if proc.returncode not in ok_codes:
        raise RuntimeError(f"{' '.join(command[:4])}... exited {proc.returncode}: {stderr.decode()[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall": wall, "cpu": cpu, "rss_mb": peak / 2**20}


# -- the floor: libcst parse only ----------------------------------------------------------------


def _parse_chunk(paths: list[str]) -> tuple[int, int]:
    import libcst as cst

    parsed = failed = 0
    for path in paths:
        try:
            cst.parse_module(Path(path).read_bytes())
            parsed += 1
        except Exception:
            failed += 1
    return parsed, failed


def parse_floor(list_file: str, jobs: int) -> None:
    paths = Path(list_file).read_text().splitlines()
    if jobs <= 1:
        _parse_chunk(paths)
        return
    chunks = [paths[i::jobs * 8] for i in range(jobs * 8)]
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(_parse_chunk, chunks))


# -- peers in their own venv ---------------------------------------------------------------------


def peer_venv(directory: Path, log=print) -> Path:
    """A venv with TorchFix 0.7.0 and ruff, made once and reused (never torch-migrate's env)."""
    python = directory / "bin" / "python"
    stamp = directory / ".bench-peers"
    if stamp.exists() and stamp.read_text() == f"{TORCHFIX} {RUFF}\n":
        return directory
    log(f"creating {directory} with {TORCHFIX} and {RUFF}")
    if directory.exists():
        shutil.rmtree(directory)
    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", TORCHFIX, RUFF], check=True
    )
    stamp.write_text(f"{TORCHFIX} {RUFF}\n")
    return directory


# -- start-up and small repositories (issue 18) --------------------------------------------------


def _medians(commands: dict[str, tuple[list[str], dict | None]], repeat: int, label: str) -> dict[str, dict]:
    """Each command `repeat` times, interleaved by repetition; median and min-max wall seconds."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (command, command_env) in commands.items():
            walls[name].append(measure(command, command_env)["wall"])
    out = {}
    for name, runs in walls.items():
        out[name] = {"median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs), "runs": runs}
        print(f"  {label} {name:<62} {out[name]['median_s'] * 1000:7.0f} ms  ({min(runs) * 1000:.0f}-{max(runs) * 1000:.0f})")
    return out


def startup(scratch: Path, env: dict, repeat: int, ruff: Path | None) -> dict[str, dict]:
    """Fresh-process wall time of the commands that parse nothing (pre-commit pays it per commit),
    from source as this environment runs them, and with our modules' bytecode (as installed)."""
    home = scratch / "startup"
    (home / "empty").mkdir(parents=True)
    clean = home / "clean.py"
    clean.write_text("import torch\n\n\ndef relu(x):\n    return torch.relu(x)\n")
    run_env = {**env, "TORCH_MIGRATE_CACHE_DIR": str(home / "cache")}
    tm = [sys.executable, "-m", "codemods"]
    commands = {
        "python -c pass (the interpreter alone)": ([sys.executable, "-c", "pass"], env),
        "torch-migrate list": ([*tm, "list"], env),
        "torch-migrate explain TM104": ([*tm, "explain", "TM104"], env),
        "torch-migrate run --check <one clean file>": ([*tm, "run", "--check", str(clean)], run_env),
        "torch-migrate run --check <an empty folder>": ([*tm, "run", "--check", str(home / "empty")], run_env),
    }
    # the same with our modules' bytecode, as an installed package has it (written by one run first)
    bytecode = _bytecode(home / "pycache")
    for name, (command, command_env) in list(commands.items())[1:]:
        commands[f"{name}, bytecode"] = (command, _with(command_env, bytecode))
        measure(command, _with(command_env, bytecode))
    if ruff is not None:
        commands["ruff check <one clean file>"] = ([str(ruff), "check", "--quiet", "--exit-zero", "--isolated", str(clean)], env)
    measure(commands["torch-migrate run --check <one clean file>"][0], run_env)  # the warm cache pre-commit has
    return _medians(commands, repeat, "start-up")


def small_repositories(
    targets: dict[str, Path], scratch: Path, env: dict, repeat: int, baseline: Path | None = None
) -> dict[str, dict]:
    """Per project: `run --diff` cold at --jobs 1 against the libcst parse floor of its files.

    Both are measured twice, interleaved: as this environment runs them ("source": with
    PYTHONDONTWRITEBYTECODE=1, as this container sets it, every run compiles torch-migrate's
    modules, and the floor its own script, from source; libcst's bytecode came with its wheel) and
    with bytecode for everything ("bytecode": a PYTHONPYCACHEPREFIX written by one run of each
    first, as an installed package has). Wall and CPU seconds (user + system), medians. With
    `baseline` (another checkout), its `run --diff` too, interleaved with these ("base")."""
    source_env = dict(env)
    bytecode_env = _with(env, _bytecode(scratch / "pycache"))
    modes = {"source": source_env, "bytecode": bytecode_env}
    floor_script = str(Path(__file__).resolve())
    out = {}
    for name, root in targets.items():
        files = corpus.python_files(root)
        listing = scratch / f"small-{name.replace('/', '-')}.txt"
        listing.write_text("\n".join(str(p) for p in files))

        def commands(mode_env: dict, cache: Path) -> dict[str, tuple[list[str], dict]]:
            # -P: `-m` must not put the working directory first on sys.path, or a --baseline
            # run started from a checkout would import that checkout instead of the baseline
            run = [sys.executable, "-P", "-m", "codemods", "run", str(root), "--diff", "--no-config", "-j", "1",
                   "--format", "json", "-o", str(scratch / "small-report.json")]  # fmt: skip
            floor = [sys.executable, floor_script, "--_parse-floor", str(listing), "1"]
            out = {"run": (run, {**mode_env, "TORCH_MIGRATE_CACHE_DIR": str(cache)}), "floor": (floor, mode_env)}
            if baseline is not None:
                # a cache of its own: with the same codemod sources, the run's entries would be hits
                base_cache = str(cache) + "-base"
                out["base"] = (run, {**out["run"][1], "PYTHONPATH": str(baseline), "TORCH_MIGRATE_CACHE_DIR": base_cache})
            return out

        for command, command_env in commands(bytecode_env, scratch / "small-cache-warmup").values():
            measure(command, command_env)  # writes the bytecode the "bytecode" runs read
        shutil.rmtree(scratch / "small-cache-warmup", ignore_errors=True)
        kinds = ("run", "floor", "base") if baseline is not None else ("run", "floor")
        runs: dict[str, dict[str, list[dict]]] = {mode: {kind: [] for kind in kinds} for mode in modes}
        for rep in range(repeat):
            for mode, mode_env in modes.items():
                cache = scratch / f"small-cache-{mode}-{rep}"
                for kind, (command, command_env) in commands(mode_env, cache).items():
                    runs[mode][kind].append(measure(command, command_env))
                shutil.rmtree(cache, ignore_errors=True)
                shutil.rmtree(str(cache) + "-base", ignore_errors=True)
        row: dict = {"files": len(files), "lines": corpus.count_lines(files)}
        for mode in modes:
            for unit in ("wall", "cpu"):
                run = statistics.median(r[unit] for r in runs[mode]["run"])
                floor = statistics.median(r[unit] for r in runs[mode]["floor"])
                row[mode + "_" + unit] = {"run_median_s": run, "floor_median_s": floor, "ratio": run / floor}
                if baseline is not None:
                    base = statistics.median(r[unit] for r in runs[mode]["base"])
                    row[mode + "_" + unit].update(base_median_s=base, base_ratio=base / floor)
            row[mode + "_runs"] = runs[mode]
        out[name] = row
        print(
            f"  small {name:<22} {row['lines']:>6,} lines  "
            + "  ".join(
                f"{mode}: run {row[mode + '_wall']['run_median_s']:5.2f} s floor {row[mode + '_wall']['floor_median_s']:5.2f} s"
                f" ratio {row[mode + '_wall']['ratio']:4.2f} (cpu {row[mode + '_cpu']['ratio']:4.2f})"
                for mode in modes
            ),
            flush=True,
        )
    return out


def side_by_side(
    label: str, targets: list[str], files: list[Path], scratch: Path, env: dict, n: int, repeat: int,
    peer_repeat: int | None, venv: Path | None, torchfix: bool = False, ruff: bool = False,
    baseline: Path | None = None,
) -> tuple[dict, int]:
    """`run --diff` cold at -j1 and -jN and warm at -jN, the libcst parse floor of `files` at 1 and
    N processes, and the peers, interleaved by repetition: {name: median, min-max, peak RSS}.
    With `baseline` (another checkout), its cold runs at -j1 and -jN too, in the same rounds."""
    lines = corpus.count_lines(files)
    list_file = scratch / f"files-{label}.txt"
    list_file.write_text("\n".join(str(p) for p in files))

    def tm(jobs: int) -> list[str]:
        # -P: the checkout on PYTHONPATH is what runs, not one in the working directory
        return [sys.executable, "-P", "-m", "codemods", "run", *targets, "--diff", "--no-config", "-j", str(jobs),
                "--format", "json", "-o", str(scratch / f"report-{label}.json")]  # fmt: skip

    def tm_env(cache: Path) -> dict:
        return {**env, "TORCH_MIGRATE_CACHE_DIR": str(cache)}

    floor = [sys.executable, str(Path(__file__).resolve()), "--_parse-floor", str(list_file)]
    bytecode = _bytecode(scratch / "pycache")
    commands: dict[str, tuple[list[str], dict | None, bool]] = {
        "torch-migrate cold -j1": (tm(1), None, True),
        f"torch-migrate cold -j{n}": (tm(n), None, True),
        f"torch-migrate warm -j{n}": (tm(n), None, False),
        # as an installed package runs: its modules' bytecode written once (by the warm-up below)
        f"torch-migrate warm -j{n} bytecode": (tm(n), bytecode, False),
        "libcst parse floor -j1": ([*floor, "1"], env, False),
        f"libcst parse floor -j{n}": ([*floor, str(n)], env, False),
    }
    if baseline is not None:
        commands["baseline cold -j1"] = (tm(1), {"PYTHONPATH": str(baseline)}, True)
        commands[f"baseline cold -j{n}"] = (tm(n), {"PYTHONPATH": str(baseline)}, True)
    if venv is not None:
        if torchfix:
            commands[f"TorchFix 0.7.0 check -j{n}"] = ([str(venv / "bin" / "torchfix"), "-j", str(n), *targets], None, False)
        if ruff:
            ruff_check = [str(venv / "bin" / "ruff"), "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet",
                          "--isolated", *targets]  # fmt: skip
            commands["ruff check --select ALL"] = (ruff_check, None, False)

    warm_cache = scratch / f"warm-cache-{label}"
    measure(tm(n), tm_env(warm_cache))  # fill the warm cache once
    measure(tm(n), _with(tm_env(warm_cache), bytecode))  # and write our modules' bytecode
    results: dict[str, list[dict]] = {name: [] for name in commands}
    peer_repeat = repeat if peer_repeat is None else peer_repeat
    for rep in range(repeat):
        for name, (command, command_env, cold) in commands.items():
            if name.startswith(("TorchFix", "ruff")) and rep >= peer_repeat:
                continue
            if name.startswith(("torch-migrate", "baseline")):
                cache = scratch / f"cold-{label}-{rep}-{len(results[name])}" if cold else warm_cache
                command_env = _with(tm_env(cache), command_env or {})
            results[name].append(measure(command, command_env))
            last = results[name][-1]
            print(f"  rep {rep + 1}: {name:<28} {last['wall']:8.2f} s {last['rss_mb']:8.0f} MB", flush=True)
            if cold:
                shutil.rmtree(scratch / f"cold-{label}-{rep}-{len(results[name]) - 1}", ignore_errors=True)

    summary = {}
    print(f"\n{'':<28} {'median s':>9} {'min-max s':>15} {'peak RSS MB':>12} {'lines/s':>10}")
    for name, runs in results.items():
        walls = [r["wall"] for r in runs]
        median = statistics.median(walls)
        summary[name] = {
            "median_s": median, "min_s": min(walls), "max_s": max(walls),
            "peak_rss_mb": max(r["rss_mb"] for r in runs), "lines_per_s": lines / median, "runs": runs,
        }  # fmt: skip
        print(
            f"{name:<28} {median:>9.2f} {min(walls):>7.2f}-{max(walls):<7.2f} {summary[name]['peak_rss_mb']:>12.0f}"
            f" {lines / median:>10,.0f}"
        )

    return summary, peer_repeat


def _with(env: dict, changes: dict) -> dict:
    """`env` with `changes` made (None: the variable removed)."""
    merged = {**env, **changes}
    return {key: value for key, value in merged.items() if value is not None}


def _bytecode(pycache: Path) -> dict:
    """The environment changes that run Python with every module's bytecode, as an installed
    package has it (written under `pycache` by a first run), whatever PYTHONDONTWRITEBYTECODE says."""
    return {"PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": str(pycache)}


def dense_set(dirs: dict[str, Path], into: Path) -> Path:
    """Legacy-dense code: a copy of every corpus file the default pipeline changes (most of them
    hold several legacy idioms), each under its project's name."""
    sys.path.insert(0, str(ROOT))
    from codemods import api

    for name, root in dirs.items():
        report = api.migrate([str(root)], api.Options(mode="check", cache=False, use_config=False))
        for result in report.files:
            if result.status.value == "changed":
                source = Path(result.path)
                target = into / name / source.resolve().relative_to(root.resolve())
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
    return into


def report_issue18(startup_times: dict, small: dict) -> None:
    print(f"\n{'start-up, fresh process':<62} {'median ms':>10} {'min-max ms':>13}")
    for name, row in startup_times.items():
        print(f"{name:<62} {row['median_s'] * 1000:>10.0f} {row['min_s'] * 1000:>6.0f}-{row['max_s'] * 1000:<6.0f}")
    print("\nsmall repository: run --diff cold -j1 / libcst parse floor -j1, medians (target < 1.5)")
    based = any("base_ratio" in row["source_wall"] for row in small.values())
    cell = f"{'run s':>7} {'floor s':>8} {'ratio':>6} {'cpu':>6}" + (f" {'base':>6} {'cpu':>6}" if based else "")
    width = len(cell)
    print(f"{'':<22} {'lines':>7}  {'from source (this env)':^{width}}    {'with bytecode (as installed)':^{width}}")
    print(f"{'':<22} {'':>7}  {cell}    {cell}")
    for name, row in small.items():
        cells = []
        for mode in ("source", "bytecode"):
            wall, cpu = row[mode + "_wall"], row[mode + "_cpu"]
            text = f"{wall['run_median_s']:>7.2f} {wall['floor_median_s']:>8.2f} {wall['ratio']:>6.2f} {cpu['ratio']:>6.2f}"
            if based:
                text += f" {wall['base_ratio']:>6.2f} {cpu['base_ratio']:>6.2f}"
            cells.append(text)
        print(f"{name:<22} {row['lines']:>7,}  " + "    ".join(cells))
    if based:
        print("(base: the --baseline checkout's run, measured interleaved with this one; its ratios)")


# -- the run --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="corpus cache (see scripts/corpus.py)")
    parser.add_argument("--only", action="append", choices=sorted(corpus.BY_NAME), help="just these projects")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--peer-repeat", type=int, help="repetitions of TorchFix and ruff (default: --repeat; TorchFix takes minutes)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="N for the parallel runs")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument("--no-ruff", action="store_true")
    parser.add_argument("--peers-dir", type=Path, default=corpus.default_dir().parent / "bench-peers")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"))
    parser.add_argument("--no-h5py", action="store_true", help="skip TM201's DataLoader benchmark")
    parser.add_argument("--no-corpus", action="store_true", help="only the start-up and small-repository figures")
    parser.add_argument(
        "--dense", action="store_true",
        help="also the legacy-dense set: a copy of the corpus files the default pipeline changes, measured the same way",
    )  # fmt: skip
    parser.add_argument(
        "--verify", action="store_true",
        help="also verify's wall time against its longest side, two and three sides (scripts/bench_verify.py)",
    )  # fmt: skip
    parser.add_argument("--startup-repeat", type=int, default=9, help="repetitions of each start-up command")
    parser.add_argument(
        "--small", action="append", choices=sorted(corpus.BY_NAME),
        help=f"small corpus projects to compare with the parse floor (default: {', '.join(SMALL)}; fixtures/projects always)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", type=Path,
        help="another checkout of torch-migrate (git worktree add DIR REV), whose cold runs are measured beside this one's",
    )
    parser.add_argument("--_parse-floor", nargs=2, metavar=("LIST", "JOBS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._parse_floor:
        parse_floor(args._parse_floor[0], int(args._parse_floor[1]))
        return 0

    scratch = Path(tempfile.mkdtemp(prefix="tm-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    small_dirs = corpus.ensure(list(args.small or SMALL), args.dir)
    small_targets = {**{name: small_dirs[name] for name in args.small or SMALL}, "fixtures/projects": FIXTURE_PROJECTS}
    venv = peer_venv(args.peers_dir) if not (args.no_torchfix and args.no_ruff) else None
    print(f"start-up ({args.startup_repeat} repetitions) and small repositories ({args.repeat}):")
    startup_times = startup(scratch, env, args.startup_repeat, venv / "bin" / "ruff" if venv and not args.no_ruff else None)
    small = small_repositories(small_targets, scratch, env, args.repeat, args.baseline)
    verify_cost = _verify_cost(args.repeat) if args.verify else None
    if args.no_corpus:
        report_issue18(startup_times, small)
        out = {"startup": startup_times, "small_repositories": small, "verify": verify_cost, "machine": _machine()}
        args.json.write_text(json.dumps(out, indent=2) + "\n")
        print(f"\nwrote {args.json}")
        shutil.rmtree(scratch, ignore_errors=True)
        return 0

    dirs = corpus.ensure(args.only, args.dir)
    files = [p for root in dirs.values() for p in corpus.python_files(root)]
    lines = corpus.count_lines(files)
    dense_summary = dense_files = dense_lines = None
    n = args.jobs
    print(f"corpus: {len(dirs)} projects, {len(files)} files, {lines:,} lines; jobs N={n}; {args.repeat} repetitions"
          + (f" ({args.peer_repeat} of the peers)" if args.peer_repeat is not None else ""))

    summary, peer_repeat = side_by_side(
        "corpus", [str(p) for p in dirs.values()], files, scratch, env, n, args.repeat, args.peer_repeat, venv,
        torchfix=not args.no_torchfix, ruff=not args.no_ruff, baseline=args.baseline,
    )
    if args.dense:
        dense = dense_set(dirs, scratch / "dense")
        dense_files = corpus.python_files(dense)
        dense_lines = corpus.count_lines(dense_files)
        print(f"\ndense set: the {len(dense_files)} corpus files the default pipeline changes ({dense_lines:,} lines)")
        dense_summary, _ = side_by_side(
            "dense", [str(dense)], dense_files, scratch, env, n, args.repeat, 0, None, baseline=args.baseline
        )

    def ratio(table: dict, a: str, b: str) -> float | None:
        return table[a]["median_s"] / table[b]["median_s"] if a in table and b in table else None

    ratios = {
        "cold -j1 / parse floor -j1 (target <= 1.0)": ratio(summary, "torch-migrate cold -j1", "libcst parse floor -j1"),
        f"cold -j{n} / parse floor -j{n} (target <= 1.0)": ratio(summary, f"torch-migrate cold -j{n}", f"libcst parse floor -j{n}"),
        f"TorchFix -j{n} / cold -j{n} (target >= 15)": ratio(summary, f"TorchFix 0.7.0 check -j{n}", f"torch-migrate cold -j{n}"),
        f"cold -j{n} / warm -j{n} (target >= 40)": ratio(summary, f"torch-migrate cold -j{n}", f"torch-migrate warm -j{n}"),
        f"cold -j{n} / warm -j{n} with bytecode (target >= 40)": ratio(
            summary, f"torch-migrate cold -j{n}", f"torch-migrate warm -j{n} bytecode"
        ),
        f"cold -j{n} / ruff": ratio(summary, f"torch-migrate cold -j{n}", "ruff check --select ALL"),
    }
    if args.baseline is not None:
        for jobs in (1, n):
            name = f"baseline cold -j{jobs} / cold -j{jobs} (the speed-up)"
            ratios[name] = ratio(summary, f"baseline cold -j{jobs}", f"torch-migrate cold -j{jobs}")
            if args.dense:
                ratios["dense: " + name] = ratio(dense_summary, f"baseline cold -j{jobs}", f"torch-migrate cold -j{jobs}")
    if args.dense:
        ratios.update({
            "dense: cold -j1 / parse floor -j1 (target <= 2.0)": ratio(dense_summary, "torch-migrate cold -j1", "libcst parse floor -j1"),
            f"dense: cold -j{n} / parse floor -j{n} (target <= 2.0)": ratio(dense_summary, f"torch-migrate cold -j{n}", f"libcst parse floor -j{n}"),
            f"dense: cold -j{n} / warm -j{n} (target >= 40)": ratio(dense_summary, f"torch-migrate cold -j{n}", f"torch-migrate warm -j{n}"),
            f"dense: cold -j{n} / warm -j{n} with bytecode (target >= 40)": ratio(
                dense_summary, f"torch-migrate cold -j{n}", f"torch-migrate warm -j{n} bytecode"
            ),
        })  # fmt: skip
    print()
    for name, value in ratios.items():
        if value is not None:
            print(f"{name:<56} {value:8.2f}")
    print(f"peak RSS torch-migrate cold -j{n}: {summary[f'torch-migrate cold -j{n}']['peak_rss_mb']:.0f} MB (target <= 250)")
    report_issue18(startup_times, small)

    out = {
        "corpus": {"projects": sorted(dirs), "files": len(files), "lines": lines},
        "jobs": n, "repeat": args.repeat, "peer_repeat": peer_repeat, "machine": _machine(), "results": summary, "ratios": ratios,
        "startup": startup_times, "small_repositories": small, "verify": verify_cost,
    }  # fmt: skip
    if args.dense:
        out["dense"] = {"files": len(dense_files), "lines": dense_lines, "results": dense_summary}
    if not args.no_h5py:
        # TM201: the lazily opened dataset against the naive "open the file in every __getitem__".
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_h5py import bench_h5py_lazy_open

        out["h5py_lazy_open"] = bench_h5py_lazy_open()
        print(f"TM201 migrated / naive items per second (num_workers=2): {out['h5py_lazy_open']['ratio']:.2f}")
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {args.json}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _verify_cost(repeat: int) -> dict:
    """verify on the torch1_era example: wall time against the longest side (issue 23: <= 1.25x)."""
    import bench_verify

    results = bench_verify.measure(ROOT / "fixtures" / "projects" / "torch1_era", repeat)
    print(f"verify on torch1_era (medians of {repeat}): wall / longest side")
    for label, r in results.items():
        print(f"  {label:<12} {r['wall_s']:7.2f} s / {r['longest_side_s']:7.2f} s = {r['ratio']:.2f}")
    return results


def _machine() -> dict:
    from importlib.metadata import version

    machine = {
        "platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(), "libcst": version("libcst"),
    }  # fmt: skip
    if hasattr(os, "getloadavg"):
        machine["loadavg_end"] = os.getloadavg()
    return machine


if __name__ == "__main__":
    sys.exit(main())
