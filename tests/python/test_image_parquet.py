"""feeder.DataLoader over Parquet files of encoded images (Hugging Face datasets' layout, and a plain
binary column), written by DuckDB and arrow-rs (tests/data/images/README.md), against the same
images as an image folder."""

import json
import pathlib

import pytest
import torch

import feeder
from image_set import all_batches as batches
import image_set

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
SETS = [DATA / "hf", DATA / "arrowrs_rg4.parquet", DATA / "binary.parquet"]


@pytest.fixture(scope="module")
def folder(image_set_folder):
    return image_set_folder


@pytest.mark.parametrize("spec", SETS, ids=lambda p: p.name)
def test_batches_equal_the_image_folders(spec, folder):
    # The same images in the same order, through the same stage: the same batches, for the evaluation
    # transform, random crops and flips, shuffled or not, over two epochs.
    for options in ({"augment": None, "shuffle": False}, {"augment": "random_resized_crop", "shuffle": True, "seed": 3},
                    {"augment": "center_crop", "shuffle": True, "seed": 4, "channels": 1}):
        from_parquet = feeder.DataLoader(str(spec), batch_size=7, image_size=16, num_workers=2, **options)
        from_folder = feeder.DataLoader(str(folder), batch_size=7, image_size=16, num_workers=2, **options)
        assert len(from_parquet.dataset) == 30
        for _ in range(2):
            images, labels = batches(from_parquet)
            expected, expected_labels = batches(from_folder)
            assert torch.equal(labels, expected_labels)
            assert torch.equal(images, expected)
    assert labels.tolist() != sorted(labels.tolist())  # shuffled


def test_a_set_larger_than_the_budget_streams_each_image_once_the_same_for_any_workers():
    spec = str(DATA / "arrowrs_rg4.parquet")
    whole, whole_labels = batches(feeder.DataLoader(spec, batch_size=30, image_size=12, augment=None))

    def run(num_workers, memory_budget=48000):  # 31,872 bytes of it for 6 batch buffers
        loader = feeder.DataLoader(spec, batch_size=3, image_size=12, augment=None, shuffle=True, seed=9,
                                   num_workers=num_workers, memory_budget=memory_budget)
        assert loader._loader.streaming and 2 <= loader._loader.shuffle_window < 30
        loader.set_epoch(2)
        return batches(loader)

    # The rows are sorted by class and the window holds a few row groups: the loader says so.
    with pytest.warns(RuntimeWarning, match="the labels are clustered"):
        images, labels = run(0)
    # Each image once: the rows, sorted, are the whole set's, and not in its order.
    key = lambda batch: sorted(range(len(batch)), key=lambda i: batch[i].flatten().tolist())
    assert torch.equal(images[key(images)], whole[key(whole)])
    assert sorted(labels.tolist()) == sorted(whole_labels.tolist()) and not torch.equal(labels, whole_labels)
    for workers in (1, 3):
        with pytest.warns(RuntimeWarning):
            other, other_labels = run(workers)
        assert torch.equal(other, images) and torch.equal(other_labels, labels)
    with pytest.raises(ValueError, match="memory_budget .* is too small.* of encoded samples"):
        run(0, memory_budget=38000)


def test_a_row_group_larger_than_the_budget_streams_in_pieces_of_its_pages():
    # arrow-rs's file: 150 images sorted by class in ONE row group of 1 KB pages. Before, the budget
    # had to hold the row group twice over; now it streams in pieces of whole pages (at most 32 rows).
    spec = str(DATA / "arrowrs_pages.parquet")
    whole, whole_labels = batches(feeder.DataLoader(spec, batch_size=150, image_size=12, augment=None))

    def run(num_workers, resume_after=None):
        loader = feeder.DataLoader(spec, batch_size=3, image_size=12, augment=None, shuffle=True, seed=9,
                                   num_workers=num_workers, memory_budget=57248, prefetch=2)
        assert loader._loader.streaming and 2 <= loader._loader.shuffle_window < 150
        loader.set_epoch(1)
        if resume_after is None:
            return batches(loader)
        it = iter(loader)
        for _ in range(resume_after):
            next(it)
        state = loader.state_dict()
        resumed = feeder.DataLoader(spec, batch_size=3, image_size=12, augment=None, shuffle=True, seed=9,
                                    num_workers=num_workers, memory_budget=57248, prefetch=2)
        resumed.load_state_dict(state)
        return batches(it), batches(resumed)

    with pytest.warns(RuntimeWarning, match="the labels are clustered"):
        images, labels = run(0)
    key = lambda batch: sorted(range(len(batch)), key=lambda i: batch[i].flatten().tolist())
    assert torch.equal(images[key(images)], whole[key(whole)])  # each image once
    assert sorted(labels.tolist()) == sorted(whole_labels.tolist()) and not torch.equal(labels, whole_labels)
    for workers in (1, 3):
        with pytest.warns(RuntimeWarning):
            other, other_labels = run(workers)
        assert torch.equal(other, images) and torch.equal(other_labels, labels)
    with pytest.warns(RuntimeWarning):
        (rest, _), (again, _) = run(2, resume_after=20)
    assert torch.equal(again, rest) and torch.equal(rest, images[60:])


def test_resume_mid_epoch_gives_the_same_batches():
    spec = str(DATA / "hf")
    options = dict(batch_size=4, image_size=10, augment="random_resized_crop", shuffle=True, seed=4, num_workers=2)
    loader = feeder.DataLoader(spec, **options)
    loader.set_epoch(1)
    it = iter(loader)
    for _ in range(3):
        next(it)
    state = loader.state_dict()
    rest, _ = batches(it)
    resumed = feeder.DataLoader(spec, **options)
    resumed.load_state_dict(state)
    again, _ = batches(resumed)
    assert torch.equal(again, rest)


def test_bad_images_name_the_file_row_group_and_row():
    cut = feeder.DataLoader(str(DATA / "bad" / "cut.parquet"), batch_size=10, image_size=8)
    with pytest.raises(feeder.DataError, match=r"cut\.parquet: row group 0 row 5: bad PNG"):
        next(iter(cut))
    null = feeder.DataLoader(str(DATA / "bad" / "null.parquet"), batch_size=10, image_size=8)
    with pytest.raises(feeder.DataError, match=r"null\.parquet: column 'png' row 7: null image"):
        next(iter(null))
    with pytest.raises(ValueError, match="need image_size="):
        feeder.DataLoader(str(DATA / "hf"))


def test_convert_writes_an_image_folder_as_parquet_shards(tmp_path, folder, capsys):
    def rows_by_content(loader):
        images, labels = batches(loader)
        key = sorted(range(len(images)), key=lambda i: images[i].flatten().tolist())
        return images[key], labels[key], labels

    # In the folder's order: the same batches as the folder.
    report = feeder.convert(folder, tmp_path / "plain/", shard_rows=12, row_group_size=5)
    assert "| 30 | 3 | 3 | 8 |" in report  # 30 images, 3 classes, 3 shards of 12, 12, 6: row groups of 5, 5, 2 and 5, 1
    assert "sorted by class: give --shuffle-on-write" in report
    options = dict(batch_size=8, image_size=14, augment=None)
    plain, plain_labels = batches(feeder.DataLoader(str(tmp_path / "plain"), **options))
    expected, expected_labels = batches(feeder.DataLoader(str(folder), **options))
    assert torch.equal(plain, expected) and torch.equal(plain_labels, expected_labels)
    # The index lists the shards (plain HTTP has no other listing); the footers describe the rest.
    index = json.loads((tmp_path / "plain" / "index.json").read_text())
    assert index["encoded"] is True and "shape" not in index and index["num_rows"] == 30
    assert [shard["file"] for shard in index["shards"]] == [f"part-0000{i}.parquet" for i in range(3)]
    assert "indexed by index.json" in feeder.inspect(tmp_path / "plain")
    globbed, _ = batches(feeder.DataLoader(str(tmp_path / "plain" / "*.parquet"), **options))
    assert torch.equal(globbed, plain)  # the same set through its index or a glob
    # An index that disagrees with a shard's footer (rows moved between shards) is refused by name.
    import shutil
    shutil.copytree(tmp_path / "plain", tmp_path / "edited")
    index["shards"][0]["rows"], index["shards"][0]["row_group_rows"] = 11, [5, 5, 1]
    index["shards"][1]["rows"], index["shards"][1]["row_group_rows"] = 13, [5, 5, 3]
    (tmp_path / "edited" / "index.json").write_text(json.dumps(index))
    with pytest.raises(feeder.DataError, match=r"edited/part-00000\.parquet: row groups of \[5 5 2\] rows, but "
                                               r"index\.json records \[5 5 1\]"):
        feeder.DataLoader(str(tmp_path / "edited"), **options)
    # One shard inspected alone: the file's listing and its images, not a "set" named after its directory.
    one = feeder.inspect(tmp_path / "plain" / "part-00001.parquet")
    assert one.startswith(f"file: {tmp_path / 'plain' / 'part-00001.parquet'} (") and "row group 1: 5 rows" in one
    assert "encoded images: 12" in one and "sharded Parquet set" not in one
    # Shuffled on write: the same images, each once, in another order.
    report = feeder.convert(folder, tmp_path / "shuffled/", shuffle_on_write=5)
    assert "rows shuffled with seed 5" in report
    images, labels, in_file_order = rows_by_content(feeder.DataLoader(str(tmp_path / "shuffled"), **options))
    reference, reference_labels, _ = rows_by_content(feeder.DataLoader(str(folder), **options))
    assert torch.equal(images, reference) and torch.equal(labels, reference_labels)
    assert in_file_order.tolist() != sorted(in_file_order.tolist())
    # Nothing is overwritten or mixed; the options of pixel sets are refused.
    with pytest.raises(ValueError, match="already holds index.json and 3 more"):
        feeder.convert(folder, tmp_path / "plain/")
    with pytest.raises(ValueError, match="give a directory"):
        feeder.convert(folder, tmp_path / "one.parquet")
    with pytest.raises(ValueError, match="--shape applies to pixel sets"):
        feeder.convert(folder, tmp_path / "other/", shape=(1, 28, 28))


def test_a_folder_larger_than_the_budget_streams_in_mixed_blocks(tmp_path):
    folder = image_set.write_folder(tmp_path, per_class=200)
    held = feeder.DataLoader(str(folder), batch_size=100, image_size=12, augment=None)
    assert not held._loader.streaming
    whole, whole_labels = batches(held)
    options = dict(batch_size=3, image_size=12, augment=None, shuffle=True, seed=2, memory_budget=64000, prefetch=2)
    loader = feeder.DataLoader(str(folder), **options)
    assert loader._loader.streaming and "streaming" in repr(loader._source.description)
    assert loader._loader.shuffle_window < 600 and not loader._loader.shuffle_advice
    assert len(loader.dataset) == 600 and loader.dataset.classes == list(image_set.CLASSES)
    images, labels = batches(loader)
    key = lambda batch: sorted(range(len(batch)), key=lambda i: batch[i].flatten().tolist())
    assert torch.equal(images[key(images)], whole[key(whole)])
    assert sorted(labels.tolist()) == sorted(whole_labels.tolist())
    # Resumed mid-epoch, with other workers: the same batches.
    loader.set_epoch(1)
    it = iter(loader)
    for _ in range(4):
        next(it)
    state = loader.state_dict()
    rest, _ = batches(it)
    resumed = feeder.DataLoader(str(folder), num_workers=3, **options)
    resumed.load_state_dict(state)
    again, _ = batches(resumed)
    assert torch.equal(again, rest)


def test_skip_mode_leaves_bad_images_out_and_says_how_many():
    spec = str(DATA / "bad" / "cut.parquet")
    runs = []
    for workers in (0, 2):
        loader = feeder.DataLoader(spec, batch_size=4, image_size=8, num_workers=workers, on_error="skip")
        with pytest.warns(RuntimeWarning, match=r"1 bad images were left out of epoch 0's batches .*row 5: bad PNG"):
            images, labels = batches(loader)
        count, reasons = loader.skipped
        assert count == 1 and "cut.parquet: row group 0 row 5: bad PNG" in reasons[0]
        runs.append(images)
    assert runs[0].shape[0] == 9 and torch.equal(runs[0], runs[1])
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        feeder.DataLoader(spec, image_size=8, on_error="ignore")
    with pytest.raises(feeder.DataError, match="null image"):  # a row that cannot be read is not skipped
        batches(feeder.DataLoader(str(DATA / "bad" / "null.parquet"), batch_size=4, image_size=8, on_error="skip"))


def test_inspect_shows_formats_sizes_and_classes(folder, capsys):
    report = feeder.inspect(folder)
    assert "image folder:" in report and "(3 classes," in report
    assert "encoded images: 30\nformats: PNG 30\nwidth min / median / max: 14 / 27 / 40 px" in report
    assert "classes (images per label): 0 cat: 10, 1 dog: 10, 2 fox: 10" in report
    # A Hugging Face set names its classes (its ClassLabel); a plain binary column does not.
    for spec, classes in ((DATA / "hf", "0 cat: 10, 1 dog: 10, 2 fox: 10"), (DATA / "binary.parquet", "0: 10, 1: 10, 2: 10")):
        report = feeder.inspect(spec)
        assert "formats: PNG 30" in report and f"classes (images per label): {classes}\n" in report


def test_class_names_come_from_the_hugging_face_class_label(folder):
    # datasets' `huggingface` metadata names the classes, as an image folder's directories do.
    from_hf = feeder.DataLoader(str(DATA / "hf"), batch_size=8, image_size=14)
    assert from_hf.dataset.classes == ["cat", "dog", "fox"]
    assert from_hf.dataset.classes == feeder.DataLoader(str(folder), batch_size=8, image_size=14).dataset.classes
    # As datasets' own files are named: a glob of the split's shards.
    glob = feeder.DataLoader(str(DATA / "hf" / "train-*.parquet"), batch_size=8, image_size=14)
    assert len(glob.dataset) == 30 and glob.dataset.classes == ["cat", "dog", "fox"]
    # A set without it has no names.
    assert feeder.DataLoader(str(DATA / "binary.parquet"), batch_size=8, image_size=14).dataset.classes is None


def varint(value):
    """Thrift's compact protocol: an i64 zigzag-encoded, as a varint."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_a_footer_claiming_more_than_its_codec_can_inflate_is_refused_naming_the_file(tmp_path):
    """A 75 KB file whose image column claimed a total_uncompressed_size of 2e9 took 2 GB to inspect
    and 4 GB for an epoch; 1e12 gave a bare std::bad_alloc. The claim is now checked against what the
    column's compressed bytes can inflate to, when the set is opened."""
    folder = image_set.write_folder(tmp_path / "folder", per_class=40)
    feeder.convert(str(folder), str(tmp_path / "set") + "/", codec="none", shard_rows=1000)
    shard = tmp_path / "set" / "part-00000.parquet"
    data = bytearray(shard.read_bytes())
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer_start = len(data) - 8 - footer_length
    footer = bytes(data[footer_start:-8])
    # ColumnMetaData's total_uncompressed_size (field 5) then total_compressed_size (6), equal for an
    # uncompressed column of this size: two i64 fields, each a header byte 0x16 and a 3-byte varint.
    patched = None
    for size in range(8192, 1 << 19):  # sizes whose varint is 3 bytes
        pattern = b"\x16" + varint(size) + b"\x16" + varint(size)
        at = footer.find(pattern)
        if at >= 0 and len(varint(size)) == 3:
            claimed = 1_000_000  # within three bytes; more than size + the headers' slack
            patched = footer[:at + 1] + varint(claimed) + footer[at + 4:]
            break
    assert patched is not None and len(patched) == len(footer)
    data[footer_start:-8] = patched
    shard.write_bytes(bytes(data))
    (tmp_path / "set" / "index.json").unlink(missing_ok=True)  # read from the footers
    with pytest.raises(feeder.DataError, match=r"part-00000\.parquet: row group 0: the image column claims 1000000 "
                                               r"bytes uncompressed from \d+ compressed"):
        feeder.DataLoader(str(tmp_path / "set"), image_size=8)
