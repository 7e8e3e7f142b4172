"""torchvision's datasets, transforms and torch's samplers given to feeder.DataLoader as a torch script
writes them: read from the dataset's own files or arrays, the transform run in C++ with
torchvision's semantics or refused by name, the sampler's indices served, torch's seeds followed."""

import copy
import gzip
import os
import pickle
import re
import shutil

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

import feeder
from conftest import FASHION_MNIST
from image_set import CLASSES, image_array, write_folder

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_transform(size=16):
    return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


def eval_transform(size=16, resize=20):
    return T.Compose([T.Resize(resize), T.CenterCrop(size), T.ToTensor(), T.Normalize(MEAN, STD)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("folder") / "train", per_class=8)


def epoch(loader, epoch_number=None):
    if epoch_number is not None:
        loader.set_epoch(epoch_number)
    images, labels = [], []
    for x, y in loader:
        images.append(x.clone())
        labels.append(y.clone())
    return torch.cat(images), torch.cat(labels)


# ------------------------------------------------------------------------ datasets as they are

def test_an_image_folder_is_read_from_its_own_file_list_and_is_the_loaders_dataset(folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=eval_transform())
    loader = feeder.DataLoader(dataset, batch_size=5, num_workers=2)
    assert loader.dataset is dataset
    assert len(loader) == 5 and len(loader.dataset) == 24
    images, labels = epoch(loader)
    assert labels.tolist() == dataset.targets  # unshuffled: the dataset's order
    assert images.shape == (24, 3, 16, 16)
    # The evaluation pixels are torchvision's within a level (before Normalize's 1/std).
    for i in range(len(dataset)):
        expected = dataset[i][0]
        difference = ((images[i] - expected) * torch.tensor(STD).reshape(3, 1, 1) * 255).abs()
        assert difference.max() <= 1.01 and difference.mean() < 0.35, (i, difference.max())
    # A script builds Subsets from loader.dataset.
    subset = torch.utils.data.Subset(loader.dataset, [3, 17, 5])
    _, subset_labels = epoch(feeder.DataLoader(subset, batch_size=2))
    assert subset_labels.tolist() == [dataset.targets[i] for i in (3, 17, 5)]


def test_an_image_folder_over_the_budget_streams_in_its_order_and_refuses_a_sampler(tmp_path):
    dataset = torchvision.datasets.ImageFolder(write_folder(tmp_path / "large", per_class=200),
                                               transform=eval_transform())
    # Under the 600 files' 94 KB, over what a stream of 64-file pieces needs with its 3 batch buffers.
    budget = 72000
    loader = feeder.DataLoader(dataset, batch_size=4, memory_budget=budget, prefetch=1)
    assert loader.streaming and loader.dataset is dataset
    assert epoch(loader)[1].tolist() == dataset.targets  # unshuffled: the dataset's order, streamed
    shuffled = feeder.DataLoader(dataset, batch_size=4, shuffle=True, seed=1, memory_budget=budget, prefetch=1)
    assert sorted(epoch(shuffled)[1].tolist()) == sorted(dataset.targets)
    with pytest.raises(ValueError, match="streamed.*order of its own"):
        feeder.DataLoader(dataset, batch_size=4, memory_budget=budget, prefetch=1,
                          sampler=torch.utils.data.SequentialSampler(dataset))


def test_target_transform_and_random_split_are_honoured(folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=eval_transform(), target_transform=lambda y: 10 + y)
    first, second = torch.utils.data.random_split(dataset, [16, 8], generator=torch.Generator().manual_seed(3))
    _, labels = epoch(feeder.DataLoader(second, batch_size=3))
    assert labels.tolist() == [10 + dataset.targets[i] for i in second.indices]
    assert len(feeder.DataLoader(first, batch_size=3)) == 6


def test_per_epoch_augmentation_differs_between_epochs_and_not_with_workers(folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=train_transform())
    by_workers = []
    for workers in (0, 1, 3):
        loader = feeder.DataLoader(dataset, batch_size=4, shuffle=True, seed=5, num_workers=workers)
        by_workers.append([epoch(loader, 0), epoch(loader, 1)])
    for other in by_workers[1:]:
        for (images, labels), (other_images, other_labels) in zip(by_workers[0], other):
            assert torch.equal(images, other_images) and torch.equal(labels, other_labels)
    (first, first_labels), (second, second_labels) = by_workers[0]
    # The same image crops and flips differently in epoch 1 (sorted by label, then compare per image).
    assert not torch.equal(first[first_labels.argsort(stable=True)], second[second_labels.argsort(stable=True)])


def test_random_resized_crop_and_flip_pixels_match_torchvisions_for_the_crops_draws(folder, monkeypatch):
    # RandomResizedCrop(scale=(1, 1), ratio=(w/h, w/h)) takes the whole image: the crop is then
    # torchvision's resize of it, and the flip shows as a mirror of it.
    path = folder / "cat" / "cat_00.png"
    height, width = image_array(0, 0).shape[:2]
    single = torchvision.datasets.ImageFolder(folder, transform=T.Compose([
        T.RandomResizedCrop((12, 10), scale=(1.0, 1.0), ratio=(width / height, width / height)),
        T.RandomHorizontalFlip(p=1.0), T.ToTensor()]))
    single.samples = single.imgs = [(str(path), 0)]
    single.targets = [0]
    images, _ = epoch(feeder.DataLoader(single))
    expected = T.ToTensor()(Image.open(path).convert("RGB").resize((10, 12), Image.BILINEAR)).flip(-1)
    assert ((images[0] - expected) * 255).abs().max() <= 1.01
    single.transform.transforms.insert(2, T.RandomVerticalFlip(p=1.0))  # after the crop: the batch's rows
    images, _ = epoch(feeder.DataLoader(single))
    assert ((images[0] - expected.flip(-2)) * 255).abs().max() <= 1.01


def test_random_crop_of_files_is_a_window_of_torchvisions_image(folder):
    for transform, prepare in [
            (T.Compose([T.RandomCrop(10), T.ToTensor()]), T.ToTensor()),
            (T.Compose([T.Resize(20), T.RandomCrop((16, 12)), T.RandomHorizontalFlip(), T.ToTensor()]),
             T.Compose([T.Resize(20), T.ToTensor()]))]:
        dataset = torchvision.datasets.ImageFolder(folder, transform=transform)
        images, _ = epoch(feeder.DataLoader(dataset, batch_size=24, seed=3), 0)
        height, width = images.shape[-2:]
        for i in range(0, 24, 3):
            whole = prepare(dataset.loader(dataset.samples[i][0]))  # torchvision's image before the crop
            windows = [window for top in range(whole.shape[1] - height + 1) for left in range(whole.shape[2] - width + 1)
                       for window in (whole[:, top:top + height, left:left + width],
                                      whole[:, top:top + height, left:left + width].flip(-1))]
            assert min((images[i] - w).abs().max().item() for w in windows) * 255 <= 1.01, i
    small = torchvision.datasets.ImageFolder(folder, transform=T.Compose([T.RandomCrop(30), T.ToTensor()]))
    with pytest.raises(feeder.DataError, match=r"RandomCrop\(30, 30\) of an image of \d+x\d+: the crop is larger"):
        epoch(feeder.DataLoader(small, batch_size=24))
    with pytest.warns(feeder.PlanWarning, match="pads the crop of a resized image"):
        feeder.DataLoader(torchvision.datasets.ImageFolder(folder, transform=T.Compose([
            T.Resize(20), T.RandomCrop(16, padding=2), T.ToTensor()])))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_a_padded_random_crop_of_files_is_a_window_of_torchvisions_padded_image(folder, mode):
    crop = T.RandomCrop(24, padding=(3, 1, 5, 2), fill=(9, 99, 199), padding_mode=mode, pad_if_needed=True)
    dataset = torchvision.datasets.ImageFolder(folder, transform=T.Compose([crop, T.RandomHorizontalFlip(),
                                                                            T.PILToTensor()]))
    images, _ = epoch(feeder.DataLoader(dataset, batch_size=24, seed=4), 0)
    assert images.dtype == torch.uint8 and images.shape == (24, 3, 24, 24)
    flips = 0
    for i in range(0, 24, 2):
        # torchvision's own padding of the same image (pad, then pad_if_needed's), every window of it
        image = dataset.loader(dataset.samples[i][0])
        padded = T.functional.pad(image, [3, 1, 5, 2], fill=(9, 99, 199), padding_mode=mode)
        width, height = padded.size
        extra_h, extra_w = max(0, 24 - height), max(0, 24 - width)
        if extra_h or extra_w:
            padded = T.functional.pad(padded, [extra_w, extra_h], fill=(9, 99, 199), padding_mode=mode)
        whole = T.functional.pil_to_tensor(padded)
        found = None
        for top in range(whole.shape[1] - 23):
            for left in range(whole.shape[2] - 23):
                window = whole[:, top:top + 24, left:left + 24]
                if torch.equal(images[i], window):
                    found = 0
                elif torch.equal(images[i], window.flip(-1)):
                    found = 1
        assert found is not None, i
        flips += found
    assert 0 < flips < 12


def test_transforms_feeder_cannot_run_run_as_torch_runs_them_naming_why(folder):
    # (transform, a name the warning gives, who makes the items): ColorJitter takes a tensor, so the
    # crop is made in C++ and it runs on each crop in Python; the others run in torch's DataLoader.
    for transform, name, plan in [
            (T.Compose([T.RandomResizedCrop(16), T.ColorJitter(0.4), T.ToTensor()]), "ColorJitter", "in Python"),
            (T.Compose([T.Resize((16, 16)), T.Lambda(lambda x: x), T.ToTensor()]), "Lambda", "torch's DataLoader"),
            (T.Compose([T.Resize((16, 16)), T.ToTensor()]), None, "C++"),
            (T.Compose([T.RandomResizedCrop(16, interpolation=T.InterpolationMode.BICUBIC), T.ToTensor()]), "bicubic",
             "torch's DataLoader")]:
        dataset = torchvision.datasets.ImageFolder(folder, transform=transform)
        if name is None:  # one feeder runs: made in C++, no warning
            assert plan in feeder.DataLoader(dataset).plan
            continue
        with pytest.warns(feeder.PlanWarning, match=name):
            loader = feeder.DataLoader(dataset, batch_size=6)
        images, labels = next(iter(loader))
        assert images.shape == (6, 3, 16, 16) and plan in loader.plan
    # Items no DataLoader batches (PIL images) are refused before anything runs, as torch fails on them.
    with pytest.raises(feeder.UnsupportedTransform, match="no transform"):
        feeder.DataLoader(torchvision.datasets.ImageFolder(folder, transform=None))
    with pytest.raises(ValueError, match="transform says"):
        feeder.DataLoader(torchvision.datasets.ImageFolder(folder, transform=eval_transform()), image_size=16)


def test_a_dataset_that_makes_its_own_items_runs_them_not_bypassed(folder):
    class Pairs(torchvision.datasets.ImageFolder):
        def __getitem__(self, index):
            image, label = super().__getitem__(index)
            return image, label, index

    with pytest.warns(feeder.PlanWarning, match="overrides DatasetFolder.__getitem__"):
        loader = feeder.DataLoader(Pairs(folder, transform=eval_transform()), batch_size=4)
    images, labels, indices = next(iter(loader))  # its own items, as torch's DataLoader batches them
    assert indices.tolist() == [0, 1, 2, 3]


def test_a_listed_file_feeder_does_not_decode_runs_as_torch_not_dropped(tmp_path):
    root = write_folder(tmp_path / "set", per_class=2)
    Image.fromarray(image_array(0, 0)).save(root / "cat" / "extra.bmp")
    dataset = torchvision.datasets.ImageFolder(root, transform=eval_transform())
    assert len(dataset) == 7
    with pytest.warns(feeder.PlanWarning, match="extra.bmp"):
        loader = feeder.DataLoader(dataset, batch_size=7)
    assert len(next(iter(loader))[1]) == 7  # every file the dataset lists, none dropped


def test_normalize_takes_torchvisions_normalize(tmp_path):
    root = write_folder(tmp_path / "set", per_class=2)
    by_pair = feeder.DataLoader(str(root), image_size=8, augment="center_crop", normalize=(MEAN, STD))
    by_object = feeder.DataLoader(str(root), image_size=8, augment="center_crop", normalize=T.Normalize(MEAN, STD))
    assert torch.equal(epoch(by_pair)[0], epoch(by_object)[0])


def fashion_mnist(tmp_path, train=False):
    """torchvision's FashionMNIST over Debian's files (torchvision reads them uncompressed)."""
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        source = os.path.join(FASHION_MNIST, name + ".gz")
        if name.startswith("train") and not train:
            source = os.path.join(FASHION_MNIST, name.replace("train", "t10k") + ".gz")
        with gzip.open(source) as compressed, open(raw / name, "wb") as out:
            shutil.copyfileobj(compressed, out)
    return tmp_path


def test_an_in_memory_torchvision_dataset_is_read_from_its_arrays(tmp_path):
    root = fashion_mnist(tmp_path)
    dataset = torchvision.datasets.FashionMNIST(root, train=False, transform=T.Compose([
        T.ToTensor(), T.Normalize((0.2860,), (0.3530,))]))
    loader = feeder.DataLoader(dataset, batch_size=500)
    images, labels = next(iter(loader))
    assert labels.tolist() == dataset.targets[:500].tolist()
    expected = torch.stack([dataset[i][0] for i in range(500)])
    assert (images - expected).abs().max() < 1e-5
    assert loader.dataset is dataset and loader.dataset.classes[0] == "T-shirt/top"
    with pytest.warns(feeder.PlanWarning, match="RandomRotation"):
        feeder.DataLoader(torchvision.datasets.FashionMNIST(root, train=False, transform=T.Compose([
            T.RandomRotation(10), T.ToTensor()])))


# ------------------------------------------------------------------------ samplers and seeds

def test_a_distributed_samplers_indices_are_served_and_its_set_epoch_takes_effect(folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=eval_transform())
    for rank in range(3):  # 24 samples on 5 ranks... on 3 here, and 23 below for padding
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=3, rank=rank, shuffle=True, seed=9)
        loader = feeder.DataLoader(dataset, batch_size=3, sampler=sampler)
        torch_loader = torch.utils.data.DataLoader(dataset, batch_size=3, sampler=sampler)
        assert len(loader) == len(torch_loader) and len(loader.sampler) == 8 and loader.sampler is sampler
        for e in (0, 1):
            sampler.set_epoch(e)
            assert epoch(loader)[1].tolist() == [label for _, y in torch_loader for label in y.tolist()]
        sampler.set_epoch(0)
        zero = epoch(loader)[1].tolist()
        sampler.set_epoch(1)
        assert zero != epoch(loader)[1].tolist()


def test_distributed_evaluation_counts_each_sample_once_with_num_padding(folder):
    dataset = torch.utils.data.Subset(torchvision.datasets.ImageFolder(folder, transform=eval_transform()),
                                      list(range(23)))
    counted = []
    for rank in range(2):
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=False)
        loader = feeder.DataLoader(dataset, batch_size=5, sampler=sampler)
        padding = [batch.num_padding for batch in loader]
        assert sum(padding) == (1 if rank == 1 else 0) and padding[-1] == sum(padding)
        for batch in loader:
            images, labels = batch
            counted += labels[:len(labels) - batch.num_padding].tolist()
    assert sorted(counted) == sorted(dataset.dataset.targets[:23])


def test_torch_manual_seed_decides_the_order_and_draws_as_torch_does(numbered):
    def first_batch(seed):
        torch.manual_seed(seed)
        loader = feeder.DataLoader(numbered, batch_size=50, shuffle=True)
        labels = next(iter(loader))[1].tolist()
        return labels, torch.rand(1).item()

    assert first_batch(1) == first_batch(1)
    assert first_batch(1)[0] != first_batch(2)[0]
    # torch's DataLoader makes the same draws from the global generator: the user's next draw matches.
    for shuffle in (True, False):
        torch.manual_seed(4)
        for _ in feeder.DataLoader(numbered, batch_size=500, shuffle=shuffle):
            pass
        after_feeder = torch.rand(1).item()
        torch.manual_seed(4)
        for _ in torch.utils.data.DataLoader(list(range(1000)), batch_size=500, shuffle=shuffle):
            pass
        assert after_feeder == torch.rand(1).item()
    # Each pass draws again: two epochs differ without set_epoch, and seed= draws nothing.
    torch.manual_seed(4)
    loader = feeder.DataLoader(numbered, batch_size=1000, shuffle=True)
    assert next(iter(loader))[1].tolist() != next(iter(loader))[1].tolist()
    torch.manual_seed(4)
    feeder.DataLoader(numbered, batch_size=1000, shuffle=True, seed=3)
    assert next(iter(feeder.DataLoader(numbered, batch_size=1000, shuffle=True, seed=3)))[1].tolist() == next(
        iter(feeder.DataLoader(numbered, batch_size=1000, shuffle=True, seed=3)))[1].tolist()


def test_a_random_sampler_given_serves_torchs_exact_order_and_draws():
    images = np.arange(50, dtype=np.uint8).reshape(50, 1, 1, 1)
    labels = np.arange(50)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    runs = []
    for make in (lambda sampler: feeder.DataLoader((images, labels), batch_size=50, sampler=sampler),
                 lambda sampler: torch.utils.data.DataLoader(dataset, batch_size=50, sampler=sampler)):
        torch.manual_seed(3)
        loader = make(torch.utils.data.RandomSampler(range(50)))
        runs.append(([batch[1].tolist() for batch in loader], torch.rand(1).item()))
    assert runs[0] == runs[1]


def test_ranks_of_feeders_own_split_shuffle_alike_whatever_torchs_seed(numbered):
    seen = []
    for rank in range(2):
        torch.manual_seed(rank)  # ranks seeded differently must still not overlap
        loader = feeder.DataLoader(numbered, batch_size=100, shuffle=True, rank=rank, world_size=2)
        seen += [label for _, labels in loader for label in labels.tolist()]
    assert sorted(seen) == list(range(1000))


def test_a_batch_sampler_and_a_resume_over_a_samplers_order(folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=eval_transform())
    sampler = torch.utils.data.RandomSampler(dataset, generator=torch.Generator().manual_seed(1))
    loader = feeder.DataLoader(dataset, batch_sampler=torch.utils.data.BatchSampler(sampler, 5, drop_last=True))
    assert len(loader) == 4 and loader.batch_size == 5 and loader.drop_last
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    rest = [labels.tolist() for _, labels in iterator]
    resumed = feeder.DataLoader(dataset, batch_sampler=torch.utils.data.BatchSampler(sampler, 5, drop_last=True))
    resumed.load_state_dict(copy.deepcopy(state))
    assert [labels.tolist() for _, labels in resumed] == rest


class ByLabel:
    """A batch sampler of one's own: batches of one class each, as some scripts write them."""

    def __init__(self, targets, batch_size, uneven=False):
        self.targets, self.batch_size, self.uneven = targets, batch_size, uneven

    def __iter__(self):
        for label in sorted(set(self.targets)):
            indices = [i for i, t in enumerate(self.targets) if t == label]
            for start in range(0, len(indices), self.batch_size):
                yield indices[start:start + self.batch_size - (1 if self.uneven and start == 0 else 0)]

    def __len__(self):
        return sum(-(-self.targets.count(t) // self.batch_size) for t in set(self.targets))


def test_a_batch_sampler_of_ones_own_is_run_as_given(numbered):
    targets = [i % 3 for i in range(12)]
    images = np.arange(12, dtype=np.uint8).reshape(12, 1, 1, 1)
    loader = feeder.DataLoader((images, np.array(targets)), batch_sampler=ByLabel(targets, 4))
    assert len(loader) == 3 and loader.batch_sampler.batch_size == 4
    assert [(x.flatten() * 255).round().long().tolist() for x, _ in loader] == list(ByLabel(targets, 4))
    uneven = feeder.DataLoader((images, np.array(targets)), batch_sampler=ByLabel(targets, 4, uneven=True))
    with pytest.raises(ValueError, match="batch 0 of ByLabel has 3 indices"):
        iter(uneven)
    with pytest.raises(ValueError, match="no batch_size"):
        feeder.DataLoader(numbered, batch_sampler=[[0, 1], [2, 3]])


# ------------------------------------------------------------------------ torch's attributes

def test_torchs_attributes_and_a_loader_rebuilt_from_them(numbered, folder):
    dataset = torchvision.datasets.ImageFolder(folder, transform=eval_transform())
    loader = feeder.DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, pin_memory=False, seed=3)
    assert loader.persistent_workers and loader.prefetch_factor >= 1 and loader.pin_memory is False
    assert loader.collate_fn is torch.utils.data.default_collate and loader.generator is None
    assert isinstance(loader.sampler, torch.utils.data.RandomSampler) and len(loader.sampler) == 24
    assert isinstance(loader.batch_sampler, torch.utils.data.BatchSampler)
    assert loader.dataset[0][1] == dataset.targets[0]
    # Lightning's way: a new loader from the old one's attributes.
    rebuilt = feeder.DataLoader(loader.dataset, batch_size=loader.batch_size, sampler=loader.sampler,
                                num_workers=loader.num_workers, drop_last=loader.drop_last)
    assert torch.equal(epoch(rebuilt, 1)[1], epoch(loader, 1)[1])
    batch = next(iter(loader))
    images, labels = batch
    batch[0] = images * 2
    assert len(batch) == 2 and torch.equal(batch[0], images * 2)
    for clone in (pickle.loads(pickle.dumps(loader)), copy.deepcopy(loader)):
        assert torch.equal(epoch(clone, 1)[1], epoch(loader, 1)[1])
    by_generator = feeder.DataLoader(numbered, batch_size=100, shuffle=True, generator=torch.Generator().manual_seed(5))
    assert torch.equal(epoch(pickle.loads(pickle.dumps(by_generator)), 2)[1], epoch(by_generator, 2)[1])


def test_the_dataset_of_a_path_or_arrays_is_indexed_and_subset_as_torchs(numbered, folder):
    loader = feeder.DataLoader(numbered, batch_size=10, normalize=(0.5, 0.25))
    image, label = loader.dataset[7]
    batch_images, batch_labels = next(iter(feeder.DataLoader(numbered, batch_size=10, normalize=(0.5, 0.25))))
    assert label == 7 and torch.equal(image, batch_images[7])
    assert loader.dataset[-1][1] == 999 and loader.dataset is loader.dataset
    with pytest.raises(IndexError):
        loader.dataset[1000]
    subset = torch.utils.data.Subset(loader.dataset, range(990, 1000))
    _, labels = epoch(feeder.DataLoader(subset, batch_size=4))
    assert labels.tolist() == list(range(990, 1000))
    images = feeder.DataLoader(str(folder), image_size=8, augment="center_crop")
    assert images.dataset.root == str(folder) and images.dataset[3][0].shape == (3, 8, 8)


def test_cached_refuses_a_dataset_whose_items_change_between_reads(folder):
    with pytest.raises(ValueError, match="RandomResizedCrop.*feeder.DataLoader"):
        feeder.cached(torchvision.datasets.ImageFolder(folder, transform=train_transform()), num_workers=0)

    class Noisy(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return torch.rand(1, 2, 2), 0

    with pytest.raises(ValueError, match="differed between two reads"):
        feeder.cached(Noisy(), num_workers=0)


# ------------------------------------------------------------------------ a torch script, ported

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "imagenet_style.py")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_script(path, train, val):
    import subprocess
    import sys
    # Debian 13's torch 2.6 is built without libuv, which its TCPStore asks for unless told not to.
    # There each torch DataLoader iterator takes about 4 s to start its worker processes: one epoch
    # (5 iterators a rank, about 45 s alone, several times that beside other tests) keeps the run
    # within the timeout, which is for a hang.
    result = subprocess.run([sys.executable, path, str(train), str(val), "--port", str(free_port()), "--epochs", "1"],
                            capture_output=True, text=True, timeout=600, env={**os.environ, "USE_LIBUV": "0"})
    assert result.returncode == 0, f"{path} exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-6000:]}"
    # Two processes print: lines are found wherever they are, not split at newlines.
    found = re.findall(r"rank (\d) epoch (-?\d) acc1 ([\d.]+) count (\d+)(?: loss (nan|-?inf|[\d.]+))?", result.stdout)
    return {(rank, epoch): (float(acc1), int(count), loss) for rank, epoch, acc1, count, loss in found}


def test_an_imagenet_style_script_ported_by_one_line_evaluates_as_with_torch(tmp_path):
    train = write_folder(tmp_path / "train", per_class=8)
    val = write_folder(tmp_path / "val", per_class=8)
    (val / "fox" / "fox_07.png").unlink()  # 23 images: 2 ranks pad one
    source = open(SCRIPT).read()
    ported = source.replace("from torch.utils.data import DataLoader\n", "from feeder import DataLoader\n")
    changed = [a for a, b in zip(source.splitlines(), ported.splitlines()) if a != b]
    assert len(changed) == 1 and len(source.splitlines()) == len(ported.splitlines())
    (tmp_path / "ported.py").write_text(ported)
    with_torch = run_script(SCRIPT, train, val)
    with_feeder = run_script(tmp_path / "ported.py", train, val)
    assert set(with_torch) == set(with_feeder) == {(r, e) for r in "01" for e in ("-1", "0")}
    for key, (acc1, count, _) in with_torch.items():
        feeder_acc1, feeder_count, feeder_loss = with_feeder[key]
        assert count == feeder_count == 23, key  # every image counted once, none of the padding
        if key[1] == "-1":  # the same model evaluated on the same pixels: the same accuracy
            assert acc1 == feeder_acc1, (key, acc1, feeder_acc1)
        else:  # trained: the augmentations drew differently; trained all the same, with a finite loss
            assert 0.0 <= feeder_acc1 <= 100.0 and np.isfinite(float(feeder_loss)), key


def cifar_like(transform):
    """A CIFAR10 over arrays made here (torchvision's checks the files' MD5s, which a test cannot make):
    the object torchvision's constructor leaves, with 40 images of 32x32 RGB."""
    dataset = torchvision.datasets.CIFAR10.__new__(torchvision.datasets.CIFAR10)
    rng = np.random.default_rng(0)
    dataset.data = rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8)
    dataset.targets = rng.integers(0, 10, 40).tolist()
    dataset.transform, dataset.target_transform, dataset.transforms = transform, None, None
    dataset.classes = [f"c{i}" for i in range(10)]
    return dataset


def test_cifar_with_a_per_channel_normalize_is_read_from_its_arrays():
    dataset = cifar_like(T.Compose([T.ToTensor(), T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))]))
    images, labels = epoch(feeder.DataLoader(dataset, batch_size=16, num_workers=2))
    assert labels.tolist() == dataset.targets
    expected = torch.stack([dataset[i][0] for i in range(40)])
    assert (images - expected).abs().max() < 1e-5
    uint8 = cifar_like(T.PILToTensor())
    images, _ = epoch(feeder.DataLoader(uint8, batch_size=40))
    assert images.dtype == torch.uint8 and torch.equal(images, torch.stack([uint8[i][0] for i in range(40)]))
    with pytest.warns(feeder.PlanWarning, match="symmetric"):
        feeder.DataLoader(cifar_like(T.Compose([T.RandomCrop(32, padding=4, padding_mode="symmetric"), T.ToTensor()])))
    with pytest.warns(feeder.PlanWarning, match="RandomRotation"):
        feeder.DataLoader(cifar_like(T.Compose([T.RandomRotation(10), T.ToTensor()])))


def test_cifars_training_transform_crops_and_flips_each_image_per_epoch():
    mean, std = (0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261)
    dataset = cifar_like(T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                                    T.Normalize(mean, std)]))
    runs = []
    for workers in (0, 1, 3):
        loader = feeder.DataLoader(dataset, batch_size=16, shuffle=True, seed=8, num_workers=workers)
        runs.append([epoch(loader, 0), epoch(loader, 1)])
    for run in runs[1:]:
        assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(runs[0], run))
    (first, first_labels), (second, _) = runs[0]
    assert first.shape == (40, 3, 32, 32) and not torch.equal(first, second)
    # Each image is one of torchvision's possible outputs: a 32x32 window of the image padded by 4
    # zeros, mirrored or not, scaled and normalised.
    normalize = T.Normalize(mean, std)
    assert sorted(first_labels.tolist()) == sorted(dataset.targets)
    loader = feeder.DataLoader(dataset, batch_size=40, seed=8)  # unshuffled: row i is image i
    images, _ = epoch(loader, 0)
    flips = 0
    for i in range(8):
        padded = torch.nn.functional.pad(torch.from_numpy(dataset.data[i]).permute(2, 0, 1), (4, 4, 4, 4))
        candidates = [normalize(window.float() / 255) for top in range(9) for left in range(9)
                      for window in (padded[:, top:top + 32, left:left + 32],
                                     padded[:, top:top + 32, left:left + 32].flip(-1))]
        distances = [(images[i] - candidate).abs().max().item() for candidate in candidates]
        best = int(np.argmin(distances))
        assert distances[best] < 1e-5, (i, min(distances))
        flips += best % 2
    assert 0 < flips < 8  # some mirrored, some not


def test_transforms_v2_spellings_are_translated_as_v1s(folder):
    v2 = pytest.importorskip("torchvision.transforms.v2", reason="torchvision before 0.15 has no transforms.v2")
    pairs = [
        (v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(), v2.ToImage(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]), train_transform()),
        (v2.Compose([v2.Resize(20), v2.CenterCrop(16), v2.ToTensor(), v2.Normalize(MEAN, STD)]), eval_transform()),
        (v2.Compose([v2.Resize((12, 14)), v2.PILToTensor()]), T.Compose([T.Resize((12, 14)), T.PILToTensor()])),
    ]
    for new, old in pairs:
        batches = [epoch(feeder.DataLoader(torchvision.datasets.ImageFolder(folder, transform=transform),
                                           batch_size=6, shuffle=True, seed=2), 1) for transform in (new, old)]
        assert torch.equal(batches[0][0], batches[1][0]) and torch.equal(batches[0][1], batches[1][1])
    with pytest.warns(feeder.PlanWarning, match="ColorJitter"):
        feeder.DataLoader(torchvision.datasets.ImageFolder(folder, transform=v2.Compose([
            v2.RandomResizedCrop(16), v2.ColorJitter(0.4), v2.ToImage()])))
