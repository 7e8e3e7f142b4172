"""A small labeled image set made with PIL, the same on every run: the images of the Parquet image
fixtures under tests/data/images/ (written once by tests/compat/make_image_fixtures.sh), which the
tests make again to compare against."""

import io

import numpy as np
import torch
from PIL import Image

CLASSES = ("cat", "dog", "fox")
PER_CLASS = 10


def image_array(label, index):
    """Image `index` of class `label`: (H, W, C) uint8, of a size and a kind (RGB, RGBA, gray) that vary."""
    height = 12 + (index * 7 + label * 5) % 29
    width = 14 + (index * 11 + label * 3) % 27
    y, x = np.mgrid[0:height, 0:width]
    red = (x * 255 // max(width - 1, 1) + 40 * label) % 256
    green = (y * 255 // max(height - 1, 1) + 17 * index) % 256
    blue = ((x + y) * 9 + 60 * label + index) % 256
    rgb = np.stack([red, green, blue], axis=-1).astype(np.uint8)
    kind = index % 3
    if kind == 1:  # RGBA: PIL's RGB conversion drops the alpha
        alpha = ((x * y) % 256).astype(np.uint8)[..., None]
        return np.concatenate([rgb, alpha], axis=-1)
    if kind == 2:  # gray
        return rgb[..., :1].copy()
    return rgb


def png_bytes(label, index):
    array = image_array(label, index)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    buffer = io.BytesIO()
    Image.fromarray(array[..., 0] if mode == "L" else array, mode).save(buffer, format="PNG")
    return buffer.getvalue()


def samples(per_class=PER_CLASS):
    """(class name, file name, label, PNG bytes) in torchvision ImageFolder's order: by class, then by name."""
    for label, name in enumerate(CLASSES):
        for index in range(per_class):
            yield name, f"{name}_{index:02d}.png", label, png_bytes(label, index)


def write_folder(root, per_class=PER_CLASS):
    """The set (`per_class` images of each class) as an ImageFolder tree under `root` (a pathlib.Path)."""
    for class_name, file_name, _, data in samples(per_class):
        (root / class_name).mkdir(parents=True, exist_ok=True)
        (root / class_name / file_name).write_bytes(data)
    return root


def all_batches(loader):
    """One epoch of `loader` as (images, labels), each batch's tensors copied and concatenated."""
    images, labels = [], []
    for x, y in loader:
        images.append(x.clone())
        labels.append(y.clone())
    return torch.cat(images), torch.cat(labels)
