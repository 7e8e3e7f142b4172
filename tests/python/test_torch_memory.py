"""The large CPU tensors a loader's Python part makes (a transform's tail, a collate_fn) are reused when
freed (feeder/torch_memory.py, python/torch_memory.cpp): the same values, no pages faulted in afresh
for every batch, nothing changed outside that part, and nothing kept once the loader is gone."""

import gc
import os
import subprocess
import sys

import torch
import torchvision
from torchvision import transforms as T

import feeder
from feeder import torch_memory

# 3x64x64 floats a sample: a batch of 10 is 480 KiB, above the 128 KiB where reuse starts.
_SCRIPT = """
import sys, torch, torchvision, warnings
from torchvision import transforms as T
import feeder
from feeder import torch_memory
warnings.simplefilter("ignore")
dataset = torchvision.datasets.ImageFolder(sys.argv[1], T.Compose([T.RandomResizedCrop(64), T.ToTensor()]))
def mix(samples):  # as the classification reference's RandomMixup: a new stack, a rolled copy, in place
    images, labels = torch.utils.data.default_collate(samples)
    share = float(torch.rand(()))
    return images.mul_(share).add_(images.roll(1, 0), alpha=1 - share), labels
for epoch in range(2):
    for images, labels in feeder.DataLoader(dataset, batch_size=10, seed=4, collate_fn=mix, num_workers=0):
        print(images.double().sum().item(), labels.tolist())
stats = torch_memory.stats()
print("reused", None if stats is None else stats["reused"])
"""


def _run(folder, reuse):
    env = dict(os.environ, FEEDER_REUSE_TORCH_MEMORY="1" if reuse else "0")
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(folder)], capture_output=True, text=True, env=env,
                          timeout=120, check=True).stdout.splitlines()


def test_a_collates_tensors_are_reused_with_the_same_values(image_set_folder):
    reused, plain = _run(image_set_folder, True), _run(image_set_folder, False)
    assert plain[-1] == "reused None"  # off: every tensor as torch makes it
    assert int(reused[-1].split()[1]) >= 4  # 6 batches, each a stack and a roll: most from blocks freed before
    assert reused[:-1] == plain[:-1] and len(plain) == 7  # the same batches, bit for bit


def _mix(samples):
    images, labels = torch.utils.data.default_collate(samples)
    return images + images.roll(1, 0), labels


def test_only_the_python_part_uses_the_cache_and_it_empties_when_the_loader_goes(image_set_folder):
    assert torch_memory.stats() is not None  # built with LibTorch, as the tests are
    dataset = torchvision.datasets.ImageFolder(image_set_folder, T.Compose([T.Resize((64, 64)), T.ToTensor()]))
    loader = feeder.DataLoader(dataset, batch_size=10, collate_fn=_mix, num_workers=0)
    live = torch_memory.stats()["live_blocks"]
    kept, _ = next(iter(loader))  # the script keeps a batch made in the Python part
    expected = kept.clone()  # made outside it: torch's own allocator
    assert torch_memory.stats()["live_blocks"] == live + 1
    outside = torch.empty(1 << 20)  # 4 MiB on this thread, outside the Python part
    assert torch_memory.stats()["live_blocks"] == live + 1
    del outside
    for batch in loader:
        del batch
    stats = torch_memory.stats()
    assert stats["holders"] >= 1 and stats["idle_bytes"] > 0 and stats["reused"] > 0
    del loader
    gc.collect()
    stats = torch_memory.stats()
    assert stats["holders"] == 0 and stats["idle_bytes"] == 0 and stats["idle_blocks"] == 0
    assert torch.equal(kept, expected)  # a batch still held is untouched
    del kept
    assert torch_memory.stats()["live_blocks"] == live  # unmapped once dropped: nothing kept


def test_a_forked_child_frees_and_makes_blocks_of_the_cache(image_set_folder):
    # The Python part in forked processes (python_workers): the cache's lock and blocks in the child.
    dataset = torchvision.datasets.ImageFolder(image_set_folder, T.Compose([T.Resize((64, 64)), T.ToTensor()]))
    runs = []
    for workers in (2, 0):
        loader = feeder.DataLoader(dataset, batch_size=10, collate_fn=_mix, python_workers=workers, seed=2)
        runs.append([images.sum().item() for images, _ in loader])
        runs[-1] += [images.sum().item() for images, _ in loader]
    assert runs[0] == runs[1] and len(runs[0]) == 6
