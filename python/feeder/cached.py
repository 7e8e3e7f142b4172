"""feeder.cached(dataset): a map-style Dataset read once, in parallel, into a compact in-memory store.

The article's lesson, automated: a Dataset that does per-item work in __getitem__ (its v1: a pandas
row, converted to a tensor, every time) pays for that work on every item of every epoch. cached()
pays it once, in worker processes as torch's DataLoader would, and keeps the result as uint8 when
the values are 256 evenly spaced levels (raw pixels, ToTensor's pixels / 255, or those normalised
with one mean and std), 4 bytes a value less; as float32 otherwise. feeder.DataLoader then serves it
at the loader's speed.
"""

import os
import sys
import time

import numpy as np
import torch

__all__ = ["cached", "CachedDataset"]


class CachedDataset:
    """A Dataset's items held in memory by feeder.cached(): pass it to feeder.DataLoader.

    Attributes: ``images``, a NumPy (N,C,H,W) array (uint8 codes or float32 values, see
    ``pixel_type``); ``labels``, int64 (N) or None for a Dataset without labels; ``levels``, for
    uint8 codes the (first, step) with value = first + code * step, else None. Indexing gives
    ``(image, label)`` as float32 and int64 tensors with the Dataset's values, so it is a
    map-style Dataset itself."""

    def __init__(self, images, labels, levels, name):
        self.images = images
        self.labels = labels
        self.levels = levels
        self.name = name

    @property
    def pixel_type(self):
        return "uint8" if self.images.dtype == np.uint8 else "float32"

    @property
    def nbytes(self):
        return self.images.nbytes + (0 if self.labels is None else self.labels.nbytes)

    def normalization(self):
        """(mean, std) under which feeder's per-batch conversion, (code / 255 - mean) / std, gives back
        first + code * step; (0, 1) for float32 values, which are served as they are."""
        if self.levels is None:
            return 0.0, 1.0
        first, step = self.levels
        std = 1.0 / (255.0 * step)
        return -first * std, std

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, index):
        image = torch.from_numpy(np.array(self.images[index], dtype=np.float32))
        if self.levels is not None:
            first, step = self.levels
            image = image * step + first
        label = torch.tensor(-1 if self.labels is None else int(self.labels[index]), dtype=torch.long)
        return image, label

    def __repr__(self):
        return (f"<feeder.CachedDataset of {self.name}: {len(self)} samples of {tuple(self.images.shape[1:])}, "
                f"{self.pixel_type}, {self.nbytes / 2**20:.1f} MiB>")


class _Indexed(torch.utils.data.Dataset):
    """The dataset's items with their indices, converted in the worker that read them."""

    def __init__(self, dataset, item):
        self.dataset = dataset
        self.item = item

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        image, label = _split_item(self.dataset[index] if self.item is None else self.item(self.dataset[index]), index)
        return index, image, label


def _as_array(image, index):
    """One image as a (C,H,W) NumPy array: a tensor or array (C,H,W) or (H,W), or a PIL image."""
    if isinstance(image, torch.Tensor):
        image = image.detach().cpu().numpy()
    elif not isinstance(image, np.ndarray) and hasattr(image, "mode") and hasattr(image, "size"):
        image = np.asarray(image)  # a PIL image: (H,W) or (H,W,C)
        image = image.transpose(2, 0, 1) if image.ndim == 3 else image
    elif not isinstance(image, np.ndarray):
        raise ValueError(f"item {index}: the image is a {type(image).__name__}; feeder.cached needs a tensor, a "
                         f"NumPy array or a PIL image (pass item= to pick it out of the item)")
    if image.ndim == 2:
        image = image[None]
    if image.ndim != 3:
        raise ValueError(f"item {index}: the image has shape {tuple(image.shape)}; feeder.cached needs (C,H,W) or "
                         f"(H,W) (reshape it in the Dataset or in item=)")
    if image.dtype != np.uint8:
        if image.dtype.kind not in "fiu":
            raise ValueError(f"item {index}: the image is {image.dtype}, not numbers")
        image = image.astype(np.float32)
    return image


def _as_label(label, index):
    if label is None:
        return None
    if isinstance(label, torch.Tensor):
        if label.numel() != 1:
            raise ValueError(f"item {index}: the label has shape {tuple(label.shape)}; feeder.cached needs one integer")
        label = label.item()
    if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
        raise ValueError(f"item {index}: the label is {label!r}; feeder.cached needs an integer (class index)")
    return int(label)


def _split_item(item, index):
    """(image array, label or None) of one item: (image, label), {"image": ..., "label": ...} (the
    article's), or an image alone."""
    if isinstance(item, dict):
        if "image" not in item:
            raise ValueError(f"item {index} is a dict with keys {sorted(item)}; feeder.cached reads 'image' and "
                             f"'label' (pass item=lambda item: (item[...], item[...]) to say which)")
        return _as_array(item["image"], index), _as_label(item.get("label"), index)
    if isinstance(item, (tuple, list)):
        if len(item) == 1:
            return _as_array(item[0], index), None
        if len(item) != 2:
            raise ValueError(f"item {index} has {len(item)} parts; feeder.cached reads (image, label) (pass "
                             f"item=lambda item: (item[...], item[...]) to say which)")
        return _as_array(item[0], index), _as_label(item[1], index)
    return _as_array(item, index), None


def _collate(items):
    """A chunk of items, stacked in the worker (one array crosses back instead of many)."""
    first = items[0]
    for index, image, label in items:
        if image.shape != first[1].shape or image.dtype != first[1].dtype:
            raise ValueError(f"item {index} is {image.dtype} {tuple(image.shape)}, item {first[0]} "
                             f"{first[1].dtype} {tuple(first[1].shape)}: feeder.cached needs every image of one "
                             f"shape and type (resize them in the Dataset)")
        if (label is None) != (first[2] is None):
            raise ValueError(f"item {index} and item {first[0]}: one has a label and the other has not")
    labels = None if first[2] is None else np.array([label for _, _, label in items], dtype=np.int64)
    return items[0][0], np.stack([image for _, image, _ in items]), labels


# Values at most this far (as a share of a step) from first + code * step count as on the levels:
# float32 rounding of pixels / 255 and of a normalisation stays far below it.
_LEVEL_TOLERANCE = 1e-3


def _levels(images, chunk):
    """(first, step, codes) when every value of the float32 `images` is first + code * step for an
    integer code in [0, 255] (within float rounding), else None. Reads the values a chunk at a time."""
    first, last = float(images.min()), float(images.max())
    if first == last:
        return first, 1.0, np.zeros(images.shape, dtype=np.uint8)
    sample = np.unique(images.reshape(-1)[:1 << 20])
    if sample.size > 256:
        return None
    steps = int(round((last - first) / float(np.diff(sample).min())))
    if steps > 255:
        return None
    step = (last - first) / steps
    codes = np.empty(images.shape, dtype=np.uint8)
    for start in range(0, images.shape[0], chunk):
        values = images[start:start + chunk].astype(np.float64)
        code = np.rint((values - first) / step)
        if np.abs(first + code * step - values).max() > _LEVEL_TOLERANCE * step or code.min() < 0 or code.max() > 255:
            return None
        codes[start:start + chunk] = code
    return first, step, codes


class _Progress:
    """A line on stderr every few seconds while items are read, and one at the end."""

    def __init__(self, total, enabled):
        self.total = total
        self.enabled = enabled
        self.start = time.perf_counter()
        self.last = self.start

    def update(self, done):
        now = time.perf_counter()
        if self.enabled and now - self.last >= 2.0:
            self.last = now
            print(f"feeder.cached: {done}/{self.total} items read ({100 * done / self.total:.0f}%, "
                  f"{now - self.start:.1f} s)", file=sys.stderr, flush=True)

    def seconds(self):
        return time.perf_counter() - self.start


# torchvision's transforms that draw at random besides those named Random*.
_RANDOM_TRANSFORMS = {"ColorJitter", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix", "GaussianBlur",
                      "ElasticTransform", "ScaleJitter", "RandomShortestSize", "RandomIoUCrop"}
# Items read twice each to see whether they change between reads.
_ITEMS_READ_TWICE = 8


def _random_steps(dataset):
    """The random transforms of `dataset`'s transform (through Subsets), by name."""
    from .transforms import _steps
    while isinstance(dataset, torch.utils.data.Subset):
        dataset = dataset.dataset
    steps = _steps(getattr(dataset, "transform", None))
    return [type(step).__name__ for step in steps
            if type(step).__name__.startswith("Random") or type(step).__name__ in _RANDOM_TRANSFORMS]


def _refuse_random_items(dataset, item, name):
    """Raises ValueError when the dataset's items change between reads: caching them would freeze one
    random draw (an augmentation) for every epoch, silently."""
    why = None
    random_steps = _random_steps(dataset)
    if random_steps:
        why = f"its transform draws at random ({', '.join(random_steps)})"
    else:
        reader = _Indexed(dataset, item)
        for index in range(min(_ITEMS_READ_TWICE, len(dataset))):
            _, first, _ = reader[index]
            _, again, _ = reader[index]
            if first.shape != again.shape or not np.array_equal(first, again):
                why = f"item {index} differed between two reads (a random augmentation?)"
                break
    if why is None:
        return
    from .datasets import is_torchvision_dataset
    advice = ("pass the dataset to feeder.DataLoader itself: it reads the dataset's files and runs its transform per "
              "sample and epoch in C++ (docs/python.md, 'torchvision datasets')" if is_torchvision_dataset(dataset)
              else "pass the dataset to feeder.DataLoader itself, which has torch's DataLoader make its items in "
                   "worker processes, each read drawing anew (docs/python.md, 'Never silently different')")
    raise ValueError(f"feeder.cached: {name}'s items change between reads: {why}. Caching would freeze one draw "
                     f"for every epoch, and the model would train without its augmentation. Keep the deterministic "
                     f"part cached and the random part per epoch: {advice}")


def cached(dataset, *, num_workers=None, item=None, chunk_size=256, progress=None):
    """Reads every item of a map-style `dataset` once, in parallel, into memory, for feeder.DataLoader:

        loader = feeder.DataLoader(feeder.cached(MyDataset(...)), batch_size=512, shuffle=True)

    Items may be ``(image, label)``, a dict with ``"image"`` and ``"label"`` (the article's), or an
    image alone (unlabeled); `item` is a callable that turns another kind of item into one of these.
    An image is a tensor, a NumPy array or a PIL image, (C,H,W) or (H,W), every one of one shape;
    a label an integer. The values are held as uint8 when they are 256 evenly spaced levels (raw
    pixels; ToTensor's pixels / 255; those normalised with one mean and std), 4x smaller than float32,
    and served as the Dataset's float32 values within float rounding (a relative 1e-6); any other
    values are held and served exactly, as float32. Integer images become float32 values.

    A Dataset whose items change between reads (a random augmentation: a transform with Random*,
    ColorJitter, AutoAugment..., or items that differ when read twice) is refused, as caching would
    freeze one draw for every epoch: the message says how to keep the random part per epoch.

    Args:
        num_workers: processes reading items, as torch's DataLoader workers (forked, so the dataset
            needs no pickling where fork is the default); None: one per usable CPU; 0: this process.
        item: a callable item -> (image, label) or image, applied in the workers.
        chunk_size: items a worker reads and stacks before handing them over.
        progress: a line on stderr every few seconds; None: when stderr is a terminal.
    """
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__getitem__") \
            or not hasattr(dataset, "__len__"):
        raise ValueError(f"feeder.cached needs a map-style Dataset (__len__ and __getitem__), got "
                         f"{type(dataset).__name__}")
    if item is not None and not callable(item):
        raise ValueError(f"item must be a callable item -> (image, label), got {item!r}")
    if num_workers is None:
        num_workers = len(os.sched_getaffinity(0))
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers must be an integer >= 0, got {num_workers!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    total = len(dataset)
    if total == 0:
        raise ValueError("feeder.cached: the dataset is empty")
    name = type(dataset).__name__
    progress = _Progress(total, sys.stderr.isatty() if progress is None else bool(progress))

    # The first item fixes the shape, the type and whether there are labels; read here, so that a
    # Dataset of the wrong kind fails at once, not in a worker.
    _, first_image, first_label = _Indexed(dataset, item)[0]
    _refuse_random_items(dataset, item, name)
    chunks = torch.utils.data.DataLoader(_Indexed(dataset, item), batch_size=chunk_size, shuffle=False,
                                         num_workers=num_workers, collate_fn=_collate)
    images = np.empty((total, *first_image.shape), dtype=first_image.dtype)
    labels = None if first_label is None else np.empty(total, dtype=np.int64)
    done = 0
    for start, chunk_images, chunk_labels in chunks:
        if chunk_images.shape[1:] != first_image.shape or chunk_images.dtype != first_image.dtype:
            raise ValueError(f"items from {start} are {chunk_images.dtype} {tuple(chunk_images.shape[1:])}, item 0 "
                             f"{first_image.dtype} {tuple(first_image.shape)}: feeder.cached needs every image of "
                             f"one shape and type (resize them in the Dataset)")
        if (chunk_labels is None) != (labels is None):
            raise ValueError(f"items from {start} and item 0: some have labels and others have not")
        images[start:start + len(chunk_images)] = chunk_images
        if labels is not None:
            labels[start:start + len(chunk_labels)] = chunk_labels
        done += len(chunk_images)
        progress.update(done)
    if done != total:
        raise ValueError(f"feeder.cached: the dataset gave {done} items for its length {total}")

    levels = None
    if images.dtype != np.uint8:
        found = _levels(images, chunk_size)
        if found is not None:
            first, step, images = found
            levels = (first, step)
    else:
        levels = (0.0, 1.0)  # raw pixels: served as the float32 values 0..255 they are
    result = CachedDataset(images, labels, levels, name)
    if progress.enabled:
        print(f"feeder.cached: {total} items of {name} read in {progress.seconds():.1f} s, held as "
              f"{result.pixel_type} ({result.nbytes / 2**20:.1f} MiB)", file=sys.stderr, flush=True)
    return result
