#!/usr/bin/env python3
"""torchvision's classification reference (references/classification/train.py) with feeder: its
`torch.utils.data.DataLoader(` lines changed to `feeder.DataLoader(` and nothing else of its data
code, run on CPU with gloo on 1 and 2 ranks (torchrun), for each of its data options, beside the
same run with torch's DataLoader. Prints each run's time and whether it finished.

The reference is read from --reference (torchvision's references/classification folder, of the
installed version: Debian's `apt-get source pytorch-vision` with a deb-src line) and copied to a
work folder with two sets of changes: the DataLoader lines (feeder only), and what CPU and gloo
need (utils.py's nccl becomes gloo, no cuda.set_device, reductions on the CPU; DDP without
device_ids). The data is images_bench.py's set of wallpaper crops, as both train/ and val/.

    build/venv/bin/python3 bench/images/reference_port.py --reference DIR [--images 96] [--ranks 1 2]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from images_bench import build_set  # noqa: E402

# The reference's data options, as a user passes them.
OPTIONS = {
    "default": [],
    "ta_wide": ["--auto-augment", "ta_wide"],
    "ra": ["--auto-augment", "ra"],
    "augmix": ["--auto-augment", "augmix"],
    "random_erase": ["--random-erase", "0.25"],
    "bicubic": ["--interpolation", "bicubic"],
    "mixup_cutmix": ["--mixup-alpha", "0.2", "--cutmix-alpha", "1.0"],
    "ra_sampler": ["--ra-sampler", "--ra-reps", "3"],
}


def port(reference, work, loader):
    """The reference copied to `work`, changed for CPU and gloo, and for feeder when loader is 'feeder'."""
    os.makedirs(work, exist_ok=True)
    for name in ("train.py", "presets.py", "transforms.py", "utils.py", "sampler.py"):
        shutil.copy(os.path.join(reference, name), work)
    utils = open(os.path.join(work, "utils.py")).read()
    for old, new in (('args.dist_backend = "nccl"', 'args.dist_backend = "gloo"'),
                     ("torch.cuda.set_device(args.gpu)", "pass"),
                     ('torch.tensor(val, device="cuda")', 'torch.tensor(val, device="cpu")')):
        if old not in utils:
            raise SystemExit(f"{reference}/utils.py: no {old!r}; another version of the reference?")
        utils = utils.replace(old, new)
    open(os.path.join(work, "utils.py"), "w").write(utils)
    train = open(os.path.join(work, "train.py")).read()
    train = train.replace("device_ids=[args.gpu]", "device_ids=None")
    if loader == "feeder":
        lines = train.count("torch.utils.data.DataLoader(")
        if lines != 2:
            raise SystemExit(f"{reference}/train.py: {lines} DataLoader lines, expected 2")
        train = "import feeder\n" + train.replace("torch.utils.data.DataLoader(", "feeder.DataLoader(")
    open(os.path.join(work, "train.py"), "w").write(train)
    return os.path.join(work, "train.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True)
    parser.add_argument("--images", type=int, default=96)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--options", nargs="+", default=list(OPTIONS))
    parser.add_argument("--loaders", nargs="+", default=["feeder", "torch"])
    parser.add_argument("--cache", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bench-images"))
    args = parser.parse_args()
    # Absolute: the data folder links to it from a temporary folder.
    root = os.path.abspath(build_set(os.path.join(args.cache, f"wallpapers-{args.images}"), args.images))
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        os.makedirs(data)
        for split in ("train", "val"):
            os.symlink(root, os.path.join(data, split))
        scripts = {loader: port(args.reference, os.path.join(work, loader), loader) for loader in args.loaders}
        for option in args.options:
            for ranks in args.ranks:
                for loader in args.loaders:
                    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}",
                               "--master_addr", "127.0.0.1", "--master_port=29517", "--redirects", "1", "--tee", "1",
                               "--log_dir", os.path.join(work, "logs"), scripts[loader], "--data-path", data, "--device", "cpu",
                               "--model", "mobilenet_v3_small", "--epochs", "1", "-b", "16", "-j", "2",
                               "--train-crop-size", "96", "--val-resize-size", "110", "--val-crop-size", "96",
                               "--lr", "0.01", "--print-freq", "1000", "--output-dir", os.path.join(work, "out"),
                               *OPTIONS[option]]
                    env = {**os.environ, "OMP_NUM_THREADS": "1"}
                    start = time.perf_counter()
                    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
                    seconds = time.perf_counter() - start
                    accuracy = re.findall(r"Acc@1 ([0-9.]+)", done.stdout)
                    status = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
                    print(f"{option:14s} {ranks} rank(s) {loader:7s} {seconds:6.1f} s  {status}  "
                          f"Acc@1 {accuracy[-1] if accuracy else '-'}", flush=True)
                    if done.returncode != 0:
                        failures += 1
                        print(done.stdout[-1500:], done.stderr[-3000:], sep="\n")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
