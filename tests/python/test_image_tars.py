"""feeder.DataLoader over WebDataset-style tar shards (key.png + key.cls), written by Python's tarfile
(pax and GNU formats) and by GNU tar, against the same images as an image folder."""

import gzip
import io
import re
import subprocess
import tarfile

import pytest
import torch

import feeder
from image_set import all_batches as batches
import image_set


def write_tars(root, per_shard=10, tar_format=tarfile.PAX_FORMAT, labels=True, extra=True, corrupt=None):
    """The image set as tar shards of `per_shard` samples, keys in the folder's order."""
    root.mkdir(parents=True, exist_ok=True)
    samples = list(image_set.samples())
    for shard in range(0, len(samples), per_shard):
        with tarfile.open(root / f"train-{shard // per_shard:04d}.tar", "w", format=tar_format) as tar:
            for i, (class_name, _, label, data) in enumerate(samples[shard:shard + per_shard]):
                key = f"{class_name}/{shard + i:05d}"
                if corrupt == shard + i:
                    data = data[: len(data) // 2]
                members = [("png", data)]
                if labels:
                    members.insert(0, ("cls", f"{label}\n".encode()))
                if extra:
                    members.append(("json", b'{"source": "test"}'))
                for extension, payload in members:
                    info = tarfile.TarInfo(f"{key}.{extension}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    return root


@pytest.fixture(scope="module")
def folder(image_set_folder):
    return image_set_folder


def gnu_tar_shards(tmp_path):
    """One shard written by GNU tar from a tree of key.png + key.cls files."""
    tree = tmp_path / "tree"
    for n, (class_name, _, label, data) in enumerate(image_set.samples()):
        (tree / class_name).mkdir(parents=True, exist_ok=True)
        (tree / class_name / f"{n:05d}.png").write_bytes(data)
        (tree / class_name / f"{n:05d}.cls").write_text(str(label))
    out = tmp_path / "gnu"
    out.mkdir()
    names = sorted(str(p.relative_to(tree)) for p in tree.rglob("*.*"))
    subprocess.run(["tar", "--format=gnu", "-cf", str(out / "all.tar"), "-C", str(tree), *names], check=True)
    return out


@pytest.mark.parametrize("writer", ["pax", "gnu-tarfile", "gnu-tar"])
def test_batches_equal_the_image_folders(tmp_path, folder, writer):
    if writer == "gnu-tar":
        spec = gnu_tar_shards(tmp_path)
    else:
        spec = write_tars(tmp_path / writer, tar_format=tarfile.PAX_FORMAT if writer == "pax" else tarfile.GNU_FORMAT)
    for options in ({"augment": None, "shuffle": False}, {"augment": "random_resized_crop", "shuffle": True, "seed": 3}):
        from_tars = feeder.DataLoader(str(spec), batch_size=7, image_size=16, num_workers=2, **options)
        from_folder = feeder.DataLoader(str(folder), batch_size=7, image_size=16, num_workers=2, **options)
        assert len(from_tars.dataset) == 30 and from_tars._loader.streaming
        assert from_tars.dataset.targets == from_folder.dataset.targets == [label for _, _, label, _ in
                                                                            image_set.samples()]
        for _ in range(2):
            images, labels = batches(from_tars)
            expected, expected_labels = batches(from_folder)
            assert torch.equal(labels, expected_labels)
            assert torch.equal(images, expected)


def test_shards_larger_than_the_budget_stream_each_image_once_and_resume(tmp_path, folder):
    spec = str(write_tars(tmp_path / "tars", per_shard=3))  # 10 shards of 3
    whole, _ = batches(feeder.DataLoader(spec, batch_size=30, image_size=12, augment=None))
    # Two read buffers of 64 KiB, the samples, and 4 batch buffers (prefetch + 2) of 3,584 bytes.
    options = dict(batch_size=2, image_size=12, augment=None, shuffle=True, seed=8,
                   memory_budget=2 * 65536 + 3800 + 4 * 3584, prefetch=2)
    def make(**more):
        # The shards are sorted by class and a window holds a few blocks: the loader says so.
        with pytest.warns(RuntimeWarning, match="the labels are clustered"):
            return feeder.DataLoader(spec, **options, **more)

    runs = []
    for workers in (0, 3):
        loader = make(num_workers=workers)
        assert loader._loader.shuffle_window < 30
        runs.append(batches(loader)[0])
    assert torch.equal(runs[0], runs[1])
    key = lambda batch: sorted(range(len(batch)), key=lambda i: batch[i].flatten().tolist())
    assert torch.equal(runs[0][key(runs[0])], whole[key(whole)])
    loader = make()
    loader.set_epoch(2)
    it = iter(loader)
    for _ in range(5):
        next(it)
    state = loader.state_dict()
    rest, _ = batches(it)
    resumed = make()
    resumed.load_state_dict(state)
    assert torch.equal(batches(resumed)[0], rest)


def test_bad_shards_and_members_say_what_is_wrong(tmp_path):
    spec = write_tars(tmp_path / "corrupt", corrupt=13)
    with pytest.raises(feeder.DataError, match=r"train-0001\.tar: dog/00013\.png: bad PNG"):
        batches(feeder.DataLoader(str(spec), batch_size=4, image_size=8))
    with pytest.warns(RuntimeWarning, match="1 bad images were left out"):
        images, _ = batches(feeder.DataLoader(str(spec), batch_size=4, image_size=8, on_error="skip"))
    assert images.shape[0] == 29

    cut = write_tars(tmp_path / "cut")
    data = (cut / "train-0002.tar").read_bytes()
    with tarfile.open(cut / "train-0002.tar") as tar:
        last = tar.getmembers()[-1]
    (cut / "train-0002.tar").write_bytes(data[: last.offset_data + 10])  # inside its last member
    with pytest.raises(feeder.DataError, match=r"train-0002\.tar: truncated: a tar file ends with two zero blocks"):
        feeder.DataLoader(str(cut), batch_size=4, image_size=8)
    # Cut inside a member's header: the member before it is named (the error named only the file).
    with tarfile.open(tmp_path / "cut" / "train-0001.tar") as tar:
        members = tar.getmembers()
    data = (cut / "train-0001.tar").read_bytes()
    (cut / "train-0002.tar").write_bytes(data[: members[2].offset + 100])
    with pytest.raises(feeder.DataError, match=r"train-0002\.tar: after the member " + re.escape(members[1].name) +
                       r": Truncated tar archive"):
        feeder.DataLoader(str(cut), batch_size=4, image_size=8)

    zipped = tmp_path / "zipped"
    zipped.mkdir()
    (zipped / "a.tar").write_bytes(gzip.compress((write_tars(tmp_path / "plain") / "train-0000.tar").read_bytes()))
    with pytest.raises(feeder.DataError, match=r"a\.tar: not an uncompressed tar file"):
        feeder.DataLoader(str(zipped), image_size=8)

    bad_label = tmp_path / "bad_label"
    bad_label.mkdir()
    with tarfile.open(bad_label / "s.tar", "w") as tar:
        for name, payload in (("k.png", image_set.png_bytes(0, 0)), ("k.cls", b"cat")):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    with pytest.raises(feeder.DataError, match=r"s\.tar: k\.cls: label 'cat' is not an integer"):
        feeder.DataLoader(str(bad_label), image_size=8)

    two_labels = tmp_path / "two_labels"  # the last one silently won
    two_labels.mkdir()
    with tarfile.open(two_labels / "s.tar", "w") as tar:
        for name, payload in (("k.png", image_set.png_bytes(0, 0)), ("k.cls", b"1"), ("k.CLS", b"2")):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    with pytest.raises(feeder.DataError, match=r"s\.tar: k\.CLS: a second label for the key 'k' \(k\.cls\)"):
        feeder.DataLoader(str(two_labels), image_size=8)

    unlabeled = write_tars(tmp_path / "unlabeled", labels=False)
    with pytest.raises(feeder.DataError, match="no labels"):
        feeder.DataLoader(str(unlabeled), image_size=8)
    loader = feeder.DataLoader(str(unlabeled), batch_size=30, image_size=8, allow_unlabeled=True)
    assert batches(loader)[1].tolist() == [-1] * 30


def test_convert_writes_tar_shards_as_parquet_shards(tmp_path, folder):
    tars = write_tars(tmp_path / "tars")
    report = feeder.convert(str(tars), tmp_path / "plain/", shard_rows=12, row_group_size=5)
    # 30 images of 3 labels in 3 shards (12, 12, 6 rows: row groups of 5, 5, 2, 5, 5, 2, 5, 1).
    assert "| 30 | 3 | 3 | 8 |" in report
    assert "skipped: 30 members that are neither an image nor a label" in report
    assert "rows in the shards' order: give --shuffle-on-write" in report
    options = dict(batch_size=8, image_size=14, augment=None)
    images, labels = batches(feeder.DataLoader(str(tmp_path / "plain"), **options))
    expected, expected_labels = batches(feeder.DataLoader(str(folder), **options))
    assert torch.equal(labels, expected_labels) and torch.equal(images, expected)
    # A glob of shards, shuffled on write: the same images, each once, in another order.
    report = feeder.convert(str(tars / "train-*.tar"), tmp_path / "shuffled/", shuffle_on_write=2)
    assert "rows shuffled with seed 2" in report
    images, labels = batches(feeder.DataLoader(str(tmp_path / "shuffled"), **options))
    assert labels.tolist() != expected_labels.tolist()
    by_content = lambda x: sorted(x.reshape(len(x), -1).tolist())
    assert by_content(images) == by_content(expected)
    # Unlabeled shards stay unlabeled.
    report = feeder.convert(str(write_tars(tmp_path / "unlabeled", labels=False)), tmp_path / "unlabeled-out/")
    assert "unlabeled: no .cls members" in report
    unlabeled = feeder.DataLoader(str(tmp_path / "unlabeled-out"), allow_unlabeled=True, **options)
    assert len(unlabeled.dataset) == 30 and set(batches(unlabeled)[1].tolist()) == {-1}


def test_convert_of_a_truncated_tar_names_it_and_writes_nothing(tmp_path):
    tars = write_tars(tmp_path / "tars")
    shard = tars / "train-0001.tar"
    shard.write_bytes(shard.read_bytes()[:5000])
    with pytest.raises(feeder.DataError, match="train-0001.tar: truncated"):
        feeder.convert(str(tars), tmp_path / "out/")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_compressed_tar_says_to_decompress_it(tmp_path):
    # A .tar.gz is not a tar shard feeder reads (nor a CSV, Parquet or IDX file): say so, not
    # "unknown kind of dataset file".
    zipped = tmp_path / "train-0000.tar.gz"
    zipped.write_bytes(gzip.compress((write_tars(tmp_path / "plain") / "train-0000.tar").read_bytes()))
    with pytest.raises(feeder.DataError, match=r"train-0000\.tar\.gz: a compressed tar: .* decompress it first"):
        feeder.DataLoader(str(zipped), image_size=8)
