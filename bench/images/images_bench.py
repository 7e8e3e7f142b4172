#!/usr/bin/env python3
"""feeder.DataLoader over a folder of JPEG photographs, against torchvision's ImageFolder + DataLoader
and a bare full decode by libjpeg-turbo, in one run.

The set is built once (cached under --cache) from the photographs of Debian's
plasma-workspace-wallpapers: --images crops at ImageNet's typical sizes (shorter side 300-500 px,
aspect 3:4 to 4:3, JPEG quality 90, encoded by PIL), in an ImageFolder layout with 10 classes.

Rows, each images/s as the median of --repeats alternated passes over the whole set, each timed
after a warm-up pass of the same loader, with no other loader alive:
  - training: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize, batch 256:
    feeder (2 C++ workers) and torchvision (2 worker processes, PIL); feeder's loader also run to the
    end of each pass from C++ (its rate with no Python between batches); feeder also over the same JPEGs
    as Parquet shards (`feeder convert`, shuffled on write) and as WebDataset tar shards (Python's
    tarfile, shuffled), both streamed within a memory budget of 90% of the images' bytes (a batch of
    256 in flight per worker and two row groups per reader take most of a budget this small);
  - evaluation: Resize(256) + CenterCrop(224) + ToTensor + Normalize, the same two;
  - a bare full-size decode of the same JPEGs, already in memory, by libjpeg-turbo from C++
    (feeder's decode_image on one std::thread per worker, no Python between the images): the rate
    no loader that decodes whole images can pass.
torchvision's workers are not persistent: persistent ones start decoding the next epoch as soon as
a pass ends, on the same cores as the rows measured after it, and hand their next pass a thousand
images decoded ahead; each of its passes here pays for starting its 2 worker processes instead
(about 0.1 s of a 5 s pass).

    build/venv/bin/python3 bench/images/images_bench.py [--images 2000] [--repeats 3] [--json FILE]
"""

import argparse
import gc
import glob
import io
import json
import os
import statistics
import time

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

import feeder
from feeder import _feeder

WALLPAPERS = "/usr/share/wallpapers"
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def build_set(root, count, seed=0):
    """`count` ImageNet-sized JPEG crops of the wallpapers in root/train/<class>/, made once."""
    done = os.path.join(root, "complete")
    if os.path.exists(done):
        return os.path.join(root, "train")
    sources = sorted(set(glob.glob(f"{WALLPAPERS}/*/contents/images/*.jpg")))
    if not sources:
        raise SystemExit(f"no photographs under {WALLPAPERS}: apt-get install plasma-workspace-wallpapers")
    rng = np.random.default_rng(seed)
    per_source = -(-count // len(sources))
    made = 0
    for s, path in enumerate(sources):
        picture = Image.open(path).convert("RGB")
        picture.thumbnail((1600, 1600))  # crops are taken from this: ImageNet photographs are not 5K
        for _ in range(per_source):
            if made == count:
                break
            ratio = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
            width, height = picture.size
            crop_h = int(min(height, width / ratio) * rng.uniform(0.5, 1.0))
            crop_w = int(min(width, crop_h * ratio))
            top = int(rng.integers(0, height - crop_h + 1))
            left = int(rng.integers(0, width - crop_w + 1))
            crop = picture.crop((left, top, left + crop_w, top + crop_h))
            shorter = int(rng.integers(300, 501))
            scale = shorter / min(crop.size)
            crop = crop.resize((max(1, round(crop.size[0] * scale)), max(1, round(crop.size[1] * scale))),
                               Image.BICUBIC)
            folder = os.path.join(root, "train", f"class_{made % 10}")
            os.makedirs(folder, exist_ok=True)
            crop.save(os.path.join(folder, f"{made:05d}.jpg"), quality=90)
            made += 1
        print(f"\rbuilding the set: {made}/{count} images", end="", flush=True)
    print()
    open(done, "w").close()
    return os.path.join(root, "train")


def build_shards(root, files, seed=0):
    """The set as Parquet shards (feeder convert) and as 8 tar shards (tarfile), each shuffled, made once."""
    parquet_dir = os.path.join(root, "..", "parquet")
    tar_dir = os.path.join(root, "..", "tars")
    if not os.path.exists(os.path.join(parquet_dir, "complete")):
        feeder.convert(root, parquet_dir + "/", shuffle_on_write=seed)
        open(os.path.join(parquet_dir, "complete"), "w").close()
    if not os.path.exists(os.path.join(tar_dir, "complete")):
        import tarfile
        os.makedirs(tar_dir, exist_ok=True)
        order = np.random.default_rng(seed).permutation(len(files))
        per_shard = -(-len(files) // 8)
        for shard in range(8):
            with tarfile.open(os.path.join(tar_dir, f"train-{shard:04d}.tar"), "w") as tar:
                for i in order[shard * per_shard:(shard + 1) * per_shard]:
                    path = files[i]
                    key = f"{i:06d}"
                    tar.add(path, arcname=f"{key}.jpg")
                    label = os.path.basename(os.path.dirname(path)).split("_")[-1].encode()
                    info = tarfile.TarInfo(f"{key}.cls")
                    info.size = len(label)
                    tar.addfile(info, io.BytesIO(label))
        open(os.path.join(tar_dir, "complete"), "w").close()
    return parquet_dir, tar_dir


def rate(loader, count):
    start = time.perf_counter()
    seen = 0
    for images, labels in loader:
        seen += labels.shape[0]
    assert seen == count, (seen, count)
    return count / (time.perf_counter() - start)


class DrainedInCpp:
    """A feeder.DataLoader whose passes run in C++ to the end (no Python between batches): the rate
    of the same loader from C++, beside the Python loop's."""

    def __init__(self, loader):
        self.loader, self.epoch = loader, 0

    def rate(self, count):
        start = time.perf_counter()
        seen = self.loader._loader._drain_epoch(self.epoch)
        self.epoch += 1
        assert seen == count, (seen, count)
        return count / (time.perf_counter() - start)


def arguments(description):
    """The options every image benchmark here takes: the set, the passes, the loaders' settings."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--cache", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bench-images"))
    return parser


def main():
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)

    root = build_set(os.path.join(args.cache, f"wallpapers-{args.images}"), args.images)
    files = sorted(glob.glob(f"{root}/*/*.jpg"))
    encoded = [open(f, "rb").read() for f in files]
    sizes = [Image.open(f).size for f in files[:200]]
    print(f"{len(files)} JPEGs, {sum(map(len, encoded)) / 2**20:.0f} MiB; shorter sides "
          f"{min(min(s) for s in sizes)}-{max(min(s) for s in sizes)} px (first 200)")

    parquet_dir, tar_dir = build_shards(root, files)
    # The shards stream: 90% of them fit, beside the batch buffers the budget also holds (prefetch + 2 of
    # batch_size float32 3x224x224 images, a label and an index each).
    budget = sum(map(len, encoded)) * 9 // 10 + (args.workers + 2) * args.batch_size * (3 * 224 * 224 * 4 + 16)
    train_tv = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    eval_tv = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    pipelines = {
        "train: feeder": lambda: feeder.DataLoader(root, batch_size=args.batch_size, shuffle=True,
                                                   num_workers=args.workers, image_size=224,
                                                   augment="random_resized_crop", normalize=(MEAN, STD)),
        "train: feeder, the same loader drained in C++": lambda: DrainedInCpp(feeder.DataLoader(
            root, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, image_size=224,
            augment="random_resized_crop", normalize=(MEAN, STD))),
        "train: feeder, Parquet shards streamed": lambda: feeder.DataLoader(
            parquet_dir, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, image_size=224,
            augment="random_resized_crop", normalize=(MEAN, STD), memory_budget=budget, prefetch=args.workers),
        "train: feeder, tar shards streamed": lambda: feeder.DataLoader(
            tar_dir, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, image_size=224,
            augment="random_resized_crop", normalize=(MEAN, STD), memory_budget=budget, prefetch=args.workers),
        "train: torchvision ImageFolder + DataLoader": lambda: torch.utils.data.DataLoader(
            torchvision.datasets.ImageFolder(root, transform=train_tv), batch_size=args.batch_size, shuffle=True,
            num_workers=args.workers),
        "eval: feeder": lambda: feeder.DataLoader(root, batch_size=args.batch_size, num_workers=args.workers,
                                                  image_size=224, augment="center_crop", normalize=(MEAN, STD)),
        "eval: torchvision ImageFolder + DataLoader": lambda: torch.utils.data.DataLoader(
            torchvision.datasets.ImageFolder(root, transform=eval_tv), batch_size=args.batch_size,
            num_workers=args.workers),
    }
    def timed_pass(make):
        # One loader alive at a time: made, warmed up (its workers start, its buffers are touched,
        # the files are in the page cache), timed over one pass, freed. With all of them alive at
        # once, feeder's passes measured 3x slower than alone, torchvision's barely.
        loader = make()
        measure = loader.rate if isinstance(loader, DrainedInCpp) else lambda count: rate(loader, count)
        measure(len(files))
        result = measure(len(files))
        del loader
        gc.collect()
        return result


    def bare_decode():
        _feeder._decode_all(encoded[:200], args.workers)  # warm-up
        return len(encoded) / _feeder._decode_all(encoded, args.workers)

    results = {name: [] for name in [*pipelines, "bare full decode (libjpeg-turbo, threads)"]}
    for repeat in range(args.repeats):
        for name, make in pipelines.items():
            results[name].append(timed_pass(make))
        results["bare full decode (libjpeg-turbo, threads)"].append(bare_decode())
        print(f"pass {repeat + 1}/{args.repeats}: " +
              ", ".join(f"{name} {values[-1]:.0f}" for name, values in results.items()), flush=True)

    medians = {name: statistics.median(values) for name, values in results.items()}
    bare = medians["bare full decode (libjpeg-turbo, threads)"]
    print(f"\n{len(files)} images, {args.workers} workers, batch {args.batch_size}, medians of {args.repeats} passes\n")
    print(f"| pipeline | images/s | range | vs torchvision | vs bare full decode | vs feeder's folder |\n"
          f"|---|---:|---:|---:|---:|---:|")
    for name, value in medians.items():
        kind = name.split(":")[0]
        torchvision_rate = medians.get(f"{kind}: torchvision ImageFolder + DataLoader")
        versus = f"{value / torchvision_rate:.2f}x" if torchvision_rate else ""
        folder = f"{value / medians['train: feeder']:.2f}x" if "shards" in name or "C++" in name else ""
        print(f"| {name} | {value:.0f} | {min(results[name]):.0f}-{max(results[name]):.0f} | {versus} | "
              f"{value / bare:.2f}x | {folder} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"images": len(files), "workers": args.workers, "batch_size": args.batch_size,
                       "results": results, "medians": medians}, f, indent=2)


if __name__ == "__main__":
    main()
