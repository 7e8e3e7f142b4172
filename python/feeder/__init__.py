"""feeder for PyTorch: a drop-in DataLoader over feeder's C++ loader.

    import feeder
    loader = feeder.DataLoader("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
                               batch_size=512, shuffle=True, num_workers=2)
    for epoch in range(5):
        loader.set_epoch(epoch)
        for images, labels in loader:      # float32 (B,C,H,W), int64 (B)
            ...

Batches are assembled by C++ threads straight into reusable buffers; the tensors handed out are
those buffers (no copy: they cross over DLPack, so the extension links no LibTorch and works with
any torch), and a buffer goes back to the loader when its tensors are freed. The order
of samples depends only on (seed, epoch, rank, world_size) and the data, never on num_workers.

Errors: ValueError for bad options, feeder.DataError (an OSError) for bad or missing files, with the
messages the `feeder` command prints; an error in a worker is raised by the next() that needed it.
"""

import collections
import json
import numbers
import os
import sys
import warnings
import weakref

import numpy as np

try:
    import torch
except ImportError as error:  # not a declared dependency: pip must not replace the user's torch
    raise ImportError("feeder needs PyTorch (1.13 or later) in this environment: install torch first "
                      "(Debian: python3-torch; or pip, the build for your CUDA)") from error
from torch.utils.dlpack import from_dlpack as _from_dlpack

from . import _feeder
from . import datasets as _datasets
from .cached import CachedDataset, cached
from .order import draw_seed as _draw_seed, own_sampler as _own_sampler, sampler_padding as _sampler_padding
from .transforms import UnsupportedTransform
from . import transforms as _transforms
from . import stage_pool as _stage_pool
from . import torch_run as _torch_run

_default_collate = torch.utils.data.default_collate

__version__ = _feeder.__version__
DataError = _feeder.DataError
DataError.__module__ = "feeder"

__all__ = ["DataLoader", "Batch", "FieldBatch", "DataError", "UnsupportedTransform", "PlanWarning", "cached", "CachedDataset", "convert", "decode_image", "inspect", "recommended_environment", "set_storage_options", "storage_stats", "__version__"]


def recommended_environment(threads=0):
    """The environment feeder recommends for training on the CPU, as `feeder train` sets it for itself:
    OMP_NUM_THREADS (`threads`; 0: keep a set OMP_NUM_THREADS, else one per usable CPU) and glibc's
    malloc thresholds, which keep LibTorch's per-step activation buffers in the heap instead of
    returning them to the kernel (far fewer page faults). They take effect only in a process started
    with them: pass them to the training process, e.g. ``subprocess.run(cmd, env={**os.environ,
    **feeder.recommended_environment()})``. feeder never changes the process it runs in."""
    omp_threads, mmap_threshold, trim_threshold = _feeder.recommended_process_settings(
        _check_int("threads", threads, 0))
    environment = {"MALLOC_MMAP_THRESHOLD_": str(mmap_threshold), "MALLOC_TRIM_THRESHOLD_": str(trim_threshold)}
    if omp_threads is not None:
        environment["OMP_NUM_THREADS"] = str(omp_threads)
    return environment


def set_storage_options(*, endpoint=None, region=None, profile=None, anonymous=False, addressing="auto",
                        ca_bundle=None, max_connections=None, max_retries=None, retry_seconds=None, cache_dir=None,
                        cache_limit=None, max_listed_keys=None, stall_seconds=None, min_bytes_per_second=None):
    """Settings of s3:// and http(s):// paths opened from now on, for the whole process.

    What is left None is read as the AWS tools read it: endpoint from AWS_ENDPOINT_URL_S3 or
    AWS_ENDPOINT_URL (else AWS's own), region from AWS_REGION, AWS_DEFAULT_REGION or the profile's
    config (else us-east-1), credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
    AWS_SESSION_TOKEN or the profile (AWS_PROFILE, else "default") of ~/.aws/credentials and
    ~/.aws/config, ca_bundle from AWS_CA_BUNDLE (else the system's). anonymous=True: unsigned
    requests, as to a public bucket. addressing: "path" (endpoint/bucket/key), "virtual"
    (bucket.endpoint/key) or "auto" (path-style for an endpoint given, as botocore does).
    At most max_connections are open at once (None: 16). Transient failures are retried up to
    max_retries times (None: 8) with backoff, within retry_seconds (None: 60).
    cache_dir: a local directory where what is read is kept, so that later epochs and runs read it
    there (the processes of one node may share it); cache_limit: the most bytes kept there, least
    recently used removed first (an int, or a size such as "50GB"; None: no limit). Without cache_dir
    nothing is written to disk. max_listed_keys: the most keys one listing of an s3:// prefix may
    give (None: a million), where a server that lists for ever is stopped. Deadlines: a transfer that
    moves no byte for stall_seconds (None: 30) fails, and so does a request that takes longer than
    10 s (to connect) + stall_seconds + its bytes / min_bytes_per_second (None: 64 KiB a second);
    both are transient failures, retried.
    """
    if addressing not in ("auto", "path", "virtual"):
        raise ValueError(f"addressing={addressing!r}: expected 'auto', 'path' or 'virtual'")
    defaults = _feeder.default_storage_options()  # the library's, resolved there
    max_connections = defaults["max_connections"] if max_connections is None else max_connections
    max_retries = defaults["max_retries"] if max_retries is None else max_retries
    retry_seconds = defaults["retry_seconds"] if retry_seconds is None else retry_seconds
    max_listed_keys = defaults["max_listed_keys"] if max_listed_keys is None else max_listed_keys
    _check_int("max_listed_keys", max_listed_keys, 1)
    stall_seconds = defaults["stall_seconds"] if stall_seconds is None else stall_seconds
    min_bytes_per_second = defaults["min_bytes_per_second"] if min_bytes_per_second is None else min_bytes_per_second
    for name, value in (("stall_seconds", stall_seconds), ("min_bytes_per_second", min_bytes_per_second)):
        if not _is_real(value) or value <= 0:
            raise ValueError(f"{name}={value!r}: expected a positive number")
    _check_int("max_connections", max_connections, 1)
    _check_int("max_retries", max_retries, 0)
    if not _is_real(retry_seconds) or retry_seconds < 0:
        raise ValueError(f"retry_seconds={retry_seconds!r}: expected a number of seconds, at least 0")
    if cache_limit is not None and cache_dir is None:
        raise ValueError("cache_limit needs cache_dir")
    if isinstance(cache_limit, str):
        cache_limit = _feeder.parse_byte_size(cache_limit, "cache_limit")
    elif cache_limit is not None:
        _check_int("cache_limit", cache_limit, 1)
    _feeder.set_storage_options(endpoint or "", region or "", profile or "", bool(anonymous), addressing,
                                os.fspath(ca_bundle) if ca_bundle else "", int(max_connections), int(max_retries),
                                float(retry_seconds), os.fspath(cache_dir) if cache_dir else "", int(cache_limit or 0),
                                int(max_listed_keys), float(stall_seconds), float(min_bytes_per_second))


def storage_stats():
    """What remote reads have cost since the process started: a dict of requests (each attempt; what an
    object store bills), bytes received, retries, failures given up on, and cache_bytes: bytes read
    from cache_dir instead of the store."""
    return _feeder.storage_stats()


def _byte_size(value, name, example):
    """A size given as a positive number of bytes or as text ("256MiB"); ValueError naming `name`."""
    if isinstance(value, str):
        return _feeder.parse_byte_size(value, name)
    number = _scalar(value)
    if isinstance(number, (bool, np.bool_)) or not isinstance(number, numbers.Integral) or number <= 0:
        raise ValueError(f"{name} must be a positive number of bytes or a size such as '{example}', got {value!r}")
    return int(number)


def _memory_budget_bytes(memory_budget):
    if memory_budget is None:
        return _feeder.default_memory_budget()
    return _byte_size(memory_budget, "memory_budget", "256MiB")


def _piece_size_bytes(piece_size):
    return 0 if piece_size is None else _byte_size(piece_size, "piece_size", "8MiB")


def _mean_std(normalize):
    """normalize= as (mean, std): a pair, or torchvision's transforms.Normalize (v1 or v2) itself."""
    if type(normalize).__name__ == "Normalize" and hasattr(normalize, "mean") and hasattr(normalize, "std"):
        return normalize.mean, normalize.std
    return normalize


def _normalization(normalize):
    """(mean, std) as two floats; torchvision's one-channel form ((0.286,), (0.353,)) is accepted."""
    if normalize is None:
        return 0.0, 1.0
    normalize = _mean_std(normalize)
    try:
        mean, std = normalize
        mean = float(mean[0] if isinstance(mean, (tuple, list)) and len(mean) == 1 else mean)
        std = float(std[0] if isinstance(std, (tuple, list)) and len(std) == 1 else std)
    except (TypeError, ValueError):
        raise ValueError(f"normalize must be None or (mean, std) of the pixel values scaled to [0, 1], one "
                         f"mean and std for every channel, got {normalize!r}") from None
    return mean, std


def _as_uint8_images(images):
    """A C-contiguous uint8 (N,C,H,W) NumPy view of `images`; copies only what is not contiguous."""
    if isinstance(images, torch.Tensor):
        if images.device.type != "cpu":
            raise ValueError(f"images must be in CPU memory, got a tensor on {images.device}")
        if images.dtype != torch.uint8:
            raise ValueError(f"images must be uint8 (raw pixels; feeder scales and normalises them per batch), "
                             f"got {images.dtype}")
        images = images.detach().numpy()
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 (raw pixels; feeder scales and normalises them per batch), "
                         f"got {images.dtype}")
    if images.ndim == 3:
        images = images[:, None, :, :]  # (N,H,W): one channel
    if images.ndim != 4:
        raise ValueError(f"images must be (N,C,H,W) or (N,H,W), got shape {tuple(images.shape)}")
    return np.ascontiguousarray(images)


def _as_int64_labels(labels):
    if labels is None:
        return None
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise ValueError(f"labels must be integers, got {labels.dtype}")
    return np.ascontiguousarray(labels, dtype=np.int64)


def _labeled_or_allowed(opened, path, allow_unlabeled):
    if not opened.labeled and not allow_unlabeled:
        raise DataError(
            f"{path}: no labels (an IDX images file reads them from the *-labels-idx1-ubyte[.gz] file beside it; "
            f"a CSV or Parquet set from its label column; tar shards from key.cls members): batches would carry "
            f"labels of -1. Pass allow_unlabeled=True to iterate the images alone")
    return opened


def _open_source(source, labels, memory_budget, train, allow_unlabeled, fields=(), piece_bytes=0):
    if isinstance(source, (str, os.PathLike)):
        if labels is not None:
            raise ValueError("labels= goes with in-memory images; a file or set carries its own labels")
        path = os.fspath(source)
        # Paths cross as os.fsencode gives them: any name a POSIX file system allows. train=: the
        # training or the test split of a directory of IDX files, as torchvision's MNIST takes it.
        opened = _feeder.open_dataset(os.fsencode(path), memory_budget, bool(train), list(fields), piece_bytes)
        path = opened.name  # as the library names it: a URL without its secrets
        if opened.skipped_unsupported:
            warnings.warn(f"{path}: {opened.skipped_unsupported} images of formats feeder does not decode (.bmp, "
                          f".ppm, .pgm, .tif, .tiff) were skipped; torchvision's ImageFolder would include them. "
                          f"The first: {', '.join(opened.first_unsupported)}", RuntimeWarning, stacklevel=3)
        return _labeled_or_allowed(opened, path, allow_unlabeled)
    if isinstance(source, CachedDataset):
        if labels is not None:
            raise ValueError("labels= goes with in-memory images; a cached dataset carries its own labels")
        images = np.ascontiguousarray(source.images)
        if images.dtype == np.uint8:
            return _feeder.from_arrays(images, source.labels)
        return _feeder.from_float_arrays(images, source.labels)
    if isinstance(source, tuple) and len(source) == 2 and labels is None:
        source, labels = source
    if isinstance(source, torch.utils.data.Dataset) or (
            hasattr(source, "__getitem__") and hasattr(source, "__len__")
            and not isinstance(source, (np.ndarray, torch.Tensor, list, tuple))):
        raise ValueError(f"a {type(source).__name__} Dataset is read through feeder.cached(dataset): every item "
                         f"once, in parallel, into memory, then served at the loader's speed "
                         f"(feeder.DataLoader(feeder.cached(dataset), ...))")
    return _feeder.from_arrays(_as_uint8_images(source), _as_int64_labels(labels))


def _torch_run_reason(source, collate_fn, worker_init_fn, multiprocessing_context, timeout, batch_sampler,
                      pin_memory_device, in_order):
    """Why the items must be made as torch's DataLoader makes them (feeder/torch_run.py), as a
    sentence, or None when feeder makes them itself. A torchvision dataset is asked later, once
    its transform is read."""
    if _custom_collate(collate_fn) and not _datasets.is_torchvision_dataset(source):
        return (f"collate_fn {getattr(collate_fn, '__qualname__', type(collate_fn).__name__)} is the script's own: "
                f"torch's DataLoader calls it on each batch's samples")
    for name, value in {"worker_init_fn": worker_init_fn, "multiprocessing_context": multiprocessing_context}.items():
        if value is not None:
            return f"{name} is given: it applies to torch's worker processes"
    if timeout != 0:
        return f"timeout={timeout!r} is given: it applies to torch's worker processes"
    if pin_memory_device:
        return f"pin_memory_device={pin_memory_device!r} is given"
    if not in_order:
        return "in_order=False is given"
    if batch_sampler is not None and not isinstance(batch_sampler, torch.utils.data.BatchSampler) and not isinstance(
            getattr(batch_sampler, "batch_size", None), int) and hasattr(batch_sampler, "__iter__"):
        return (f"batch_sampler {type(batch_sampler).__name__} has no batch_size: its batches may be of any size, "
                f"and feeder assembles batches of one size")
    return None


def _custom_collate(collate_fn):
    return collate_fn is not None and collate_fn is not _default_collate


def _torch_dataset_reason(source):
    """Why a dataset is one whose items torch's DataLoader makes: the user's own Dataset or an
    IterableDataset; None for what feeder reads itself (paths, arrays, cached sets, torchvision's
    datasets, asked later)."""
    if isinstance(source, torch.utils.data.IterableDataset):
        return f"{type(source).__name__} is an IterableDataset: it orders and makes its own items"
    view, _ = _datasets.unwrap(source)
    if _feeders_own(source) or _datasets.is_torchvision_dataset(source):
        return None
    if isinstance(source, torch.utils.data.Dataset) or (hasattr(source, "__getitem__") and hasattr(source, "__len__")):
        return (f"a {type(view).__name__} dataset makes its items in its own __getitem__ (feeder.cached(dataset) "
                f"reads them once, in parallel, into memory, then serves them at feeder's speed)")
    return None


def _feeders_own(source):
    """A set only feeder reads (a path, arrays, a cached set, a view of another loader's set)."""
    view, _ = _datasets.unwrap(source)
    return isinstance(source, (str, os.PathLike, CachedDataset, tuple, list, np.ndarray, torch.Tensor)) or isinstance(
        view, _DatasetView)


def _check_transform(transform):
    if transform is not None and not callable(transform):
        raise ValueError(f"transform must be a callable (images, labels) -> (images, labels), got {transform!r}")


def _resolve_sampling(sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed, generator):
    """torch's rules for its sampler arguments, with torch's words: a BatchSampler taken apart, a
    loader's own sampler given back, a generator's seed. Returns (sampler, batch_sampler, batch_size,
    drop_last, shuffle, rank, world_size, seed) as the loader takes them."""
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        if isinstance(batch_sampler, torch.utils.data.BatchSampler):  # its parts, as if given apart
            sampler, batch_size, drop_last = batch_sampler.sampler, batch_sampler.batch_size, batch_sampler.drop_last
            batch_sampler = None
        else:  # run as given, batch by batch: feeder's batches have one size (the last may be smaller)
            batch_size = getattr(batch_sampler, "batch_size", None)
            if not hasattr(batch_sampler, "__iter__") or not isinstance(batch_size, int) or batch_size < 1:
                raise ValueError(f"batch_sampler {type(batch_sampler).__name__} has no batch_size attribute: "
                                 f"feeder assembles batches of one size (the last may be smaller), which it "
                                 f"must know before the first; give the batch sampler a batch_size, or pass "
                                 f"sampler=, batch_size= and drop_last=")
    own = getattr(sampler, "_feeder_own", None)  # a loader's own sampler, passed back (OwnSampler)
    if own is not None:
        if shuffle is not None and bool(shuffle) != own.shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        shuffle, rank, world_size = own.shuffle, own.rank, own.world_size
        if seed is None and generator is None:
            seed = own.seed
        sampler = None
    if sampler is not None:
        if shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if rank != 0 or world_size != 1:
            raise ValueError("pass a sampler (DistributedSampler splits the epoch among ranks itself) or rank= and "
                             "world_size=, not both")
        if not hasattr(sampler, "__iter__"):
            raise ValueError(f"sampler must be an iterable of indices, got {type(sampler).__name__}")
    shuffle = bool(shuffle)
    if generator is not None:
        if seed is not None:
            raise ValueError("pass seed= or generator=, not both")
        seed = generator.initial_seed()
    return sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed


def _check_counts(num_workers, prefetch, prefetch_factor, batch_size, seed, world_size, rank, shuffle_window):
    """The loader's counts checked, and prefetch (batches in flight) resolved from prefetch_factor."""
    if prefetch is not None and prefetch_factor is not None:
        raise ValueError("pass prefetch= (batches in flight) or prefetch_factor= (per worker), not both")
    num_workers = _check_int("num_workers", num_workers, 0)
    if prefetch_factor is not None:
        prefetch = _check_int("prefetch_factor", prefetch_factor, 1) * max(1, num_workers)
    elif prefetch is None:
        prefetch = 4
    batch_size = _check_int("batch_size", batch_size, 1)
    if seed is not None:
        seed = _check_int("seed", seed, 0)
    prefetch = _check_int("prefetch", prefetch, 1)
    world_size = _check_int("world_size", world_size, 1)
    rank = _check_int("rank", rank, 0)
    shuffle_window = _check_int("shuffle_window", shuffle_window, 0)
    if rank >= world_size:
        raise ValueError(f"rank must be below world_size {world_size}, got {rank}")
    return num_workers, prefetch, batch_size, seed, world_size, rank, shuffle_window


def _check_dtype_and_layout(dtype, normalize, layout):
    """The batch dtype's name ("float32" or "uint8"), checked with normalize= and layout=."""
    dtypes = {torch.float32: "float32", "float32": "float32", torch.uint8: "uint8", "uint8": "uint8"}
    if dtype not in dtypes:
        raise ValueError(f"dtype must be torch.float32 or torch.uint8, got {dtype!r}")
    if dtypes[dtype] == "uint8" and normalize is not None:
        raise ValueError("dtype=torch.uint8 serves the pixels unnormalised: leave normalize=None and normalise "
                         "on the device, or ask for torch.float32")
    if not isinstance(layout, str) or layout.lower() not in ("nchw", "nhwc"):
        raise ValueError(f"layout must be 'nchw' or 'nhwc', got {layout!r}")
    return dtypes[dtype]


def _field_value(value, pin=False):
    """A batch's field from the loader: a tensor (B, *shape); for a sequence field, given as its
    values and offsets, a list of B tensors, sample i's values (views of one tensor), as a collate_fn
    keeping sequences of different lengths as a list gives them."""
    if not isinstance(value, tuple):
        tensor = _from_dlpack(value)
        return tensor.pin_memory() if pin else tensor
    values, offsets = _from_dlpack(value[0]), _from_dlpack(value[1])
    if pin:
        values = values.pin_memory()
    return list(torch.split(values, torch.diff(offsets).tolist()))


def _check_fields(fields, source):
    """fields= as a tuple of column names, for a set given by its path."""
    if fields is None:
        fields = ()
    elif isinstance(fields, str) or not all(isinstance(name, str) for name in fields):
        raise ValueError(f"fields must be a list of column names, got {fields!r}")
    if fields and not isinstance(source, (str, os.PathLike)):
        raise ValueError(f"fields= names columns of a Parquet set given by its path; a {type(source).__name__} "
                         f"has images and labels only")
    return tuple(fields)


class _DatasetView:
    """What DataLoader.dataset gives for a set opened from a path or arrays: the set's size
    (``len(loader.dataset)``, as with torch's DataLoader), ``dataset[i]`` (sample i as the loader
    makes it: an image tensor and its label, augmentation drawn for epoch 0), its image shape,
    whether it is labeled, its labels (``targets``), class names (``classes``, ``class_to_idx``),
    ``root`` (the path opened) and its name. A map-style Dataset itself, so ``Subset(loader.dataset,
    ...)`` works."""

    __slots__ = ("_source", "_shape", "_targets", "_item_loader", "_make_item_loader")

    def __init__(self, source, shape, make_item_loader=None):
        self._source = source
        self._shape = shape
        self._targets = None
        self._item_loader = None
        self._make_item_loader = make_item_loader

    def __getitem__(self, index):
        if isinstance(index, slice) or not isinstance(_scalar(index), numbers.Integral):
            raise TypeError(f"dataset indices must be integers, got {type(index).__name__}")
        index = int(_scalar(index))
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of range for a dataset of {size} samples")
        if self._source.streaming:
            raise ValueError(f"{self._source.name} is streamed (over the memory budget): it is read in pieces, "
                             f"in an order of its own, not one sample at a time")
        if self._item_loader is None:
            self._item_loader = self._make_item_loader()
        self._item_loader.start_epoch_with_order(0, [index % size], 0)
        images, labels, _, values = self._item_loader.next()
        image, label = _from_dlpack(images)[0].clone(), int(_from_dlpack(labels)[0])
        if not values:
            return image, label
        # A sample of named fields, as a dict (what default_collate stacks into a FieldBatch's dict).
        return {"image": image, "label": label, **{name: _field_value(value)[0].clone() for name, value in values}}

    @property
    def root(self):
        return self._source.name

    transform = None
    target_transform = None

    def __len__(self):
        return self._source.num_samples

    @property
    def image_shape(self):
        return self._shape

    @property
    def labeled(self):
        return self._source.labeled

    @property
    def classes(self):
        """The class names (label i is classes[i]): an image folder's, as torchvision's ImageFolder, or a
        Parquet set's Hugging Face ClassLabel names; else None."""
        return self._source.classes

    @property
    def class_to_idx(self):
        """{class name: label}, as torchvision's ImageFolder has it; None when the set names no classes."""
        classes = self.classes
        return None if classes is None else {name: i for i, name in enumerate(classes)}

    @property
    def targets(self):
        """Every sample's label, in the set's order (a list of ints, as torchvision's ImageFolder
        and MNIST have it: sample i, as batches' sample indices count, has label targets[i]); None
        for an unlabeled set. A set in memory, a folder or Parquet shards (their label column
        alone) give them on first use; tar shards are read through once, their images dropped."""
        if not self._source.labeled:
            return None
        if self._targets is None:
            self._targets = self._source.read_labels()
        return self._targets

    @property
    def samples(self):
        """An image folder's ``(path, label)`` per sample, in the set's order, as torchvision's
        ImageFolder has them (``imgs`` is the same list); None for other sets."""
        if not self._source.image_files:
            return None
        return list(zip(self._source.sample_names(), self.targets))

    imgs = samples

    @property
    def name(self):
        return self._source.name

    def __repr__(self):
        return f"<feeder dataset {self._source.name!r}: {len(self)} samples of {self._shape}>"


_AUGMENTS = {None: "resize", "resize": "resize", "random_resized_crop": "random_resized_crop",
             "center_crop": "center_crop"}


def _scalar(value):
    """A one-element tensor or array as its Python number; anything else as it is."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    return value


def _is_real(value):
    """A number: Python's or NumPy's, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _per_channel(name, value, channels):
    if isinstance(value, (np.ndarray, torch.Tensor)):
        value = value.tolist()  # a mean computed with NumPy or torch
    values = [_scalar(v) for v in value] if isinstance(value, (tuple, list)) else [value]
    if len(values) == 1:
        values = values * channels
    if len(values) != channels or not all(_is_real(v) for v in values):
        raise ValueError(f"{name} must be one number or {channels} (one per channel), got {value!r}")
    return [float(v) for v in values] + [0.0 if name == "mean" else 1.0] * (3 - channels)


def _image_options(image_size, augment, channels, resize, scale, ratio, flip, dct_scaling, normalize):
    """The image stage's options for encoded images, checked."""
    if image_size is None:
        raise ValueError("encoded images (a folder, or a Parquet set of image files) need image_size= (an int, "
                         "or (height, width)): the size of every image in a batch")
    size = _scalar(image_size)
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        height = width = size
    else:
        try:
            height, width = image_size
        except (TypeError, ValueError):
            raise ValueError(f"image_size must be an integer or (height, width), got {image_size!r}") from None
    height = _check_int("image_size", height, 1)
    width = _check_int("image_size", width, 1)
    if augment not in _AUGMENTS:
        raise ValueError(f"augment must be 'random_resized_crop' (training), 'center_crop' (evaluation) or None "
                         f"(the whole image resized), got {augment!r}")
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 (gray) or 3 (RGB), got {channels!r}")
    if resize is not None and _AUGMENTS[augment] != "center_crop":
        raise ValueError(f"resize= applies to augment='center_crop' (Resize(resize) + CenterCrop(image_size)); "
                         f"with augment={augment!r} it would be ignored")
    if resize is None:
        resize = round(max(height, width) * 256 / 224)  # torchvision's Resize(256) before CenterCrop(224)
    mean, std = ((0.0,), (1.0,)) if normalize is None else _mean_std(normalize)
    return {"channels": channels, "height": height, "width": width, "crop": _AUGMENTS[augment],
            "scale": tuple(float(v) for v in scale), "ratio": tuple(float(v) for v in ratio), "flip": bool(flip),
            "resize": _check_int("resize", resize, 1), "mean": _per_channel("mean", mean, channels),
            "std": _per_channel("std", std, channels), "dct_scaling": bool(dct_scaling)}


def _check_int(name, value, minimum):
    number = _scalar(value)
    if isinstance(number, (bool, np.bool_)) or not isinstance(number, numbers.Integral) or number < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(number)


class DataLoader:
    """Iterates a dataset in batches of (images, labels) tensors, like torch.utils.data.DataLoader.

    Args:
        source: a torchvision dataset as it is (an ImageFolder or a DatasetFolder of images;
            MNIST, FashionMNIST, CIFAR10 and their kin; a Subset or random_split of any of them),
            read from its own file list or arrays, its transform run per sample in C++ with
            torchvision's semantics (feeder/transforms.py), the steps after the crop that have no
            C++ form in Python, ``loader.dataset`` being the dataset itself; any other torch
            Dataset (its items made by torch's DataLoader, feeder/torch_run.py), or one read once
            through ``feeder.cached(dataset)``; a folder of images
            (see image_size below), a path (an IDX ``*-images-idx3-ubyte[.gz]`` file, a CSV, a Parquet file, a directory
            of Parquet shards, or a glob), or in-memory data: uint8 images (N,C,H,W) or (N,H,W) as a
            torch tensor or NumPy array, with labels as ``(images, labels)`` or ``labels=``. A
            C-contiguous uint8 array is used where it lies, not copied; do not change it while the
            loader lives. Labels are copied (8 bytes an image).
        batch_size: samples per batch (of this rank); 1 by default, as torch's.
        shuffle: shuffle every epoch; False (the default, as torch's) keeps the data's order.
        seed: the seed of the shuffle and of random augmentation. The order is a function of (seed,
            epoch, rank, world_size) only. Not given: drawn from torch's global generator at every
            iter(), making exactly the draws torch's DataLoader makes (its workers' base seed, and
            RandomSampler's with shuffle), so ``torch.manual_seed(s)`` decides the order; with
            rank=/world_size=, 42 on every rank, as DistributedSampler's fixed seed (the draws are
            still made). ``loader.seed`` is the seed of the last pass.
        generator: a torch.Generator instead of seed: its initial_seed() becomes the seed (the
            order then depends on (that seed, epoch), not on the generator's later state).
        sampler: a torch sampler (DistributedSampler, RandomSampler, SequentialSampler, or any
            iterable of indices): the indices ``iter(sampler)`` yields at each iter() are the ones
            served, so ``sampler.set_epoch(e)`` on it takes effect at the next iter(). A
            DistributedSampler's repeats (its padding) are counted in ``batch.num_padding``. The set
            must be in memory (a stream reads in an order of its own).
        batch_sampler: torch's BatchSampler: its sampler, batch_size and drop_last, as above.
        collate_fn: torch's default_collate (what feeder's batches are), or the script's own, called
            on each batch's samples (see python_workers).
        drop_last: drop the last, smaller batch.
        num_workers: C++ threads assembling batches (0: on the calling thread, inside next()).
            Threads, not processes: nothing is pickled or copied per worker.
        prefetch: batches assembled ahead of the training loop, at most (4 by default).
        prefetch_factor: torch's spelling, per worker: prefetch = prefetch_factor * num_workers.
        persistent_workers: feeder's workers are threads that always persist across epochs
            (``loader.persistent_workers`` is True); the value given decides only torch's draws of
            a base seed (once with persistent workers, else at every iter()).
        normalize: None (pixels / 255, the article's transform) or (mean, std), applied as
            (pixels / 255 - mean) / std while converting to float32.
        layout: "nchw", or "nhwc" for channels-last tensors (still shaped (B,C,H,W), with
            torch.channels_last strides, as ``x.contiguous(memory_format=torch.channels_last)``).
        rank, world_size: this process's share of every epoch, as DistributedSampler gives it: rank
            r gets the r-th slice of each global batch of world_size * batch_size samples; the
            epoch is padded with its first samples to a multiple of world_size.
        memory_budget: the most memory a Parquet set may take, in bytes or as a string ("256MiB").
            A set whose decoded size fits is read into memory; a larger one is streamed within the
            budget. None: half the available memory.
        shuffle_window: samples shuffled together when streaming (0: as many as the budget holds).
        piece_size: a Parquet set of pixels: the decoded bytes of a piece ("8MiB"), the unit its
            order is shuffled in and its stream reads (None: a 4096th of the set, 16 KiB to 1 MiB).
            Larger pieces mean fewer, larger reads (from S3 or HTTP, fewer requests) and a coarser
            mix; a given piece size gives the same order from a local disk, a server, in memory or
            streamed, and a saved state resumes only with the same one (docs/streaming.md).
        pin_memory: when CUDA is available, each batch is copied into page-locked memory (as
            torch's DataLoader does), so that ``.cuda(non_blocking=True)`` overlaps; ignored otherwise.
        labels: the labels of in-memory images (see source).
        train: for a directory of IDX files (``feeder train --data``'s kind): True for its training
            split (``train-images-idx3-ubyte[.gz]``), False for its test split, as torchvision's.
        allow_unlabeled: a file or set without labels is an error unless this is True (its batches
            then carry labels of -1).
        transform: a callable ``(images, labels) -> (images, labels)`` applied to every batch on the
            thread that iterates (e.g. moving it to the GPU, or an augmentation on the tensors).
        image_size, augment, channels, resize, scale, ratio, flip, dct_scaling: for JPEG, PNG or WebP
            images, in a folder in torchvision's ImageFolder layout or in Parquet files with a column of
            image files (Hugging Face datasets' ``image`` struct, or any binary column; streamed within
            memory_budget) (docs/images.md): every image becomes
            `image_size` (an int or (height, width)) with `channels` 1 or 3, through
            augment="random_resized_crop" (RandomResizedCrop(image_size, scale, ratio) and, with
            flip, RandomHorizontalFlip), "center_crop" (Resize(resize) + CenterCrop) or None (the
            whole image resized); normalize is then (mean, std) per channel. ``loader.dataset.classes``
            names the labels.
        on_error: "raise" (the default): an image that does not decode (corrupt, truncated, not an
            image) raises feeder.DataError naming it from the ``next()`` that needed it. "skip": it
            is left out of its batch, which is then smaller (the same images for any number of
            workers); ``loader.skipped`` gives the count and the first few reasons of the epoch, and
            the end of an epoch that skipped any warns.
        dtype: torch.float32 (the default: normalised values) or torch.uint8: the pixels 0..255 as
            stored or decoded, cropped, resized (rounded to the nearest level) and flipped, but not
            normalised (normalize must be None), for a model that normalises on its device: a
            quarter of the memory and of the copy to it.
        python_workers: processes for the Python part of the work on each batch (a transform's steps
            after the C++ crop, a collate_fn): 0 (the default) runs it on the thread that iterates,
            where torch's intra-op threads share its tensor work; on a machine with cores to spare
            beside the C++ threads, N forked processes (feeder/stage_pool.py) run it N at a time.
        timeout, worker_init_fn, multiprocessing_context, pin_memory_device, in_order: torch's; other
            than their defaults, the items are made by torch's DataLoader (below).

    What feeder cannot translate exactly (a Dataset of the script's own, worker_init_fn,
    multiprocessing_context, timeout, a transform with no C++ or tensor form) runs as torch's
    DataLoader runs it, in feeder's order; ``loader.plan`` and one PlanWarning say what runs where.
    torch's attributes are there:
    ``sampler``, ``batch_sampler``, ``batch_size``, ``drop_last``, ``collate_fn``, ``pin_memory``,
    ``prefetch_factor``, ``persistent_workers``, ``generator``; a loader pickles and copies (made
    again from its arguments), and one rebuilt from its attributes equals it.

    Iterating yields ``[images, labels]`` as a ``feeder.Batch`` (a list, as torch's default collate
    gives, with ``num_padding``: rows at its end that pad the epoch for ranks): float32 (uint8 with dtype=torch.uint8) (B,C,H,W) and
    int64 (B) CPU tensors that share the loader's buffers. A buffer returns to the loader when its
    tensors are freed, so keeping every batch of an epoch costs a new buffer each; an unlabeled set
    yields labels of -1.

    Samples of more fields: ``fields=["weight", ...]`` reads those columns of a Parquet set (FLOAT,
    DOUBLE, INT32 or INT64: one value per row, a (B,) tensor; or a list of one length in every row,
    such as DuckDB's FLOAT[4]: a (B, 4) tensor) beside the image and the label, and iterating then
    yields a ``feeder.FieldBatch``: a dict ``{"image": ..., "label": ..., "weight": ...}`` of tensors,
    as torch's default collate gives for dict samples, in memory or streamed alike.

    Epochs: like DistributedSampler, ``set_epoch(e)`` before iterating picks epoch e's shuffle;
    without it each pass takes the next epoch number (0, 1, 2, ...), so every pass is shuffled
    differently and reproducibly. One pass at a time: starting a new ``iter()`` ends the last one.

    Resuming: ``state_dict()`` and ``load_state_dict()`` as torchdata's StatefulDataLoader has them;
    after loading, the next ``iter()`` continues with exactly the batches that would have come next,
    with or without ``set_epoch()`` of the saved epoch before it (see set_epoch).
    """

    def __init__(self, source, batch_size=1, shuffle=None, seed=None, drop_last=False, num_workers=1,
                 prefetch=None, normalize=None, layout="nchw", rank=0, world_size=1, memory_budget=None,
                 shuffle_window=0, pin_memory=False, labels=None, *, train=True, allow_unlabeled=False,
                 transform=None, generator=None, prefetch_factor=None, persistent_workers=False, timeout=0,
                 pin_memory_device="", in_order=True, sampler=None, batch_sampler=None, collate_fn=None,
                 worker_init_fn=None, multiprocessing_context=None, image_size=None, augment=None, channels=3,
                 resize=None, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), flip=True, dct_scaling=True,
                 on_error="raise", dtype=torch.float32, fields=None, piece_size=None, python_workers=0):
        # Everything given, to re-open the loader when it is pickled or copied.
        self._arguments = {name: value for name, value in locals().items() if name not in ("self", "__class__")}
        _check_transform(transform)
        reason = _torch_run_reason(source, collate_fn, worker_init_fn, multiprocessing_context, timeout, batch_sampler,
                                   pin_memory_device, in_order)
        if reason is not None and _feeders_own(source):
            raise ValueError(f"{reason}, which needs a torch Dataset; feeder reads this {type(source).__name__} "
                             f"itself, into (images, labels) batches assembled in C++ as torch's default_collate "
                             f"would")
        reason = reason or _torch_dataset_reason(source)
        if reason is None and _datasets.is_torchvision_dataset(source):
            reason = _datasets.untranslatable(source)
            if reason is not None and _custom_collate(collate_fn):
                reason += f"; and collate_fn {getattr(collate_fn, '__qualname__', '')} is the script's own"
        if reason is not None:  # the items made as torch's DataLoader makes them
            self.__class__ = _TorchRunLoader
            self._run_as_torch(reason, self._arguments)
            return
        sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed = _resolve_sampling(
            sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed, generator)
        num_workers, prefetch, batch_size, seed, world_size, rank, shuffle_window = _check_counts(
            num_workers, prefetch, prefetch_factor, batch_size, seed, world_size, rank, shuffle_window)
        dtype_name = _check_dtype_and_layout(dtype, normalize, layout)
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        budget = _memory_budget_bytes(memory_budget)
        self._piece_bytes = _piece_size_bytes(piece_size)
        self.fields = _check_fields(fields, source)

        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = 42 if seed is None else seed  # the seed in effect; drawn at each iter() when not given
        self._seed_given = seed is not None
        self.generator = generator
        self.drop_last = bool(drop_last)
        self.num_workers = num_workers
        self.rank = rank
        self.world_size = world_size
        # torch draws its workers' base seed once with persistent workers (and workers), else at every iter().
        self._draw_base_once = bool(persistent_workers) and num_workers > 0
        self.persistent_workers = True  # feeder's workers are threads that always persist
        self.pin_memory = bool(pin_memory)
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else max(1, prefetch // max(1, num_workers))
        self.prefetch = prefetch
        # A torchvision dataset's samples, made in C++, handed to the script's collate_fn on the thread
        # that iterates (as torch's workers would hand them, in the same structure).
        self.collate_fn = collate_fn if _custom_collate(collate_fn) else _default_collate
        collate = collate_fn if _custom_collate(collate_fn) else None
        self.timeout = 0
        self.worker_init_fn = None
        self.multiprocessing_context = None
        self._transform = transform
        image_args = (image_size, augment, channels, resize, scale, ratio, flip, dct_scaling, normalize)
        image, mean, std, dtype_name = self._open_set(source, labels, budget, train, allow_unlabeled,
                                                      shuffle and sampler is None, dtype_name, image_args)
        # The Python part of the work on each batch: a transform's per-sample tail, a collate_fn; in
        # worker processes with workers (feeder/stage_pool.py), made on the first pass.
        self._cpp_dtype = torch.uint8 if dtype_name == "uint8" else torch.float32  # the C++ batches'
        tail = self._batch_stage if isinstance(self._batch_stage, _transforms.SampleTail) else None
        if tail is not None:
            self._batch_stage = None
        self._work = _stage_pool.BatchWork(tail, collate) if tail is not None or collate is not None else None
        self._python_workers = _check_int("python_workers", python_workers, 0)
        self._pool = None
        if self._work is not None:
            warnings.warn(f"feeder.DataLoader: {self.plan}", PlanWarning, stacklevel=2)
        if on_error == "skip" and not self._source.encoded:
            raise ValueError("on_error='skip' is for encoded images (JPEG, PNG, WebP), which may be corrupt; this "
                             "set's pixels are read whole or not at all")
        # The order: the loader's own shuffle, or a sampler's indices (or a Subset's), given per epoch.
        self._sampler = sampler
        self._batch_sampler = batch_sampler  # a batch sampler other than torch's BatchSampler, run as given
        self._ordered = sampler is not None or batch_sampler is not None or self._indices is not None
        if self._ordered and self._source.streaming:
            raise ValueError(f"{self._source.name}: streamed (over memory_budget {budget} bytes), it is read in an "
                             f"order of its own (pieces in shuffled windows), not in a sampler's or a Subset's: "
                             f"give a memory_budget that holds it, or drop sampler=/Subset for shuffle= and seed=")
        self._loader = _feeder.Loader(self._source, batch_size, self.shuffle and not self._ordered, self.seed,
                                      self.drop_last, num_workers, prefetch, mean, std, layout.lower(),
                                      0 if self._ordered else rank, 1 if self._ordered else world_size, budget,
                                      shuffle_window, image, on_error == "skip", dtype_name)
        # loader.dataset[i]: one sample at a time, made as the batches' samples are, on this thread,
        # with the seed of the loader's last pass. Through a weak reference: a view that held the
        # loader would make a cycle, keeping a dropped loader (and its threads) until a collection,
        # which may come in a child torch's DataLoader forked.
        owner, source, seed = weakref.ref(self), self._source, self.seed

        def make_item_loader():
            loader = owner()
            return _feeder.Loader(source, 1, False, seed if loader is None else loader.seed, False, 0, 1, mean, std,
                                  "nchw", 0, 1, budget, 0, image, False, dtype_name)

        self._make_item_loader = make_item_loader
        self._pin_memory = self.pin_memory and torch.cuda.is_available()
        if self._loader.shuffle_advice:
            # The set streams in a window that mixes too few pieces for how its labels are laid out.
            warnings.warn(self._loader.shuffle_advice, RuntimeWarning, stacklevel=2)
        self._next_epoch = 0          # the epoch the next iter() starts
        self._epoch = None            # the epoch of the pass in progress or last run
        self._num_yielded = 0         # batches of that epoch handed out
        self._finished = False        # that pass reached its end
        self._resume_pending = False  # load_state_dict() placed the loader mid-epoch
        self._generation = 0          # which iter() is current
        self._passes = 0              # iter()s begun (for torch's draws)
        self._order = None            # an ordered loader's indices of the pass in progress
        self._order_padding = 0       # how many of them are a DistributedSampler's repeats
        self._own_sampler = None      # what ``sampler`` gives when none was given, made on first use
        self._view = None             # ``dataset`` of a set opened from a path or arrays, made on first use

    def _open_set(self, source, labels, budget, train, allow_unlabeled, shuffled, dtype_name, image_args):
        """Opens what was given (another loader's dataset view, a torchvision dataset, a path or arrays)
        into self._source; returns the image stage's options, the normalisation and the batch dtype."""
        self._user_dataset = None     # a torch dataset given as the source: loader.dataset is it
        self._indices = None          # a Subset's indices into the set opened
        self._batch_stage = None      # what runs on each batch in Python (transforms.BatchStage)
        normalize = image_args[-1]
        if self._piece_bytes and not isinstance(source, (str, os.PathLike)):
            raise ValueError(f"piece_size applies to a Parquet set of pixels given by its path or URL (it streams in "
                             f"pieces of row groups), not to a {type(source).__name__}")
        if isinstance(source, CachedDataset):
            if normalize is not None:
                raise ValueError("normalize= does not apply to a cached dataset: it is served with the values its "
                                 "Dataset returned (normalise there before caching, or in transform=)")
            mean, std = source.normalization()
        else:
            mean, std = None, None  # once the source is open: an image folder normalises per channel
        image = None
        view, view_indices = _datasets.unwrap(source)
        if isinstance(view, _DatasetView):  # a Subset of another loader's dataset: the same set
            if view_indices is None:
                raise ValueError("a loader's dataset view is given to a DataLoader through a Subset of it; for "
                                 "the whole set, give what that loader was made of")
            self._source = view._source
            self._indices = view_indices
        elif _datasets.is_torchvision_dataset(source):
            image, mean, std, dtype_name = self._open_torchvision(source, labels, budget, shuffled, dtype_name,
                                                                  image_args)
        else:
            self._source = _open_source(source, labels, budget, train, allow_unlabeled, self.fields, self._piece_bytes)
        if self._source.warning:
            warnings.warn(f"{self._source.name}: {self._source.warning}", RuntimeWarning, stacklevel=3)
        if image is not None:
            pass  # the dataset's transform, translated
        elif self._source.encoded:
            image = _image_options(*image_args)
            mean, std = 0.0, 1.0  # the image stage normalises, per channel
        elif image_args[0] is not None or image_args[1] is not None:
            raise ValueError("image_size= and augment= are for encoded images (JPEG, PNG, WebP: a folder, or a "
                             "Parquet set of image files); this set's images all have one size already: store "
                             "them as PNGs (feeder.convert(..., layout='png')) to crop each image as it is decoded")
        elif mean is None:
            mean, std = _normalization(normalize)
        return image, mean, std, dtype_name

    def _open_torchvision(self, source, labels, budget, shuffled, dtype_name, image_args):
        """A torchvision dataset: its files, labels and transform, translated (feeder.datasets)."""
        image_size, augment, _, resize, *_, normalize = image_args
        given = {"image_size": image_size, "augment": augment, "normalize": normalize, "resize": resize,
                 "labels": labels}
        clashing = [name for name, value in given.items() if value is not None]
        if clashing:
            raise ValueError(f"{', '.join(clashing)}: a torchvision dataset's transform says how its images are "
                             f"cropped, converted and normalised; pass the dataset alone")
        opened = _datasets.open_torchvision(source, budget, shuffled)
        self._user_dataset = source
        self._indices = opened.indices
        self._source = opened.opened
        self._batch_stage = opened.batch_stage
        if isinstance(opened.batch_stage, _transforms.SampleTail):  # the C++ crop is uint8
            return opened.image, opened.mean, opened.std, "uint8"
        if dtype_name == "uint8" and opened.dtype != "uint8":
            raise ValueError("dtype=torch.uint8: the dataset's transform makes float32 tensors (ToTensor); end it "
                             "with PILToTensor() instead to have uint8")
        return opened.image, opened.mean, opened.std, "uint8" if opened.dtype == "uint8" else "float32"

    # ---------------------------------------------------------------- what it holds

    def __len__(self):
        """Batches per epoch of this rank (a sampler's: of its length)."""
        if not self._ordered:
            return self._loader.num_batches
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        count = self._order_length()
        return count // self.batch_size if self.drop_last else -(-count // self.batch_size)

    def _order_length(self):
        return len(self._sampler) if self._sampler is not None else len(self._indices)

    @property
    def dataset(self):
        """The set iterated: the torch dataset given (the user's object itself), or a view of the set
        opened from a path or arrays; ``len(loader.dataset)`` is its size, as with torch's DataLoader."""
        if self._user_dataset is not None:
            return self._user_dataset
        if self._view is None:
            self._view = _DatasetView(self._source, self._loader.sample_shape, self._make_item_loader)
        return self._view

    @property
    def sampler(self):
        """The sampler given, or a torch sampler saying what the loader does (RandomSampler,
        SequentialSampler, or DistributedSampler for rank=/world_size=): ``len(loader.sampler)`` is
        this rank's samples per epoch, as with torch's. Passed back as ``sampler=`` to a new loader,
        it means this loader's own order (a loader rebuilt from its attributes equals it)."""
        if self._sampler is not None:
            return self._sampler
        if self._batch_sampler is not None and hasattr(self._batch_sampler, "sampler"):
            return self._batch_sampler.sampler
        if self._own_sampler is None:
            self._own_sampler = _own_sampler(self.dataset, self.shuffle, self.seed if self._seed_given else None,
                                             self.rank, self.world_size, self.drop_last, self.generator)
        return self._own_sampler

    @property
    def batch_sampler(self):
        """The batch sampler given, or torch's BatchSampler over ``sampler``, with batch_size and drop_last."""
        if self._batch_sampler is not None:
            return self._batch_sampler
        return torch.utils.data.BatchSampler(self.sampler, self.batch_size, self.drop_last)

    def __reduce__(self):
        # Pickled and copied as what it was made of: re-opened, at the start (as torch's loader is).
        # A generator gives only its initial seed (and torch's generators do not pickle).
        arguments = dict(self._arguments)
        if arguments.get("generator") is not None:
            arguments["seed"], arguments["generator"] = arguments["generator"].initial_seed(), None
        return (_reopen, (arguments,))

    @property
    def num_samples(self):
        """Samples per epoch of this rank (after drop_last, with the padding for ranks)."""
        return self._loader.num_samples

    @property
    def dataset_size(self):
        """Samples in the whole set."""
        return self._source.num_samples

    @property
    def image_shape(self):
        """(C, H, W) of one image in a batch."""
        channels, height, width = self._loader.sample_shape
        if self._batch_stage is not None:  # a dataset transform's RandomCrop may change it
            height, width = self._batch_stage.output_size(height, width)
        return channels, height, width

    @property
    def streaming(self):
        """True when the set is read from disk within memory_budget rather than held in memory."""
        return self._loader.streaming

    @property
    def shuffle_window(self):
        """The shuffle window in effect, in samples (the whole set when it fits one): the one given,
        or the largest the memory budget holds, or after load_state_dict() of a state saved with
        another default window, that one."""
        return self._loader.shuffle_window

    @property
    def source_description(self):
        """What was opened and how: in memory, or streamed within the budget."""
        return f"{self._source.name}: {self._source.description}"

    @property
    def buffers_allocated(self):
        """Batch buffers allocated so far; stays small while the training loop frees its batches."""
        return self._loader.buffers_allocated

    def _stage_pool(self):
        """The worker processes of the Python part of the work (python_workers), or None when it runs
        on the thread that iterates."""
        if self._work is None or self._python_workers == 0:
            return None
        if self._pool is None:
            channels, height, width = self._loader.sample_shape
            self._pool = _stage_pool.StagePool(self._work, self._python_workers, self,
                                               (self.batch_size, channels, height, width), self._cpp_dtype,
                                               self.prefetch + self._python_workers)
        return self._pool

    def _python_plan(self, tail, collate):
        where = (f"in {self._python_workers} worker processes (python_workers)" if self._python_workers
                 else "on the thread that iterates (with torch's intra-op threads)")
        steps = []
        if tail is not None:
            steps.append(f"{', '.join(tail.names)} on each crop, as torchvision runs them on tensors (they have no "
                         f"C++ form)")
        if collate is not None:
            steps.append(f"collate_fn {getattr(collate, '__qualname__', type(collate).__name__)} on the samples")
        threads = (f"{self.num_workers} thread{'s' if self.num_workers > 1 else ''}" if self.num_workers
                   else "on the thread that iterates")
        reuse = " (its large tensors reused from batch to batch)" if self._work.reuse_memory else ""
        return (f"feeder decodes, crops and flips the images in C++ ({threads}), then runs "
                f"{' and '.join(steps)} in Python, {where}{reuse}")

    @property
    def plan(self):
        """What runs where, as a sentence: feeder's C++ threads making the items, or torch's DataLoader
        (for what feeder cannot translate exactly; a PlanWarning said so when the loader was made)."""
        work = getattr(self, "_work", None)
        if work is not None:
            return self._python_plan(work.tail, work.collate)
        return getattr(self, "_plan", None) or (
            f"feeder makes the items in C++ ({self.num_workers} threads"
            f"{'' if self.num_workers else ': none, on the calling thread'}) from {self.source_description}"
            + ("; the dataset transform's last steps run on each batch in Python" if self._batch_stage else ""))

    # ---------------------------------------------------------------- iteration

    @property
    def next_epoch(self):
        """The epoch the next pass runs, where the usual loop starts after ``load_state_dict()``:
        the saved epoch when the state was taken in the middle of it, the one after it when its pass
        had ended, 0 for a new loader (``for e in range(loader.next_epoch, E): loader.set_epoch(e)``)."""
        return self._epoch if self._resume_pending else self._next_epoch

    def set_epoch(self, epoch):
        """Picks the epoch (and so the shuffle) of the next pass, as DistributedSampler.set_epoch.

        After ``load_state_dict()`` of a state saved mid-epoch, ``set_epoch`` of that same epoch keeps
        the resume (the usual loop, ``for e in range(start, E): loader.set_epoch(e); for batch in
        loader: ...``, continues where the state left off); any other epoch raises ValueError, as
        it would silently drop the rest of the saved epoch."""
        epoch = _check_int("epoch", epoch, 0)
        if self._resume_pending and epoch != self._epoch:
            raise ValueError(
                f"set_epoch({epoch}) after load_state_dict() of a state in the middle of epoch {self._epoch} "
                f"({self._num_yielded} of {len(self)} batches done): call set_epoch({self._epoch}) (or nothing) "
                f"to finish that epoch first; to start epoch {epoch} afresh, use a new DataLoader")
        self._next_epoch = epoch

    def _draw_seed(self):
        """The draws torch's DataLoader makes at an iter() (see feeder/order.py); the seed of the pass,
        or None to keep the last."""
        if self._seed_given:
            return None
        base = None
        if not (self._draw_base_once and self._passes > 1):
            base = _draw_seed()  # the workers' base seed: the random augmentation's
        if self.shuffle and self._sampler is None and self._batch_sampler is None:
            shuffle_seed = _draw_seed()  # RandomSampler's
            return None if self.world_size > 1 else shuffle_seed
        return None if self.world_size > 1 else base

    def _batch_sampler_order(self):
        """The batch sampler's batches of this pass, one after the other, checked to be feeder's batches."""
        order = []
        batches = [[int(i) for i in batch] for batch in self._batch_sampler]
        for number, batch in enumerate(batches):
            last = number == len(batches) - 1
            if len(batch) != self.batch_size and not (last and 0 < len(batch) < self.batch_size):
                raise ValueError(f"batch {number} of {type(self._batch_sampler).__name__} has {len(batch)} indices, "
                                 f"its batch_size {self.batch_size}: feeder assembles batches of one size (only the "
                                 f"last may be smaller); keep this batch sampler on torch's DataLoader")
            order += batch
        return order

    def _start_ordered(self, epoch, first_batch, order=None):
        """Starts an ordered pass: the sampler's indices (or the Subset's), through the Subset's."""
        if order is None:
            if self._batch_sampler is not None:
                order = self._batch_sampler_order()
                self._order_padding = _sampler_padding(getattr(self._batch_sampler, "sampler", None))
            elif self._sampler is not None:
                order = [int(i) for i in self._sampler]
                self._order_padding = _sampler_padding(self._sampler)
            else:
                order = list(_feeder.epoch_order(len(self._indices), self.shuffle, self.seed, epoch))
                self._order_padding = 0
            if self._indices is not None:
                try:
                    order = [self._indices[i] for i in order]
                except IndexError:
                    raise ValueError(f"the sampler gave an index past the Subset's {len(self._indices)} samples") from None
        self._order = order
        # A sampler that splits the epoch among ranks: copies of a sample on other ranks drawn anew.
        sampler = self._sampler if self._sampler is not None else getattr(self._batch_sampler, "sampler", None)
        rank, ranks = getattr(sampler, "rank", 0), getattr(sampler, "num_replicas", 1)
        if not (isinstance(rank, int) and isinstance(ranks, int) and 0 <= rank < ranks):
            rank, ranks = 0, 1
        self._loader.start_epoch_with_order(epoch, order, first_batch, rank, ranks)

    def __iter__(self):
        self._generation += 1
        if self._resume_pending:
            self._resume_pending = False  # load_state_dict() already placed the loader
        else:
            self._passes += 1
            seed = self._draw_seed()
            if seed is not None:
                self.seed = seed
                self._loader.reseed(seed)
            self._epoch = self._next_epoch
            self._num_yielded = 0
            if self._ordered:
                self._start_ordered(self._epoch, 0)
            else:
                self._loader.start_epoch(self._epoch)
        self._next_epoch = self._epoch + 1
        self._finished = False
        return _EpochIterator(self, self._generation)

    @property
    def skipped(self):
        """With on_error="skip": (how many images were left out of this epoch's batches so far, the
        reasons of the first few, each naming its file or row). A resumed epoch counts from the
        resume."""
        return self._loader.skipped_samples, list(self._loader.skipped_examples)

    # ---------------------------------------------------------------- resume

    def state_dict(self):
        """Where the loader stands, as a dict of plain values (json-serialisable). A pass over a
        sampler's indices keeps them (``order``): a resume serves exactly the rest of them."""
        in_epoch = self._epoch is not None and not self._finished
        return {
            "_num_yielded": self._num_yielded,
            "_iterator_finished": self._epoch is not None and self._finished,
            "epoch": self._epoch,
            # the epoch the next pass runs: this one, to finish it, while it is in progress
            "next_epoch": self._epoch if in_epoch else self._next_epoch,
            "seed": self.seed,
            "loader_state": self._loader_state() if in_epoch else None,
            "order": list(self._order) if in_epoch and self._ordered else None,
            "order_padding": self._order_padding if in_epoch and self._ordered else 0,
        }

    def _loader_state(self):
        state = json.loads(self._loader.state())
        if self._pool is not None:  # the C++ loader is ahead of the batches handed out by the pool
            state["batches_delivered"] = self._num_yielded
        return state

    def load_state_dict(self, state_dict):
        """Continues from `state_dict`: the next iter() yields exactly the batches that would have come
        next. Raises ValueError when it is of another dataset, seed, batch size, rank or world size."""
        try:
            num_yielded = state_dict["_num_yielded"]
            finished = state_dict["_iterator_finished"]
            epoch = state_dict["epoch"]
            next_epoch = state_dict["next_epoch"]
            loader_state = state_dict["loader_state"]
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a feeder DataLoader state_dict (missing {error})") from None
        if state_dict.get("torch_run"):
            raise ValueError("cannot restore this state: it was saved by a loader whose items torch's DataLoader "
                             "made, and this one makes them itself")
        order = state_dict.get("order")
        # The pass's own counts must be the loader state's, whose checks guard the order.
        if not isinstance(next_epoch, int) or isinstance(next_epoch, bool) or next_epoch < 0:
            raise ValueError(f"not a feeder DataLoader state_dict (next_epoch {next_epoch!r})")
        resuming = loader_state is not None and not finished
        if resuming:
            if not isinstance(loader_state, dict) or (epoch, num_yielded) != (
                    loader_state.get("epoch"), loader_state.get("batches_delivered")):
                raise ValueError("not a feeder DataLoader state_dict: epoch and _num_yielded "
                                 f"({epoch!r}, {num_yielded!r}) are not its loader_state's")
            if (order is not None) != self._ordered:
                raise ValueError("cannot restore this state: it was saved by a loader " +
                                 ("over a sampler's order, and this one orders the samples itself" if order is not None
                                  else "that ordered the samples itself, and this one follows a sampler"))
        seed = loader_state.get("seed") if resuming else state_dict.get("seed")
        self._generation += 1  # a pass in progress ends here
        if resuming:
            if not self._seed_given and isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
                self._loader.reseed(seed)  # a drawn seed: the state's
                self.seed = seed
            if order is not None:
                if not isinstance(order, list) or not all(isinstance(i, int) for i in order):
                    raise ValueError("not a feeder DataLoader state_dict: its order is not a list of indices")
                self._order_padding = int(state_dict.get("order_padding", 0))
                self._start_ordered(epoch, num_yielded, order)
            else:
                self._loader.restore(json.dumps(loader_state))
            self._resume_pending = True
        else:
            self._resume_pending = False
        self._epoch = epoch
        self._num_yielded = num_yielded
        self._finished = bool(finished)
        self._next_epoch = next_epoch if not resuming else epoch + 1


class _Pass:
    """One pass over a DataLoader, which a newer iter() or load_state_dict() ends."""

    __slots__ = ("_owner", "_generation", "_first_padding")

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._owner)

    def _current(self):
        """The loader, when this pass is still its current one."""
        if self._owner._generation != self._generation:
            raise RuntimeError("this pass over the DataLoader was ended by a newer iter() or load_state_dict()")
        return self._owner

    def _padding(self, index, count):
        """How many of batch `index`'s `count` rows pad the epoch for ranks, from the pass's positions
        (None: the loader counted them)."""
        if self._first_padding is None:
            return None
        end = index * self._owner.batch_size + count
        return min(count, max(0, end - self._first_padding))


class PlanWarning(RuntimeWarning):
    """Said once by a DataLoader that runs part of the work as torch would (the items made by torch's
    DataLoader, or a transform's last steps per sample in Python): what runs where, and why."""


class _TorchRunLoader(DataLoader):
    """A DataLoader whose items torch's DataLoader makes, in its worker processes (feeder/torch_run.py),
    over feeder's order: what the user's torch code would do, with feeder's set_epoch, ranks,
    state_dict and attributes."""

    def _run_as_torch(self, reason, arguments):
        a = dict(arguments)
        source = a["source"]
        for name in ("labels", "image_size", "augment", "resize", "fields", "piece_size", "normalize",
                     "memory_budget"):
            if a[name] is not None:
                raise ValueError(f"{name}= applies to sets feeder reads itself; this loader's items are made as "
                                 f"torch's DataLoader makes them ({reason})")
        batch_size, sampler, batch_sampler = a["batch_size"], a["sampler"], a["batch_sampler"]
        shuffle, seed, rank, world_size = a["shuffle"], a["seed"], a["rank"], a["world_size"]
        drop_last, generator = a["drop_last"], a["generator"]
        raw_batches = batch_sampler is not None and not isinstance(batch_sampler, torch.utils.data.BatchSampler) \
            and not isinstance(getattr(batch_sampler, "batch_size", None), int)
        if raw_batches:  # batches of any size, as the batch sampler gives them
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            if generator is not None:
                seed = generator.initial_seed()
        elif batch_size is None:  # torch's items one at a time, not batched
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
            sampler, _, _, _, shuffle, rank, world_size, seed = _resolve_sampling(
                sampler, None, 1, False, shuffle, rank, world_size, seed, generator)
        else:
            sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed = _resolve_sampling(
                sampler, batch_sampler, batch_size, drop_last, shuffle, rank, world_size, seed, generator)
        num_workers, prefetch, _, seed, world_size, rank, _ = _check_counts(
            a["num_workers"], a["prefetch"], a["prefetch_factor"], batch_size or 1, seed, world_size, rank, 0)
        iterable = isinstance(source, torch.utils.data.IterableDataset)
        if iterable and (shuffle or sampler is not None or batch_sampler is not None or world_size > 1):
            raise ValueError(f"{type(source).__name__} is an IterableDataset, which orders its own items: shuffle, "
                             f"sampler, batch_sampler and rank/world_size do not apply (as with torch's DataLoader)")
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = 42 if seed is None else seed
        self._seed_given = seed is not None
        self.generator = generator
        self.drop_last = bool(drop_last)
        self.num_workers = num_workers
        self.rank, self.world_size = rank, world_size
        self._draw_base_once = bool(a["persistent_workers"]) and num_workers > 0
        self.persistent_workers = bool(a["persistent_workers"])
        self.pin_memory = bool(a["pin_memory"])
        self._pin_memory = False  # torch's DataLoader pins
        self.prefetch_factor = a["prefetch_factor"] if a["prefetch_factor"] is not None else (2 if num_workers else None)
        self.prefetch = prefetch
        self.collate_fn = a["collate_fn"] if a["collate_fn"] is not None else _default_collate
        self.timeout = a["timeout"]
        self.worker_init_fn = a["worker_init_fn"]
        self.multiprocessing_context = a["multiprocessing_context"]
        self.fields = ()
        self._transform = a["transform"]
        self._user_dataset = source
        self._indices = None
        self._batch_stage = None
        self._sampler = sampler
        self._batch_sampler = batch_sampler
        self._raw_batches = raw_batches
        self._ordered = sampler is not None or batch_sampler is not None
        self._next_epoch, self._epoch, self._num_yielded = 0, None, 0
        self._finished = self._resume_pending = False
        self._generation = self._passes = 0
        self._order, self._order_padding = None, 0
        self._own_sampler = self._view = None
        extra = {}
        if a["pin_memory_device"]:
            extra["pin_memory_device"] = a["pin_memory_device"]
        if not a["in_order"]:
            extra["in_order"] = False
        # A BatchSampler with a batch_size: its sampler and size are the pass's (the order below).
        self._run = _torch_run.TorchRun(
            source, batch_size, self.drop_last, num_workers, self.collate_fn, self.pin_memory, self.worker_init_fn,
            self.multiprocessing_context, self.timeout, a["prefetch_factor"], self.persistent_workers,
            batch_sampler if raw_batches else None, extra)
        workers = f"{num_workers} worker processes" if num_workers else "the calling process"
        order = ("the IterableDataset's own order" if iterable else
                 f"{type(batch_sampler).__name__}'s batches" if raw_batches else
                 f"{type(sampler).__name__}'s indices" if sampler is not None else
                 f"{'a shuffle' if shuffle else 'the dataset order'} of (seed, epoch)" +
                 (f", rank {rank} of {world_size}" if world_size > 1 else ""))
        self._plan = (f"torch's DataLoader makes the items ({workers}, its seeding rules), because {reason}; feeder "
                     f"gives the order ({order}), set_epoch and state_dict")
        warnings.warn(f"feeder.DataLoader: {self._plan}", PlanWarning, stacklevel=3)

    def __len__(self):
        if self._raw_batches or isinstance(self._user_dataset, torch.utils.data.IterableDataset):
            return len(self._run.loader)
        count = self._order_length() if self._ordered else _torch_run.rank_samples(
            len(self._user_dataset), self.batch_size or 1, self.drop_last, self.world_size)
        if self.batch_size is None:
            return count
        return count // self.batch_size if self.drop_last else -(-count // self.batch_size)

    def _order_length(self):
        return len(self._sampler) if self._sampler is not None else len(self._batch_sampler)

    @property
    def num_samples(self):
        return len(self) if self.batch_size is None else None if self._raw_batches else (
            self._order_length() if self._ordered else _torch_run.rank_samples(
                len(self._user_dataset), self.batch_size, self.drop_last, self.world_size))

    @property
    def dataset_size(self):
        return len(self._user_dataset)

    @property
    def image_shape(self):
        return None  # the user's items: whatever their transform makes

    streaming = False
    shuffle_window = 0
    buffers_allocated = 0

    @property
    def source_description(self):
        return f"{type(self._user_dataset).__name__}: {self._plan}"

    @property
    def skipped(self):
        return 0, []

    def _pass_order(self, epoch):
        """The pass's indices (a list of batches with a batch sampler of its own sizes), and how many of
        its last ones pad it for ranks."""
        if isinstance(self._user_dataset, torch.utils.data.IterableDataset):
            return None, 0
        if self._raw_batches:
            return [list(batch) for batch in self._batch_sampler], 0
        if self._sampler is not None:
            return list(self._sampler), _sampler_padding(self._sampler)
        size = len(self._user_dataset)
        batch_size = self.batch_size or 1
        order = _torch_run.own_order(size, self.shuffle, self.seed, epoch, batch_size, self.drop_last, self.rank,
                                     self.world_size)
        return order, _torch_run.own_padding(size, batch_size, self.drop_last, self.rank, self.world_size)

    def __iter__(self):
        self._generation += 1
        skip = 0
        if self._resume_pending:
            self._resume_pending = False
            skip = self._num_yielded
        else:
            self._passes += 1
            seed = self._draw_seed()
            if seed is not None:
                self.seed = seed
            self._epoch = self._next_epoch
            self._num_yielded = 0
            self._order, self._order_padding = self._pass_order(self._epoch)
        self._next_epoch = self._epoch + 1
        self._finished = False
        batches = self._run.start(self._order, self.batch_size or 1, skip, self.seed, self._epoch)
        return _TorchRunIterator(self, self._generation, batches)

    def state_dict(self):
        """As DataLoader.state_dict: the pass's indices (``order``) are kept, so that a resume serves
        exactly the rest of them, each made again as torch's DataLoader makes it."""
        in_epoch = self._epoch is not None and not self._finished
        return {
            "_num_yielded": self._num_yielded,
            "_iterator_finished": self._epoch is not None and self._finished,
            "epoch": self._epoch,
            "next_epoch": self._epoch if in_epoch else self._next_epoch,
            "seed": self.seed,
            "loader_state": None,
            "order": self._order if in_epoch else None,
            "order_padding": self._order_padding if in_epoch else 0,
            "torch_run": True,
        }

    def load_state_dict(self, state_dict):
        try:
            num_yielded, finished = state_dict["_num_yielded"], state_dict["_iterator_finished"]
            epoch, next_epoch = state_dict["epoch"], state_dict["next_epoch"]
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a feeder DataLoader state_dict (missing {error})") from None
        if not state_dict.get("torch_run"):
            raise ValueError("cannot restore this state: it was saved by a loader that made its items itself, and "
                             "this one has torch's DataLoader make them")
        resuming = epoch is not None and not finished
        self._generation += 1
        if resuming:
            order = state_dict.get("order")
            iterable = isinstance(self._user_dataset, torch.utils.data.IterableDataset)
            if (order is None) != iterable or not isinstance(num_yielded, int) or num_yielded < 0:
                raise ValueError("not a feeder DataLoader state_dict of this loader: its order or position does not fit")
            if not self._seed_given:
                self.seed = state_dict["seed"]
            self._order, self._order_padding = order, int(state_dict.get("order_padding", 0))
        self._resume_pending = resuming
        self._epoch = epoch
        self._num_yielded = num_yielded
        self._finished = bool(finished)
        self._next_epoch = epoch + 1 if resuming else next_epoch


class _TorchRunIterator(_Pass):
    """One pass of a _TorchRunLoader: torch's batches, counted, with feeder's num_padding."""

    __slots__ = ("_batches",)

    def __init__(self, owner, generation, batches):
        self._owner = owner
        self._generation = generation
        self._batches = batches
        order = owner._order
        self._first_padding = None if order is None or owner._raw_batches else len(order) - owner._order_padding

    def __next__(self):
        owner = self._current()
        try:
            batch = next(self._batches)
        except StopIteration:
            owner._finished = True
            raise
        index = owner._num_yielded
        owner._num_yielded += 1
        if owner._transform is not None:
            batch = list(owner._transform(*batch))
        if type(batch) is list and len(batch) == 2 and owner.batch_size is not None:
            counted = isinstance(batch[1], torch.Tensor) and batch[1].dim() > 0
            return Batch(batch[0], batch[1], (self._padding(index, len(batch[1])) or 0) if counted else 0)
        return batch


def _reopen(arguments):
    """A DataLoader made again from its constructor's arguments (unpickling, copying)."""
    return DataLoader(**arguments)


class Batch(list):
    """A batch: ``[images, labels]``, which unpacks as ``images, labels`` and can be indexed and assigned
    to as torch's default collate's list, and ``num_padding``: how many of its last rows repeat samples
    only to give every rank the same number (DistributedSampler's padding of the epoch to a multiple
    of world_size, whether the loader's rank=/world_size= or a DistributedSampler given as sampler=
    made it); 0 except in a rank's last batch. An evaluation summed over ranks is exact when it counts
    ``labels[:len(labels) - batch.num_padding]``."""

    def __init__(self, images, labels, num_padding):
        super().__init__((images, labels))
        self.num_padding = num_padding

    def __reduce__(self):
        return (Batch, (self[0], self[1], self.num_padding))


class FieldBatch(dict):
    """A batch of a set opened with ``fields=``: a dict of tensors, ``{"image": (B,C,H,W), "label":
    (B), field: (B), ...}``, as torch's default collate gives for samples that are dicts, with
    ``num_padding`` as Batch has it. A float column is float32 (a DOUBLE one float64), an integer
    one int64; a list column of one length n in every row (an array) is (B, n); one whose rows differ
    in length (a sequence) is a list of B one-dimensional tensors, as a collate_fn that keeps such
    sequences as a list gives them (default_collate cannot stack them)."""

    def __init__(self, items, num_padding):
        super().__init__(items)
        self.num_padding = num_padding

    def __reduce__(self):
        return (FieldBatch, (dict(self), self.num_padding))


class _EpochIterator(_Pass):
    """One pass over a DataLoader; next() waits (without the GIL) for the next assembled batch.

    The Python part of the work (owner._work: a transform's per-sample tail, a collate_fn) runs on
    this thread, or with workers in owner's StagePool: then the C++ batches are taken `ahead` of
    the one handed out and their Python part made in the pool's processes meanwhile."""

    __slots__ = ("_next", "_pin", "_transform", "_batch_stage", "_work", "_pool", "_pending", "_free", "_taken",
                 "_ended")

    def __init__(self, owner, generation):
        self._owner = owner
        self._generation = generation
        self._next = owner._loader.next
        self._pin = owner._pin_memory
        self._transform = owner._transform
        self._batch_stage = owner._batch_stage
        self._work = owner._work
        self._pool = owner._stage_pool()
        self._pending = collections.deque()  # (result, slot, number of padding rows) in flight
        self._free = list(range(len(self._pool.slots))) if self._pool is not None else []  # slots to fill
        self._taken = owner._num_yielded     # batches taken from the C++ loader in this pass
        self._ended = False
        # An ordered pass: positions from here on are a DistributedSampler's repeats.
        self._first_padding = len(owner._order) - owner._order_padding if owner._ordered else None

    def _take(self):
        """The next C++ batch as (number, images, labels, padding rows, values), or None at the end."""
        owner = self._owner
        batch = self._next()
        if batch is None:
            return None
        index = self._taken
        self._taken += 1
        images, labels = _from_dlpack(batch[0]), _from_dlpack(batch[1])
        num_padding = self._padding(index, len(labels))
        if num_padding is None:
            num_padding = batch[2]
        if self._batch_stage is not None:  # the dataset transform's steps the C++ stage does not run
            images = self._batch_stage(images, owner.seed, owner._epoch, owner.rank, index)
        return index, images, labels, num_padding, batch[3]

    def _end_of_pass(self):
        owner = self._owner
        owner._finished = True
        skipped = owner._loader.skipped_samples
        if skipped:
            warnings.warn(f"{skipped} bad images were left out of epoch {owner._epoch}'s batches "
                          f"(on_error='skip'), e.g. {owner._loader.skipped_examples[0]}", RuntimeWarning,
                          stacklevel=3)
        raise StopIteration

    def __next__(self):
        owner = self._current()
        if self._pool is not None:
            return self._next_from_pool(owner)
        taken = self._take()
        if taken is None:
            self._end_of_pass()
        index, images, labels, num_padding, values = taken
        owner._num_yielded += 1
        if self._work is not None:
            return self._finish(self._work(images, labels, owner.seed, owner._epoch, owner.rank, index), num_padding)
        values = [(name, _field_value(value, self._pin)) for name, value in values]
        if self._pin:
            images, labels = images.pin_memory(), labels.pin_memory()
        if self._transform is not None:
            images, labels = self._transform(images, labels)
        if values:
            return FieldBatch({"image": images, "label": labels, **dict(values)}, num_padding)
        return Batch(images, labels, num_padding)

    def _next_from_pool(self, owner):
        while not self._ended and self._free:
            taken = self._take()
            if taken is None:
                self._ended = True
                break
            index, images, labels, num_padding, _ = taken
            slot = self._free.pop()
            result = self._pool.submit(slot, images, labels, owner.seed, owner._epoch, owner.rank, index)
            self._pending.append((result, slot, num_padding))
        if not self._pending:
            self._end_of_pass()
        result, slot, num_padding = self._pending[0]
        made = self._pool.wait(result)
        self._pending.popleft()
        self._free.append(slot)
        owner._num_yielded += 1
        return self._finish(made, num_padding)

    def _finish(self, made, num_padding):
        """The Python part's result, pinned and transformed as torch's DataLoader would: a collate_fn's
        in its own structure, else a Batch."""
        if self._work.collate is not None:
            if self._pin:
                made = torch.utils.data._utils.pin_memory.pin_memory(made)
            return self._transform(*made) if self._transform is not None else made
        images, labels = made
        if self._pin:
            images, labels = images.pin_memory(), labels.pin_memory()
        if self._transform is not None:
            images, labels = self._transform(images, labels)
        return Batch(images, labels, num_padding)


# -------------------------------------------------------------------- the commands

def convert(input, output, *, layout=None, codec=None, level=None, row_group_size=None, shard_rows=None,
            shard_size=None, shape=None, page_rows=None, shuffle_on_write=None, max_side=None, jpeg_quality=None):
    """Converts between CSV, IDX and Parquet (by extension), as ``feeder convert IN OUT`` does, prints
    its size report through ``sys.stdout`` (a notebook shows it) and returns it. An output directory
    (ending in '/', or with shard_rows/shard_size) gets a sharded Parquet set with index.json. A folder
    of images (torchvision's ImageFolder layout) becomes Parquet shards of its files' bytes, which
    ``DataLoader(output, image_size=...)`` streams; pass shuffle_on_write, as the folder is sorted by class. Options as the command's: layout "columns" | "image" | "png" (each image of a pixel set a PNG of its own, held compressed by a stream: ``DataLoader(output, image_size=..., channels=...)``), codec "zstd" |
    "snappy" | "gzip" | "lz4" | "brotli" | "none", level, row_group_size, shard_rows, shard_size ("256MB"),
    shape (C, H, W), page_rows, shuffle_on_write (a seed: a sharded set's rows are written shuffled);
    for images, max_side (re-encode as JPEG, resized to this longer side, the images larger than it)
    and jpeg_quality (90). One shard's images are held in memory at a time."""
    if shape is not None:
        try:
            channels, height, width = (int(v) for v in shape)
        except (TypeError, ValueError):
            raise ValueError(f"shape must be (C, H, W), got {shape!r}") from None
        shape = (channels, height, width)
    if shuffle_on_write is not None and not 0 <= shuffle_on_write < 2**64:
        raise ValueError(f"--shuffle-on-write: needs a seed from 0 to 2**64-1, got {shuffle_on_write!r}")
    report = _feeder.convert(
        os.fsencode(os.fspath(input)), os.fsencode(os.fspath(output)), layout=layout, codec=codec, level=level,
        row_group_size=row_group_size, shard_rows=shard_rows,
        shard_size=None if shard_size is None else str(shard_size), shape=shape, page_rows=page_rows,
        shuffle_on_write=shuffle_on_write, max_side=max_side, jpeg_quality=jpeg_quality,
        progress=_convert_progress if sys.stderr is not None and sys.stderr.isatty() else None)
    text = report.text
    print(text, end="")  # through sys.stdout: a notebook shows it
    # What a person should know of the input, and images written as they are that a loader will
    # fail on: warnings a notebook shows and a program can catch.
    for warning in report.warnings:
        warnings.warn(f"feeder.convert: {warning}", RuntimeWarning, stacklevel=2)
    for name, bad in (("not images", report.not_images), ("not decoded", report.not_decoded)):
        if bad.count > 0:
            warnings.warn(f"feeder.convert: {name}: {bad.count}, written as they are; the first: {'; '.join(bad.first)}",
                          RuntimeWarning, stacklevel=2)
    return text


def _convert_progress(line):
    """A conversion's progress line, for a person at a terminal."""
    print(f"feeder.convert: {line}", file=sys.stderr, flush=True)


def decode_image(data, channels=3):
    """Decodes a JPEG, PNG or WebP image (bytes, or a path) as feeder's loaders do: a uint8 NumPy
    array (H,W,channels), channels 1 (gray) or 3 (RGB). The pixels equal PIL's
    ``Image.open(f).convert("RGB")`` (or ``"L"``; for a color JPEG, its luma plane, PIL's
    ``draft("L")``); alpha is dropped, palettes expanded. One exception: 16-bit samples keep their
    high byte (scaled to 8 bits), where PIL's ``convert`` clips 16-bit gray at 255.
    A damaged image raises DataError naming it and what is wrong."""
    name = "<bytes>"
    if isinstance(data, (str, os.PathLike)):
        name = os.fspath(data)
        with open(name, "rb") as f:
            data = f.read()
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 (gray) or 3 (RGB), got {channels!r}")
    pixels, _, _ = _feeder.decode_image(data, channels, os.fsencode(name))
    return pixels


def inspect(path):
    """What ``feeder inspect PATH`` prints, as a string: a Parquet file's schema, row groups, codecs and
    encodings, or a summary of a sharded set (a directory or a glob)."""
    return _feeder.inspect(os.fsencode(os.fspath(path)))
