"""What feeder cannot translate, run as torch's DataLoader runs it.

A dataset feeder does not read itself (a map-style Dataset of the user's, an IterableDataset, a
torchvision dataset whose transform or loader feeder cannot run exactly), a custom ``collate_fn``,
a ``worker_init_fn``, a ``multiprocessing_context``, a ``timeout``, or a batch sampler of batches of
several sizes: the items are made by torch's own DataLoader, in its worker processes, with its
seeding rules (each worker's seed is the pass's base seed + its id), so every transform, collate
and hook runs exactly as the user's torch code would run it. feeder keeps what is its own: the
order (its shuffle of (seed, epoch), its ranks, or the sampler's indices), ``set_epoch``,
``state_dict``/``load_state_dict`` (a resume serves exactly the rest of the epoch's indices), the
attributes, and ``Batch.num_padding``. The base seed of a pass comes from a generator seeded by
(seed, epoch), so a pass's random transforms are a function of (seed, epoch, num_workers) as torch's
are of its generator (torch hands batch k to worker k mod num_workers).

One RuntimeWarning per loader says what runs where and why; ``loader.plan`` says it too.
"""

import torch

from . import _feeder

__all__ = ["TorchRun", "own_order", "own_padding", "pass_generator", "rank_samples"]

# Mixed into the seed of a pass's workers: a stream of its own. An int, not a string, whose hash
# Python salts per process.
_WORKERS_STREAM = -2


def pass_generator(seed, epoch):
    """The generator torch's DataLoader draws a pass's base seed from: a function of (seed, epoch)."""
    return torch.Generator().manual_seed(hash((seed, epoch, _WORKERS_STREAM)) & (2**63 - 1))


class _PassIndices(torch.utils.data.Sampler):
    """The indices of the pass in progress, as feeder ordered them; set before each iter()."""

    def __init__(self):
        self.indices = []

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


class TorchRun:
    """A torch DataLoader over the user's dataset, fed feeder's order one pass at a time.

    ``order_of(epoch, seed)`` gives a pass's indices (None for an IterableDataset, which orders
    itself); ``skip`` batches are left out at the start of a resumed pass."""

    def __init__(self, dataset, batch_size, drop_last, num_workers, collate_fn, pin_memory, worker_init_fn,
                 multiprocessing_context, timeout, prefetch_factor, persistent_workers, batch_sampler, extra):
        self.iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        self.indices = None if self.iterable else _PassIndices()
        self.generator = torch.Generator()
        arguments = dict(num_workers=num_workers, collate_fn=collate_fn, pin_memory=pin_memory,
                         worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
                         timeout=timeout, generator=self.generator,
                         persistent_workers=persistent_workers and num_workers > 0, **extra)
        if num_workers > 0 and prefetch_factor is not None:
            arguments["prefetch_factor"] = prefetch_factor
        self.batch_sampler = batch_sampler
        if batch_sampler is not None:  # batches of the user's sampler, as given
            self.batches = _PassIndices()
            self.loader = torch.utils.data.DataLoader(dataset, batch_sampler=self.batches, **arguments)
        elif self.iterable:
            self.loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, drop_last=drop_last, **arguments)
        else:
            self.loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, drop_last=drop_last,
                                                      sampler=self.indices, **arguments)

    def start(self, order, batch_size, skip, seed, epoch):
        """An iterator over the pass of `order` (indices; a list of batches with a batch sampler), from
        batch `skip` on."""
        self.generator.manual_seed(pass_generator(seed, epoch).initial_seed())
        if self.batch_sampler is not None:
            self.batches.indices = order[skip:]
        elif not self.iterable:
            self.indices.indices = order[skip * batch_size:]
        batches = iter(self.loader)
        if self.iterable:  # no indices to begin later with: the batches before are made and dropped
            for _ in range(skip):
                next(batches, None)
        return batches


def own_order(num_samples, shuffle, seed, epoch, batch_size, drop_last, rank, world_size):
    """feeder's own order of a pass, this rank's share: its shuffle (or none) of (seed, epoch), padded
    and split among ranks as the C++ loader does."""
    order = list(_feeder.epoch_order(num_samples, shuffle, seed, epoch))
    if world_size == 1:
        return order if not drop_last else order[:len(order) // batch_size * batch_size]
    return list(_feeder.rank_order(order, batch_size, drop_last, rank, world_size))


def own_padding(num_samples, batch_size, drop_last, rank, world_size):
    """How many of this rank's indices of feeder's own order only pad the epoch for ranks: positions
    of the padded order past num_samples in this rank's slice of the last global batch (EpochPlan)."""
    if drop_last or world_size == 1 or num_samples == 0:
        return 0
    padded = num_samples + (world_size - num_samples % world_size) % world_size
    global_batch = batch_size * world_size
    begin = (padded - 1) // global_batch * global_batch
    share = (padded - begin) // world_size
    first, last = begin + rank * share, begin + (rank + 1) * share
    return max(0, last - max(first, num_samples))


def rank_samples(num_samples, batch_size, drop_last, world_size):
    """Samples of a rank's epoch of feeder's own order (EpochPlan::count_samples)."""
    if drop_last:
        return num_samples // (batch_size * world_size) * batch_size
    return (num_samples + (world_size - num_samples % world_size) % world_size) // world_size
