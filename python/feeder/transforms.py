"""A torchvision transform as feeder's C++ per-sample stage runs it, or a refusal that names it.

feeder.DataLoader(torchvision.datasets.ImageFolder(root, transform)) reads the dataset's files itself
and runs its transform on the loader's threads; this module says what that transform is in the
stage's terms. Supported, in the orders scripts write them (transforms and transforms.v2 alike):

    RandomResizedCrop(size, scale, ratio) [+ RandomHorizontalFlip(p)]          training
    Resize(s) + CenterCrop(size) [+ RandomHorizontalFlip(p)]                   evaluation
    Resize((h, w)) [+ RandomHorizontalFlip(p)]                                 every image to one size
    [Resize(s) +] RandomCrop(size) [+ RandomHorizontalFlip(p)]                 a crop at a random place
    then ToTensor() | PILToTensor() [+ ConvertImageDtype(torch.float32)] | ToImage() + ToDtype(float32,
    scale=True), then Normalize(mean, std)

with bilinear interpolation (torchvision's default; PIL images are always resized with antialias),
and RandomVerticalFlip(p) after the crop. For sets of fixed-size pixels (MNIST, CIFAR10):
RandomCrop(size, padding, pad_if_needed, fill, padding_mode), RandomHorizontalFlip(p) and
RandomVerticalFlip(p) in any order, then the conversion and Normalize. Anything else (ColorJitter,
AutoAugment, a Lambda, another order) raises UnsupportedTransform naming the transform and what to
do: feeder never freezes or drops a transform.

What the C++ stage does not do (the pixel sets' crops and flips, a vertical flip, a Normalize of one
value per channel on pixels) runs on each batch's tensor in Python (BatchStage), vectorised, its
draws from a generator of (seed, epoch, rank, batch): the same for any number of workers, different
in every epoch.
"""

import numbers

import torch

__all__ = ["UnsupportedTransform", "UnbatchableItems", "ImageRecipe", "BatchStage", "SampleTail", "image_recipe", "pixel_recipe", "split_recipe"]

# RandomCrop's padding modes and torch.nn.functional.pad's names for them.
_PADDING_MODES = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}


class UnsupportedTransform(ValueError):
    """A transform feeder cannot run as the dataset's own code would: the message names it. The
    DataLoader then makes the items as torch's DataLoader does (feeder/torch_run.py)."""


class UnbatchableItems(UnsupportedTransform):
    """A transform whose items no DataLoader batches (PIL images): refused, as torch's default collate
    would fail on the first batch."""


class ImageRecipe:
    """What the stage does to each image: a crop ("random_resized_crop", "center_crop" or "resize"),
    its size, the crop's scale and ratio, the shorter side before a center crop, a horizontal flip's
    probability, the output dtype ("float32" or "uint8") and (mean, std) per channel."""

    def __init__(self):
        self.crop = None
        self.height = self.width = None
        self.scale = (0.08, 1.0)
        self.ratio = (3 / 4, 4 / 3)
        self.resize = None
        self.flip = 0.0
        self.dtype = None       # None: still a PIL image; "uint8" or "float32" once converted
        self.mean = None
        self.std = None
        self.batch_steps = []   # the random steps run on each batch (BatchStage), in order
        self.padding = None     # a RandomCrop's padding of files: the stage's padding options

    def stage_options(self, channels):
        """The options dict of the C++ image stage (DataLoader's image options)."""
        mean = list(self.mean) if self.mean is not None else [0.0]
        std = list(self.std) if self.std is not None else [1.0]
        if len(mean) == 1:
            mean = mean * channels
        if len(std) == 1:
            std = std * channels
        return {"channels": channels, "height": self.height, "width": self.width, "crop": self.crop,
                "scale": tuple(self.scale), "ratio": tuple(self.ratio), "flip": False,
                "horizontal_flip": float(self.flip), "resize": self.resize if self.resize or self.crop == "random_crop" else 1,
                "mean": mean + [0.0] * (3 - channels), "std": std + [1.0] * (3 - channels),
                # torchvision decodes the whole image: DCT scaling would move pixels further.
                "dct_scaling": False, **(self.padding or {})}

    def __repr__(self):
        return (f"ImageRecipe(crop={self.crop!r}, size=({self.height}, {self.width}), resize={self.resize}, "
                f"flip={self.flip}, dtype={self.dtype!r}, mean={self.mean}, std={self.std})")


def _applies_held_transforms(self, img):  # the shape of a wrapper's __call__ that is certain to be its Compose
    return self.transforms(img)


def _is_wrapper(transform):
    """Whether `transform` is an object whose ``__call__`` is exactly ``return self.transforms(img)``
    (torchvision's reference presets, ClassificationPresetTrain and ClassificationPresetEval, and
    their kin): it is then its ``transforms``. Anything else a class does in __call__ is not read."""
    call = getattr(type(transform), "__call__", None)
    code = getattr(call, "__code__", None)
    reference = _applies_held_transforms.__code__
    return (code is not None and not _is_torchvision(transform) and callable(getattr(transform, "transforms", None))
            and code.co_code == reference.co_code and code.co_names == reference.co_names
            and code.co_argcount == reference.co_argcount and not call.__defaults__)


def _steps(transform):
    """The transform as a flat list of steps: a Compose (v1 or v2) is opened, nested ones too, and a
    wrapper that only applies the Compose it holds (_is_wrapper)."""
    if transform is None:
        return []
    if _is_wrapper(transform):
        return _steps(transform.transforms)
    if type(transform).__name__ == "Compose" and hasattr(transform, "transforms"):
        return [step for inner in transform.transforms for step in _steps(inner)]
    return [transform]


def _describe(step):
    text = repr(step).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def _is_torchvision(step):
    return type(step).__module__.startswith("torchvision.transforms")


def _size_pair(size, step):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    size = list(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) == 2:
        return int(size[0]), int(size[1])
    raise UnsupportedTransform(f"{_describe(step)}: a size of {len(size)} numbers")


def _check_bilinear(step):
    mode = getattr(step, "interpolation", None)
    value = getattr(mode, "value", mode)
    if value not in ("bilinear", 2, None):  # 2: PIL's BILINEAR, torchvision 0.14's old spelling
        raise UnsupportedTransform(
            f"{_describe(step)}: feeder's image stage resamples with torchvision's default, bilinear "
            f"interpolation (with antialias); {value!r} is not implemented")


_ADVICE = ("feeder runs a dataset's transform in C++ when it is a Compose of RandomResizedCrop, Resize, CenterCrop, "
           "RandomCrop, the flips, ToTensor/PILToTensor/ConvertImageDtype/ToImage/ToDtype and Normalize "
           "(docs/python.md, 'torchvision datasets'); otherwise the dataset's items are made as torch's DataLoader "
           "makes them, in worker processes")


def _refuse(step, why=None):
    raise UnsupportedTransform(f"the dataset's transform has {_describe(step)}, which "
                               f"{why or 'feeder cannot run as torchvision would'}. {_ADVICE}")


def _conversion(recipe, step, kind):
    """ToTensor and its kin; returns True when `step` was one."""
    if kind in ("ToTensor",):
        if recipe.dtype is not None:
            _refuse(step, "converts an image that is already a tensor")
        recipe.dtype = "float32"
        return True
    if kind in ("PILToTensor", "ToImage"):
        if recipe.dtype is not None:
            _refuse(step, "converts an image that is already a tensor")
        recipe.dtype = "uint8"
        return True
    if kind in ("ConvertImageDtype", "ToDtype"):
        dtype = getattr(step, "dtype", None)
        if isinstance(dtype, dict):  # v2's per-type dtypes
            dtype = dtype.get(next((key for key in dtype if getattr(key, "__name__", "") == "Image"), None),
                              dtype.get(torch.Tensor))
        scale = getattr(step, "scale", True)  # ConvertImageDtype always scales
        if recipe.dtype != "uint8":
            _refuse(step, "converts what is not a uint8 image tensor here")
        if dtype == torch.float32 and scale:
            recipe.dtype = "float32"
            return True
        if dtype == torch.uint8:
            return True
        _refuse(step, "makes a dtype feeder does not serve (float32 scaled to [0, 1], or uint8)")
    return False


def _per_channel(values):
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if isinstance(values, numbers.Real):
        return [float(values)]
    return [float(v) for v in values]


def _normalize(recipe, step):
    """Normalize(mean, std): after the conversion to float, once."""
    if recipe.dtype != "float32" or recipe.mean is not None:
        _refuse(step, "normalises what is not a float image tensor here")
    recipe.mean, recipe.std = _per_channel(step.mean), _per_channel(step.std)


def image_recipe(transform):
    """The recipe of `transform` for images decoded from files (PIL images in torchvision), or
    UnsupportedTransform. None (no transform) is refused: the items would be PIL images of any size,
    which no batch holds."""
    recipe = ImageRecipe()
    steps = _steps(transform)
    if not steps:
        raise UnbatchableItems("the dataset has no transform: its items are PIL images of their own sizes, "
                                   "which torch's DataLoader cannot batch either. Give it one, e.g. "
                                   "transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), "
                                   "transforms.ToTensor()])")
    pending_resize = None  # Resize(s) waiting for its CenterCrop
    for step in steps:
        kind = type(step).__name__ if _is_torchvision(step) else None
        if kind is None:
            _refuse(step, "is not one of torchvision's transforms")
        if pending_resize is not None and kind not in ("CenterCrop", "RandomCrop"):
            _refuse(pending_resize, "resizes the shorter side only, which leaves images of different sizes "
                                    "without a CenterCrop right after it")
        if kind == "RandomResizedCrop":
            if recipe.crop is not None or recipe.dtype is not None:
                _refuse(step, "comes after another crop or a conversion")
            _check_bilinear(step)
            recipe.crop = "random_resized_crop"
            recipe.height, recipe.width = _size_pair(step.size, step)
            recipe.scale = tuple(float(v) for v in step.scale)
            recipe.ratio = tuple(float(v) for v in step.ratio)
        elif kind == "Resize":
            if recipe.crop is not None or recipe.dtype is not None:
                _refuse(step, "comes after another crop or a conversion")
            _check_bilinear(step)
            if getattr(step, "max_size", None) is not None:
                _refuse(step, "has max_size")
            size = step.size
            if isinstance(size, numbers.Integral) or len(size) == 1:
                pending_resize = step
                recipe.resize = int(size if isinstance(size, numbers.Integral) else size[0])
            else:
                recipe.crop = "resize"
                recipe.height, recipe.width = _size_pair(size, step)
        elif kind == "RandomCrop":
            if recipe.crop is not None or recipe.dtype is not None:
                _refuse(step, "comes after another crop or a conversion")
            padded = _padding(step) != (0, 0, 0, 0) or step.pad_if_needed
            if padded and pending_resize is not None:
                _refuse(step, "pads the crop of a resized image (feeder pads the crop of the image as it is)")
            if padded and getattr(step, "padding_mode", "constant") not in _PADDING_MODES:
                _refuse(step, f"pads with padding_mode={step.padding_mode!r} (feeder pads 'constant', 'edge' and "
                              f"'reflect')")
            if padded:
                fill = step.fill if isinstance(step.fill, (tuple, list)) else [step.fill] * 3
                if len(fill) not in (1, 3) or not all(isinstance(v, numbers.Integral) and 0 <= v <= 255 for v in fill):
                    _refuse(step, f"fills with {step.fill!r} (feeder fills with one level 0..255, or one per channel)")
                recipe.padding = {"padding": _padding(step), "pad_if_needed": bool(step.pad_if_needed),
                                  "fill": (list(fill) * 3)[:3], "padding_mode": step.padding_mode}
            pending_resize = None
            recipe.crop = "random_crop"
            recipe.height, recipe.width = _size_pair(step.size, step)
            recipe.resize = recipe.resize or 0  # after Resize(s), or the image as it is
            if recipe.resize and recipe.resize < max(recipe.height, recipe.width):
                _refuse(step, f"crops more than Resize({recipe.resize}) leaves (torchvision raises there)")
        elif kind == "CenterCrop":
            if pending_resize is None:
                _refuse(step, "crops images of any size without a Resize(s) before it")
            pending_resize = None
            recipe.crop = "center_crop"
            recipe.height, recipe.width = _size_pair(step.size, step)
            if recipe.resize < max(recipe.height, recipe.width):
                _refuse(step, f"crops more than Resize({recipe.resize}) leaves (torchvision pads with zeros there)")
        elif kind == "RandomVerticalFlip":
            if recipe.crop is None or recipe.dtype is not None or any(
                    type(step_).__name__ == kind for step_ in recipe.batch_steps):
                _refuse(step, "comes before the crop, after a conversion, or twice")
            recipe.batch_steps.append(step)
        elif kind == "RandomHorizontalFlip":
            if recipe.crop is None or recipe.flip or recipe.dtype is not None:
                _refuse(step, "comes before the crop, after a conversion, or twice (feeder flips once, after "
                              "the crop)")
            recipe.flip = float(step.p)
        elif _conversion(recipe, step, kind):
            pass
        elif kind == "Normalize":
            _normalize(recipe, step)
        else:
            _refuse(step)
    if pending_resize is not None:
        _refuse(pending_resize, "resizes the shorter side only, which leaves images of different sizes "
                                "without a CenterCrop after it")
    if recipe.crop is None:
        _refuse(steps[0], "leaves every image its own size (no RandomResizedCrop, Resize((h, w)) or "
                          "Resize + CenterCrop), which no batch holds")
    if recipe.dtype is None:
        _refuse(steps[-1], "ends with a PIL image, not a tensor (add ToTensor())")
    return recipe


# torchvision's steps that take a uint8 image tensor (C,H,W) as they take a PIL image, drawing from
# torch's generator, keeping the size and the channels: after the C++ crop, each runs per sample in
# Python (SampleTail) on the crop as a tensor.
_TENSOR_STEPS = {"TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter", "RandomGrayscale",
                 "GaussianBlur", "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "RandomPosterize",
                 "RandomSolarize", "RandomInvert", "RandomRotation", "RandomAffine", "RandomPerspective",
                 "RandomErasing"}


def _tensor_interpolation(step):
    """Whether a step resamples (if at all) as torchvision does for tensors and PIL images alike."""
    mode = getattr(step, "interpolation", None)
    return getattr(mode, "value", mode) in (None, "nearest", "bilinear", 0, 2)


def split_recipe(transform):
    """A transform run in two parts: the crop and flips in C++ (the recipe, making uint8 crops), then the
    rest per sample in Python (the SampleTail of torchvision's steps on the crop as a tensor), as
    ``(recipe, SampleTail)``; None when the transform does not split so (UnsupportedTransform from
    image_recipe then says why)."""
    steps = _steps(transform)
    first = next((i for i, step in enumerate(steps) if _is_torchvision(step) and type(step).__name__ in _TENSOR_STEPS),
                 None)
    if first is None or first == 0:
        return None
    tail = steps[first:]
    for step in tail:
        kind = type(step).__name__
        if not _is_torchvision(step) or kind not in _TENSOR_STEPS | {
                "ToTensor", "PILToTensor", "ConvertImageDtype", "ToImage", "ToDtype", "Normalize"}:
            return None
        if not _tensor_interpolation(step):
            return None
    if not any(type(step).__name__ in ("ToTensor", "PILToTensor", "ToImage") for step in tail):
        return None  # torch's items would end as PIL images, or were tensors before the tail
    try:
        import torchvision.transforms as T
        recipe = image_recipe(T.Compose(list(steps[:first]) + [T.PILToTensor()]))
    except UnsupportedTransform:
        return None
    if recipe.batch_steps:  # a vertical flip between the crop and the tail: kept with the tail
        tail = list(recipe.batch_steps) + tail
        recipe.batch_steps = []
    return recipe, SampleTail(tail)


class SampleTail:
    """torchvision's steps after the C++ crop, run on each uint8 crop (C,H,W) as a tensor, on the thread
    that iterates: the conversion to a tensor is already done (ToTensor becomes the scaling to
    float32 it is). Each sample draws from torch's generator seeded by (seed, epoch, rank, batch,
    row), under torch.random.fork_rng so that the script's own draws are untouched: a function of the
    epoch's order for any number of workers, a repeated sample drawn anew."""

    def __init__(self, steps):
        import torchvision.transforms as T
        self.names = [type(step).__name__ for step in steps]
        run = []
        for step in steps:
            kind = type(step).__name__
            if kind in ("PILToTensor", "ToImage"):
                continue
            run.append(T.ConvertImageDtype(torch.float32) if kind == "ToTensor" else step)
        self.steps = run

    def output_size(self, height, width):
        return height, width  # its steps keep the size

    def __call__(self, images, seed, epoch, rank, batch):
        out = None
        with torch.random.fork_rng(devices=[]):
            for row in range(len(images)):
                torch.manual_seed(hash((seed, epoch, rank, batch, row)) & (2**63 - 1))
                image = images[row]
                for step in self.steps:
                    image = step(image)
                if out is None:
                    out = torch.empty((len(images), *image.shape), dtype=image.dtype)
                    if torch.utils.data.get_worker_info() is not None:  # handed back from a worker process
                        out.share_memory_()
                out[row] = image
        return out


def pixel_recipe(transform):
    """For a set of fixed-size pixels (MNIST, CIFAR10): (dtype, mean, std) of its transform, which may
    only convert and normalise. Raises UnsupportedTransform otherwise."""
    recipe = ImageRecipe()
    steps = _steps(transform)
    if not steps:
        raise UnbatchableItems("the dataset has no transform: its items are PIL images, which torch's "
                                   "DataLoader cannot batch either. Give it transforms.ToTensor()")
    for step in steps:
        kind = type(step).__name__ if _is_torchvision(step) else None
        if kind is None:
            _refuse(step, "is not one of torchvision's transforms")
        if _conversion(recipe, step, kind):
            continue
        if kind == "Normalize":
            _normalize(recipe, step)
            continue
        if kind in ("RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip"):
            if recipe.dtype is not None:
                _refuse(step, "comes after the conversion to a tensor (feeder runs it on the pixels, before)")
            if kind == "RandomCrop" and getattr(step, "padding_mode", "constant") not in _PADDING_MODES:
                _refuse(step, f"pads with padding_mode={step.padding_mode!r} (feeder pads 'constant', 'edge' and "
                              f"'reflect')")
            recipe.batch_steps.append(step)
            continue
        _refuse(step, "changes the pixels of a set of fixed-size images; feeder runs RandomCrop, "
                      "RandomHorizontalFlip, RandomVerticalFlip, the conversion and Normalize for such sets")
    if recipe.dtype is None:
        _refuse(steps[-1], "ends with a PIL image, not a tensor (add ToTensor())")
    return recipe


def _padding(step):
    """RandomCrop's padding as (left, top, right, bottom)."""
    padding = step.padding
    if padding is None:
        return 0, 0, 0, 0
    if isinstance(padding, numbers.Integral):
        return (int(padding),) * 4
    padding = [int(v) for v in padding]
    if len(padding) == 1:
        return (padding[0],) * 4
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    return tuple(padding)


class BatchStage:
    """The steps of a dataset's transform that run on each batch's tensor, in Python: RandomCrop and
    the flips of a pixel set on its uint8 pixels (then the conversion and Normalize), a vertical flip
    after an image stage's crop, a Normalize of one value per channel. Draws come from a generator
    seeded by (seed, epoch, rank, batch), one draw per sample and step, as torchvision draws them
    per item; called on the thread that iterates, so the batches are the same for any number of
    workers."""

    def __init__(self, steps, to_float, mean, std, channels):
        self.steps = list(steps)
        self.to_float = to_float  # uint8 pixels in, float32 out: ToTensor's scaling, then Normalize
        shape = (1, channels, 1, 1)
        self.mean = None if mean is None else torch.tensor(
            (mean * channels)[:channels] if len(mean) == 1 else mean, dtype=torch.float32).reshape(shape)
        self.std = None if std is None else torch.tensor(
            (std * channels)[:channels] if len(std) == 1 else std, dtype=torch.float32).reshape(shape)

    def output_size(self, height, width):
        """(height, width) of the images it makes of images of this size."""
        for step in self.steps:
            if type(step).__name__ == "RandomCrop":
                height, width = _size_pair(step.size, step)
        return height, width

    def __call__(self, images, seed, epoch, rank, batch):
        generator = torch.Generator()
        # A mix of the four numbers (Python's hash of ints is not salted): a seed of its own per batch.
        generator.manual_seed(hash((seed, epoch, rank, batch)) & (2**63 - 1))
        for step in self.steps:
            kind = type(step).__name__
            if kind == "RandomCrop":
                images = self._crop(images, step, generator)
            else:
                flip = torch.rand(len(images), generator=generator) < step.p
                dimension = -1 if kind == "RandomHorizontalFlip" else -2
                images = torch.where(flip.reshape(-1, 1, 1, 1), images.flip(dimension), images)
        if self.to_float:
            images = images.float().div_(255)
        if self.mean is not None:
            images = images.sub_(self.mean).div_(self.std)
        return images

    @staticmethod
    def _crop(images, step, generator):
        height, width = _size_pair(step.size, step)
        left, top, right, bottom = _padding(step)
        if step.pad_if_needed:  # as torchvision: both sides by what is missing
            missing_h = max(0, height - (images.shape[-2] + top + bottom))
            missing_w = max(0, width - (images.shape[-1] + left + right))
            left, right, top, bottom = left + missing_w, right + missing_w, top + missing_h, bottom + missing_h
        if left or top or right or bottom:
            mode = _PADDING_MODES[step.padding_mode]
            if mode == "constant":
                fill = step.fill if isinstance(step.fill, (tuple, list)) else [step.fill] * images.shape[1]
                padded = images.new_empty((*images.shape[:2], images.shape[2] + top + bottom,
                                           images.shape[3] + left + right))
                padded[:] = torch.tensor(fill, dtype=images.dtype).reshape(1, -1, 1, 1)
                padded[:, :, top:top + images.shape[2], left:left + images.shape[3]] = images
                images = padded
            else:
                images = torch.nn.functional.pad(images.float(), (left, right, top, bottom), mode=mode).to(images.dtype)
        full_h, full_w = images.shape[-2:]
        if full_h < height or full_w < width:
            raise ValueError(f"RandomCrop({height}, {width}) of images of {full_h}x{full_w} after padding: "
                             f"torchvision raises too (give padding or pad_if_needed)")
        count = len(images)
        tops = torch.randint(0, full_h - height + 1, (count,), generator=generator)
        lefts = torch.randint(0, full_w - width + 1, (count,), generator=generator)
        rows = (tops[:, None] + torch.arange(height))[:, :, None]
        columns = (lefts[:, None] + torch.arange(width))[:, None, :]
        picked = images[torch.arange(count)[:, None, None], :, rows, columns]  # (B, h, w, C)
        return picked.permute(0, 3, 1, 2).contiguous()
