"""The image pipeline's crops and resizing against torchvision: RandomResizedCrop's sampling rule for the
same random draws, and decoded, cropped and resized pixels against torchvision's PIL path."""

import io
import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as TF
from PIL import Image

import feeder
from feeder import _feeder


class Draws:
    """torch.empty(1).uniform_ and torch.randint replaced by numbers from a list, consumed in order the
    way feeder consumes them: uniform(a, b) = a + (b - a) u, randint(0, n) = floor(n u)."""

    def __init__(self, values):
        self.values = list(values)
        self.used = 0

    def next(self):
        value = self.values[self.used]
        self.used += 1
        return value

    def empty(self, *args, **kwargs):
        draws = self

        class Uniform:
            def uniform_(self, a, b):
                a, b = float(a), float(b)
                return torch.tensor([a + (b - a) * draws.next()], dtype=torch.float64)
        return Uniform()

    def randint(self, low, high, size):
        return torch.tensor([low + min(high - low - 1, math.floor((high - low) * self.next()))])


def torchvision_box(monkeypatch, width, height, scale, ratio, values):
    draws = Draws(values)
    with monkeypatch.context() as patch:
        patch.setattr(torch, "empty", draws.empty)
        patch.setattr(torch, "randint", draws.randint)
        box = T.RandomResizedCrop.get_params(Image.new("L", (width, height)), list(scale), list(ratio))
    return tuple(int(v) for v in box), draws.used


def test_random_resized_crop_follows_torchvisions_rule_for_the_same_draws(monkeypatch):
    rng = np.random.default_rng(11)
    fallbacks = 0
    for case in range(3000):
        width, height = (int(v) for v in rng.integers(1, 2000, size=2))
        if case % 10 == 0:  # very long or tall images: most tries fail, the fallback runs
            width, height = (width * 40, max(1, height // 40)) if case % 20 else (max(1, width // 40), height * 40)
        scale = (0.08, 1.0) if case % 3 else (float(rng.uniform(0.01, 0.5)), 1.0)
        ratio = (3 / 4, 4 / 3) if case % 4 else (float(rng.uniform(0.2, 1.0)), float(rng.uniform(1.0, 5.0)))
        values = rng.random(22).tolist()
        expected, used = torchvision_box(monkeypatch, width, height, scale, ratio, values)
        box, feeder_used = _feeder.random_resized_crop(width, height, scale, ratio, values)
        assert box == expected, (width, height, scale, ratio)
        assert feeder_used == used
        fallbacks += used == 20
    assert fallbacks > 100  # the central fallback was compared too


def test_random_resized_crop_options_are_checked():
    for scale, ratio in [((0.0, 1.0), (0.75, 1.33)), ((0.5, 0.4), (0.75, 1.33)), ((0.1, 1.5), (0.75, 1.33)),
                         ((0.1, 1.0), (0.0, 1.0)), ((0.1, 1.0), (2.0, 1.0))]:
        with pytest.raises(ValueError, match="random resized crop"):
            _feeder.random_resized_crop(100, 100, scale, ratio, [0.5] * 22)


def photo(width, height, seed=0):
    """A photograph-like RGB picture: smooth shapes, edges and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([128 + 100 * np.sin(x / 37 + y / 53), 128 + 90 * np.cos(x / 23 - y / 41),
                      (x * 255 / width + y * 128 / height) % 256], axis=-1)
    image[(x - width / 2) ** 2 + (y - height / 3) ** 2 < (min(width, height) / 5) ** 2] = (230, 40, 30)
    image += rng.normal(0, 6, size=image.shape)
    return Image.fromarray(np.clip(image, 0, 255).astype(np.uint8))


def encoded(image, format, **options):
    out = io.BytesIO()
    image.save(out, format=format, **options)
    return out.getvalue()


def torchvision_crop(data, box, size, mode="RGB"):
    image = Image.open(io.BytesIO(data)).convert(mode)
    out = TF.resized_crop(image, *box, list(size), interpolation=T.InterpolationMode.BILINEAR)
    result = np.asarray(out, dtype=np.float32)
    return result if result.ndim == 3 else result[..., None]


@pytest.mark.parametrize("format", ["JPEG", "PNG", "WEBP"])
def test_a_resized_crop_equals_torchvisions_on_a_full_decode(format):
    data = encoded(photo(640, 480), format, **({"quality": 90} if format != "PNG" else {}))
    for box, size in [((37, 101, 300, 411), (224, 224)), ((0, 0, 480, 640), (96, 128)), ((200, 300, 40, 30), (64, 64)),
                      ((10, 20, 100, 200), (300, 150))]:
        for channels, mode in [(3, "RGB"), (1, "L")]:
            if channels == 1 and format == "JPEG":
                continue  # a color JPEG's gray is its luma plane, not PIL's convert("L")
            ours, details = _feeder.decode_resized_crop(data, channels, box, *size, False, False, "x")
            expected = torchvision_crop(data, box, size, mode)
            difference = np.abs(ours - expected)
            # PIL rounds to uint8 and resamples in fixed point: within one level, half a level on average.
            assert difference.max() <= 1.0 and difference.mean() < 0.35, (format, box, size, channels)
            assert details["scale_eighths"] == 8


def test_a_regions_edge_columns_equal_a_full_decodes_wherever_it_starts():
    # A cropped JPEG region's first column was upsampled from repeated edge chroma, where a full
    # decode uses the neighbouring chroma: several levels off when the resampling of a resize-then-
    # crop box (evaluation) read a region starting at a block's first column.
    colors = np.random.default_rng(5).integers(0, 256, (60, 80, 3), dtype=np.uint8)  # patches of 4x4 pixels
    data = encoded(Image.fromarray(colors.repeat(4, 0).repeat(4, 1)), "JPEG", quality=95)  # 4:2:0: 16-column blocks
    image = Image.open(io.BytesIO(data)).convert("RGB")
    for left in np.arange(12, 36, 0.25):
        box = (40.0, float(left), 90.0, 60.0)  # resized to 40x60: the resampling reads 0.75 px beyond the box
        ours, _ = _feeder.decode_resized_crop(data, 3, box, 60, 40, False, True, "x")
        expected = np.asarray(image.resize((40, 60), Image.BILINEAR, box=(left, 40.0, left + 60.0, 130.0)), np.float32)
        assert np.abs(ours - expected).max() <= 1.0, (left, np.abs(ours - expected).max())


def test_a_small_crop_of_a_large_jpeg_decodes_a_fraction_of_it_and_stays_close():
    data = encoded(photo(2400, 1600, seed=3), "JPEG", quality=90)
    box, size = (400, 900, 1200, 1200), (224, 224)
    scaled, details = _feeder.decode_resized_crop(data, 3, box, *size, True, False, "x")
    full, full_details = _feeder.decode_resized_crop(data, 3, box, *size, False, False, "x")
    assert details["scale_eighths"] == 2  # 1200 px at 2/8 is 300 >= 224; at 1/8, 150 < 224
    assert full_details["scale_eighths"] == 8
    assert details["decoded_pixels"] < 0.06 * 2400 * 1600 < full_details["decoded_pixels"]
    expected = torchvision_crop(data, box, size)
    # DCT scaling is a box filter in the frequency domain: not the same pixels, a small difference.
    assert np.abs(scaled - expected).mean() < 3.0
    assert np.abs(full - expected).max() <= 1.0


def test_the_evaluation_crop_is_torchvisions_resize_then_center_crop():
    for width, height in [(640, 480), (333, 500), (224, 224), (1000, 300)]:
        data = encoded(photo(width, height, seed=width), "PNG")
        box = _feeder.center_crop(width, height, 256, 224)
        ours, _ = _feeder.decode_resized_crop(data, 3, box, 224, 224, True, True, "x")  # resize, then crop
        image = Image.open(io.BytesIO(data)).convert("RGB")
        expected = np.asarray(T.Compose([T.Resize(256), T.CenterCrop(224)])(image), dtype=np.float32)
        difference = np.abs(ours - expected)
        assert difference.max() <= 1.0 and difference.mean() < 0.35, (width, height)


def test_a_bad_image_or_box_is_refused():
    data = encoded(photo(64, 48), "JPEG")
    with pytest.raises(feeder.DataError, match=r"x: bad JPEG: Premature end of JPEG file"):
        _feeder.decode_resized_crop(data[: len(data) // 2 + 300], 3, (0, 0, 48, 64), 32, 32, True, False, "x")
    with pytest.raises(ValueError, match=r"x: crop box .* is not inside the 64x48 image"):
        _feeder.decode_resized_crop(data, 3, (0, 10, 48, 64), 32, 32, True, False, "x")
    with pytest.raises(ValueError, match="channels must be 1"):
        _feeder.decode_resized_crop(data, 2, (0, 0, 48, 64), 32, 32, True, False, "x")


def test_a_jpeg_cut_short_below_the_crop_is_refused_whatever_the_crop():
    data = encoded(photo(640, 480), "JPEG")
    cut = data[: len(data) // 2]  # the top rows are all there
    top_left = (0, 0, 40, 40)
    ours, _ = _feeder.decode_resized_crop(data, 3, top_left, 16, 16, True, False, "x")
    assert ours.shape == (16, 16, 3)
    for box in (top_left, (0, 0, 480, 640), (440, 600, 40, 40)):
        with pytest.raises(feeder.DataError, match=r"x: bad JPEG: Premature end of JPEG file"):
            _feeder.decode_resized_crop(cut, 3, box, 16, 16, True, False, "x")


def test_dct_scaled_decodes_stay_aligned_with_full_decodes():
    # A smooth picture: what DCT scaling drops is only fine detail, so any offset between the scaled
    # and the full decode's coordinates would show as a large difference (it did, before the scaled
    # map was taken as exactly n/8 instead of the rounded-up scaled size over the full size).
    width, height = 301, 203
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    smooth = np.stack([128 + 100 * np.sin(x / 17 + y / 29), 128 + 90 * np.cos(x / 23 - y / 13),
                       100 + 50 * np.sin(y / 19)], axis=-1)
    data = encoded(Image.fromarray(smooth.astype(np.uint8)), "JPEG", quality=95)
    scales = set()
    for size in [(100, 150), (50, 75), (25, 37)]:
        for box in [(0, 0, height, width), (13, 27, 150, 200)]:
            scaled, details = _feeder.decode_resized_crop(data, 3, box, *size, True, False, "x")
            full, _ = _feeder.decode_resized_crop(data, 3, box, *size, False, False, "x")
            scales.add(details["scale_eighths"])
            assert np.abs(scaled - full).max() < 7 and np.abs(scaled - full).mean() < 1.0, (size, box)
    assert scales == {1, 2, 4, 8}  # only the scales with SIMD inverse DCTs
