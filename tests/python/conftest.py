"""Fixtures for the Python package's tests: small image sets whose labels say which sample they are."""

import gzip
import struct

import numpy as np
import pytest

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def write_idx(path_prefix, images, labels):
    """Writes `<prefix>-images-idx3-ubyte.gz` and its labels file; returns the images file's path."""
    images_path = f"{path_prefix}-images-idx3-ubyte.gz"
    with gzip.open(images_path, "wb") as f:
        f.write(struct.pack(">IIII", 0x0803, images.shape[0], images.shape[1], images.shape[2]))
        f.write(images.tobytes())
    with gzip.open(f"{path_prefix}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x0801, labels.shape[0]))
        f.write(labels.astype(np.uint8).tobytes())
    return images_path


def numbered_images(count, height=6, width=5):
    """uint8 (count, 1, H, W) images whose every pixel is the sample's number mod 256: a batch's
    pixels say which samples it holds even where labels repeat."""
    return np.repeat((np.arange(count) % 256).astype(np.uint8), height * width).reshape(count, 1, height, width)


@pytest.fixture
def numbered():
    """1000 images (1x6x5) with label = index: every batch says exactly which samples it holds."""
    images = numbered_images(1000)
    labels = np.arange(1000, dtype=np.int64)
    return images, labels


@pytest.fixture
def idx_set(tmp_path):
    """An IDX pair of 2000 28x28 images on disk (1.6 MB decoded), their pixels and labels (0-9)."""
    rng = np.random.default_rng(7)
    images = rng.integers(0, 256, size=(2000, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=2000, dtype=np.int64)
    return write_idx(str(tmp_path / "small"), images, labels), images, labels


@pytest.fixture(scope="module")
def image_set_folder(tmp_path_factory):
    """tests/python/image_set.py's 30 PNGs (3 classes) as an ImageFolder tree."""
    import image_set
    return image_set.write_folder(tmp_path_factory.mktemp("image_set"))
