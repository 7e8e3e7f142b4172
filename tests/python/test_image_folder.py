"""feeder.DataLoader over a folder of images in torchvision's ImageFolder layout, against torchvision."""

import io
import os

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

import feeder
from image_set import all_batches as batches

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def picture(width, height, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([128 + 100 * np.sin(x / (7 + seed % 5) + y / 11), 128 + 90 * np.cos(x / 13 - y / (5 + seed % 3)),
                      (x * 255 / width + y * 128 / height + seed * 17) % 256], axis=-1)
    image += rng.normal(0, 5, size=image.shape)
    return Image.fromarray(np.clip(image, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """3 classes of JPEG, PNG and WebP pictures of assorted sizes, with files torchvision skips too."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    count = 0
    for label, name in enumerate(["cat", "dog", "zebra"]):
        (root / name / "more").mkdir(parents=True)
        for i in range(14):
            width, height = (int(v) for v in rng.integers(40, 160, size=2))
            image = picture(width, height, seed=count)
            kind = ["jpg", "png", "webp", "JPEG"][i % 4]
            where = root / name / ("more" if i % 5 == 0 else "") / f"{i:02d}.{kind}"
            image.save(where, format={"jpg": "JPEG", "JPEG": "JPEG", "png": "PNG", "webp": "WEBP"}[kind],
                       **({"quality": 90} if kind in ("jpg", "JPEG", "webp") else {}))
            count += 1
        (root / name / "notes.txt").write_text("not an image")
    return root


def test_classes_labels_and_order_are_torchvisions(folder):
    reference = torchvision.datasets.ImageFolder(str(folder))
    loader = feeder.DataLoader(str(folder), batch_size=10, image_size=32, augment="center_crop")
    assert loader.dataset.classes == reference.classes == ["cat", "dog", "zebra"]
    assert loader.dataset.class_to_idx == reference.class_to_idx
    assert len(loader.dataset) == len(reference) == 42
    _, labels = batches(loader)
    assert labels.tolist() == reference.targets
    assert loader.dataset.targets == reference.targets
    assert loader.dataset.samples == loader.dataset.imgs == reference.samples
    assert feeder.DataLoader(str(folder), image_size=8).dataset.samples == reference.samples


def test_the_evaluation_transform_equals_torchvisions(folder):
    size = 48
    reference = torchvision.datasets.ImageFolder(str(folder), transform=T.Compose(
        [T.Resize(64), T.CenterCrop(size), T.ToTensor(), T.Normalize(MEAN, STD)]))
    loader = feeder.DataLoader(str(folder), batch_size=8, image_size=size, augment="center_crop", resize=64,
                               normalize=(MEAN, STD), num_workers=2)
    images, labels = batches(loader)
    expected = torch.stack([reference[i][0] for i in range(len(reference))])
    difference = (images - expected).abs() * torch.tensor(STD).view(1, 3, 1, 1) * 255  # in pixel levels
    # DCT scaling of the JPEGs (decoded at a smaller scale where the output allows) against a full
    # decode: about a level on average. The scaled IDCT drops the frequencies the smaller decode
    # cannot hold, and these pictures have detail at 7-pixel periods and noise: a few pixels differ
    # by tens of levels (on smooth pictures, under 7; tests/python/test_image_crops.py).
    assert difference.mean() < 1.5, difference.mean()
    assert difference.max() < 80
    same = feeder.DataLoader(str(folder), batch_size=8, image_size=size, augment="center_crop", resize=64,
                             normalize=(MEAN, STD), dct_scaling=False)
    full_decode, _ = batches(same)
    difference = (full_decode - expected).abs() * torch.tensor(STD).view(1, 3, 1, 1) * 255
    assert difference.max() <= 1.01, difference.max()


def test_a_rectangular_evaluation_crop_equals_torchvisions(folder):
    # CenterCrop((height, width)) was refused ("the output must be square").
    reference = torchvision.datasets.ImageFolder(str(folder), transform=T.Compose(
        [T.Resize(64), T.CenterCrop((30, 50)), T.ToTensor()]))
    loader = feeder.DataLoader(str(folder), batch_size=8, image_size=(30, 50), augment="center_crop", resize=64,
                               dct_scaling=False)
    images, _ = batches(loader)
    assert images.shape[1:] == (3, 30, 50)
    expected = torch.stack([reference[i][0] for i in range(len(reference))])
    assert ((images - expected).abs() * 255).max() <= 1.01
    with pytest.raises(ValueError, match=r"the resize \(40, the shorter side before the crop\) must be at least each "
                                         r"side of the output \(30x50\)"):
        feeder.DataLoader(str(folder), image_size=(30, 50), augment="center_crop", resize=40)


def test_numbers_from_numpy_and_torch_are_taken(folder):
    mean = np.array([0.5, 0.4, 0.3], dtype=np.float32)
    plain = feeder.DataLoader(str(folder), batch_size=8, image_size=16, normalize=((0.5, 0.4, 0.3), (0.2, 0.2, 0.2)))
    numpy = feeder.DataLoader(str(folder), batch_size=np.int64(8), image_size=np.int64(16),
                              normalize=(mean, torch.tensor([0.2, 0.2, 0.2])))
    assert torch.equal(batches(plain)[0], batches(numpy)[0])
    feeder.DataLoader(str(folder), image_size=16, normalize=(tuple(mean), tuple(np.float64(0.2) for _ in range(3))))
    scalars = feeder.DataLoader(str(folder), batch_size=torch.tensor(8), image_size=(torch.tensor(16), np.int32(16)),
                                normalize=([torch.tensor(0.5), np.float32(0.4), 0.3], (0.2, 0.2, 0.2)),
                                num_workers=np.int64(1), memory_budget=np.int64(1 << 30))
    assert torch.allclose(batches(plain)[0], batches(scalars)[0])
    with pytest.raises(ValueError, match=r"image_size must be an integer or \(height, width\), got 16.0"):
        feeder.DataLoader(str(folder), image_size=16.0)
    with pytest.raises(ValueError, match=r"mean must be one number or 3 \(one per channel\)"):
        feeder.DataLoader(str(folder), image_size=16, normalize=((0.5, 0.4), (0.2,)))


def test_random_crops_are_the_same_for_any_number_of_workers_and_ranks(folder):
    def run(**options):
        loader = feeder.DataLoader(str(folder), image_size=24, augment="random_resized_crop", shuffle=True, seed=5,
                                   **options)
        loader.set_epoch(3)
        return batches(loader)

    images, labels = run(batch_size=6, num_workers=0)
    for workers in (1, 3):
        other, other_labels = run(batch_size=6, num_workers=workers)
        assert torch.equal(other, images) and torch.equal(other_labels, labels)
    # Two ranks of batch 3 split each global batch of 6.
    ranks = [run(batch_size=3, num_workers=1, rank=r, world_size=2) for r in range(2)]
    merged = torch.stack([ranks[0][0].view(-1, 3, 3, 24, 24), ranks[1][0].view(-1, 3, 3, 24, 24)], dim=1)
    assert torch.equal(merged.reshape(-1, 3, 24, 24), images)
    # Another epoch draws other crops.
    loader = feeder.DataLoader(str(folder), batch_size=6, image_size=24, augment="random_resized_crop", shuffle=False,
                               seed=5)
    first, _ = batches(loader)
    second, _ = batches(loader)
    assert not torch.equal(first, second)


def test_random_crops_flip_about_half_and_resume_exactly(folder):
    loader = feeder.DataLoader(str(folder), batch_size=4, image_size=(20, 30), augment="random_resized_crop",
                               scale=(1.0, 1.0), ratio=(1.5, 1.5), shuffle=True, seed=1)
    assert loader.image_shape == (3, 20, 30)
    loader.set_epoch(0)
    it = iter(loader)
    for _ in range(4):
        next(it)
    state = loader.state_dict()
    rest, _ = batches(it)
    resumed = feeder.DataLoader(str(folder), batch_size=4, image_size=(20, 30), augment="random_resized_crop",
                                scale=(1.0, 1.0), ratio=(1.5, 1.5), shuffle=True, seed=1)
    resumed.load_state_dict(state)
    again, _ = batches(resumed)
    assert torch.equal(again, rest)
    # With the whole image as the crop, an image is either the resized picture or its mirror.
    unflipped = feeder.DataLoader(str(folder), batch_size=42, image_size=(20, 30), augment="random_resized_crop",
                                  scale=(1.0, 1.0), ratio=(1.5, 1.5), flip=False, shuffle=False, seed=1)
    flipping = feeder.DataLoader(str(folder), batch_size=42, image_size=(20, 30), augment="random_resized_crop",
                                 scale=(1.0, 1.0), ratio=(1.5, 1.5), shuffle=False, seed=1)
    plain, _ = batches(unflipped)
    maybe, _ = batches(flipping)
    flipped = [not torch.equal(a, b) for a, b in zip(plain, maybe)]
    for a, b, was in zip(plain, maybe, flipped):
        if was:
            assert torch.equal(a.flip(-1), b)
    assert 8 <= sum(flipped) <= 34


def test_gray_output_and_channels_last(folder):
    gray = feeder.DataLoader(str(folder), batch_size=7, image_size=16, channels=1, normalize=(0.5, 0.25))
    images, _ = next(iter(gray))
    assert images.shape == (7, 1, 16, 16)
    rgb_nchw, _ = next(iter(feeder.DataLoader(str(folder), batch_size=7, image_size=16)))
    rgb_nhwc, _ = next(iter(feeder.DataLoader(str(folder), batch_size=7, image_size=16, layout="nhwc")))
    assert rgb_nhwc.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(rgb_nchw, rgb_nhwc)


def test_a_jpeg_cut_short_is_left_out_of_every_epoch_whatever_its_crops(tmp_path):
    # Small crops of a large picture decode only the rows they need: before the end-of-image check,
    # epochs whose crop stayed in the intact top half served this file, the others failed on it.
    root = tmp_path / "set"
    (root / "a").mkdir(parents=True)
    for i in range(3):
        picture(40, 30, i).save(root / "a" / f"good{i}.png")
    whole = io.BytesIO()
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (600, 800, 3), dtype=np.uint8)).save(whole, "JPEG")
    (root / "a" / "half.jpg").write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])
    loader = feeder.DataLoader(str(root), batch_size=4, image_size=8, augment="random_resized_crop",
                               scale=(0.02, 0.05), on_error="skip")
    for epoch in range(8):
        loader.set_epoch(epoch)
        with pytest.warns(RuntimeWarning, match="1 bad images were left out"):
            (images, _), = list(loader)
        assert images.shape[0] == 3 and loader.skipped[0] == 1, epoch


def test_bad_images_and_folders_say_what_is_wrong(tmp_path, folder):
    root = tmp_path / "set"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    picture(30, 20, 1).save(root / "a" / "good.png")
    with pytest.raises(feeder.DataError, match=r"no images \(.jpg, .jpeg, .png, .webp\) in the class folder b"):
        feeder.DataLoader(str(root), image_size=8)
    good = io.BytesIO()
    picture(30, 20, 2).save(good, format="JPEG")
    (root / "b" / "cut.jpg").write_bytes(good.getvalue()[: len(good.getvalue()) // 2])
    loader = feeder.DataLoader(str(root), batch_size=2, image_size=8)
    with pytest.raises(feeder.DataError, match=r"b/cut\.jpg: bad JPEG: Premature end of JPEG file"):
        next(iter(loader))
    (root / "b" / "cut.jpg").write_text("I am text")
    with pytest.raises(feeder.DataError, match=r"b/cut\.jpg: not a JPEG, PNG or WebP image"):
        next(iter(feeder.DataLoader(str(root), batch_size=2, image_size=8)))
    with pytest.raises(ValueError, match="need image_size="):
        feeder.DataLoader(str(folder))
    with pytest.raises(ValueError, match="augment must be"):
        feeder.DataLoader(str(folder), image_size=8, augment="rotate")
    # resize= only means something before a center crop: elsewhere it would be silently ignored.
    for augment in (None, "random_resized_crop"):
        with pytest.raises(ValueError, match="resize= applies to augment='center_crop'"):
            feeder.DataLoader(str(folder), image_size=8, augment=augment, resize=16)
    with pytest.raises(ValueError, match=r"mean must be one number or 3"):
        feeder.DataLoader(str(folder), image_size=8, normalize=((0.1, 0.2), (1, 1)))
    with pytest.raises(ValueError, match="image_size= and augment= are for encoded images"):
        feeder.DataLoader((np.zeros((4, 1, 2, 2), np.uint8), np.zeros(4, np.int64)), image_size=8)


def test_the_image_folder_example_trains(tmp_path):
    import os
    import subprocess
    import sys
    # Two classes told apart by color: the example's small CNN learns them within two epochs.
    rng = np.random.default_rng(4)
    for label, color in enumerate([(200, 40, 40), (40, 40, 200)]):
        (tmp_path / f"class{label}").mkdir()
        for i in range(24):
            base = np.full((int(rng.integers(30, 60)), int(rng.integers(30, 60)), 3), color, dtype=np.float32)
            noisy = np.clip(base + rng.normal(0, 30, size=base.shape), 0, 255).astype(np.uint8)
            Image.fromarray(noisy).save(tmp_path / f"class{label}" / f"{i}.{'png' if i % 2 else 'jpg'}")
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "train_image_folder.py")
    done = subprocess.run([sys.executable, example, str(tmp_path), "--epochs", "3", "--image-size", "16",
                           "--batch-size", "8"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "48 training images in 2 classes: class0, class1" in done.stdout
    final = float(done.stdout.strip().splitlines()[-1].split("accuracy ")[1].split(",")[0])
    assert final >= 0.9, done.stdout


FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def write_fashion_mnist_pngs(root, split, count):
    """The first `count` images of a FashionMNIST split as PNGs in class folders named in label order;
    returns (images, labels) as read from the IDX files."""
    import gzip
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(f"{FASHION_MNIST}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:count]
    with gzip.open(f"{FASHION_MNIST}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:count]
    for label in range(10):
        (root / split / f"class{label}").mkdir(parents=True, exist_ok=True)
    for i, (image, label) in enumerate(zip(images, labels)):
        Image.fromarray(image, "L").save(root / split / f"class{label}" / f"{i:05d}.png")
    return images, labels


def test_a_png_folder_of_fashion_mnist_gives_the_idx_pixels(tmp_path):
    # 28x28 PNGs resized to 28x28 are a copy: the batches hold the IDX pixels / 255, in ImageFolder's
    # order (by class, then file name).
    images, labels = write_fashion_mnist_pngs(tmp_path, "train", 600)
    loader = feeder.DataLoader(str(tmp_path / "train"), batch_size=600, image_size=28, channels=1, augment=None)
    x, y = next(iter(loader))
    order = sorted(range(600), key=lambda i: (labels[i], i))
    assert y.tolist() == [int(labels[i]) for i in order]
    assert torch.equal((x[:, 0] * 255).round().to(torch.uint8), torch.from_numpy(images[order].copy()))
    idx = feeder.DataLoader(f"{FASHION_MNIST}/train-images-idx3-ubyte.gz", batch_size=600)
    idx_images, _ = next(iter(idx))
    assert torch.allclose(x, idx_images[order], rtol=0, atol=1e-7)



def test_uint8_batches_are_the_float_batches_rounded(image_set_folder):
    # Cropped, resized and flipped as for float32, rounded to the nearest level, not normalised.
    options = dict(batch_size=7, image_size=(12, 16), augment="random_resized_crop", shuffle=True, seed=4,
                   num_workers=2)
    for layout in ("nchw", "nhwc"):
        as_uint8 = feeder.DataLoader(str(image_set_folder), dtype=torch.uint8, layout=layout, **options)
        as_float = feeder.DataLoader(str(image_set_folder), layout=layout, **options)
        images, labels = batches(as_uint8)
        expected, expected_labels = batches(as_float)
        assert images.dtype == torch.uint8 and images.shape == (30, 3, 12, 16)
        assert torch.equal(labels, expected_labels)
        assert (images.float() - expected * 255).abs().max() <= 0.501
    with pytest.raises(ValueError, match="leave normalize=None"):
        feeder.DataLoader(str(image_set_folder), dtype=torch.uint8, normalize=((0.5,) * 3, (0.2,) * 3),
                          image_size=8)
    with pytest.raises(ValueError, match="dtype must be torch.float32 or torch.uint8"):
        feeder.DataLoader(str(image_set_folder), dtype=torch.float16, image_size=8)


def test_images_of_formats_not_decoded_are_named_in_the_warning(tmp_path):
    # torchvision's ImageFolder would read a .bmp or .tif; feeder leaves them out, and says which.
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        picture(8, 6, 1).save(tmp_path / label / "kept.png")
    picture(8, 6, 2).save(tmp_path / "b" / "left-out.bmp")
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    with pytest.warns(RuntimeWarning, match=r"1 images of formats feeder does not decode .* The first: .*b/left-out\.bmp"):
        loader = feeder.DataLoader(str(tmp_path), batch_size=2, image_size=4)
    images, labels = batches(loader)
    assert images.shape[0] == 2 and labels.tolist() == [0, 1]


def test_names_that_are_not_utf8_open_sort_as_torchvisions_and_are_named_in_errors(tmp_path):
    """Names cross into Python as os.fsdecode gives them: a class folder b"b\\xff\\xfe" made the
    constructor raise UnicodeDecodeError, a bad file x\\xff.jpg raised a DataError naming nothing,
    and \\xff.jpg sorted after \\xee\\x80\\x80.jpg, where torchvision's sorted() puts it before."""
    root = os.fsencode(tmp_path / "set")
    png = io.BytesIO()
    Image.new("RGB", (6, 5), (30, 60, 90)).save(png, format="PNG")
    for folder, names in ((b"a", [b"\xff.png", b"\xee\x80\x80.png", b"\xf0\x9f\x98\x80.png", b"z.png"]),
                          (b"b\xff\xfe", [b"x.png"])):
        os.makedirs(os.path.join(root, folder))
        for name in names:
            with open(os.path.join(root, folder, name), "wb") as f:
                f.write(png.getvalue())
    path = os.fsdecode(root)
    reference = torchvision.datasets.ImageFolder(path)
    loader = feeder.DataLoader(path, batch_size=2, image_size=4)
    assert loader.dataset.classes == reference.classes == ["a", os.fsdecode(b"b\xff\xfe")]
    assert loader.dataset.samples == reference.samples
    assert len(batches(loader)[1]) == 5
    assert os.fsdecode(b"b\xff\xfe") in feeder.inspect(path)

    with open(os.path.join(root, b"a", b"x\xff.png"), "wb") as f:
        f.write(png.getvalue()[:40])  # cut short
    bad = os.fsdecode(os.path.join(root, b"a", b"x\xff.png"))
    with pytest.raises(feeder.DataError) as raised:
        batches(feeder.DataLoader(path, batch_size=2, image_size=4))
    assert bad in str(raised.value)
    with pytest.warns(RuntimeWarning, match="1 bad images"):
        assert len(batches(feeder.DataLoader(path, batch_size=2, image_size=4, on_error="skip"))[1]) == 5


def test_a_dangling_symbolic_link_is_listed_as_torchvision_lists_it_and_fails_when_read(tmp_path):
    """A link named .jpg to a file that is gone refused the whole folder when it was listed;
    torchvision lists it and fails when it reads it. feeder lists it in its place, warns naming it
    and the reason, fails naming it when it is decoded and leaves it out with on_error="skip": held
    in memory, streamed over the budget, and from torchvision's own dataset object."""
    root = tmp_path / "set"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    for i in range(100):
        picture(12, 10, i).save(root / "a" / f"{i:02d}.png")
        picture(12, 10, 100 + i).save(root / "b" / f"{i:02d}.png")
    link = root / "a" / "01b.jpg"
    link.symlink_to(tmp_path / "gone.jpg")
    reference = torchvision.datasets.ImageFolder(str(root))
    assert len(reference) == 201
    with pytest.raises(FileNotFoundError):
        reference[2]
    transformed = torchvision.datasets.ImageFolder(str(root), T.Compose([T.Resize(8), T.CenterCrop(8), T.ToTensor()]))
    for source in (str(root), transformed):
        for budget in (None, 64000):  # under the files' bytes: streamed
            options = {"memory_budget": budget, "prefetch": 1} if budget else {}
            if isinstance(source, str):
                options["image_size"] = 8
            with pytest.warns(RuntimeWarning, match=r"1 listed file could not be read \(the first: .*1b\.jpg: No such file"):
                loader = feeder.DataLoader(source, batch_size=4, **options)
            assert loader.streaming == (budget is not None), budget
            samples = loader.dataset.samples
            if isinstance(source, str) and budget:  # a folder streamed from its path: in a mixed order of its own
                samples, expected = sorted(samples), sorted(reference.samples)
            else:
                expected = reference.samples
            assert len(loader.dataset) == 201 and samples == expected
            with pytest.raises(feeder.DataError, match=str(link)):
                batches(loader)
            with pytest.warns(RuntimeWarning):
                skipping = feeder.DataLoader(source, batch_size=4, on_error="skip", **options)
            with pytest.warns(RuntimeWarning, match="1 bad images"):
                _, labels = batches(skipping)
            assert sorted(labels.tolist()) == [0] * 100 + [1] * 100, (budget, type(source))
