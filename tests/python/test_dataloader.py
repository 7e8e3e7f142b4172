"""feeder.DataLoader: its loader semantics, zero-copy hand-off, buffer reuse, resume and errors."""

import gc
import json
import warnings

import numpy as np
import pytest
import torch

import feeder
from conftest import numbered_images, write_idx


def epoch_labels(loader):
    """The labels of one pass, batch by batch."""
    return [labels.tolist() for _, labels in loader]


def flat(batches):
    return [label for batch in batches for label in batch]


# ------------------------------------------------------------------------ what an epoch holds

@pytest.mark.parametrize("batch_size,drop_last", [(64, False), (64, True), (1000, False), (333, False)])
def test_every_sample_once_per_epoch(numbered, batch_size, drop_last):
    loader = feeder.DataLoader(numbered, batch_size=batch_size, drop_last=drop_last, num_workers=2)
    expected_batches = 1000 // batch_size if drop_last else -(-1000 // batch_size)
    assert len(loader) == expected_batches
    for _ in range(2):
        batches = epoch_labels(loader)
        assert len(batches) == expected_batches
        assert all(len(b) == batch_size for b in batches[:-1])
        seen = flat(batches)
        assert len(seen) == len(set(seen)) == loader.num_samples
        if not drop_last:
            assert sorted(seen) == list(range(1000))


def test_batches_are_float_images_and_int64_labels(numbered):
    images, _ = numbered
    loader = feeder.DataLoader(numbered, batch_size=100, shuffle=False)
    x, y = next(iter(loader))
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    assert x.shape == (100, 1, 6, 5) and y.shape == (100,)
    # shuffle=False keeps the data's order; pixels are x / 255 by default.
    assert y.tolist() == list(range(100))
    assert torch.allclose(x, torch.from_numpy(images[:100]).float() / 255, rtol=0, atol=1e-7)


def test_normalize_and_channels_last():
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(40, 3, 4, 5), dtype=np.uint8)
    loader = feeder.DataLoader((images, np.zeros(40, dtype=np.int64)), batch_size=40, shuffle=False,
                               normalize=(0.25, 0.5), layout="nhwc")
    x, _ = next(iter(loader))
    assert x.shape == (40, 3, 4, 5)
    assert x.is_contiguous(memory_format=torch.channels_last)
    expected = (torch.from_numpy(images).float() / 255 - 0.25) / 0.5
    assert torch.allclose(x, expected, atol=1e-6)


def test_order_depends_only_on_seed_and_epoch_not_workers(numbered):
    runs = {}
    for workers in (0, 1, 3):
        loader = feeder.DataLoader(numbered, batch_size=64, shuffle=True, seed=5, num_workers=workers, prefetch=2)
        runs[workers] = [epoch_labels(loader) for _ in range(3)]
    assert runs[0] == runs[1] == runs[3]
    first, second, third = runs[0]
    assert first != second != third  # each pass is shuffled anew
    other_seed = feeder.DataLoader(numbered, batch_size=64, seed=6)
    assert epoch_labels(other_seed) != first


def test_set_epoch_picks_the_shuffle(numbered):
    loader = feeder.DataLoader(numbered, batch_size=128)
    passes = [epoch_labels(loader) for _ in range(3)]
    loader.set_epoch(1)
    assert epoch_labels(loader) == passes[1]
    loader.set_epoch(0)
    assert epoch_labels(loader) == passes[0]
    assert epoch_labels(loader) == passes[1]  # and the pass after it takes the next epoch


def test_ranks_share_each_epoch_like_distributed_sampler(numbered):
    world = 3
    loaders = [feeder.DataLoader(numbered, batch_size=50, rank=r, world_size=world, num_workers=1)
               for r in range(world)]
    lengths = {len(loader) for loader in loaders}
    assert lengths == {7}  # 1000 samples padded to 1002, 334 per rank in batches of 50
    for epoch in range(2):
        per_rank = []
        for loader in loaders:
            loader.set_epoch(epoch)
            per_rank.append(flat(epoch_labels(loader)))
        assert all(len(labels) == 334 for labels in per_rank)
        together = flat(per_rank)
        assert set(together) == set(range(1000))
        assert len(together) - len(set(together)) == 2  # the padding repeats two samples
        # Global batch b is rank 0's batch b, then rank 1's, then rank 2's; the last global batch
        # (102 samples with the padding) is split in three slices of 34.
        single = feeder.DataLoader(numbered, batch_size=150)
        single.set_epoch(epoch)
        rebuilt = [label for b in range(7) for r in range(world) for label in per_rank[r][b * 50:(b + 1) * 50]]
        assert rebuilt[:1000] == flat(epoch_labels(single))


# ------------------------------------------------------------------------ paths

def test_reads_idx_csv_parquet_and_shards_alike(tmp_path, idx_set):
    images_path, images, labels = idx_set
    feeder.convert(images_path, tmp_path / "set.csv")
    feeder.convert(images_path, tmp_path / "set.parquet", codec="lz4", row_group_size=128)
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=200)
    sources = [images_path, tmp_path / "set.csv", str(tmp_path / "set.parquet"), str(tmp_path / "shards"),
               str(tmp_path / "shards" / "part-*.parquet")]
    for source in sources:
        loader = feeder.DataLoader(source, batch_size=256, shuffle=False)
        x = torch.cat([images for images, _ in loader])
        y = torch.cat([labels for _, labels in loader])
        assert torch.allclose(x, torch.from_numpy(images).float().unsqueeze(1) / 255, rtol=0, atol=1e-7), source
        assert torch.equal(y, torch.from_numpy(labels)), source


def test_streams_a_set_larger_than_its_budget(tmp_path, idx_set):
    images_path, _, labels = idx_set
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=100, row_group_size=50, layout="image")
    in_memory = feeder.DataLoader(tmp_path / "shards", batch_size=32, shuffle_window=100)
    streamed = feeder.DataLoader(tmp_path / "shards", batch_size=32, memory_budget="1MiB", shuffle_window=100,
                                 num_workers=2)
    assert streamed.streaming and not in_memory.streaming
    assert "streaming" in streamed.source_description
    for _ in range(2):
        assert epoch_labels(streamed) == epoch_labels(in_memory)


def test_a_streamed_resume_with_another_default_budget_continues_the_saved_order(tmp_path, idx_set):
    # The default window follows the budget (by default half the memory free at start): a run
    # resumed with another budget continues with the window it saved, where that budget holds it.
    images_path, _, _ = idx_set
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=100, row_group_size=50, layout="image")
    options = dict(batch_size=16, shuffle=True, seed=5, num_workers=2)  # 294 KiB of each budget for the batch buffers
    reference = feeder.DataLoader(tmp_path / "shards", memory_budget="556KiB", **options)
    reference.set_epoch(1)
    expected = epoch_labels(reference)
    saver = feeder.DataLoader(tmp_path / "shards", memory_budget="556KiB", **options)
    assert saver.streaming
    saver.set_epoch(1)
    it = iter(saver)
    seen = [next(it)[1].tolist() for _ in range(3)]
    state = json.loads(json.dumps(saver.state_dict()))
    del it

    resumed = feeder.DataLoader(tmp_path / "shards", memory_budget="684KiB", **options)
    assert resumed.shuffle_window != saver.shuffle_window
    resumed.load_state_dict(state)
    assert resumed.shuffle_window == saver.shuffle_window
    assert seen + epoch_labels(resumed) == expected
    smaller = feeder.DataLoader(tmp_path / "shards", memory_budget="508KiB", **options)
    with pytest.raises(ValueError, match=r"it was saved with a shuffle window of \d+ samples, which memory_budget "
                                         r".* cannot hold .*: give a memory budget of at least"):
        smaller.load_state_dict(state)


def test_warns_when_a_streamed_window_mixes_too_few_pieces_of_sorted_labels(tmp_path, idx_set):
    _, images, labels = idx_set
    order = np.argsort(labels, kind="stable")
    sorted_path = write_idx(str(tmp_path / "sorted"), images[order], labels[order])
    feeder.convert(sorted_path, str(tmp_path / "sorted_shards") + "/", shard_rows=200, row_group_size=50)
    feeder.convert(sorted_path, str(tmp_path / "mixed_shards") + "/", shard_rows=200, row_group_size=50,
                   shuffle_on_write=5)
    with pytest.warns(RuntimeWarning, match="the labels are clustered"):
        feeder.DataLoader(tmp_path / "sorted_shards", batch_size=16, shuffle=True, memory_budget="1MiB", shuffle_window=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same rows shuffled when written: no warning
        feeder.DataLoader(tmp_path / "mixed_shards", batch_size=16, shuffle=True, memory_budget="1MiB", shuffle_window=100)


# ------------------------------------------------------------------------ zero copy and buffers

def test_batches_are_the_loaders_buffers(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100, num_workers=2)
    for images, labels in loader:
        assert (images.data_ptr(), labels.data_ptr()) == loader._loader.last_batch_addresses()


def test_in_memory_images_are_used_where_they_lie(numbered):
    images, labels = numbered
    loader = feeder.DataLoader(images, labels=labels, batch_size=10, shuffle=False, num_workers=0)
    images[3] = 200  # after the loader was made: it reads the caller's array, not a copy
    x, _ = next(iter(loader))
    assert torch.allclose(x[3], torch.full_like(x[3], 200 / 255)) and torch.allclose(x[4], torch.full_like(x[4], 4 / 255))


def test_tensor_images_are_used_where_they_lie(numbered):
    images = torch.from_numpy(numbered[0].copy())
    loader = feeder.DataLoader((images, torch.from_numpy(numbered[1])), batch_size=10, shuffle=False,
                               num_workers=0)
    images[0] = 17
    x, y = next(iter(loader))
    assert torch.allclose(x[0], torch.full_like(x[0], 17 / 255)) and y[0] == 0


def test_buffers_are_reused_when_batches_are_freed(numbered):
    loader = feeder.DataLoader(numbered, batch_size=10, num_workers=2, prefetch=3)
    for _ in range(3):
        for images, labels in loader:
            pass
    del images, labels
    steady = loader.buffers_allocated
    # Workers, prefetched batches and the one the loop holds: never one per batch (100 a pass).
    assert steady <= 2 + 3 + 2
    kept = [batch for batch in loader]
    assert loader.buffers_allocated >= len(kept) - 1  # each batch kept needs its own buffer
    pointers = {images.data_ptr() for images, _ in kept}
    assert len(pointers) == len(kept)
    del kept
    gc.collect()
    after = loader.buffers_allocated
    for _ in loader:
        pass
    assert loader.buffers_allocated == after  # the freed buffers came back to the loader


def test_a_batch_outlives_its_loader(numbered):
    loader = feeder.DataLoader(numbered, batch_size=25, shuffle=False, num_workers=2)
    images, labels = next(iter(loader))
    del loader
    gc.collect()
    assert labels.tolist() == list(range(25))
    assert torch.allclose(images, torch.from_numpy(numbered[0][:25]).float() / 255, rtol=0, atol=1e-7)


def test_breaking_out_and_starting_again(numbered):
    loader = feeder.DataLoader(numbered, batch_size=10, num_workers=3, prefetch=4)
    full = epoch_labels(loader)
    for _ in range(5):
        loader.set_epoch(0)
        for i, _ in enumerate(loader):
            if i == 2:
                break
    loader.set_epoch(0)
    assert epoch_labels(loader) == full


def test_a_new_pass_ends_the_old_one(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100)
    old = iter(loader)
    next(old)
    new = iter(loader)
    next(new)
    with pytest.raises(RuntimeError, match="ended by a newer iter"):
        next(old)


# ------------------------------------------------------------------------ resume

def take_batches(loader, epoch, count):
    """The labels of epoch `epoch`'s first `count` batches, its pass left there; all of them end it."""
    loader.set_epoch(epoch)
    it = iter(loader)
    taken = [next(it)[1].tolist() for _ in range(count)]
    if count == len(loader):
        with pytest.raises(StopIteration):
            next(it)
    return taken


@pytest.mark.parametrize("stop_after", [0, 1, 7, 10])
def test_state_dict_resumes_with_the_batches_that_come_next(numbered, stop_after):
    reference = feeder.DataLoader(numbered, batch_size=100, seed=9)
    reference.set_epoch(2)
    expected = epoch_labels(reference) + epoch_labels(reference)  # epoch 2, then epoch 3

    loader = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=2)
    seen = take_batches(loader, 2, stop_after)
    state = json.loads(json.dumps(loader.state_dict()))  # plain values: it survives a file
    assert state["_num_yielded"] == stop_after
    assert state["_iterator_finished"] == (stop_after == 10)
    del loader

    resumed = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=1)
    resumed.load_state_dict(state)
    seen += epoch_labels(resumed)  # the rest of epoch 2, or all of epoch 3 when 2 had ended
    if stop_after < 10:
        seen += epoch_labels(resumed)
    assert seen == expected


@pytest.mark.parametrize("set_epoch_first", [False, True])
def test_the_usual_loop_resumes_mid_epoch_with_set_epoch_before_or_after_loading(numbered, set_epoch_first):
    """for e in range(start, E): loader.set_epoch(e); for batch in loader: ... (set_epoch used to
    drop the loaded state, so the saved epoch started again from its first batch)."""
    reference = feeder.DataLoader(numbered, batch_size=100, seed=9)
    expected = {}
    for e in range(4):
        reference.set_epoch(e)
        expected[e] = epoch_labels(reference)

    loader = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=2)
    loader.set_epoch(1)
    it = iter(loader)
    first = [next(it)[1].tolist() for _ in range(3)]
    state = json.loads(json.dumps(loader.state_dict()))
    start_epoch = state["epoch"]

    resumed = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=2)
    if set_epoch_first:
        resumed.set_epoch(start_epoch)
    resumed.load_state_dict(state)
    seen = {}
    for e in range(start_epoch, 4):
        resumed.set_epoch(e)
        seen[e] = epoch_labels(resumed)
    assert first + seen[1] == expected[1]
    assert seen[2] == expected[2] and seen[3] == expected[3]


@pytest.mark.parametrize("stop_after", [None, 3, 10])
def test_the_documented_loop_resumes_from_next_epoch_wherever_the_state_was_taken(numbered, stop_after):
    """docs/python.md's loop: ``for e in range(loader.next_epoch, E)``. Its earlier start, the state's
    "epoch", ran epoch 1 again when the state was taken after its pass had ended (a checkpoint at
    the end of an epoch); a new loader's state (epoch None) raised TypeError."""
    reference = feeder.DataLoader(numbered, batch_size=100, seed=9)
    expected = []
    for e in range(3):
        reference.set_epoch(e)
        expected += epoch_labels(reference)

    loader = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=2)
    assert loader.next_epoch == 0
    seen = []
    if stop_after is not None:
        loader.set_epoch(0)
        seen += epoch_labels(loader)
        seen += take_batches(loader, 1, stop_after)
    state = json.loads(json.dumps(loader.state_dict()))

    resumed = feeder.DataLoader(numbered, batch_size=100, seed=9, num_workers=1)
    resumed.load_state_dict(state)
    assert resumed.next_epoch == {None: 0, 3: 1, 10: 2}[stop_after]
    for e in range(resumed.next_epoch, 3):
        resumed.set_epoch(e)
        seen += epoch_labels(resumed)
    assert seen == expected


def test_a_state_dict_whose_counts_are_not_its_loader_states_is_refused(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100, seed=9)
    take_batches(loader, 4, 1)
    state = loader.state_dict()
    for key, value in [("epoch", 0), ("_num_yielded", 5), ("next_epoch", "x"), ("next_epoch", -1)]:
        edited = json.loads(json.dumps(state))
        edited[key] = value
        with pytest.raises(ValueError, match="not a feeder DataLoader state_dict"):
            feeder.DataLoader(numbered, batch_size=100, seed=9).load_state_dict(edited)


def test_set_epoch_to_another_epoch_while_a_resume_is_pending_is_refused(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100, seed=9)
    take_batches(loader, 5, 1)
    state = loader.state_dict()
    resumed = feeder.DataLoader(numbered, batch_size=100, seed=9)
    resumed.load_state_dict(state)
    with pytest.raises(ValueError, match=r"set_epoch\(6\) after load_state_dict\(\) of a state in the middle of "
                                         r"epoch 5 \(1 of 10 batches done\): call set_epoch\(5\)"):
        resumed.set_epoch(6)
    resumed.set_epoch(5)  # the saved epoch itself keeps the resume
    assert len(epoch_labels(resumed)) == 9


def test_state_dict_of_other_data_or_options_is_refused(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100)
    next(iter(loader))
    state = loader.state_dict()
    images, labels = numbered
    other_data = feeder.DataLoader((images[::-1].copy(), labels), batch_size=100)
    with pytest.raises(ValueError, match="cannot restore"):
        other_data.load_state_dict(state)
    other_batch = feeder.DataLoader(numbered, batch_size=50)
    with pytest.raises(ValueError, match="batch"):
        other_batch.load_state_dict(state)
    with pytest.raises(ValueError, match="not a feeder DataLoader state_dict"):
        loader.load_state_dict({"epoch": 0})


# ------------------------------------------------------------------------ errors

@pytest.mark.parametrize("options,message", [
    (dict(batch_size=0), "batch_size must be an integer >= 1"),
    (dict(num_workers=-1), "num_workers must be an integer >= 0"),
    (dict(rank=2, world_size=2), "rank must be below world_size"),
    (dict(layout="chw"), "layout must be 'nchw' or 'nhwc'"),
    (dict(normalize=(0.5, 0.0)), "normalization std must be positive"),
    (dict(normalize="imagenet"), "normalize must be None or"),
    (dict(memory_budget="lots"), "memory_budget"),
    (dict(num_workers=1000), "num_workers 1000 is absurd"),
    (dict(batch_size=2**31), "batch_size 2147483648 is absurd; use at most 1073741824"),
    (dict(prefetch=100000), "prefetch 100000 is absurd; use at most 1024"),
])
def test_bad_options_are_value_errors(numbered, options, message):
    with pytest.raises(ValueError, match=message):
        feeder.DataLoader(numbered, **options)


def test_a_batch_size_above_the_set_gives_one_batch_of_the_whole_set(numbered):
    """A batch buffer is never larger than the set: batch_size 10**8 used to allocate 10**8 images."""
    loader = feeder.DataLoader(numbered, batch_size=10**8, shuffle=False)
    batches = list(loader)
    assert len(batches) == 1 and batches[0][1].tolist() == list(range(1000))


def test_bad_arrays_are_value_errors():
    with pytest.raises(ValueError, match="must be uint8"):
        feeder.DataLoader(np.zeros((4, 1, 2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match=r"\(N,C,H,W\) or \(N,H,W\)"):
        feeder.DataLoader(np.zeros((4, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="labels must have shape"):
        feeder.DataLoader((np.zeros((4, 1, 2, 2), dtype=np.uint8), np.zeros(3, dtype=np.int64)))


def test_missing_and_corrupt_files_are_data_errors(tmp_path, idx_set):
    with pytest.raises(feeder.DataError, match="no such file or directory"):
        feeder.DataLoader(tmp_path / "absent.parquet")
    assert issubclass(feeder.DataError, OSError)
    images_path, _, _ = idx_set
    feeder.convert(images_path, tmp_path / "set.parquet")
    data = (tmp_path / "set.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[:len(data) // 2])
    with pytest.raises(feeder.DataError, match="cut.parquet"):
        feeder.DataLoader(tmp_path / "cut.parquet")
    (tmp_path / "bad.csv").write_text("label,pixel1,pixel2,pixel3,pixel4\n1,2,3,4,5\n4,5\n")
    with pytest.raises(feeder.DataError, match="bad.csv: line 3"):
        feeder.DataLoader(tmp_path / "bad.csv")


def test_a_shard_that_vanishes_fails_the_next_batch_that_needs_it(tmp_path, idx_set):
    images_path, _, _ = idx_set
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=50, row_group_size=50, layout="image")
    loader = feeder.DataLoader(tmp_path / "shards", batch_size=20, memory_budget="1MiB", shuffle=False,
                               num_workers=2)
    assert loader.streaming
    first = epoch_labels(loader)
    assert len(first) == 100
    # The last of 40 shards: the source keeps the 16 shards read last open, and a shard still open
    # serves its data after an unlink (as any open file does). Which shards are open when the next
    # pass begins depends on the readers' timing (the last of the pass, and those the next pass's
    # first window was read ahead from), but at most 15 besides this one: the pass opens 24 or more
    # others before it reaches this one, so it has been closed by then, whatever the timing. (With
    # 20 shards it could still be open, and the pass delivered every batch.)
    (tmp_path / "shards" / "part-00039.parquet").unlink()
    delivered = 0
    with pytest.raises(feeder.DataError, match="part-00039.parquet"):
        for _ in loader:
            delivered += 1
    assert 0 < delivered < 100


def test_a_footer_larger_than_the_budget_once_parsed_is_refused_before_it_is_read(tmp_path):
    """A file of 20,000 row groups of one image has a 2.6 MB footer that takes about 60 MB once
    parsed; a 200,000-row-group file took 678 MB under memory_budget=64MiB, counted nowhere. The
    footer's memory is checked against the budget before it is parsed."""
    images = np.random.default_rng(0).integers(0, 256, (20000, 2, 2), dtype=np.uint8)
    source = write_idx(str(tmp_path / "train"), images, np.arange(20000) % 10)
    out = str(tmp_path / "groups.parquet")
    feeder.convert(source, out, layout="image", row_group_size=1)
    with pytest.raises(feeder.DataError, match=r"groups\.parquet: its footer of .* takes up to .* in memory once read, "
                                               r"more than the 32 MiB memory budget"):
        feeder.DataLoader(out, batch_size=1000, memory_budget=32 << 20)
    loader = feeder.DataLoader(out, batch_size=1000, memory_budget=256 << 20)
    assert sum(len(labels) for _, labels in loader) == 20000


def test_an_index_that_claims_more_rows_than_the_budget_can_order_is_refused_before_tables_are_made(tmp_path):
    """An index.json whose second shard claims 10^12 rows (for a file of a few KB) grew to 5.6 GB
    building the stream's tables before anything was checked; it is refused, naming the shard."""
    images = np.random.default_rng(0).integers(0, 256, (200, 4, 4), dtype=np.uint8)
    source = write_idx(str(tmp_path / "train"), images, np.arange(200) % 10)
    out = tmp_path / "set"
    feeder.convert(source, str(out), shard_rows=100)
    index = json.loads((out / "index.json").read_text())
    index["shards"][1]["rows"] = 10**12
    index["shards"][1]["row_group_rows"] = [10**12]
    index["num_rows"] = 100 + 10**12
    (out / "index.json").write_text(json.dumps(index))
    with pytest.raises(feeder.DataError, match=r"1000000000100 rows \(as index\.json records them; the most in "
                                               r"part-00001\.parquet, 1000000000000 rows in \d+ bytes\) need 7\.3 TiB"):
        feeder.DataLoader(str(out), batch_size=10, memory_budget=64 << 20)


def test_piece_size_is_the_unit_shuffled_and_read_held_or_streamed(tmp_path):
    # 1000 samples of 1608 bytes (1x40x40 and the label) in row groups of 250: pieces of 42,000
    # bytes are 26 rows (the last of a row group 16). A window of one sample is one piece, so the
    # epoch is the pieces in a shuffled order, each one's rows shuffled among themselves; the same
    # held in memory and streamed; the default pieces (20 rows) give another order. Sample i has
    # label i // 4 and pixels i % 256 (IDX labels are bytes): i is 4 * label + pixel % 4.
    images = numbered_images(1000, height=40, width=40)
    path = write_idx(str(tmp_path / "numbered"), images.reshape(1000, 40, 40), np.arange(1000) // 4)
    feeder.convert(path, str(tmp_path / "shards") + "/", shard_rows=500, row_group_size=250, layout="image")
    options = dict(batch_size=10, shuffle=True, seed=3, shuffle_window=1, dtype=torch.uint8)

    def flat(loader):
        return [4 * label + pixel % 4 for x, y in loader for label, pixel in zip(y.tolist(), x[:, 0, 0, 0].tolist())]

    held = feeder.DataLoader(tmp_path / "shards", piece_size=42000, **options)
    with pytest.warns(RuntimeWarning, match="the labels are clustered"):  # sorted, and a window of one piece
        streamed = feeder.DataLoader(tmp_path / "shards", piece_size="42000B", memory_budget="1MiB", num_workers=2,
                                     **options)
    default = feeder.DataLoader(tmp_path / "shards", **options)
    assert streamed.streaming and not held.streaming
    order = flat(held)
    assert flat(streamed) == order
    assert flat(default) != order
    pieces = [range(g + first, g + min(first + 26, 250)) for g in range(0, 1000, 250) for first in range(0, 250, 26)]
    at = 0
    while at < len(order):
        piece = next(p for p in pieces if order[at] in p)
        assert sorted(order[at:at + len(piece)]) == list(piece), at
        at += len(piece)
    assert sorted(order) == list(range(1000))


def test_a_state_resumes_only_with_the_piece_size_it_was_saved_with(tmp_path, idx_set):
    images_path, _, _ = idx_set
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=1000, layout="image")
    options = dict(batch_size=32, shuffle=True, seed=5, memory_budget="2MiB", shuffle_window=300)
    saver = feeder.DataLoader(tmp_path / "shards", piece_size="64KiB", **options)
    it = iter(saver)
    seen = [next(it)[1].tolist() for _ in range(3)]
    state = saver.state_dict()
    expected = seen + [labels.tolist() for _, labels in it]
    resumed = feeder.DataLoader(tmp_path / "shards", piece_size="64KiB", **options)
    resumed.load_state_dict(state)
    assert seen + epoch_labels(resumed) == expected
    other = feeder.DataLoader(tmp_path / "shards", **options)
    with pytest.raises(ValueError, match=r"the pieces the set is shuffled in differ \(another piece size"):
        other.load_state_dict(state)


def test_piece_size_is_refused_where_it_does_not_apply(tmp_path, idx_set, image_set_folder):
    images_path, images, labels = idx_set
    with pytest.raises(ValueError, match=r"piece_size applies to Parquet sets of pixels, .* not to this set \(IDX file\)"):
        feeder.DataLoader(images_path, piece_size="1MiB")
    with pytest.raises(ValueError, match=r"not to this set \(image folder\)"):
        feeder.DataLoader(image_set_folder, image_size=8, piece_size="1MiB")
    with pytest.raises(ValueError, match="piece_size applies to a Parquet set of pixels given by its path"):
        feeder.DataLoader(images[:, None], labels=labels, piece_size="1MiB")
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=1000)
    for bad in (0, -1, 1.5, True, "lots"):
        with pytest.raises(ValueError, match="piece_size"):
            feeder.DataLoader(tmp_path / "shards", piece_size=bad)
