#!/usr/bin/env python3
"""feeder.DataLoader over a torchvision ImageFolder as a script has it (the dataset object, its
transform translated), against torch's DataLoader over the same dataset object and against
feeder's own spelling of the same pipeline (the folder's path, image_size=, augment=, normalize=,
dct_scaling=False: the settings the translation chooses), in one run.

The set is images_bench.py's (ImageNet-sized JPEG crops of Debian's wallpapers, cached under
--cache). Rows: images/s, the median of --repeats passes alternated between the rows, each after a
warm-up pass of the same loader, one loader alive at a time; 2 workers each (C++ threads for feeder,
processes for torch); batch 256.

    build/venv/bin/python3 bench/images/torchvision_dataset_bench.py [--images 2000] [--repeats 3]
"""

import gc
import glob
import os
import platform
import statistics
import sys

import torch
import torchvision
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(__file__))
import feeder  # noqa: E402
from images_bench import MEAN, STD, arguments, build_set, rate  # noqa: E402


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def alternated(rows, repeats, count):
    """{row: images/s of each pass}: `repeats` rounds over the rows in turn, each row's loader made,
    warmed up by a pass (workers started, files in the page cache), timed over a pass, dropped."""
    results = {name: [] for name in rows}
    for repeat in range(repeats):
        for name, make in rows.items():
            loader = make()
            rate(loader, count)
            results[name].append(rate(loader, count))
            del loader
            gc.collect()
            print(f"  pass {repeat + 1}: {name}: {results[name][-1]:.0f} images/s", flush=True)
    return results


def main():
    args = arguments(__doc__.split("\n\n")[0]).parse_args()
    torch.set_num_threads(1)
    root = build_set(os.path.join(args.cache, f"wallpapers-{args.images}"), args.images)
    count = len(glob.glob(f"{root}/*/*.jpg"))
    train = torchvision.datasets.ImageFolder(root, transform=T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)]))
    evaluation = torchvision.datasets.ImageFolder(root, transform=T.Compose([
        T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)]))
    common = {"batch_size": args.batch_size, "num_workers": args.workers}
    rows = {
        "train: feeder.DataLoader(ImageFolder(root, transform))":
            lambda: feeder.DataLoader(train, shuffle=True, **common),
        "train: feeder.DataLoader(root, image_size=224, augment=...)":
            lambda: feeder.DataLoader(root, shuffle=True, image_size=224, augment="random_resized_crop",
                                      normalize=(MEAN, STD), dct_scaling=False, **common),
        "train: torch DataLoader(ImageFolder(root, transform))":
            lambda: torch.utils.data.DataLoader(train, shuffle=True, **common),
        "eval: feeder.DataLoader(ImageFolder(root, transform))":
            lambda: feeder.DataLoader(evaluation, **common),
        "eval: feeder.DataLoader(root, image_size=224, augment=...)":
            lambda: feeder.DataLoader(root, image_size=224, augment="center_crop", normalize=(MEAN, STD),
                                      dct_scaling=False, **common),
        "eval: torch DataLoader(ImageFolder(root, transform))":
            lambda: torch.utils.data.DataLoader(evaluation, **common),
    }
    results = alternated(rows, args.repeats, count)
    print(f"\n{count} images, batch {args.batch_size}, {args.workers} workers, {args.repeats} passes each; "
          f"{cpu_name()}, torch {torch.__version__}, torchvision {torchvision.__version__}")
    medians = {name: statistics.median(values) for name, values in results.items()}
    for phase in ("train", "eval"):
        names = [name for name in rows if name.startswith(phase)]
        ours, spelled, theirs = (medians[name] for name in names)
        for name in names:
            values = results[name]
            print(f"{name:64s} median {medians[name]:6.0f}  (min {min(values):.0f}, max {max(values):.0f})")
        print(f"{phase}: the dataset object against feeder's own spelling {ours / spelled:.3f}x; "
              f"against torch's DataLoader {ours / theirs:.2f}x\n")


if __name__ == "__main__":
    main()
