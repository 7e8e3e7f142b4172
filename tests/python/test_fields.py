"""feeder.DataLoader(path, fields=[...]): columns of a Parquet table besides the image and the label
(a per-sample weight) in every batch, as a dict of tensors as torch's default_collate gives for dict
samples, in memory and streamed alike; the table is DuckDB's (tests/compat/make_field_fixture.mjs,
described in tests/data/parquet-testing/INDEX.md)."""

import os
import pathlib

import pytest
import torch

import feeder

# tests/compat/run.sh points FEEDER_FIELD_TABLE at the table DuckDB has just written the same way.
TABLE = pathlib.Path(os.environ.get("FEEDER_FIELD_TABLE") or (
    pathlib.Path(__file__).resolve().parents[1] / "data" / "parquet-testing" / "generated" / "duckdb-1.5.6"
    / "duckdb_fields.parquet"))
ROWS = 3000
COPIES = 12  # of the table, as the shards of one set: large enough to stream within a budget


def copies_of(table, directory):
    """The table COPIES times, as the shards of one set in `directory`."""
    for k in range(COPIES):
        (directory / f"part-{k:02d}.parquet").write_bytes(table.read_bytes())
    return directory


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return copies_of(TABLE, tmp_path_factory.mktemp("fields"))


def rows_of(images):
    # p0 = i % 256 and p1 = i / 256 name each row (uint8 pixels as stored).
    flat = images.reshape(images.shape[0], -1).to(torch.int64)
    return flat[:, 0] + 256 * flat[:, 1]


def check_epoch(loader):
    seen = []
    for batch in loader:
        assert isinstance(batch, feeder.FieldBatch) and isinstance(batch, dict)
        assert list(batch) == ["image", "label", "weight", "score", "count"]
        assert batch["weight"].dtype == torch.float32
        assert batch["score"].dtype == torch.float64
        assert batch["count"].dtype == torch.int64
        rows = rows_of(batch["image"])
        assert torch.equal(batch["weight"], (rows % 9).to(torch.float32) * 0.25 + 0.5)
        assert torch.equal(batch["score"], 1.0 / (rows + 3).to(torch.float64))
        assert torch.equal(batch["count"], rows * 7 - 5000)
        assert torch.equal(batch["label"], rows % 10)
        assert batch.num_padding == 0
        seen.append(rows)
    return torch.cat(seen)


@pytest.mark.parametrize("memory_budget", [None, 1 << 20], ids=["in_memory", "streamed"])
def test_every_batch_carries_the_tables_fields(memory_budget, shards):
    loader = feeder.DataLoader(str(shards), batch_size=64, shuffle=True, seed=5, num_workers=2, dtype=torch.uint8,
                               fields=["weight", "score", "count"], memory_budget=memory_budget)
    assert loader.streaming == (memory_budget is not None)
    first = check_epoch(loader)
    assert sorted(first.tolist()) == sorted(list(range(ROWS)) * COPIES)
    assert first.tolist() != sorted(first.tolist())  # shuffled
    assert check_epoch(loader).tolist() != first.tolist()  # the next epoch, shuffled anew


def test_in_memory_and_streamed_give_the_same_batches_for_any_workers(shards):
    runs = []
    for budget, workers in ((None, 0), (1 << 20, 1), (1 << 20, 3)):
        loader = feeder.DataLoader(str(shards), batch_size=50, shuffle=True, seed=9, shuffle_window=2048,
                                   num_workers=workers, fields=["weight", "score", "count"], memory_budget=budget)
        assert loader.streaming == (budget is not None)
        runs.append([(batch["label"].clone(), batch["weight"].clone()) for batch in loader])
    for run in runs[1:]:
        assert len(run) == len(runs[0])
        for (labels, weights), (expected_labels, expected_weights) in zip(run, runs[0]):
            assert torch.equal(labels, expected_labels) and torch.equal(weights, expected_weights)


def test_a_weighted_loss_trains_from_the_batches():
    # What the weight is for: a per-sample weight of the loss, straight from the batch.
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = feeder.DataLoader(str(TABLE), batch_size=100, shuffle=True, fields=["weight", "score", "count"])
    for batch in loader:
        losses = torch.nn.functional.cross_entropy(model(batch["image"].flatten(1)), batch["label"], reduction="none")
        loss = (losses * batch["weight"]).sum() / batch["weight"].sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss)


def test_a_sample_of_the_dataset_is_a_dict():
    fields = ["weight", "score", "count"]
    loader = feeder.DataLoader(str(TABLE), batch_size=8, fields=fields, dtype=torch.uint8)
    sample = loader.dataset[10]
    assert list(sample) == ["image", "label", "weight", "score", "count"]
    assert sample["label"] == 0 and sample["weight"].item() == 0.75 and sample["count"].item() == -4930
    # default_collate of such samples is the loader's batch.
    collated = torch.utils.data.default_collate([loader.dataset[i] for i in range(8)])
    batch = next(iter(feeder.DataLoader(str(TABLE), batch_size=8, fields=fields, dtype=torch.uint8)))
    for key in ("image", "label", *fields):
        assert collated[key].dtype == batch[key].dtype
        assert torch.equal(collated[key], batch[key])


def test_without_fields_every_number_column_is_a_pixel_as_before():
    # Without fields=, the table's 16 pixel columns and its weight, score and count are 19 pixel
    # columns, as before fields existed: refused, naming the file, not read as something else.
    with pytest.raises(feeder.DataError, match=r"duckdb_fields\.parquet: 19 pixels per image is not a square; .*"
                                                r"or name the columns that are not pixels as fields \(every number "
                                                r"column besides the label was taken for a pixel: 'p0', 'p1', \.\.\., "
                                                r"'weight', 'score', 'count'\)"):
        feeder.DataLoader(str(TABLE), batch_size=64)


def test_errors_name_the_column_and_the_source():
    with pytest.raises(feeder.DataError, match=r"duckdb_fields\.parquet: no column named 'wieght' to read as a field "
                                                r"\(its columns: 'label', 'p0'"):
        feeder.DataLoader(str(TABLE), fields=["wieght"])
    with pytest.raises(ValueError, match="fields must be a list of column names"):
        feeder.DataLoader(str(TABLE), fields="weight")
    with pytest.raises(ValueError, match="fields= names columns of a Parquet set given by its path"):
        feeder.DataLoader(torch.zeros(4, 1, 2, 2, dtype=torch.uint8), labels=torch.zeros(4, dtype=torch.int64),
                          fields=["weight"])


def test_an_encoded_set_carries_its_fields_beside_the_decoded_images():
    # DuckDB's weighted.parquet (tests/data/images/README.md): PNG files, a label, and a weight of
    # r * 0.5 + 1 for row r, streamed as encoded sets are and decoded by the image stage.
    weighted = pathlib.Path(__file__).resolve().parents[1] / "data" / "images" / "weighted.parquet"
    in_order = feeder.DataLoader(str(weighted), batch_size=7, image_size=16, fields=["weight"], num_workers=2)
    batches = list(in_order)
    assert all(isinstance(batch, feeder.FieldBatch) for batch in batches)
    assert batches[0]["image"].shape == (7, 3, 16, 16)
    weights = torch.cat([batch["weight"] for batch in batches])
    assert torch.equal(weights, torch.arange(30, dtype=torch.float32) * 0.5 + 1)
    assert torch.equal(torch.cat([batch["label"] for batch in batches]), torch.arange(30) // 10)
    # Shuffled, each image keeps its weight: the same pairs as in order.
    shuffled = feeder.DataLoader(str(weighted), batch_size=7, image_size=16, fields=["weight"], shuffle=True, seed=3)
    pairs = {}
    for batch in batches:
        for image, weight in zip(batch["image"], batch["weight"]):
            pairs[weight.item()] = image
    seen = []
    for batch in shuffled:
        for image, weight in zip(batch["image"], batch["weight"]):
            assert torch.equal(image, pairs[weight.item()])
            seen.append(weight.item())
    assert sorted(seen) == sorted(pairs) and seen != sorted(seen)


ARRAYS = TABLE.parent / "duckdb_arrays.parquet"  # DuckDB's FLOAT[4] and INTEGER[3] (Parquet LISTs)


@pytest.fixture(scope="module")
def array_shards(tmp_path_factory):
    return copies_of(ARRAYS, tmp_path_factory.mktemp("arrays"))


def batches_of(shards, fields, memory_budget):
    """Each batch of an epoch over `shards` with `fields`, in memory or streamed, and its rows."""
    loader = feeder.DataLoader(str(shards), batch_size=50, shuffle=True, seed=2, num_workers=2, dtype=torch.uint8,
                               fields=fields, memory_budget=memory_budget)
    assert loader.streaming == (memory_budget is not None)
    for batch in loader:
        yield batch, rows_of(batch["image"])


@pytest.mark.parametrize("memory_budget", [None, 1 << 20], ids=["in_memory", "streamed"])
def test_arrays_are_fields_of_their_shape(memory_budget, array_shards):
    seen = []
    for batch, rows in batches_of(array_shards, ["embedding", "ids"], memory_budget):
        assert batch["embedding"].shape == (len(rows), 4) and batch["embedding"].dtype == torch.float32
        assert batch["ids"].shape == (len(rows), 3) and batch["ids"].dtype == torch.int64
        r = rows.to(torch.float32)
        expected = torch.stack([r / 2, r / 2 + 1, -r, (rows % 7).to(torch.float32)], dim=1)
        assert torch.equal(batch["embedding"], expected)
        assert torch.equal(batch["ids"], rows[:, None] + torch.arange(3))
        seen.append(rows)
    assert sorted(torch.cat(seen).tolist()) == sorted(list(range(ROWS)) * COPIES)


def test_a_sample_with_an_array_collates_to_the_batch():
    fields = ["embedding", "ids"]
    loader = feeder.DataLoader(str(ARRAYS), batch_size=8, fields=fields, dtype=torch.uint8)
    sample = loader.dataset[5]
    assert sample["embedding"].tolist() == [2.5, 3.5, -5.0, 5.0] and sample["ids"].tolist() == [5, 6, 7]
    collated = torch.utils.data.default_collate([loader.dataset[i] for i in range(8)])
    batch = next(iter(loader))
    for key in ("image", "label", *fields):
        assert collated[key].dtype == batch[key].dtype
        assert torch.equal(collated[key], batch[key])


def tokens_of(row):
    """The fixture's `tokens` of a row: row, ..., row + row % 5 - 1 (none when row % 5 is 0)."""
    return list(range(row, row + row % 5))


# Streamed, a piece counts its whole row group's sequence values against the budget: more room.
@pytest.mark.parametrize("memory_budget", [None, 2 << 20], ids=["in_memory", "streamed"])
def test_a_list_of_varying_length_is_a_list_of_tensors(memory_budget, array_shards):
    seen = []
    for batch, rows in batches_of(array_shards, ["ids", "tokens"], memory_budget):
        tokens = batch["tokens"]
        assert isinstance(tokens, list) and len(tokens) == len(rows)
        for row, values in zip(rows.tolist(), tokens):
            assert values.dtype == torch.int64 and values.dim() == 1
            assert values.tolist() == tokens_of(row)
        seen.append(rows)
    assert sorted(torch.cat(seen).tolist()) == sorted(list(range(ROWS)) * COPIES)


def test_a_sample_with_a_sequence_is_its_tensor():
    loader = feeder.DataLoader(str(ARRAYS), batch_size=8, fields=["tokens"], dtype=torch.uint8)
    assert loader.dataset[7]["tokens"].tolist() == [7, 8]
    assert loader.dataset[5]["tokens"].tolist() == []  # an empty list: a sample of no values
    batch = next(iter(loader))
    samples = [loader.dataset[i] for i in range(8)]
    # What a collate_fn keeping the sequences as a list makes of the same samples.
    assert [t.tolist() for t in batch["tokens"]] == [s["tokens"].tolist() for s in samples]


def test_a_null_in_a_sequence_is_refused_by_name():
    with pytest.raises(feeder.DataError, match=r"duckdb_sequences_null\.parquet: column 'null_list\.list\.element' "
                                                r"row 41: null list"):
        feeder.DataLoader(str(TABLE.parent / "duckdb_sequences_null.parquet"), fields=["null_list"])
