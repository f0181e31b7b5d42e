"""Benchmark TM201: the migrated h5py dataset against the naive "open the file in every item" fix.

    python scripts/bench_h5py.py [--rows 2048] [--epochs 2] [--workers 2] [--output FILE]

Both datasets read the same rows through `DataLoader(num_workers=2, persistent_workers=True)`;
the migrated one is what TM201 writes for a dataset that opened its file in `__init__` (one handle
per worker, opened on first use), the naive one opens and closes the file for every item (the
usual hand fix for "h5py objects cannot be pickled"). One warm-up epoch starts the workers; the
timed epochs measure items per second. Prints the ratio and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BEFORE = '''\
import h5py
import torch
from torch.utils.data import Dataset


class Frames(Dataset):
    def __init__(self, path):
        self.h5 = h5py.File(path, "r")
        self.length = len(self.h5["frames"])

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return torch.from_numpy(self.h5["frames"][index]), int(self.h5["labels"][index])
'''

NAIVE = '''\
import h5py
import torch
from torch.utils.data import Dataset


class Frames(Dataset):
    def __init__(self, path):
        self.path = path
        with h5py.File(path, "r") as h5:
            self.length = len(h5["frames"])

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        with h5py.File(self.path, "r") as h5:
            return torch.from_numpy(h5["frames"][index]), int(h5["labels"][index])
'''


def _write_data(path: Path, rows: int) -> None:
    import h5py
    import numpy as np

    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("frames", data=rng.standard_normal((rows, 64)).astype("f4"), chunks=(64, 64))
        f["labels"] = np.arange(rows)
        for k in range(16):  # some metadata, as real files have: opening pays for it
            f.attrs[f"meta{k}"] = k


def _items_per_second(dataset, epochs: int, workers: int, batch_size: int) -> float:
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, persistent_workers=workers > 0)
    for _ in loader:  # warm-up: start the workers, open what they open
        pass
    start = time.perf_counter()
    count = 0
    for _ in range(epochs):
        for frames, _ in loader:
            count += len(frames)
    return count / (time.perf_counter() - start)


def _getitem_us(dataset, rows: int) -> float:
    """Microseconds per `dataset[i]` in this process: the per-item cost without DataLoader IPC."""
    dataset[0]
    start = time.perf_counter()
    for index in range(rows):
        dataset[index]
    return (time.perf_counter() - start) / rows * 1e6


def bench_h5py_lazy_open(rows: int = 2048, epochs: int = 2, workers: int = 2, batch_size: int = 32) -> dict:
    """Items/second of the TM201-migrated dataset and of the naive per-item open, and their ratio."""
    sys.path.insert(0, str(ROOT))
    from codemods import registry
    from codemods.api import transform_source

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        migrated = transform_source(BEFORE, [registry.get("TM201")])
        assert migrated.changed and migrated.problem is None, migrated.problem
        (folder / "bench_tm201_migrated.py").write_text(migrated.code)
        (folder / "bench_tm201_naive.py").write_text(NAIVE)
        data = folder / "data.h5"
        _write_data(data, rows)
        sys.path.insert(0, tmp)
        try:
            results, per_item = {}, {}
            for name in ("migrated", "naive"):
                module = importlib.import_module(f"bench_tm201_{name}")
                dataset = module.Frames(str(data))
                results[name] = _items_per_second(dataset, epochs, workers, batch_size)
                per_item[name] = _getitem_us(module.Frames(str(data)), rows)
        finally:
            sys.path.remove(tmp)
    return {
        "benchmark": "h5py-lazy-open",
        "rows": rows,
        "epochs": epochs,
        "num_workers": workers,
        "batch_size": batch_size,
        "migrated_items_per_s": round(results["migrated"], 1),
        "naive_items_per_s": round(results["naive"], 1),
        "ratio": round(results["migrated"] / results["naive"], 2),
        # In-process cost of one item (no workers): what the ratio is made of, less noisy.
        "migrated_getitem_us": round(per_item["migrated"], 1),
        "naive_getitem_us": round(per_item["naive"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", default="bench-results-h5py.json")
    args = parser.parse_args(argv)
    result = bench_h5py_lazy_open(args.rows, args.epochs, args.workers, args.batch_size)
    print(
        f"TM201 h5py-lazy-open, num_workers={result['num_workers']}: migrated {result['migrated_items_per_s']:.0f}"
        f" items/s, naive per-item open {result['naive_items_per_s']:.0f} items/s: {result['ratio']:.2f}x"
        f" (one item in-process: {result['migrated_getitem_us']:.0f} us vs {result['naive_getitem_us']:.0f} us)"
    )
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
