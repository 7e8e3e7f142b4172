#!/usr/bin/env python3
"""Python reference for the article "Optimizing a PyTorch data pipeline: from
bottleneck to a 39x speed-up" (FashionMNIST, SimpleCNN, 5 epochs).

It reproduces the article's Dataset v1 (per-item pandas conversion) and
Dataset v2 (conversion once in __init__), its DataLoader knobs, model, loop and
log lines, so that feeder's numbers can be compared with the Python pipeline on
the same machine. Run with a Python that has torch and pandas (on Debian:
/usr/bin/python3). See README.md in this directory for the ablation commands.
"""

import argparse
import gzip
import json
import os
import resource
import sys
import time

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=["v1", "v2"], default="v1",
                   help="v1: article's naive Dataset; v2: conversion once in __init__")
    p.add_argument("--loader", choices=["torch", "feeder"], default="torch",
                   help="torch: the article's Dataset + torch.utils.data.DataLoader; feeder: "
                        "feeder.DataLoader over the same files (--num-workers C++ threads; "
                        "--dataset and --persistent-workers do not apply)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--persistent-workers", action="store_true")
    p.add_argument("--pin-memory", action="store_true")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--pool-first", action="store_true",
                   help="SimpleCNN with each max-pool before its ReLU, as `feeder train` runs it: the same "
                        "function (ReLU is monotonic), less work; for comparing the loops on one model")
    p.add_argument("--max-batches", type=int, default=0,
                   help="stop each train/test pass after N batches (0: full pass)")
    p.add_argument("--threads", type=int, default=2,
                   help="intra-op threads, applied via OMP_NUM_THREADS before torch is imported")
    p.add_argument("--loader-only", action="store_true",
                   help="iterate the DataLoaders without the model")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                   help="directory with the FashionMNIST idx .gz files")
    p.add_argument("--train-csv", help="Kaggle-layout CSV (label,pixel1..pixel784)")
    p.add_argument("--test-csv", help="Kaggle-layout CSV (label,pixel1..pixel784)")
    p.add_argument("--json", help="write per-epoch results to this file")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--limit-samples", type=int, default=0,
                   help="use only the first N samples of each split (0: all); for quick checks")
    a = p.parse_args(argv)
    if a.persistent_workers and a.num_workers == 0 and a.loader == "torch":
        p.error("--persistent-workers needs --num-workers > 0 (DataLoader refuses it otherwise)")
    if bool(a.train_csv) != bool(a.test_csv):
        p.error("--train-csv and --test-csv go together")
    if a.threads < 1 or a.batch_size < 1 or a.epochs < 1 or a.max_batches < 0 or a.limit_samples < 0:
        p.error("--threads, --batch-size and --epochs must be >= 1, --max-batches and --limit-samples >= 0")
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # torch.set_num_threads() at run time is much slower here than letting the
    # OpenMP runtime start with the right count, so the thread count must be in
    # the environment before numpy/torch load their threading runtimes.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


# ---------------------------------------------------------------- data loading

def _read_idx_gz(path):
    """Read an idx1/idx3 ubyte .gz file into a uint8 numpy array."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic >> 8 != 0x08:  # 0x08 = unsigned byte data
        raise ValueError(f"{path}: not an unsigned-byte idx file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: expected {dims}, got {data.size} bytes")
    return data.reshape(dims)


def idx_to_dataframe(images_path, labels_path, limit=0):
    """Build the DataFrame the article loads: `label`, `pixel1`..`pixel784`, int64.

    The values are laid out column by column, as pd.read_csv / read_parquet
    produce them, so that df.iloc[idx] in Dataset v1 costs what it costs there.
    """
    images = _read_idx_gz(images_path)
    labels = _read_idx_gz(labels_path)
    if limit:
        images, labels = images[:limit], labels[:limit]
    if images.shape[0] != labels.shape[0] or images.shape[1:] != (28, 28):
        raise ValueError(f"unexpected shapes {images.shape} / {labels.shape}")
    table = np.empty((images.shape[0], 785), dtype=np.int64, order="F")
    table[:, 0] = labels
    table[:, 1:] = images.reshape(images.shape[0], 784)
    columns = ["label"] + [f"pixel{i}" for i in range(1, 785)]
    return pd.DataFrame(table, columns=columns, copy=False)


def load_frames(args):
    limit = args.limit_samples or None
    if args.train_csv:
        return pd.read_csv(args.train_csv, nrows=limit), pd.read_csv(args.test_csv, nrows=limit)
    d = args.data_dir
    train = idx_to_dataframe(os.path.join(d, "train-images-idx3-ubyte.gz"),
                             os.path.join(d, "train-labels-idx1-ubyte.gz"), args.limit_samples)
    test = idx_to_dataframe(os.path.join(d, "t10k-images-idx3-ubyte.gz"),
                            os.path.join(d, "t10k-labels-idx1-ubyte.gz"), args.limit_samples)
    return train, test


# ---------------------------------------------------------------- datasets
# The article's classes take a Parquet path and call pd.read_parquet; there is
# no pyarrow here, so they take the already-loaded DataFrame instead. Loading is
# outside the epoch timings in the article as well.

class MNISTDatasetV1(Dataset):
    """Article's Dataset v1: the whole DataFrame in RAM, conversion per item."""

    def __init__(self, df: pd.DataFrame, num_classes: int = 10):
        self.df = df
        self.label_col = "label" if "label" in self.df.columns else None
        self.feature_cols = [c for c in self.df.columns if c != self.label_col]
        self.num_classes = num_classes

    def __len__(self):
        return len(self.df)

    def __getitem__(self, idx):
        row = self.df.iloc[idx]
        pixels = row[self.feature_cols].to_numpy(dtype=np.float32)
        image = torch.tensor(pixels.reshape(1, 28, 28)) / 255.0
        if self.label_col:
            label = torch.tensor(int(row[self.label_col]), dtype=torch.long)
        else:
            label = torch.tensor(-1, dtype=torch.long)  # unlabeled test set
        return {"image": image, "label": label}


class MNISTDatasetV2(Dataset):
    """Article's Dataset v2: every conversion done once; __getitem__ only indexes."""

    def __init__(self, df: pd.DataFrame, num_classes: int = 10):
        self.label_col = "label" if "label" in df.columns else None
        self.feature_cols = [c for c in df.columns if c != self.label_col]
        self.num_classes = num_classes
        features_np = df[self.feature_cols].to_numpy(dtype=np.float32)
        self.images = torch.from_numpy(features_np.reshape(-1, 1, 28, 28)) / 255.0
        if self.label_col:
            labels_np = df[self.label_col].to_numpy(dtype=np.int64)
            self.labels = torch.from_numpy(labels_np).long()
        else:
            self.labels = torch.zeros(len(df), dtype=torch.long)  # as in the article

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return {"image": self.images[idx], "label": self.labels[idx]}


# ---------------------------------------------------------------- model

class SimpleCNN(nn.Module):
    def __init__(self, num_classes=10, pool_first=False):
        super().__init__()
        self.pool_first = pool_first
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)   # [B,1,28,28] -> [B,16,28,28]
        self.pool = nn.MaxPool2d(2, 2)                # halves H and W
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)  # [B,16,14,14] -> [B,32,14,14]
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        if self.pool_first:  # max(relu(a), relu(b)) == relu(max(a, b)): the same outputs and gradients
            x = F.relu(self.pool(self.conv1(x)))
            x = F.relu(self.pool(self.conv2(x)))
        else:
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


EXPECTED_PARAMS = 206_922


# ---------------------------------------------------------------- loop

def peak_rss_kib():
    # ru_maxrss is in KiB on Linux; children only count once reaped (workers
    # that exited), and theirs is the largest single child, not a sum.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return own, kids


def timed_batches(loader, max_batches, stats):
    """Yield batches, adding the time blocked in iter()/next() to stats["wait"]."""
    t0 = time.perf_counter()
    it = iter(loader)  # spawns workers unless they are persistent
    stats["wait"] += time.perf_counter() - t0
    n = 0
    while not max_batches or n < max_batches:
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            stats["wait"] += time.perf_counter() - t0
            break
        stats["wait"] += time.perf_counter() - t0
        n += 1
        yield batch
    del it  # shuts non-persistent workers down when a pass stops early


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def run_report(args, device, epochs, load_seconds, rss_kib):
    """The run in feeder's results schema (include/feeder/train/report.h)."""
    if args.train_csv:
        train_file, test_file = args.train_csv, args.test_csv
    else:
        train_file = os.path.join(args.data_dir, "train-images-idx3-ubyte.gz")
        test_file = os.path.join(args.data_dir, "t10k-images-idx3-ubyte.gz")
    total_train = sum(e["train_seconds"] for e in epochs)
    total_test = sum(e["test_seconds"] for e in epochs)
    return {
        "options": {
            "pipeline": "python-feeder" if args.loader == "feeder" else "python-" + args.dataset,
            "train_file": train_file,
            "test_file": test_file,
            "epochs": args.epochs,
            "batch_size": args.batch_size,
            "num_workers": args.num_workers,
            "num_threads": torch.get_num_threads(),
            "seed": args.seed,
            "learning_rate": 1e-3,
            "precision_requested": args.precision,
            "precision": args.precision,
            "device_requested": "auto",
            "device": device.type,
            "channels_last": args.channels_last,
            "pin_memory": args.pin_memory,
            "loader_only": args.loader_only,
            "max_batches": args.max_batches,
        },
        "machine": {
            "cpu_model": cpu_model(),
            "num_cpus": len(os.sched_getaffinity(0)),
            "torch_version": torch.__version__,
        },
        "epochs": epochs,
        "summary": {
            "average_train_seconds": total_train / len(epochs),
            "average_test_seconds": total_test / len(epochs),
            "total_train_seconds": total_train,
            "total_test_seconds": total_test,
            "final_accuracy": epochs[-1]["accuracy"],
            "load_seconds": load_seconds,
            "peak_rss_kib": rss_kib,
        },
    }


def sync(device):
    # CUDA work is asynchronous; without this the timer stops before the GPU does.
    if device.type == "cuda":
        torch.cuda.synchronize()


def feeder_loaders(args):
    """The two lines that put the article's loop on feeder: feeder.DataLoader over the same files."""
    import feeder
    if args.train_csv:
        train_source, test_source = args.train_csv, args.test_csv
    else:
        train_source = os.path.join(args.data_dir, "train-images-idx3-ubyte.gz")
        test_source = os.path.join(args.data_dir, "t10k-images-idx3-ubyte.gz")
    if args.limit_samples:  # the first N samples, as in-memory arrays
        def first(path):
            images = _read_idx_gz(path)[:args.limit_samples]
            labels = _read_idx_gz(path.replace("-images-idx3-", "-labels-idx1-"))[:args.limit_samples]
            return images, labels.astype(np.int64)
        train_source, test_source = first(train_source), first(test_source)
    layout = "nhwc" if args.channels_last else "nchw"
    kw = dict(batch_size=args.batch_size, num_workers=args.num_workers, pin_memory=args.pin_memory,
              layout=layout, seed=args.seed)
    return feeder.DataLoader(train_source, shuffle=True, **kw), feeder.DataLoader(test_source, shuffle=False, **kw)


def run(args):
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    t0 = time.perf_counter()
    if args.loader == "feeder":
        train_dataloader, test_dataloader = feeder_loaders(args)
        has_labels = True
    else:
        train_df, test_df = load_frames(args)
        dataset_cls = MNISTDatasetV1 if args.dataset == "v1" else MNISTDatasetV2
        train_dataset = dataset_cls(train_df)
        test_dataset = dataset_cls(test_df)
        has_labels = getattr(test_dataset, "label_col", None) is not None
        if args.dataset == "v2":
            del train_df, test_df  # v2 keeps only its tensors, as in the article
    load_seconds = time.perf_counter() - t0

    if args.loader == "torch":
        loader_kw = dict(batch_size=args.batch_size, num_workers=args.num_workers,
                         persistent_workers=args.persistent_workers,
                         pin_memory=args.pin_memory)
        train_dataloader = DataLoader(train_dataset, shuffle=True, **loader_kw)
        test_dataloader = DataLoader(test_dataset, shuffle=False, **loader_kw)

    model = criterion = optimizer = None
    n_params = None
    if not args.loader_only:
        model = SimpleCNN(pool_first=args.pool_first).to(device)
        n_params = sum(p.numel() for p in model.parameters())
        assert n_params == EXPECTED_PARAMS, f"SimpleCNN has {n_params} parameters"
        if args.channels_last:
            model = model.to(memory_format=torch.channels_last)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    use_bf16 = args.precision == "bf16"
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format

    def to_device(batch):
        # The article's Dataset yields dicts; feeder.DataLoader yields (images, labels).
        x, y = (batch["image"], batch["label"]) if isinstance(batch, dict) else batch
        x = x.to(device)
        y = y.to(device)
        if args.channels_last:
            x = x.contiguous(memory_format=fmt)
        return x, y

    print(f"device={device.type} loader={args.loader} dataset={args.dataset} batch_size={args.batch_size} "
          f"num_workers={args.num_workers} persistent_workers={args.persistent_workers} "
          f"pin_memory={args.pin_memory} precision={args.precision} "
          f"channels_last={args.channels_last} threads={torch.get_num_threads()} "
          f"loader_only={args.loader_only} (data loaded in {load_seconds:.2f}s)",
          flush=True)

    epochs = []
    for epoch in range(args.epochs):
        # ---- train pass (the article skips model.train()/eval(): no dropout/BN)
        stats = {"wait": 0.0}
        n_train = 0
        loss_sum = 0.0
        t0 = time.perf_counter()
        for batch in timed_batches(train_dataloader, args.max_batches, stats):
            x, y = to_device(batch)
            n_train += y.shape[0]
            if model is None:
                continue
            optimizer.zero_grad()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                predictions = model(x)
                loss = criterion(predictions, y)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * y.shape[0]
        sync(device)
        train_seconds = time.perf_counter() - t0
        train_wait = stats["wait"]

        # ---- test pass
        stats = {"wait": 0.0}
        n_test = correct = 0
        t0 = time.perf_counter()
        with torch.no_grad():
            for batch in timed_batches(test_dataloader, args.max_batches, stats):
                x, y = to_device(batch)
                n_test += y.shape[0]
                if model is None:
                    continue
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                    predictions = model(x)
                correct += (predictions.argmax(dim=1) == y).sum().item()
        sync(device)
        test_seconds = time.perf_counter() - t0

        accuracy = correct / n_test if (model is not None and has_labels and n_test) else None
        # The keys of feeder's results schema (include/feeder/train/report.h), so the ablation
        # reads this file as it reads its C++ rows and `feeder train --report-json`.
        rec = {
            "epoch": epoch + 1,
            "train_seconds": train_seconds,
            "test_seconds": test_seconds,
            "data_wait_seconds": train_wait,
            "test_data_wait_seconds": stats["wait"],
            "samples_per_second": n_train / train_seconds if train_seconds > 0 else None,
            "loss": loss_sum / n_train if (model is not None and n_train) else None,
            "accuracy": accuracy,
            "train_samples": n_train,
            "test_samples": n_test,
        }
        epochs.append(rec)
        acc_txt = f", accuracy {accuracy:.4f}" if accuracy is not None else ""
        print(f"Epoch {epoch + 1}/{args.epochs}: train {train_seconds:.2f}s "
              f"(waiting for data {train_wait:.2f}s), test {test_seconds:.2f}s{acc_txt}",
              flush=True)

    total_train = sum(e["train_seconds"] for e in epochs)
    total_test = sum(e["test_seconds"] for e in epochs)
    print(f"Average Train Time per Epoch: {total_train / len(epochs):.2f}s")
    print(f"Average Test Time per Epoch: {total_test / len(epochs):.2f}s")
    print(f"Total Train Time: {total_train:.2f}s")
    print(f"Total Test Time: {total_test:.2f}s")
    final_acc = epochs[-1]["accuracy"]
    if final_acc is not None:
        print(f"Test Accuracy: {final_acc:.4f}")
    sys.stdout.flush()

    if args.json:
        own, kids = peak_rss_kib()
        result = run_report(args, device, epochs, load_seconds, own + kids)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return epochs


if __name__ == "__main__":
    run(ARGS)
