"""A torchvision transform as feeder's C++ per-sample stage runs it, or a refusal that names it.

feeder.DataLoader(torchvision.datasets.ImageFolder(root, transform)) reads the dataset's files itself
and runs its transform on the loader's threads; this module says what that transform is in the
stage's terms. Supported, in the orders scripts write them (transforms and transforms.v2 alike):

    RandomResizedCrop(size, scale, ratio) [+ RandomHorizontalFlip(p)]          training
    Resize(s) + CenterCrop(size) [+ RandomHorizontalFlip(p)]                   evaluation
    Resize((h, w)) [+ RandomHorizontalFlip(p)]                                 every image to one size
    then ToTensor() | PILToTensor() [+ ConvertImageDtype(torch.float32)] | ToImage() + ToDtype(float32,
    scale=True), then Normalize(mean, std)

with bilinear interpolation (torchvision's default; PIL images are always resized with antialias).
Anything else (ColorJitter, AutoAugment, RandomCrop, a Lambda, another order) raises
UnsupportedTransform naming the transform and what to do: feeder never freezes or drops a
transform. For sets of fixed-size pixels (MNIST, CIFAR10) only the conversion and Normalize apply.
"""

import numbers

import torch

__all__ = ["UnsupportedTransform", "ImageRecipe", "image_recipe", "pixel_recipe"]


class UnsupportedTransform(ValueError):
    """A transform feeder cannot run as the dataset's own code would: the message names it and what to do."""


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
                "horizontal_flip": float(self.flip), "resize": self.resize if self.resize else 1,
                "mean": mean + [0.0] * (3 - channels), "std": std + [1.0] * (3 - channels),
                # torchvision decodes the whole image: DCT scaling would move pixels further.
                "dct_scaling": False}

    def __repr__(self):
        return (f"ImageRecipe(crop={self.crop!r}, size=({self.height}, {self.width}), resize={self.resize}, "
                f"flip={self.flip}, dtype={self.dtype!r}, mean={self.mean}, std={self.std})")


def _steps(transform):
    """The transform as a flat list of steps: a Compose (v1 or v2) is opened, nested ones too."""
    if transform is None:
        return []
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
            f"interpolation (with antialias); {value!r} is not implemented: use InterpolationMode.BILINEAR, or keep "
            f"this dataset on torch's DataLoader")


_ADVICE = ("feeder runs a dataset's transform in C++ only when it is a Compose of RandomResizedCrop, Resize, "
           "CenterCrop, RandomHorizontalFlip, ToTensor/PILToTensor/ConvertImageDtype/ToImage/ToDtype and "
           "Normalize (docs/python.md, 'torchvision datasets'). Keep this dataset on torch's DataLoader, or move the "
           "step to the batches: DataLoader(..., transform=lambda images, labels: (f(images), labels)) runs on "
           "each batch's tensors")


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


def image_recipe(transform):
    """The recipe of `transform` for images decoded from files (PIL images in torchvision), or
    UnsupportedTransform. None (no transform) is refused: the items would be PIL images of any size,
    which no batch holds."""
    recipe = ImageRecipe()
    steps = _steps(transform)
    if not steps:
        raise UnsupportedTransform("the dataset has no transform: its items are PIL images of their own sizes, "
                                   "which torch's DataLoader cannot batch either. Give it one, e.g. "
                                   "transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), "
                                   "transforms.ToTensor()])")
    pending_resize = None  # Resize(s) waiting for its CenterCrop
    for step in steps:
        kind = type(step).__name__ if _is_torchvision(step) else None
        if kind is None:
            _refuse(step, "is not one of torchvision's transforms")
        if pending_resize is not None and kind != "CenterCrop":
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
        elif kind == "CenterCrop":
            if pending_resize is None:
                _refuse(step, "crops images of any size without a Resize(s) before it")
            pending_resize = None
            recipe.crop = "center_crop"
            recipe.height, recipe.width = _size_pair(step.size, step)
            if recipe.resize < max(recipe.height, recipe.width):
                _refuse(step, f"crops more than Resize({recipe.resize}) leaves (torchvision pads with zeros there)")
        elif kind == "RandomHorizontalFlip":
            if recipe.crop is None or recipe.flip or recipe.dtype is not None:
                _refuse(step, "comes before the crop, after a conversion, or twice (feeder flips once, after "
                              "the crop)")
            recipe.flip = float(step.p)
        elif _conversion(recipe, step, kind):
            pass
        elif kind == "Normalize":
            if recipe.dtype != "float32" or recipe.mean is not None:
                _refuse(step, "normalises what is not a float image tensor here")
            recipe.mean, recipe.std = _per_channel(step.mean), _per_channel(step.std)
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


def pixel_recipe(transform):
    """For a set of fixed-size pixels (MNIST, CIFAR10): (dtype, mean, std) of its transform, which may
    only convert and normalise. Raises UnsupportedTransform otherwise."""
    recipe = ImageRecipe()
    steps = _steps(transform)
    if not steps:
        raise UnsupportedTransform("the dataset has no transform: its items are PIL images, which torch's "
                                   "DataLoader cannot batch either. Give it transforms.ToTensor()")
    for step in steps:
        kind = type(step).__name__ if _is_torchvision(step) else None
        if kind is None:
            _refuse(step, "is not one of torchvision's transforms")
        if _conversion(recipe, step, kind):
            continue
        if kind == "Normalize":
            if recipe.dtype != "float32" or recipe.mean is not None:
                _refuse(step, "normalises what is not a float image tensor here")
            recipe.mean, recipe.std = _per_channel(step.mean), _per_channel(step.std)
            continue
        _refuse(step, "changes the pixels of a set of fixed-size images; feeder's per-sample stage for such "
                      "sets converts and normalises only")
    if recipe.dtype is None:
        _refuse(steps[-1], "ends with a PIL image, not a tensor (add ToTensor())")
    return recipe
