"""Each epoch's order and seed, as torch's DataLoader would draw them.

Without ``seed=`` or ``generator=``, torch's DataLoader draws from torch's global generator at every
``iter()``: one int64 for its workers' base seed (only at the first ``iter()`` with
persistent_workers and workers), then, with shuffle=True, one more for RandomSampler's seed. feeder
draws exactly those, so ``torch.manual_seed(s)`` makes runs reproducible, different seeds differ,
and the user's later randomness (dropout, say) sees the generator as it would with torch. The
shuffle is then seeded by RandomSampler's draw, the random augmentation by the base seed. With
feeder's own ``rank``/``world_size`` the shuffle must be the same on every rank: it is seeded by
``seed`` (42 when not given), as DistributedSampler's is by its fixed seed; the draws are still made.

A sampler (``sampler=``, or ``batch_sampler=`` torch's BatchSampler) gives the order instead: its
indices, as ``iter(sampler)`` yields them at each ``iter()`` of the loader, are the ones served;
``sampler.set_epoch(e)`` on the user's object therefore takes effect at the next ``iter()``.
"""

import torch

__all__ = ["draw_seed", "OwnSampler", "sampler_padding"]


def draw_seed(generator=None):
    """One int64 drawn as torch's DataLoader and RandomSampler draw theirs, as an unsigned seed."""
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item()) & (2**64 - 1)


class OwnSampler:
    """What ``loader.sampler`` is when the user gave none: a torch sampler of the same length that
    says what the loader does (RandomSampler, SequentialSampler, or DistributedSampler for feeder's
    rank/world_size). Passed back as ``sampler=`` (a loader rebuilt from its attributes, as
    Lightning rebuilds loaders), it means the loader's own order again, not an order of its own."""

    def __init__(self, shuffle, seed, rank, world_size):
        self.shuffle = shuffle
        self.seed = seed
        self.rank = rank
        self.world_size = world_size


def own_sampler(dataset, shuffle, seed, rank, world_size, drop_last, generator):
    """A torch sampler describing the loader's own order, tagged as such (OwnSampler)."""
    if world_size > 1:
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle,
                                                      seed=42 if seed is None else seed, drop_last=drop_last)
    elif shuffle:
        sampler = torch.utils.data.RandomSampler(dataset, generator=generator)
    else:
        sampler = torch.utils.data.SequentialSampler(dataset)
    sampler._feeder_own = OwnSampler(shuffle, seed, rank, world_size)
    return sampler


def sampler_padding(sampler):
    """How many of the last indices of `sampler`'s epoch only pad it (DistributedSampler's repeats,
    without drop_last, that give every rank the same count); 0 for other samplers."""
    if not isinstance(sampler, torch.utils.data.DistributedSampler) or sampler.drop_last:
        return 0
    size = len(sampler.dataset)
    # Rank r takes positions r, r + W, ... of the padded order; those at or past `size` are repeats:
    # the i-th, for every i from ceil((size - r) / W) on.
    first_repeat = -(-(size - sampler.rank) // sampler.num_replicas)
    return max(0, sampler.num_samples - first_repeat)
