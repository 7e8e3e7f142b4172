"""feeder.DataLoader as a drop-in for torch.utils.data.DataLoader: torch's defaults, `.dataset`, the
keyword arguments that carry a meaning (honoured), the others (refused, naming what to use), a
directory of IDX files, a file without labels, and `transform=`."""

import os
import shutil

import numpy as np
import pytest
import torch

import feeder
from conftest import FASHION_MNIST, write_idx


def test_defaults_are_torchs_batch_of_one_in_the_datas_order(numbered):
    loader = feeder.DataLoader(numbered)
    torch_loader = torch.utils.data.DataLoader(list(range(1000)))
    assert len(loader) == len(torch_loader) == 1000
    assert [labels.item() for _, labels in loader][:5] == [0, 1, 2, 3, 4]  # no shuffle unless asked


def test_len_of_dataset_is_the_set_size_as_torchs(numbered):
    loader = feeder.DataLoader(numbered, batch_size=64)
    assert len(loader.dataset) == 1000
    assert loader.dataset.image_shape == (1, 6, 5)
    assert loader.dataset.labeled


def test_persistent_workers_and_prefetch_factor_are_accepted(numbered):
    loader = feeder.DataLoader(numbered, batch_size=100, num_workers=2, persistent_workers=True, prefetch_factor=3)
    assert loader.persistent_workers
    assert sorted(label for _, labels in loader for label in labels.tolist()) == list(range(1000))
    with pytest.raises(ValueError, match="not both"):
        feeder.DataLoader(numbered, prefetch=2, prefetch_factor=2)


def test_a_generator_gives_the_order_of_its_seed(numbered):
    by_seed = feeder.DataLoader(numbered, batch_size=100, shuffle=True, seed=7)
    by_generator = feeder.DataLoader(numbered, batch_size=100, shuffle=True, generator=torch.Generator().manual_seed(7))
    first = [labels.tolist() for _, labels in by_seed]
    assert first == [labels.tolist() for _, labels in by_generator]
    assert first != [labels.tolist() for _, labels in feeder.DataLoader(numbered, batch_size=100, shuffle=True, seed=8)]
    with pytest.raises(ValueError, match="not both"):
        feeder.DataLoader(numbered, seed=3, generator=torch.Generator())
    with pytest.raises(ValueError, match="not both"):  # the default's value given explicitly is still given
        feeder.DataLoader(numbered, seed=42, generator=torch.Generator())


@pytest.mark.parametrize("name,value,advice", [
    ("sampler", object(), "iterable of indices"),
    ("batch_sampler", object(), "no batch_size"),
    ("collate_fn", lambda batch: batch, "needs a torch Dataset"),
    ("worker_init_fn", lambda worker: None, "needs a torch Dataset"),
    ("multiprocessing_context", "spawn", "needs a torch Dataset"),
    ("timeout", 5, "needs a torch Dataset"),
    ("pin_memory_device", "cuda", "needs a torch Dataset"),
    ("in_order", False, "needs a torch Dataset"),
])
def test_torchs_process_arguments_with_a_set_feeder_reads_itself_are_refused(numbered, name, value, advice):
    # Arrays, paths and cached sets have no torch Dataset to run them with (torch's worker arguments
    # go with a torch Dataset, whose items torch's DataLoader then makes: test_torch_run.py).
    with pytest.raises(ValueError, match=f"{name}.*{advice}|{advice}"):
        feeder.DataLoader(numbered, **{name: value})


def test_an_unknown_argument_is_still_a_type_error(numbered):
    with pytest.raises(TypeError):
        feeder.DataLoader(numbered, no_such_argument=1)


def test_a_directory_of_idx_files_gives_its_train_or_test_split(tmp_path):
    rng = np.random.default_rng(0)
    train_images = rng.integers(0, 256, (30, 4, 4), dtype=np.uint8)
    test_images = rng.integers(0, 256, (12, 4, 4), dtype=np.uint8)
    write_idx(str(tmp_path / "train"), train_images, np.arange(30) % 10)
    write_idx(str(tmp_path / "t10k"), test_images, np.arange(12) % 10)
    train = feeder.DataLoader(tmp_path, batch_size=30)
    test = feeder.DataLoader(tmp_path, batch_size=12, train=False)
    assert len(train.dataset) == 30 and len(test.dataset) == 12
    images, labels = next(iter(test))
    assert labels.tolist() == (np.arange(12) % 10).tolist()
    assert torch.equal((images * 255).round().to(torch.uint8)[:, 0], torch.from_numpy(test_images))


def test_the_debian_fashion_mnist_directory_opens_as_torchvisions_train_and_test():
    if not os.path.isdir(FASHION_MNIST):
        pytest.skip("dataset-fashion-mnist is not installed")
    assert len(feeder.DataLoader(FASHION_MNIST, batch_size=512).dataset) == 60000
    assert len(feeder.DataLoader(FASHION_MNIST, batch_size=512, train=False).dataset) == 10000


def test_an_idx_file_without_its_labels_is_an_error_unless_allowed(tmp_path):
    images = np.zeros((5, 3, 3), dtype=np.uint8)
    path = write_idx(str(tmp_path / "train"), images, np.zeros(5))
    os.remove(tmp_path / "train-labels-idx1-ubyte.gz")
    with pytest.raises(feeder.DataError, match="no labels.*allow_unlabeled=True"):
        feeder.DataLoader(path)
    loader = feeder.DataLoader(path, batch_size=5, allow_unlabeled=True)
    assert next(iter(loader))[1].tolist() == [-1] * 5
    assert loader.dataset.targets is None


def test_transform_is_applied_to_every_batch(numbered):
    calls = []

    def transform(images, labels):
        calls.append(len(labels))
        return images * 2, labels + 1000

    loader = feeder.DataLoader(numbered, batch_size=300, transform=transform)
    batches = list(loader)
    assert calls == [300, 300, 300, 100]
    assert batches[0][1][:3].tolist() == [1000, 1001, 1002]
    assert float(batches[0][0][1].max()) == pytest.approx(2 * 1 / 255)
    with pytest.raises(ValueError, match="callable"):
        feeder.DataLoader(numbered, transform="flip")


def test_ctrl_c_while_next_waits_raises_keyboard_interrupt_before_the_batch_is_done():
    import signal
    import threading
    import time

    images = np.ones((60_000, 1, 28, 28), dtype=np.uint8)  # one batch: 188 MB of float32 to write
    loader = feeder.DataLoader(images, batch_size=60_000, num_workers=1, prefetch=1, allow_unlabeled=True)
    start = time.perf_counter()
    for _ in loader:
        pass
    whole_batch = time.perf_counter() - start
    timer = threading.Timer(0.01, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        timer.start()
        for _ in loader:
            pass
    interrupted = time.perf_counter() - start
    timer.join()
    # Before: the interrupt waited for the batch (interrupted >= whole_batch).
    print(f"whole batch {whole_batch:.3f} s, interrupted after {interrupted:.3f} s")
    assert interrupted < whole_batch / 2, (interrupted, whole_batch)


def test_each_batch_says_how_many_of_its_rows_pad_the_epoch_for_ranks(numbered):
    counted = []
    for rank in range(3):
        loader = feeder.DataLoader(numbered, batch_size=64, shuffle=True, rank=rank, world_size=3)
        for batch in loader:
            images, labels = batch  # still unpacks as a pair
            assert isinstance(batch, feeder.Batch) and 0 <= batch.num_padding <= len(labels)
            counted += labels[:len(labels) - batch.num_padding].tolist()
    # 1000 samples over 3 ranks: 2 padding rows; without them every sample is counted exactly once
    assert sorted(counted) == list(range(1000))
