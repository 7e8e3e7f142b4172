#!/usr/bin/env python3
"""feeder.DataLoader against torch.utils.data.DataLoader over the article's Dataset v2, loader alone.

Each loader iterates FashionMNIST's training set (batch 512 by default) for --epochs passes after one
warm-up pass; the samples/s of a loader is the median over its passes, and every ratio is against
the best torch DataLoader measured in the same run. The Python cost per batch of feeder's iterator
is measured on batches of one 1x1x1 image assembled on the calling thread (num_workers=0), where
the C++ work is next to nothing.

Run it with the build's environment (its torch is Debian's):
    OMP_NUM_THREADS=2 build/venv/bin/python3 bench/python/loader_bench.py [--epochs 5] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader

import feeder

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from article_pipeline import MNISTDatasetV2, idx_to_dataframe  # noqa: E402


def samples_per_second(loader, epochs):
    """Median samples/s over `epochs` passes, after one warm-up pass (workers start, pages fault in)."""
    rates = []
    for epoch in range(epochs + 1):
        samples = 0
        start = time.perf_counter()
        for batch in loader:
            labels = batch["label"] if isinstance(batch, dict) else batch[1]
            samples += labels.shape[0]
        seconds = time.perf_counter() - start
        if epoch > 0:
            rates.append(samples / seconds)
    return statistics.median(rates), min(rates), max(rates)


def python_cost_per_batch(batches=100_000, repeats=5):
    """Microseconds per batch of one 1x1x1 image: through DataLoader's iterator, and the extension's
    next() called directly (the C++ loader and the hand-off as two DLPack capsules, without the
    iterator and torch's from_dlpack).
    Medians of `repeats` alternated passes of each."""
    images = np.zeros((batches, 1, 1, 1), dtype=np.uint8)
    loader = feeder.DataLoader((images, np.zeros(batches, dtype=np.int64)), batch_size=1, shuffle=False,
                               num_workers=0)
    for _ in loader:  # warm-up
        pass
    raw = loader._loader
    through_iterator, direct = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in loader:
            pass
        through_iterator.append((time.perf_counter() - start) / batches * 1e6)
        raw.start_epoch(0)
        start = time.perf_counter()
        while raw.next() is not None:
            pass
        direct.append((time.perf_counter() - start) / batches * 1e6)
    return statistics.median(through_iterator), statistics.median(direct)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    train_images = os.path.join(args.data_dir, "train-images-idx3-ubyte.gz")
    frame = idx_to_dataframe(train_images, os.path.join(args.data_dir, "train-labels-idx1-ubyte.gz"))
    dataset = MNISTDatasetV2(frame)
    del frame

    rows = []
    for workers in (0, 2):
        kw = dict(persistent_workers=True) if workers else {}
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=workers, **kw)
        rows.append((f"torch DataLoader, Dataset v2, {workers} workers", *samples_per_second(loader, args.epochs)))
        del loader
    for workers in (1, 2):
        loader = feeder.DataLoader(train_images, batch_size=args.batch_size, shuffle=True, num_workers=workers)
        rows.append((f"feeder.DataLoader, {workers} workers", *samples_per_second(loader, args.epochs)))
        del loader

    best_torch = max(rate for name, rate, _, _ in rows if name.startswith("torch"))
    print(f"FashionMNIST train set, batch {args.batch_size}, median of {args.epochs} passes after a warm-up "
          f"({torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs)\n")
    print("| loader | samples/s (median) | range | vs best torch DataLoader |")
    print("|---|---|---|---|")
    for name, rate, low, high in rows:
        print(f"| {name} | {rate / 1e6:.3f}M | {low / 1e6:.3f}-{high / 1e6:.3f}M | {rate / best_torch:.1f}x |")
    best_feeder = max(rate for name, rate, _, _ in rows if name.startswith("feeder"))
    print(f"\nfeeder.DataLoader (best) / torch DataLoader (best): {best_feeder / best_torch:.1f}x")

    through_iterator, direct = python_cost_per_batch()
    print(f"Per batch of one 1x1x1 image (0 workers, medians of 5): {through_iterator:.2f} us through DataLoader's iterator, "
          f"{direct:.2f} us through the extension's next() alone; the iterator adds "
          f"{through_iterator - direct:.2f} us")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"batch_size": args.batch_size, "epochs": args.epochs,
                       "rows": [dict(name=n, median=r, low=lo, high=hi) for n, r, lo, hi in rows],
                       "ratio_best": best_feeder / best_torch,
                       "us_per_batch_iterator": through_iterator, "us_per_batch_next": direct}, f, indent=2)


if __name__ == "__main__":
    main()
