"""feeder.convert of encoded images as users have them: tar shards converted as the same folder
is, byte for byte, shuffled or not; sets larger than memory converted one shard at a time; and
--max-side, which re-encodes only the images larger than it."""

import io
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import textwrap

import numpy as np
import pytest
import torch
from PIL import Image

import feeder
from image_set import all_batches as batches
from test_image_tars import write_tars


def shard_bytes(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.parquet"))}


def shard_pages(directory):
    """Each shard's bytes before its footer: the pages, without the metadata (class names)."""
    pages = {}
    for name, data in shard_bytes(directory).items():
        footer = int.from_bytes(data[-8:-4], "little")
        pages[name] = data[:len(data) - 8 - footer]
    return pages


@pytest.mark.parametrize("shuffle", [None, 4])
def test_tar_shards_convert_to_the_folders_shards_byte_for_byte(tmp_path, image_set_folder, shuffle):
    # The tars hold the folder's images in its order, so the shards must be the same files: read in
    # order as blocks come, or (shuffled) through the spill file, which must leave nothing behind.
    tars = write_tars(tmp_path / "tars", per_shard=7)
    options = dict(shard_rows=12, row_group_size=5, shuffle_on_write=shuffle)
    feeder.convert(image_set_folder, tmp_path / "from-folder/", **options)
    feeder.convert(str(tars), tmp_path / "from-tars/", **options)
    from_folder, from_tars = shard_pages(tmp_path / "from-folder"), shard_pages(tmp_path / "from-tars")
    assert len(from_folder) == 3 and from_tars == from_folder
    # No spill file left; the index is written last, as for pixel sets.
    assert sorted(os.listdir(tmp_path / "from-tars")) == sorted([*from_folder, "index.json"])
    # The folder's class names are kept in its shards' footers; tar shards have none to keep.
    assert feeder.DataLoader(tmp_path / "from-folder", image_size=8).dataset.classes == ["cat", "dog", "fox"]
    assert feeder.DataLoader(tmp_path / "from-tars", image_size=8).dataset.classes is None


@pytest.mark.parametrize("shuffle", [None, 4])
def test_a_parquet_set_of_images_converts_to_the_folders_shards_byte_for_byte(tmp_path, image_set_folder, shuffle):
    # Hugging Face datasets' layout written by DuckDB (two files of 15 rows): resharded, shuffled or
    # not, it gives the shards the folder it was made from gives, and its class names.
    hf = pathlib.Path(__file__).resolve().parents[1] / "data" / "images" / "hf"
    options = dict(shard_rows=12, row_group_size=5, shuffle_on_write=shuffle)
    feeder.convert(image_set_folder, tmp_path / "from-folder/", **options)
    report = feeder.convert(hf, tmp_path / "from-hf/", **options)
    assert "labels: 0 cat, 1 dog, 2 fox" in report
    assert shard_bytes(tmp_path / "from-hf") == shard_bytes(tmp_path / "from-folder")
    # and with --max-side (every image here is at most 40 px: some are re-encoded at 20)
    report = feeder.convert(str(hf / "train-*.parquet"), tmp_path / "smaller/", max_side=20)
    assert re.search(r"re-encoded: \d+ images larger than 20 px", report)
    assert re.search(r"width min / median / max: \d+ / \d+ / 20 px; height: \d+ / \d+ / 20 px",
                     feeder.inspect(tmp_path / "smaller"))


def peak_rss_mib(code):
    """The peak resident memory of a fresh Python running `code` (after `import feeder`), in MiB:
    its VmHWM, which, unlike ru_maxrss, does not count the parent's memory before the exec."""
    script = "import feeder\n" + textwrap.dedent(code) + textwrap.dedent("""
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                print(int(line.split()[1]) / 1024)
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def test_a_set_larger_than_its_shards_is_converted_one_shard_at_a_time(tmp_path):
    # 96 MiB of images (incompressible bytes: convert copies them without decoding) in shards of
    # 8 MB: the peak memory of a conversion is the process's own, one shard while it is read and
    # written and (tar shards) one block of 64 members (16 MiB here), not the set. Holding the set
    # would add 96 MiB at least.
    rng = np.random.default_rng(0)
    folder, tars = tmp_path / "folder", tmp_path / "tars"
    tars.mkdir()
    with tarfile.open(tars / "all.tar", "w") as tar:
        for i in range(384):
            data = b"\xff\xd8\xff" + rng.bytes((1 << 18) - 3)
            (folder / f"c{i % 2}").mkdir(parents=True, exist_ok=True)
            (folder / f"c{i % 2}" / f"{i:03d}.jpg").write_bytes(data)
            for name, payload in ((f"{i:03d}.jpg", data), (f"{i:03d}.cls", str(i % 2).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    small = tmp_path / "small"
    for i in range(2):
        (small / f"c{i}").mkdir(parents=True)
        (small / f"c{i}" / "a.jpg").write_bytes(b"\xff\xd8\xff" + rng.bytes(1000))
    baseline = peak_rss_mib(f"feeder.convert({str(small)!r}, {str(tmp_path / 'small-out/')!r})")
    for name, source, shuffle in (("folder", folder, 3), ("tar", tars, None), ("tar-shuffled", tars, 3)):
        out = tmp_path / f"{name}-out/"
        peak = peak_rss_mib(f"feeder.convert({str(source)!r}, {str(out) + '/'!r}, shard_size='8MB', "
                            f"shuffle_on_write={shuffle})")
        assert peak - baseline < 64, f"{name}: {peak:.0f} MiB at its peak, {baseline:.0f} MiB for a tiny set"
        written = shard_bytes(out)
        assert len(written) == 13 and sum(map(len, written.values())) > 96 << 20  # 30 images of 256 KiB a shard


def write_image(path, array, **save):
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    Image.fromarray(array[..., 0] if mode == "L" else array, mode).save(path, **save)


def smooth(height, width, channels, seed):
    """A smooth picture (JPEG keeps it well), (H, W, C) uint8."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    planes = [127.5 + 100 * np.sin(3 * x + 2 * y + seed + c) for c in range(channels)]
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


def test_max_side_reencodes_only_the_images_larger_than_it(tmp_path):
    folder = tmp_path / "folder"
    for name in ("a", "b"):
        (folder / name).mkdir(parents=True)
    write_image(folder / "a" / "large.jpg", smooth(200, 300, 3, 0), quality=95)       # -> 120x80
    write_image(folder / "a" / "small.jpg", smooth(40, 30, 3, 1), quality=95)         # kept
    write_image(folder / "a" / "tall-gray.png", smooth(260, 120, 1, 2))               # -> 55x120 gray
    write_image(folder / "b" / "alpha.png", smooth(100, 200, 4, 3))                   # -> 120x60 RGB
    write_image(folder / "b" / "wide.webp", smooth(90, 180, 3, 4), quality=95)        # -> 120x60
    write_image(folder / "b" / "exact.png", smooth(120, 90, 3, 5))                    # kept: not over 120
    report = feeder.convert(folder, tmp_path / "out/", max_side=120, jpeg_quality=92)
    assert re.search(r"re-encoded: 4 images larger than 120 px on a side, as JPEG of quality 92", report)
    summary = feeder.inspect(tmp_path / "out")
    assert "formats: JPEG 5 PNG 1" in summary
    assert "width min / median / max: 30 / 120 / 120 px; height: 40 / 80 / 120 px" in summary

    # The pictures are the same ones: the evaluation transform over the smaller set against the
    # folder's, within what one JPEG encoding at 92 and a second resampling change.
    options = dict(batch_size=6, image_size=24, augment=None)
    smaller, smaller_labels = batches(feeder.DataLoader(str(tmp_path / "out"), **options))
    original, labels = batches(feeder.DataLoader(str(folder), **options))
    assert torch.equal(smaller_labels, labels)
    difference = (smaller - original).abs().mean(dim=(1, 2, 3))
    assert difference.max() < 0.03, difference  # normalised to 0..1: under 8 levels of 255 on average
    # The two images kept as they are give exactly the folder's pixels.
    assert (difference == 0).sum() == 2

    with pytest.raises(ValueError, match="--jpeg-quality applies to the images --max-side re-encodes"):
        feeder.convert(folder, tmp_path / "other/", jpeg_quality=80)
    with pytest.raises(ValueError, match="--max-side and --jpeg-quality apply to encoded images"):
        feeder.convert(tmp_path / "x.csv", tmp_path / "y.parquet", max_side=100)


def test_max_side_writes_what_it_cannot_decode_as_it_is_and_warns(tmp_path):
    # Before, --max-side stopped the conversion at the first file it could not decode, after a
    # warning that such files would be written as they are, and Python never saw that warning.
    folder = tmp_path / "folder"
    (folder / "a").mkdir(parents=True)
    write_image(folder / "a" / "good.jpg", smooth(50, 50, 3, 0))
    whole = io.BytesIO()
    write_image(whole, smooth(300, 300, 3, 1), format="JPEG")
    whole = whole.getvalue()
    (folder / "a" / "cut.jpg").write_bytes(whole[:2000])  # its end marker is gone: not an image
    (folder / "a" / "text.jpg").write_bytes(b"not a picture at all")
    # Its header and end marker read, its data does not: a marker where the rows should be.
    middle = len(whole) // 2
    (folder / "a" / "corrupt.jpg").write_bytes(whole[:middle] + b"\xff\xd4" + whole[middle + 2:])
    with pytest.warns(RuntimeWarning) as caught:
        report = feeder.convert(folder, tmp_path / "out/", max_side=64)
    messages = [str(w.message) for w in caught]
    not_images = [m for m in messages if m.startswith("feeder.convert: not images: 2, written as they are; the first: ")]
    assert len(not_images) == 1 and "cut.jpg" in not_images[0] and "text.jpg" in not_images[0], messages
    not_decoded = [m for m in messages if m.startswith("feeder.convert: not decoded: 1, written as they are; the first: ")]
    assert len(not_decoded) == 1 and "corrupt.jpg: bad JPEG" in not_decoded[0], messages
    assert re.search(r"re-encoded: 0 images larger than 64 px", report)  # corrupt.jpg is kept, not re-encoded

    # What could not be decoded is stored byte for byte: a loader skips the three, keeps the good one.
    stored = b"".join(shard_bytes(tmp_path / "out").values())
    for name in ("cut.jpg", "text.jpg", "corrupt.jpg"):
        assert (folder / "a" / name).read_bytes() in stored, name
    loader = feeder.DataLoader(str(tmp_path / "out"), batch_size=4, image_size=8, on_error="skip")
    with pytest.warns(RuntimeWarning, match="3 bad images were left out"):
        images, _ = batches(loader)
    assert images.shape[0] == 1


def test_a_file_that_is_no_image_is_written_as_it_is_with_a_warning_and_its_report_line(tmp_path, capsys):
    # The warning comes from the report's count and names, not from reading its printed lines back.
    folder = tmp_path / "folder"
    (folder / "a").mkdir(parents=True)
    write_image(folder / "a" / "good.png", smooth(12, 10, 3, 0))
    (folder / "a" / "broken.png").write_bytes(b"\x89PNG but no more")
    with pytest.warns(RuntimeWarning, match=r"^feeder\.convert: not images: 1, written as they are; the first: .*broken\.png"):
        report = feeder.convert(folder, tmp_path / "out/")
    assert isinstance(report, str) and capsys.readouterr().out == report
    assert re.search(r"^not images: 1, written as they are; the first: .*broken\.png", report, re.M), report
    assert "not decoded" not in report


def test_an_idx_file_without_labels_warns_that_it_is_written_unlabeled(tmp_path):
    # Before, the note went to the process's standard error, past Python.
    images = np.arange(2 * 4 * 4, dtype=np.uint8).reshape(2, 4, 4)
    path = tmp_path / "x-images-idx3-ubyte"
    path.write_bytes(bytes.fromhex("00000803") + (2).to_bytes(4, "big") + (4).to_bytes(4, "big") * 2 + images.tobytes())
    with pytest.warns(RuntimeWarning, match=r"x-images-idx3-ubyte: no labels file beside it \(.*x-labels-idx1-ubyte\[\.gz\]\)"):
        feeder.convert(path, tmp_path / "out.parquet")
    assert (tmp_path / "out.parquet").exists()


def test_a_directory_that_is_not_a_set_says_what_it_lacks(tmp_path):
    # Images straight in a folder (no class folders), an empty folder, a folder of IDX files: each
    # says what it is not. Before, convert said "no such file" of a directory that exists.
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3):
        Image.fromarray(np.full((8, 8), i * 50, np.uint8)).save(flat / f"{i}.png")
    with pytest.raises(feeder.DataError, match=r"flat: no class folders \(an image folder has one folder of images per class"):
        feeder.convert(flat, str(tmp_path / "out1") + "/")
    with pytest.raises(feeder.DataError, match="its images are not in class folders"):
        feeder.DataLoader(flat, image_size=8)
    (tmp_path / "empty").mkdir()
    with pytest.raises(feeder.DataError, match="empty: no class folders"):
        feeder.convert(tmp_path / "empty", str(tmp_path / "out2") + "/")
    with pytest.raises(feeder.DataError, match="a directory of IDX files: convert one of them"):
        feeder.convert("/usr/share/datasets/fashion-mnist", str(tmp_path / "out3") + "/")
    assert sorted(os.listdir(tmp_path)) == ["empty", "flat"]


# ------------------------------------------------------------------ a pixel set stored as PNG files

def loaded(path, **options):
    """Every batch of an unshuffled pass: (images uint8 (N,C,H,W), labels) as NumPy arrays."""
    loader = feeder.DataLoader(path, batch_size=64, shuffle=False, dtype=torch.uint8, **options)
    batches = list(loader)
    return (np.concatenate([images.numpy() for images, _ in batches]),
            np.concatenate([labels.numpy() for _, labels in batches]), loader)


def test_layout_png_stores_each_image_as_a_png_that_loads_back_to_its_pixels(tmp_path, idx_set):
    images_path, pixels, labels = idx_set
    feeder.convert(images_path, str(tmp_path / "png") + "/", layout="png", shard_rows=700)
    shards = sorted((tmp_path / "png").glob("*.parquet"))
    assert len(shards) == 3
    assert "formats: PNG" in feeder.inspect(tmp_path / "png")
    # Lossless: the same pixels and labels in the same order, with the default budget and within one
    # that holds a fraction of the encoded set.
    for options in ({}, {"memory_budget": "1MiB", "num_workers": 2}):
        got, got_labels, loader = loaded(tmp_path / "png", image_size=28, channels=1, **options)
        np.testing.assert_array_equal(got[:, 0], pixels)
        np.testing.assert_array_equal(got_labels, labels)
        assert loader.dataset.targets == labels.tolist()
    assert feeder.DataLoader(images_path).dataset.targets == labels.tolist()


def test_layout_png_interleaves_the_channels_of_rgb_images(tmp_path):
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, size=(50, 3, 5, 7), dtype=np.uint8)
    labels = rng.integers(0, 4, size=50)
    rows = ["label," + ",".join(f"pixel{i + 1}" for i in range(3 * 5 * 7))]
    rows += [f"{label}," + ",".join(map(str, image.reshape(-1))) for image, label in zip(pixels, labels)]
    (tmp_path / "rgb.csv").write_text("\n".join(rows) + "\n")
    feeder.convert(tmp_path / "rgb.csv", str(tmp_path / "png") + "/", layout="png", shape=(3, 5, 7))
    got, got_labels, _ = loaded(tmp_path / "png", image_size=(5, 7), channels=3)
    np.testing.assert_array_equal(got, pixels)
    np.testing.assert_array_equal(got_labels, labels)


def test_layout_png_is_refused_where_it_cannot_apply(tmp_path, idx_set, image_set_folder):
    images_path, _, _ = idx_set
    with pytest.raises(ValueError, match="--layout png writes a sharded set"):
        feeder.convert(images_path, tmp_path / "one.parquet", layout="png")
    with pytest.raises(ValueError, match="--layout and --page-rows apply to pixel sets"):
        feeder.convert(image_set_folder, str(tmp_path / "folder") + "/", layout="png")
    with pytest.raises(ValueError, match="--page-rows applies to the columns and image layouts"):
        feeder.convert(images_path, str(tmp_path / "pages") + "/", layout="png", page_rows=10)
    assert not (tmp_path / "one.parquet").exists() and not (tmp_path / "pages").exists()
