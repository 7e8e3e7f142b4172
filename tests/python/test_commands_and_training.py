"""feeder.convert and feeder.inspect as the command line has them, and training steps on feeder's batches."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import feeder

from conftest import FASHION_MNIST


def test_convert_writes_what_inspect_describes(tmp_path, idx_set, capsys):
    images_path, _, _ = idx_set
    returned = feeder.convert(images_path, tmp_path / "set.parquet", codec="snappy", layout="image", row_group_size=500)
    # The report comes through sys.stdout (where a notebook looks), not straight to descriptor 1.
    printed = capsys.readouterr().out
    assert "| small-images-idx3-ubyte.gz | set.parquet | parquet image SNAPPY | 2000 | 1x28x28 |" in printed
    assert printed == returned
    report = feeder.inspect(tmp_path / "set.parquet")
    assert "rows: 2000, row groups: 4" in report
    assert "SNAPPY" in report
    feeder.convert(images_path, str(tmp_path / "shards") + "/", shard_rows=600)
    summary = feeder.inspect(tmp_path / "shards")
    assert "shards: 4, rows: 2000" in summary and "(indexed by index.json)" in summary
    assert sorted(os.listdir(tmp_path / "shards")) == ["index.json"] + [f"part-0000{i}.parquet" for i in range(4)]


def test_ctrl_c_stops_convert_which_removes_what_it_wrote(tmp_path):
    # Ctrl-C (SIGINT) while feeder.convert runs: KeyboardInterrupt within seconds, and nothing left of
    # the output. Before, the conversion ran to its end and only then raised.
    script = tmp_path / "convert.py"
    out = tmp_path / "shards"
    script.write_text(
        "import sys, time, feeder\n"
        "print('started', flush=True)\n"
        "start = time.monotonic()\n"
        "try:\n"
        f"    feeder.convert({FASHION_MNIST + '/train-images-idx3-ubyte.gz'!r}, {str(out) + '/'!r},\n"
        "                   shard_rows=500, codec='zstd', level=19)\n"
        "    print('finished', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print(f'interrupted after {time.monotonic() - start:.1f} s', flush=True)\n")
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "started\n"
        deadline = time.monotonic() + 60
        while not (out / "part-00001.parquet").exists():
            assert process.poll() is None, "the conversion ended before it was interrupted"
            assert time.monotonic() < deadline, "no second shard after 60 s"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert output.startswith("interrupted after"), output
    assert not out.exists(), sorted(os.listdir(out))


def test_convert_and_inspect_errors_are_the_commands(tmp_path, idx_set):
    images_path, _, _ = idx_set
    with pytest.raises(ValueError, match="--codec"):
        feeder.convert(images_path, tmp_path / "out.parquet", codec="rar")
    with pytest.raises(ValueError, match="cannot tell the output format of"):
        feeder.convert(images_path, tmp_path / "out.txt")
    with pytest.raises(ValueError, match=r"shape must be \(C, H, W\)"):
        feeder.convert(images_path, tmp_path / "out.parquet", shape=(28, 28))
    with pytest.raises(feeder.DataError, match="absent.csv: no such file"):
        feeder.convert(tmp_path / "absent.csv", tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(feeder.DataError, match="junk.parquet"):
        feeder.inspect(tmp_path / "junk.parquet")


def test_recommended_environment_is_what_feeder_train_sets():
    environment = feeder.recommended_environment(3)
    assert environment == {"OMP_NUM_THREADS": "3", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                           "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
    default = feeder.recommended_environment()  # keeps a set OMP_NUM_THREADS, else one per usable CPU
    if "OMP_NUM_THREADS" in os.environ:
        assert "OMP_NUM_THREADS" not in default
    else:
        assert default["OMP_NUM_THREADS"] == str(len(os.sched_getaffinity(0)))
    with pytest.raises(ValueError, match="threads"):
        feeder.recommended_environment(-1)


class SimpleCNN(nn.Module):
    """The article's model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def test_training_steps_on_fashion_mnist_lower_the_loss():
    torch.manual_seed(0)
    train = feeder.DataLoader(os.path.join(FASHION_MNIST, "train-images-idx3-ubyte.gz"), batch_size=256, shuffle=True,
                              num_workers=2, layout="nhwc")
    model = SimpleCNN().to(memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step, (images, labels) in enumerate(train):
        assert images.shape == (256, 1, 28, 28) and labels.min() >= 0 and labels.max() <= 9
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step == 39:
            break
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])
    test = feeder.DataLoader(os.path.join(FASHION_MNIST, "t10k-images-idx3-ubyte.gz"), batch_size=1000,
                             shuffle=False)
    with torch.no_grad():
        correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test)
    assert correct / test.num_samples > 0.6  # 40 steps: far above chance (0.1)
