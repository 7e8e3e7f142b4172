"""A process that forks with feeder's loaders in it: torch's DataLoader forks its workers while a
feeder loader is alive, or dropped and not yet freed. Nothing of feeder's is touched by the child:
a loader freed there leaves its threads and locks alone, one used there says so, a loader made
there works, and a dropped loader is freed at once (no reference cycle waiting for a collection
that could run in the child). Each scenario runs in a process of its own, bounded in time: a hang
fails the test instead of the suite."""

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import pytest
import torch

import feeder

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run(script, *args, seconds=60):
    """Runs `script` in a new Python; its output, or a failure naming a hang or a crash."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], capture_output=True,
                              text=True, timeout=seconds, cwd=_HERE)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"hung for {seconds} s; output so far: {error.stdout!r} {error.stderr!r}")
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout}\n{done.stderr}"
    return done.stdout


_PRELUDE = """
    import gc, os, sys
    import torch, torchvision
    import feeder
    from torchvision import transforms as T

    def collect(_):  # in every worker torch forks: what the child's garbage collector may do anyway
        gc.collect()

    dataset = torchvision.datasets.ImageFolder(
        sys.argv[1], T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.ToTensor()]))

    def torch_epoch():
        loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=2, worker_init_fn=collect)
        assert sum(len(y) for _, y in loader) == len(dataset)

    def feeder_epoch():
        loader = feeder.DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
        assert sum(len(y) for _, y in loader) == len(dataset)
"""


def test_torchs_workers_fork_after_a_feeder_loader_was_dropped(image_set_folder):
    # The reported sequence (feeder, then torch's workers) and torch, feeder, torch, three times.
    out = _run(_PRELUDE + """
    for _ in range(3):
        feeder_epoch()
        torch_epoch()
    torch_epoch()
    feeder_epoch()
    torch_epoch()
    print("done")
    """, image_set_folder)
    assert out.strip() == "done"


def test_torchs_workers_fork_while_a_feeder_loader_is_mid_epoch(image_set_folder):
    out = _run(_PRELUDE + """
    alive = feeder.DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, prefetch=2)
    batches = iter(alive)
    next(batches)  # its workers are busy assembling the next batches
    torch_epoch()
    assert sum(len(y) for _, y in batches) == len(dataset) - 4
    print("done")
    """, image_set_folder)
    assert out.strip() == "done"


def test_a_forked_child_that_frees_a_loader_leaves_its_threads_alone(image_set_folder):
    # The child drops the loader it inherited mid-epoch, with its sources and batches, and collects.
    out = _run(_PRELUDE + """
    alive = feeder.DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, prefetch=2)
    batches = iter(alive)
    images, labels = next(batches)
    view = feeder.DataLoader(sys.argv[1], image_size=16, batch_size=4, num_workers=2).dataset
    pid = os.fork()
    if pid == 0:
        del batches, alive, images, labels, view
        gc.collect()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    """, image_set_folder, seconds=30)
    assert out.strip() == "0"


def test_a_loader_used_in_a_forked_child_says_it_was_made_in_the_parent(image_set_folder):
    out = _run(_PRELUDE + """
    alive = feeder.DataLoader(dataset, batch_size=4, num_workers=2)
    next(iter(alive))
    pid = os.fork()
    if pid == 0:
        try:
            next(iter(alive))
        except RuntimeError as error:
            os._exit(0 if "forked" in str(error) and "make the DataLoader in this process" in str(error) else 3)
        os._exit(4)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    """, image_set_folder, seconds=30)
    assert out.strip() == "0"


def test_a_loader_made_in_a_forked_child_works(image_set_folder):
    # In a child forked while the parent's loader runs, and in torch's worker processes.
    out = _run(_PRELUDE + """
    alive = feeder.DataLoader(dataset, batch_size=4, num_workers=2)
    next(iter(alive))
    pid = os.fork()
    if pid == 0:
        own = feeder.DataLoader(dataset, batch_size=4, num_workers=2)
        os._exit(0 if sum(len(y) for _, y in own) == len(dataset) else 3)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))

    class FeederInWorker(torch.utils.data.Dataset):  # each item an epoch of a feeder loader
        def __len__(self):
            return 2
        def __getitem__(self, i):
            return sum(len(y) for _, y in feeder.DataLoader(dataset, batch_size=4, num_workers=1))

    counts = torch.utils.data.DataLoader(FeederInWorker(), batch_size=None, num_workers=2)
    print([int(c) for c in counts])
    """, image_set_folder, seconds=60)
    assert out.split() == ["0", "[30,", "30]"]


def test_a_dropped_loader_is_freed_at_once(image_set_folder):
    # No cycle keeps it (and its threads) until a collection, even after its dataset was used.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for source in (image_set_folder, torch.zeros(10, 1, 4, 4, dtype=torch.uint8)):
            loader = feeder.DataLoader(source, image_size=8, batch_size=2, num_workers=2) if source is image_set_folder \
                else feeder.DataLoader((source, torch.arange(10)), batch_size=2, num_workers=2)
            next(iter(loader))
            loader.dataset[0]
            len(loader.sampler)
            dropped = weakref.ref(loader)
            del loader
            assert dropped() is None
    finally:
        if was_enabled:
            gc.enable()
