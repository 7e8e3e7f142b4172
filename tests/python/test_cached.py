"""feeder.cached(dataset): a map-style Dataset read once into a compact store, served by DataLoader."""

import os
import sys

import numpy as np
import pytest
import torch

import feeder
from conftest import FASHION_MNIST

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "reference"))
from article_pipeline import MNISTDatasetV1, idx_to_dataframe  # noqa: E402


def items_of(dataset):
    """Every item's image (float32) and label, stacked, as the Dataset gives them."""
    images, labels = [], []
    for i in range(len(dataset)):
        item = dataset[i]
        images.append(torch.as_tensor(np.asarray(item["image"] if isinstance(item, dict) else item[0]),
                                      dtype=torch.float32))
        labels.append(int(item["label"] if isinstance(item, dict) else item[1]))
    return torch.stack(images), torch.tensor(labels)


def one_batch(cached, **options):
    loader = feeder.DataLoader(cached, batch_size=len(cached), shuffle=False, **options)
    images, labels = next(iter(loader))
    return images, labels


class Pairs(torch.utils.data.Dataset):
    """(image, label) items from arrays, with an optional per-item function."""

    def __init__(self, images, labels, convert=lambda image: image):
        self.images, self.labels, self.convert = images, labels, convert

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.convert(torch.from_numpy(self.images[index])), int(self.labels[index])


@pytest.fixture(scope="module")
def article_v1():
    """The article's Dataset v1 (a pandas row converted per item) over 3000 FashionMNIST images."""
    frame = idx_to_dataframe(os.path.join(FASHION_MNIST, "train-images-idx3-ubyte.gz"),
                             os.path.join(FASHION_MNIST, "train-labels-idx1-ubyte.gz"), limit=3000)
    return MNISTDatasetV1(frame)


def test_the_articles_dataset_v1_is_held_as_uint8_and_served_with_its_values(article_v1):
    cached = feeder.cached(article_v1, num_workers=2, chunk_size=128)
    assert cached.pixel_type == "uint8" and cached.images.shape == (3000, 1, 28, 28)
    assert cached.nbytes == 3000 * 784 + 3000 * 8
    expected_images, expected_labels = items_of(article_v1)
    images, labels = one_batch(cached)
    assert torch.equal(labels, expected_labels)
    assert torch.allclose(images, expected_images, rtol=1e-6, atol=1e-7)
    # The codes are the pixels themselves: value = code / 255.
    first, step = cached.levels
    assert first == 0.0 and step == pytest.approx(1 / 255, rel=1e-9)


def test_the_same_store_for_any_number_of_reading_processes(article_v1):
    by_workers = [feeder.cached(article_v1, num_workers=n, chunk_size=100) for n in (0, 1, 2)]
    for other in by_workers[1:]:
        assert np.array_equal(other.images, by_workers[0].images)
        assert np.array_equal(other.labels, by_workers[0].labels)


def test_normalised_pixels_are_256_levels_too():
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, size=(500, 3, 4, 5), dtype=np.uint8)
    dataset = Pairs(pixels, np.arange(500) % 7, lambda image: (image.float() / 255 - 0.286) / 0.353)
    cached = feeder.cached(dataset, num_workers=0)
    assert cached.pixel_type == "uint8"
    expected_images, expected_labels = items_of(dataset)
    images, labels = one_batch(cached)
    assert torch.equal(labels, expected_labels)
    assert torch.allclose(images, expected_images, rtol=1e-6, atol=1e-6)
    # channels-last serves the same values (its conversion is not fused: within a unit in the last place)
    nhwc, _ = one_batch(cached, layout="nhwc")
    assert torch.allclose(nhwc, images, rtol=1e-6, atol=1e-6)


def test_other_values_are_held_and_served_exactly_as_float32():
    rng = np.random.default_rng(5)
    values = rng.standard_normal((300, 2, 3, 3)).astype(np.float32)
    dataset = Pairs(values, np.arange(300))
    cached = feeder.cached(dataset, num_workers=2, chunk_size=64)
    assert cached.pixel_type == "float32" and cached.levels is None
    images, labels = one_batch(cached)
    assert torch.equal(images, torch.from_numpy(values))
    assert torch.equal(labels, torch.arange(300))
    shuffled = feeder.DataLoader(cached, batch_size=64, shuffle=True, seed=9, num_workers=2)
    for images, labels in shuffled:
        assert torch.equal(images, torch.from_numpy(values)[labels])
    nhwc, _ = one_batch(cached, layout="nhwc")
    assert torch.equal(nhwc, torch.from_numpy(values))
    # few distinct values that are not evenly spaced are not levels
    uneven = np.choose(rng.integers(0, 3, size=(50, 1, 2, 2)), [0.0, 0.1, 0.35]).astype(np.float32)
    assert feeder.cached(Pairs(uneven, np.zeros(50)), num_workers=0).pixel_type == "float32"


def test_raw_uint8_pixels_are_served_as_the_values_they_are():
    pixels = np.arange(4 * 16, dtype=np.uint8).reshape(4, 1, 4, 4) * 3
    cached = feeder.cached(Pairs(pixels, [1, 2, 3, 4]), num_workers=0)
    assert cached.pixel_type == "uint8"
    images, labels = one_batch(cached)
    assert torch.equal(images, torch.from_numpy(pixels).float())
    assert labels.tolist() == [1, 2, 3, 4]
    assert torch.equal(cached[2][0], torch.from_numpy(pixels[2]).float())


def test_pil_images_unlabeled_items_and_an_item_function():
    from PIL import Image
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(6, 5, 4, 3), dtype=np.uint8)

    class PilImages(torch.utils.data.Dataset):
        def __len__(self):
            return len(rgb)

        def __getitem__(self, index):
            return {"picture": Image.fromarray(rgb[index]), "target": index}

    with pytest.raises(ValueError, match=r"item 0 is a dict with keys \['picture', 'target'\].*item="):
        feeder.cached(PilImages(), num_workers=0)
    cached = feeder.cached(PilImages(), num_workers=2, item=lambda item: (item["picture"], item["target"]))
    assert cached.images.shape == (6, 3, 5, 4)  # (H,W,C) pictures become (C,H,W)
    assert np.array_equal(cached.images, rgb.transpose(0, 3, 1, 2))
    assert cached.labels.tolist() == list(range(6))

    unlabeled = feeder.cached(torch.utils.data.TensorDataset(torch.ones(10, 2, 2)), num_workers=0)
    assert unlabeled.labels is None
    loader = feeder.DataLoader(unlabeled, batch_size=10, allow_unlabeled=True)
    images, labels = next(iter(loader))
    assert torch.equal(images, torch.ones(10, 1, 2, 2)) and labels.tolist() == [-1] * 10


def test_what_cannot_be_cached_is_refused_with_the_reason(article_v1):
    ragged = Pairs([np.zeros((1, 4, 4), np.float32)] * 3 + [np.zeros((1, 5, 4), np.float32)], [0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"item 3 is float32 \(1, 5, 4\), item 0 float32 \(1, 4, 4\)"):
        feeder.cached(ragged, num_workers=0)
    with pytest.raises(Exception, match=r"item 3 is float32 \(1, 5, 4\)"):  # raised in a worker, re-raised here
        feeder.cached(ragged, num_workers=1)
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([])

    with pytest.raises(ValueError, match="map-style Dataset"):
        feeder.cached(Stream())
    with pytest.raises(ValueError, match="empty"):
        feeder.cached(Pairs([], []))
    with pytest.raises(ValueError, match=r"item 0: the image has shape \(784,\)"):
        feeder.cached(Pairs([np.zeros(784, np.float32)], [0]), num_workers=0)
    with pytest.raises(ValueError, match=r"item 0: the label is 0.5"):
        feeder.cached(torch.utils.data.TensorDataset(torch.zeros(2, 3, 3), torch.tensor([0.5, 1.5])), num_workers=0)
    # A Dataset handed to DataLoader itself runs as torch's DataLoader runs it, the warning saying
    # what feeder.cached(dataset) would do (before: a NumPy error after reading every item).
    with pytest.warns(feeder.PlanWarning, match=r"feeder\.cached\(dataset\)"):
        loader = feeder.DataLoader(article_v1, batch_size=4)
    ours, torchs = next(iter(loader)), next(iter(torch.utils.data.DataLoader(article_v1, batch_size=4)))
    assert type(ours) is type(torchs) and len(ours) == len(torchs)  # torch's structure, whatever it is
    cached = feeder.cached(Pairs(np.zeros((4, 1, 2, 2), np.float32), [0] * 4), num_workers=0)
    with pytest.raises(ValueError, match="normalize= does not apply to a cached dataset"):
        feeder.DataLoader(cached, normalize=(0.5, 0.5))


def test_progress_goes_to_stderr_when_asked(capsys):
    feeder.cached(Pairs(np.zeros((4, 1, 2, 2), np.uint8), [0] * 4), num_workers=0, progress=True)
    assert "feeder.cached: 4 items of Pairs read in" in capsys.readouterr().err
    feeder.cached(Pairs(np.zeros((4, 1, 2, 2), np.uint8), [0] * 4), num_workers=0, progress=False)
    assert capsys.readouterr().err == ""
