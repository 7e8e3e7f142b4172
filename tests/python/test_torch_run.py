"""What feeder cannot translate runs as torch's DataLoader runs it (feeder/torch_run.py): a Dataset of
the script's own, a transform feeder has no C++ form of, a collate_fn, a worker_init_fn. torch's
DataLoader makes the items in its worker processes; feeder keeps the order, ranks, set_epoch and
state_dict; one PlanWarning says so; ``loader.plan`` tells."""

import os
import warnings

import pytest
import torch
import torchvision
from torchvision import transforms as T

import feeder
from feeder import _feeder


class Numbers(torch.utils.data.Dataset):
    """Item i: a (2,) float tensor [i, i / 2] and the label i; made by the script's own __getitem__."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return torch.tensor([index, index / 2]), index


class WorkerPids(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return os.getpid(), getattr(torch.utils.data.get_worker_info(), "id", -1)


def _made(*args, **kwargs):
    with pytest.warns(feeder.PlanWarning) as said:
        loader = feeder.DataLoader(*args, **kwargs)
    said = [warning for warning in said if issubclass(warning.category, feeder.PlanWarning)]
    assert len(said) == 1  # one a loader
    return loader, str(said[0].message)


def _labels(loader):
    return [label for _, labels in loader for label in labels.tolist()]


def test_a_scripts_own_dataset_runs_in_torchs_workers_in_feeders_order():
    loader, said = _made(Numbers(50), batch_size=8, shuffle=True, seed=3, num_workers=2)
    assert "__getitem__" in said and "2 worker processes" in said and loader.plan in said
    assert _labels(loader) == list(_feeder.epoch_order(50, True, 3, 0))  # the C++ loader's order of (seed, epoch)
    assert _labels(loader) == list(_feeder.epoch_order(50, True, 3, 1))  # the next pass: the next epoch
    loader.set_epoch(7)
    assert _labels(loader) == list(_feeder.epoch_order(50, True, 3, 7))
    images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and images.shape == (8, 2) and torch.equal(images[:, 0], labels.float())
    assert len(loader) == 7 and loader.dataset.size == 50


def test_the_workers_are_torchs_processes_with_its_hooks():
    seen = []
    loader, _ = _made(WorkerPids(), batch_size=2, num_workers=2, worker_init_fn=lambda worker: None)
    for pids, workers in loader:
        seen += list(zip(pids.tolist(), workers.tolist()))
    assert {worker for _, worker in seen} == {0, 1}
    assert os.getpid() not in {pid for pid, _ in seen}


def test_ranks_share_the_epoch_as_feeders_own_loader_does():
    images = torch.zeros(23, 1, 2, 2, dtype=torch.uint8)
    for rank in range(3):
        expected = _labels(feeder.DataLoader((images, torch.arange(23)), batch_size=4, shuffle=True, seed=5,
                                             rank=rank, world_size=3))
        loader, _ = _made(Numbers(23), batch_size=4, shuffle=True, seed=5, rank=rank, world_size=3, num_workers=1)
        batches = list(loader)
        assert [label for _, labels in batches for label in labels.tolist()] == expected
        assert sum(batch.num_padding for batch in batches) == (1 if rank == 2 else 0)


def test_state_dict_resumes_with_exactly_the_rest_of_the_epoch():
    loader, _ = _made(Numbers(40), batch_size=6, shuffle=True, seed=9, num_workers=2)
    whole = _labels(loader)
    loader.set_epoch(0)
    batches = iter(loader)
    head = [label for _ in range(3) for label in next(batches)[1].tolist()]
    state = loader.state_dict()
    resumed, _ = _made(Numbers(40), batch_size=6, shuffle=True, seed=9, num_workers=1)
    resumed.load_state_dict(state)
    assert head + _labels(resumed) == whole
    assert resumed.next_epoch == 1
    with pytest.raises(ValueError, match="made its items itself"):
        resumed.load_state_dict({**state, "torch_run": False})


def soft_targets(samples):
    """A mixup-style collate: images, one-hot targets, and a draw from torch's generator."""
    assert all(type(label) is int for _, label in samples)
    images, labels = torch.utils.data.default_collate(samples)
    return images, torch.nn.functional.one_hot(labels, 3).float(), torch.rand(())


def test_a_collate_fn_gets_the_samples_as_torch_gives_them(image_set_folder):
    dataset = torchvision.datasets.ImageFolder(image_set_folder, T.Compose([T.Resize((8, 8)), T.ToTensor()]))
    # The images made in C++ (a torchvision dataset feeder reads), the collate in worker processes.
    runs = []
    for workers in (2, 0):
        loader, said = _made(dataset, batch_size=10, collate_fn=soft_targets, python_workers=workers, seed=6)
        assert loader.collate_fn is soft_targets and "C++" in loader.plan and "soft_targets" in said
        assert ("2 worker processes" if workers else "the thread that iterates") in said
        before = torch.get_rng_state()
        runs.append(list(loader))
        assert torch.equal(torch.get_rng_state(), before)  # the script's generator untouched
    assert [type(batch) for batch in runs[0]] == [tuple] * 3
    expected = list(torch.utils.data.DataLoader(dataset, batch_size=10, collate_fn=soft_targets))
    for (images, targets, _), (torch_images, torch_targets, _) in zip(runs[0], expected):
        assert (images - torch_images).abs().max() <= 1 / 255 + 1e-6 and torch.equal(targets, torch_targets)
    # Its draws a function of (seed, epoch, batch), not of the workers or the process.
    assert [float(draw) for *_, draw in runs[0]] == [float(draw) for *_, draw in runs[1]]
    # With a dataset torch's DataLoader runs, the collate runs in its workers.
    loader, said = _made(Numbers(20), batch_size=10, collate_fn=soft_targets_of_numbers, num_workers=2)
    assert "soft_targets_of_numbers" in said
    assert [type(batch) for batch in loader] == [tuple] * 2


def soft_targets_of_numbers(samples):
    values, labels = torch.utils.data.default_collate(samples)
    return values, torch.nn.functional.one_hot(labels, 20).float()


def test_a_transform_split_runs_the_crop_in_cpp_and_the_rest_per_sample(image_set_folder):
    transform = T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.TrivialAugmentWide(), T.PILToTensor(),
                           T.ConvertImageDtype(torch.float), T.Normalize((0.5,) * 3, (0.25,) * 3),
                           T.RandomErasing(p=0.5)])
    dataset = torchvision.datasets.ImageFolder(image_set_folder, transform)
    runs = []
    for workers in (0, 2):
        loader, said = _made(dataset, batch_size=15, shuffle=True, seed=3, num_workers=workers,
                             python_workers=workers)
        assert "TrivialAugmentWide, PILToTensor, ConvertImageDtype, Normalize, RandomErasing" in said
        assert "C++" in loader.plan
        runs.append([(images.clone(), labels) for images, labels in loader])
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(*runs))
    images = torch.cat([batch[0] for batch in runs[0]])
    assert images.shape == (30, 3, 16, 16) and images.dtype == torch.float32
    # RandomErasing per sample, as torch's: some images with an erased box (zeros after Normalize), some not.
    erased = [bool((image == 0).all(0).any()) for image in images]
    assert 0 < sum(erased) < 30
    again = torch.cat([x for x, _ in loader])  # the next epoch: new crops and draws
    assert not torch.equal(again, torch.cat([batch[0] for batch in runs[1]]))


def test_a_transform_without_a_cpp_form_runs_as_torchvision_runs_it(image_set_folder):
    transform = T.Compose([T.RandomResizedCrop(16), T.ColorJitter(0.4, 0.4), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.RandomErasing(p=0.5)])
    dataset = torchvision.datasets.ImageFolder(image_set_folder, transform)
    loader, said = _made(dataset, batch_size=30, seed=1, num_workers=2)
    assert "ColorJitter" in said
    images, labels = next(iter(loader))
    assert images.shape == (30, 3, 16, 16) and labels.tolist() == dataset.targets
    again, _ = next(iter(loader))
    assert not torch.equal(images, again)  # a new pass, new draws


def test_a_preset_class_wrapping_its_compose_is_translated(image_set_folder):
    class Preset:  # as torchvision's reference scripts write their presets
        def __init__(self):
            self.transforms = T.Compose([T.RandomResizedCrop(12), T.RandomHorizontalFlip(), T.PILToTensor(),
                                         T.ConvertImageDtype(torch.float), T.Normalize((0.5,) * 3, (0.2,) * 3)])

        def __call__(self, img):
            return self.transforms(img)

    class Doing(Preset):  # one that does more than apply it is not read: torch runs it
        def __call__(self, img):
            return self.transforms(img) * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", feeder.PlanWarning)
        wrapped = feeder.DataLoader(torchvision.datasets.ImageFolder(image_set_folder, Preset()), batch_size=30,
                                    seed=4)
    plain = feeder.DataLoader(torchvision.datasets.ImageFolder(image_set_folder, Preset().transforms), batch_size=30,
                              seed=4)
    assert torch.equal(next(iter(wrapped))[0], next(iter(plain))[0])
    assert "C++" in wrapped.plan
    _, said = _made(torchvision.datasets.ImageFolder(image_set_folder, Doing()), batch_size=30)
    assert "Doing" in said


def test_feeder_options_of_its_own_sets_are_refused_with_a_torch_dataset():
    with pytest.raises(ValueError, match="image_size= applies to sets feeder reads itself"):
        feeder.DataLoader(Numbers(10), image_size=8)


def test_a_pass_whose_python_part_runs_in_workers_resumes_exactly(image_set_folder):
    # The C++ loader runs ahead of the batches the workers hand back: a state says where the script is.
    transform = T.Compose([T.RandomResizedCrop(12), T.TrivialAugmentWide(), T.ToTensor()])
    dataset = torchvision.datasets.ImageFolder(image_set_folder, transform)
    loader, _ = _made(dataset, batch_size=4, shuffle=True, seed=2, num_workers=2, python_workers=2)
    whole = [(x.clone(), y) for x, y in loader]
    loader.set_epoch(0)
    batches = iter(loader)
    head = [next(batches) for _ in range(2)]
    state = loader.state_dict()
    assert state["loader_state"]["batches_delivered"] == 2
    resumed, _ = _made(dataset, batch_size=4, shuffle=True, seed=2, num_workers=1, python_workers=1)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(head) + len(rest) == len(whole)
    for (x, y), (wx, wy) in zip(head + rest, whole):
        assert torch.equal(x, wx) and torch.equal(y, wy)


def failing_collate(samples):
    raise ValueError("this collate refuses batches")


def test_an_error_in_a_worker_is_raised_by_next(image_set_folder):
    dataset = torchvision.datasets.ImageFolder(image_set_folder, T.Compose([T.Resize((8, 8)), T.ToTensor()]))
    loader, _ = _made(dataset, batch_size=10, collate_fn=failing_collate, python_workers=2)
    with pytest.raises(ValueError, match="this collate refuses batches"):
        next(iter(loader))


def test_a_collate_fn_gets_uint8_samples_of_a_uint8_transform(image_set_folder):
    dataset = torchvision.datasets.ImageFolder(image_set_folder, T.Compose([T.Resize((8, 8)), T.PILToTensor()]))
    for workers in (0, 2):
        loader, _ = _made(dataset, batch_size=10, collate_fn=soft_targets, python_workers=workers)
        images, targets, _ = next(iter(loader))
        assert images.dtype == torch.uint8 and images.shape == (10, 3, 8, 8) and targets.shape == (10, 3)


def test_the_python_parts_draws_are_the_same_in_every_run(image_set_folder):
    # Two processes (Python salts string hashes per process): the same seed, the same draws.
    import subprocess
    import sys
    script = """
import sys, torch, torchvision, warnings
from torchvision import transforms as T
import feeder
warnings.simplefilter("ignore")
dataset = torchvision.datasets.ImageFolder(sys.argv[1], T.Compose([T.RandomResizedCrop(8), T.ColorJitter(0.5),
                                                                    T.ToTensor()]))
def collate(samples):
    images, labels = torch.utils.data.default_collate(samples)
    return images, labels, torch.rand(())
for images, _, draw in feeder.DataLoader(dataset, batch_size=10, seed=5, collate_fn=collate, num_workers=0):
    print(round(float(draw), 6), round(float(images.sum()), 3))
"""
    runs = [subprocess.run([sys.executable, "-c", script, str(image_set_folder)], capture_output=True, text=True,
                           timeout=120, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0].split()) == 6
