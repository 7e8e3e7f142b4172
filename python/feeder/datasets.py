"""torchvision's datasets as feeder reads them: from the dataset's own file list or arrays.

An ImageFolder (or a DatasetFolder with torchvision's image loader) is read from ``dataset.samples``,
its labels passed through ``target_transform``; MNIST, FashionMNIST, KMNIST, EMNIST, QMNIST, CIFAR10
and CIFAR100 from ``dataset.data`` and ``dataset.targets``; a ``Subset`` (what ``random_split`` makes)
of any of them through its indices. The dataset's transform becomes the loader's per-sample stage
(feeder/transforms.py) or is refused by name. The user's dataset object stays what
``loader.dataset`` is.
"""

import os

import numpy as np
import torch

from . import _feeder
from .transforms import BatchStage, UnbatchableItems, UnsupportedTransform, image_recipe, pixel_recipe, split_recipe

__all__ = ["TorchvisionSet", "open_torchvision", "untranslatable"]

# Formats of torchvision's IMG_EXTENSIONS that feeder's decoders read.
_DECODED = (".jpg", ".jpeg", ".png", ".webp")


class TorchvisionSet:
    """A torchvision dataset opened for the loader.

    ``opened``: the C++ source over the base dataset's samples, in the base's order; ``indices``:
    the Subset's indices into it (None: every sample, in order); ``image``: the image stage's
    options for files, else None; ``dtype``: what the C++ loader makes, "float32" or "uint8";
    ``mean``, ``std``: its one normalisation for pixels; ``batch_stage``: what then runs on each
    batch in Python (feeder/transforms.py's BatchStage), or None; ``classes``."""

    def __init__(self):
        self.opened = None
        self.indices = None
        self.image = None
        self.dtype = "float32"
        self.mean, self.std = 0.0, 1.0
        self.batch_stage = None
        self.classes = None


def unwrap(dataset):
    """(the base dataset, the Subset indices into it or None) of a chain of Subsets."""
    indices = None
    while isinstance(dataset, torch.utils.data.Subset):
        inner = [int(i) for i in dataset.indices]
        indices = inner if indices is None else [inner[i] for i in indices]
        dataset = dataset.dataset
    return dataset, indices


def _torchvision_datasets():
    try:
        import torchvision.datasets as datasets
    except ImportError:
        return None
    return datasets


def is_torchvision_dataset(dataset):
    """Whether `dataset` (or the base of its Subsets) is one feeder reads itself."""
    datasets = _torchvision_datasets()
    if datasets is None:
        return False
    base, _ = unwrap(dataset)
    return isinstance(base, (datasets.DatasetFolder, datasets.MNIST, datasets.CIFAR10))


def _labels(base, targets):
    transform = getattr(base, "target_transform", None)
    if transform is None:
        return [int(t) for t in targets]
    labels = []
    for i, target in enumerate(targets):
        label = transform(int(target))
        if isinstance(label, torch.Tensor) and label.numel() == 1:
            label = label.item()
        if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
            raise UnsupportedTransform(
                f"the dataset's target_transform makes {label!r} of sample {i}'s target {int(target)}; feeder's "
                f"batches carry one integer label per sample")
        labels.append(int(label))
    return labels


def _folder_recipe(base, datasets):
    """The recipe of a DatasetFolder's transform, its files checked to be ones feeder decodes as
    torchvision's loader does; UnsupportedTransform otherwise."""
    loader = getattr(base, "loader", None)
    if loader not in (datasets.folder.default_loader, datasets.folder.pil_loader):
        raise UnsupportedTransform(
            f"{type(base).__name__} at {base.root} reads its files with {getattr(loader, '__qualname__', loader)!r}; "
            f"feeder decodes files as torchvision's default_loader does (JPEG, PNG, WebP to RGB)")
    try:
        recipe, tail = image_recipe(base.transform), None
    except UnbatchableItems:
        raise
    except UnsupportedTransform:
        split = split_recipe(base.transform)  # the crop in C++, the rest per sample in Python
        if split is None:
            raise
        recipe, tail = split
    paths = [path for path, _ in base.samples]
    other = [path for path in paths if not path.lower().endswith(_DECODED)]
    if other:
        raise UnsupportedTransform(
            f"{base.root}: {len(other)} of the dataset's {len(paths)} files are of formats feeder does not decode "
            f"(it reads JPEG, PNG and WebP), e.g. {', '.join(other[:3])}")
    return recipe, tail


def _open_folder(base, memory_budget, mix_streamed, datasets):
    recipe, tail = _folder_recipe(base, datasets)
    paths = [path for path, _ in base.samples]
    labels = _labels(base, [target for _, target in base.samples])
    classes = list(getattr(base, "classes", []) or [])
    opened = _feeder.open_image_files(os.fspath(base.root), [os.fsencode(p) for p in paths], labels, classes,
                                      memory_budget, mix_streamed)
    return opened, recipe, tail


def _arrays_of(base):
    """A pixel set's data as uint8 (N,C,H,W), or UnsupportedTransform."""
    data = base.data
    if isinstance(data, torch.Tensor):
        data = data.numpy()
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim not in (3, 4):
        raise UnsupportedTransform(f"{type(base).__name__}'s data is {data.dtype} {data.shape}; feeder reads uint8 "
                                   f"(N,H,W) or (N,H,W,C) arrays")
    # torchvision makes a PIL image of each item: (H,W) gray, or (H,W,C) RGB (CIFAR).
    return data[:, None] if data.ndim == 3 else data.transpose(0, 3, 1, 2)


def untranslatable(dataset):
    """Why feeder cannot read `dataset` (a torchvision dataset, or Subsets of one) and run its transform
    exactly as torchvision would, as a sentence; None when it can. Nothing is opened. Raises
    UnbatchableItems for items no DataLoader batches (PIL images)."""
    datasets = _torchvision_datasets()
    base, _ = unwrap(dataset)
    try:
        _refuse_own_items(base, datasets)
        if isinstance(base, datasets.DatasetFolder):
            _folder_recipe(base, datasets)
        else:
            pixel_recipe(base.transform)
            _arrays_of(base)
    except UnbatchableItems:
        raise
    except UnsupportedTransform as error:
        return str(error)
    return None


def _open_arrays(base, datasets):
    recipe = pixel_recipe(base.transform)
    images = _arrays_of(base)
    labels = np.asarray(_labels(base, np.asarray(base.targets).tolist()), dtype=np.int64)
    opened = _feeder.from_arrays(np.ascontiguousarray(images), labels)
    opened.classes = list(getattr(base, "classes", []) or []) or None
    return opened, recipe


def _refuse_own_items(base, datasets):
    """A subclass that makes its items itself would be bypassed by reading its files or arrays."""
    kind = datasets.DatasetFolder if isinstance(base, datasets.DatasetFolder) else (
        datasets.MNIST if isinstance(base, datasets.MNIST) else datasets.CIFAR10)
    for method in ("__getitem__", "__len__"):
        if getattr(type(base), method) is not getattr(kind, method):
            raise UnsupportedTransform(
                f"{type(base).__name__} overrides {kind.__name__}.{method}: feeder reads the files or arrays "
                f"{kind.__name__} lists and would not run it")


def open_torchvision(dataset, memory_budget, shuffle):
    """The TorchvisionSet of `dataset`; raises UnsupportedTransform (a ValueError) for a transform or
    loader feeder cannot run as the dataset would, DataError for files it cannot read."""
    datasets = _torchvision_datasets()
    base, indices = unwrap(dataset)
    _refuse_own_items(base, datasets)
    result = TorchvisionSet()
    result.indices = indices
    if isinstance(base, datasets.DatasetFolder):
        # A stream cannot follow a sampler's order; unshuffled, it keeps the dataset's order.
        result.opened, recipe, tail = _open_folder(base, memory_budget, shuffle, datasets)
        result.image = recipe.stage_options(3)
        result.dtype = recipe.dtype
        if tail is not None:  # the steps after the crop, per sample in Python
            result.batch_stage = tail
        elif recipe.batch_steps:  # a vertical flip after the crop
            result.batch_stage = BatchStage(recipe.batch_steps, False, None, None, 3)
    else:
        result.opened, recipe = _open_arrays(base, datasets)
        channels = result.opened.shape[0]
        mean = recipe.mean or [0.0]
        std = recipe.std or [1.0]
        if len(mean) not in (1, channels) or len(std) not in (1, channels):
            raise UnsupportedTransform(f"the dataset's Normalize has {len(mean)} means and {len(std)} stds for "
                                       f"{channels} channels")
        if recipe.batch_steps:  # crops and flips of the pixels: the loader serves them as they are
            result.dtype = "uint8"
            result.batch_stage = BatchStage(recipe.batch_steps, recipe.dtype == "float32", recipe.mean,
                                            recipe.std, channels)
        elif len(set(mean)) == 1 and len(set(std)) == 1:
            result.dtype = recipe.dtype
            result.mean, result.std = mean[0], std[0]
        else:  # one value per channel: the loader scales, the batch is normalised per channel
            result.dtype = recipe.dtype
            result.batch_stage = BatchStage([], False, mean, std, channels)
    result.classes = result.opened.classes
    return result
