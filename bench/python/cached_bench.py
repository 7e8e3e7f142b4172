#!/usr/bin/env python3
"""The article's Dataset v1 through feeder.cached + feeder.DataLoader, against its Dataset v2 + torch's
DataLoader and v1 on torch's DataLoader, in one run (loader alone, FashionMNIST's training set).

For each pipeline: the set-up (v2's conversion in __init__, or feeder.cached reading every v1 item
once), the median seconds of an epoch over --epochs passes after a warm-up pass (batch 512), and the
article's total for five epochs (set-up + 5 epochs). Ratios are against v2 + torch DataLoader, the
article's answer. v1 on torch's DataLoader (2 workers, what the article measured first) runs one
epoch only: it is the cost caching removes.

    build/venv/bin/python3 bench/python/cached_bench.py [--epochs 3] [--workers 2] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader

import feeder

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from article_pipeline import MNISTDatasetV1, MNISTDatasetV2, idx_to_dataframe  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def epoch_seconds(loader, passes):
    """Median seconds of a pass over `loader` after one warm-up pass, and the samples seen."""
    times = []
    for i in range(passes + 1):
        samples = 0
        start = time.perf_counter()
        for batch in loader:
            labels = batch["label"] if isinstance(batch, dict) else batch[1]
            samples += labels.shape[0]
        if i > 0:
            times.append(time.perf_counter() - start)
    return statistics.median(times), samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed passes per pipeline (after a warm-up)")
    parser.add_argument("--workers", type=int, default=2, help="reading processes / loader workers")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)

    frame = idx_to_dataframe(os.path.join(DATA, "train-images-idx3-ubyte.gz"),
                             os.path.join(DATA, "train-labels-idx1-ubyte.gz"))
    rows = []

    start = time.perf_counter()
    v2 = MNISTDatasetV2(frame)
    setup = time.perf_counter() - start
    best = None
    for workers in sorted({0, args.workers}):
        loader = DataLoader(v2, batch_size=args.batch_size, shuffle=True, num_workers=workers,
                            persistent_workers=workers > 0)
        seconds, samples = epoch_seconds(loader, args.epochs)
        if best is None or seconds < best[0]:
            best = (seconds, samples, workers)
    rows.append({"pipeline": f"article's Dataset v2 + torch DataLoader (best of 0 and {args.workers} workers: "
                             f"{best[2]})", "setup_s": setup, "epoch_s": best[0], "samples": best[1]})

    start = time.perf_counter()
    store = feeder.cached(MNISTDatasetV1(frame), num_workers=args.workers)
    setup = time.perf_counter() - start
    loader = feeder.DataLoader(store, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    seconds, samples = epoch_seconds(loader, args.epochs)
    rows.append({"pipeline": f"article's Dataset v1 through feeder.cached + feeder.DataLoader ({args.workers} "
                             f"workers; held as {store.pixel_type}, {store.nbytes / 2**20:.0f} MiB)",
                 "setup_s": setup, "epoch_s": seconds, "samples": samples})

    naive = DataLoader(MNISTDatasetV1(frame), batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    start = time.perf_counter()
    samples = sum(batch["label"].shape[0] for batch in naive)
    rows.append({"pipeline": f"article's Dataset v1 + torch DataLoader ({args.workers} workers; one epoch)",
                 "setup_s": 0.0, "epoch_s": time.perf_counter() - start, "samples": samples})

    reference = rows[0]
    reference_total = reference["setup_s"] + 5 * reference["epoch_s"]
    print(f"{'pipeline':<100} {'set-up s':>9} {'epoch s':>8} {'5 epochs s':>10} {'epoch vs v2':>12} "
          f"{'5 epochs vs v2':>15}")
    for row in rows:
        row["five_epochs_s"] = row["setup_s"] + 5 * row["epoch_s"]
        row["epoch_speedup_vs_v2"] = reference["epoch_s"] / row["epoch_s"]
        row["five_epochs_speedup_vs_v2"] = reference_total / row["five_epochs_s"]
        print(f"{row['pipeline']:<100} {row['setup_s']:>9.2f} {row['epoch_s']:>8.3f} {row['five_epochs_s']:>10.2f} "
              f"{row['epoch_speedup_vs_v2']:>11.1f}x {row['five_epochs_speedup_vs_v2']:>14.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"epochs": args.epochs, "workers": args.workers, "batch_size": args.batch_size,
                       "torch": torch.__version__, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
