"""batch's throughput: repositories per minute, the local process pool against a Dask cluster.

    python scripts/bench_batch.py [--repos 50] [--files 40] [--jobs 2] [--rounds 1]

Generates `--repos` git repositories of `--files` small legacy-torch modules each (`.cuda()`,
`Variable(...)`, `size_average=`, `.data[0]`, `F.sigmoid`), then runs the real CLI on them,
`batch MANIFEST --no-verify --jobs J`, and `batch MANIFEST --no-verify --dask-scheduler ADDR` on a
`distributed.LocalCluster` of J worker processes of one thread each (started, and warmed with an
untimed batch of J repositories, before the clock starts: a long-lived cluster's workers have
imported torch-migrate). Each round runs both, in a fresh work dir; the best round of each is
printed as a Markdown table row, with the check that both committed the same trees.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULE = '''import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Net{i}(nn.Module):
    def __init__(self):
        super(Net{i}, self).__init__()
        self.fc = nn.Linear({width}, {i} % 7 + 1)

    def forward(self, x):
        return F.sigmoid(self.fc(x))


def train_step_{i}(model, optimizer, x, y):
    x = Variable(x).cuda()
    y = Variable(y).cuda()
    criterion = nn.MSELoss(size_average=False)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.data[0]
'''

def legacy_module(index: int) -> str:
    """One small module of pre-1.0 torch code, different for each `index`."""
    return MODULE.format(i=index, width=8 + index % 5)


def make_repo(root: Path, name: str, files: int) -> Path:
    """A committed git repository `root/name` of `files` legacy modules in two packages."""
    repo = root / name
    for index in range(files):
        module = repo / f"pkg{index % 2}" / f"model_{index}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(legacy_module(index))
    # the repository's own identity: batch commits as the source's user, whatever this machine's is
    for command in (
        ["init", "-q", "-b", "main"], ["config", "user.name", "bench"], ["config", "user.email", "bench@example.org"],
        ["add", "."], ["commit", "-q", "-m", "legacy"],
    ):  # fmt: skip
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    return repo


def write_manifest(path: Path, repos: list[Path], branch: str = "tm/upgrade") -> Path:
    body = f'[defaults]\nbranch = "{branch}"\n'
    body += "".join(f'\n[[repo]]\nname = "{repo.name}"\npath = "{repo}"\n' for repo in repos)
    path.write_text(body)
    return path


def run_batch_cli(manifest: Path, workdir: Path, *options: str) -> tuple[float, dict]:
    """Seconds the CLI's `batch --no-verify` took, and its JSON summary."""
    command = [sys.executable, "-m", "codemods", "batch", str(manifest), "--workdir", str(workdir)]
    command += ["--no-verify", "--format", "json", *options]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"batch exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def committed_trees(summary: dict, workdir: Path) -> dict[str, str]:
    """Repository -> the tree its migration commit holds (equal trees: byte-identical files)."""
    return {
        row["name"]: subprocess.run(
            ["git", "rev-parse", f"{row['commit']}^{{tree}}"], cwd=workdir / "repos" / row["name"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        for row in summary["repos"]
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--files", type=int, default=40, help="legacy modules per repository")
    parser.add_argument("--jobs", type=int, default=2, help="local pool processes = Dask worker processes")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from distributed import LocalCluster

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as temp:
        temp = Path(temp)
        (temp / "src").mkdir()
        repos = [make_repo(temp / "src", f"repo{n:03d}", args.files) for n in range(args.repos)]
        manifest = write_manifest(temp / "repos.toml", repos)
        best: dict[str, float] = {}
        trees: dict[str, dict] = {}
        with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            executors = {
                "local pool": ("--jobs", str(args.jobs)),
                "Dask LocalCluster": ("--dask-scheduler", cluster.scheduler_address),
            }
            # untimed: a long-lived cluster's workers have imported torch-migrate already
            warm = write_manifest(temp / "warm.toml", repos[: args.jobs], branch="tm/warm-up")
            run_batch_cli(warm, temp / "work-warm", *executors["Dask LocalCluster"])
            for round_ in range(args.rounds):
                for label, options in executors.items():
                    workdir = temp / f"work-{round_}-{label.split()[0]}"
                    seconds, summary = run_batch_cli(manifest, workdir, *options)
                    if any(row["status"] != "migrated" for row in summary["repos"]):
                        raise SystemExit(f"{label}: not every repository migrated")
                    trees[label] = committed_trees(summary, workdir)
                    best[label] = min(seconds, best.get(label, seconds))
                    print(f"round {round_ + 1} {label}: {seconds:.1f} s", file=sys.stderr)
            same = len({json.dumps(t, sort_keys=True) for t in trees.values()}) == 1
            print(f"{args.repos} repositories x {args.files} files, --jobs {args.jobs}, best of {args.rounds}")
            print(f"same commits (every migrated tree identical): {'yes' if same else 'NO'}\n")
            print("| executor | seconds | repositories / minute |\n|---|---:|---:|")
            for label, seconds in best.items():
                print(f"| {label} | {seconds:.1f} | {args.repos / seconds * 60:.0f} |", flush=True)
    if not same:
        raise SystemExit("the two executors committed different trees")


if __name__ == "__main__":
    main()
