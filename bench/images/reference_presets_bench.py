#!/usr/bin/env python3
"""feeder.DataLoader against torch's DataLoader over torchvision's classification reference as it is:
its own ClassificationPresetTrain (default: RandomResizedCrop, flip, PILToTensor, ConvertImageDtype,
Normalize), the same with --auto-augment ta_wide and --random-erase 0.25 (TrivialAugmentWide and
RandomErasing: the crop in C++, the rest per sample in Python), and its mixup/cutmix collate_fn
(RandomChoice of RandomMixup and RandomCutmix over default_collate), each over the same
ImageFolder object, in one run.

The reference's modules are read from its folder (references/classification of torchvision's
source: Debian's `apt-get source pytorch-vision`, with a deb-src line; or a git checkout of
pytorch/vision at the installed version), given with --reference; none of it is copied here.
The set is images_bench.py's (JPEG crops of Debian's wallpapers, cached under --cache). Rows:
images/s of the loader alone, the median of --repeats passes alternated between the rows, each
after a warm-up pass, one loader alive at a time; 2 workers each (C++ threads for feeder,
processes for torch); batch --batch-size.

    build/venv/bin/python3 bench/images/reference_presets_bench.py --reference DIR [--images 2000]
"""

import glob
import os
import statistics
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(__file__))
import feeder  # noqa: E402
from images_bench import arguments, build_set  # noqa: E402
from torchvision_dataset_bench import alternated, cpu_name  # noqa: E402


def main():
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True,
                        help="torchvision's references/classification folder (presets.py, transforms.py)")
    args = parser.parse_args()
    sys.path.insert(0, args.reference)
    import presets  # noqa: E402  (the reference's own)
    import transforms as reference_transforms  # noqa: E402

    torch.set_num_threads(1)
    root = build_set(os.path.join(args.cache, f"wallpapers-{args.images}"), args.images)
    count = len(glob.glob(f"{root}/*/*.jpg"))
    default = torchvision.datasets.ImageFolder(root, presets.ClassificationPresetTrain(crop_size=224))
    augmented = torchvision.datasets.ImageFolder(root, presets.ClassificationPresetTrain(
        crop_size=224, auto_augment_policy="ta_wide", random_erase_prob=0.25))
    mixupcutmix = torchvision.transforms.RandomChoice([
        reference_transforms.RandomMixup(len(default.classes), p=1.0, alpha=0.2),
        reference_transforms.RandomCutmix(len(default.classes), p=1.0, alpha=1.0)])

    def collate_fn(batch):  # the reference's
        return mixupcutmix(*torch.utils.data.default_collate(batch))

    common = {"batch_size": args.batch_size, "num_workers": args.workers, "shuffle": True}
    rows = {}
    for name, dataset, extra in (("default preset", default, {}), ("ta_wide + random_erase", augmented, {}),
                                 ("mixup/cutmix collate", default, {"collate_fn": collate_fn})):
        rows[f"{name}: feeder.DataLoader"] = lambda d=dataset, e=extra: feeder.DataLoader(d, **common, **e)
        rows[f"{name}: torch DataLoader"] = lambda d=dataset, e=extra: torch.utils.data.DataLoader(d, **common, **e)
    results = alternated(rows, args.repeats, count)
    print(f"\n{count} images, batch {args.batch_size}, {args.workers} workers, {args.repeats} passes each; "
          f"{cpu_name()}, torch {torch.__version__}, torchvision {torchvision.__version__}")
    medians = {name: statistics.median(values) for name, values in results.items()}
    names = list(rows)
    for ours, theirs in zip(names[0::2], names[1::2]):
        for name in (ours, theirs):
            values = results[name]
            print(f"{name:48s} median {medians[name]:6.0f}  (min {min(values):.0f}, max {max(values):.0f})")
        print(f"{ours.split(':')[0]}: feeder against torch's DataLoader {medians[ours] / medians[theirs]:.2f}x\n")


if __name__ == "__main__":
    main()
