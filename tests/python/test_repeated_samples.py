"""A sample drawn more than once in an epoch (RandomSampler with replacement, WeightedRandomSampler,
repeated augmentation) is augmented anew each time, as torch draws afresh at every __getitem__;
still a pure function of (seed, epoch, order), whatever the number of workers."""

import torch
import torchvision
from torchvision import transforms as T

import feeder


def _dataset(root):
    return torchvision.datasets.ImageFolder(
        root, T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToTensor()]))


def _served(loader):
    """Every (index, image) the epoch served, in order."""
    images = torch.cat([x.clone() for x, _ in loader])
    order = loader._order
    assert len(order) == len(images)
    return order, images


def _identical_repeats(order, images):
    """(repeats, how many of them are pixel-identical to the sample's first copy)."""
    first, repeats, identical = {}, 0, 0
    for position, index in enumerate(order):
        if index in first:
            repeats += 1
            identical += bool(torch.equal(images[first[index]], images[position]))
        else:
            first[index] = position
    return repeats, identical


def test_a_sampler_with_replacement_augments_every_copy_anew(image_set_folder):
    dataset = _dataset(image_set_folder)
    sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=300,
                                             generator=torch.Generator().manual_seed(3))
    order, images = _served(feeder.DataLoader(dataset, batch_size=16, sampler=sampler, seed=5))
    repeats, identical = _identical_repeats(order, images)
    assert repeats >= 250
    # Every copy the same crop and flip (plain duplication) before; chance coincidences of tiny images now.
    assert identical < repeats * 0.1, (identical, repeats)


def test_repeated_indices_of_a_weighted_sampler_differ_and_are_pure_in_the_order(image_set_folder):
    dataset = _dataset(image_set_folder)
    weights = [1.0] * len(dataset)
    runs = []
    for workers in (0, 1, 2):
        sampler = torch.utils.data.WeightedRandomSampler(weights, 90, generator=torch.Generator().manual_seed(8))
        runs.append(_served(feeder.DataLoader(dataset, batch_size=7, sampler=sampler, seed=11, num_workers=workers)))
    (order, images), *others = runs
    for other_order, other_images in others:  # the same samples, the same pixels, for any number of workers
        assert other_order == order
        assert torch.equal(other_images, images)
    repeats, identical = _identical_repeats(order, images)
    assert repeats > 0 and identical < max(1, repeats * 0.2)


def test_an_order_without_repeats_keeps_its_augmentation(image_set_folder):
    # The first copy of a sample is augmented as before: an order visiting each sample once is unchanged,
    # and a sample's first copy in an order with repeats is the same as in one without.
    dataset = _dataset(image_set_folder)
    once = list(range(30))
    with_repeats = [0, 1, 2, 0, 1, 2] + list(range(3, 30))
    _, plain = _served(feeder.DataLoader(dataset, batch_size=6, sampler=once, seed=2))
    order, repeated = _served(feeder.DataLoader(dataset, batch_size=6, sampler=with_repeats, seed=2))
    assert torch.equal(repeated[:3], plain[:3])
    assert torch.equal(repeated[6:], plain[3:])
    assert not any(torch.equal(repeated[i], repeated[i + 3]) for i in range(3))


class _EveryRankAll:
    """A sampler that gives every rank the whole set (as repeated augmentation gives each rank copies of
    the same samples), with DistributedSampler's rank and num_replicas."""

    def __init__(self, size, rank, num_replicas):
        self.size, self.rank, self.num_replicas = size, rank, num_replicas

    def __iter__(self):
        return iter(range(self.size))

    def __len__(self):
        return self.size


def test_copies_of_a_sample_on_different_ranks_are_augmented_differently(image_set_folder):
    dataset = _dataset(image_set_folder)
    served = [_served(feeder.DataLoader(dataset, batch_size=10, sampler=_EveryRankAll(30, rank, 2), seed=4))[1]
              for rank in (0, 1)]
    identical = sum(bool(torch.equal(a, b)) for a, b in zip(*served))
    assert identical < 3, identical
    # Rank 0 of a sampler draws as an order without ranks does.
    _, alone = _served(feeder.DataLoader(dataset, batch_size=10, sampler=list(range(30)), seed=4))
    assert torch.equal(served[0], alone)
