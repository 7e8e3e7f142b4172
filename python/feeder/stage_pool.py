"""The Python part of a loader's work, in worker processes as torch's DataLoader runs its own.

When a dataset's transform ends with steps that run in Python (transforms.SampleTail: after the C++
crop, TrivialAugmentWide and its kin per sample) or the script gives a collate_fn, that part costs
far more than the C++ part and, on the thread that iterates, would bound the loader by one core.
With num_workers > 0 it runs in num_workers processes instead (forked, as torch's workers are, so a
script's closures need no pickling): the iterating thread takes each batch from the C++ loader,
copies its images into one of a few shared-memory slots the workers were forked with, and hands
(slot, labels, batch number) to a worker, keeping a slot's worth of batches in flight; results come
back in shared memory, in order. Each batch's draws come from torch's generator seeded by (seed, epoch, rank, batch[, row])
in the process that runs it, so the batches are the same in a worker, on the iterating thread,
and for any number of workers. torch's get_worker_info() is set in the workers, as in torch's
(default_collate then makes its batch in shared memory).

Nothing of feeder's C++ is touched in a worker (a forked child leaves it alone; see
feeder/util/made_in_process.h).
"""

import multiprocessing as _multiprocessing
import weakref

import torch
import torch.multiprocessing as multiprocessing

from . import torch_memory

__all__ = ["BatchWork", "StagePool"]

# Mixed into a collate's seed in place of a row number (rows are >= 0): a stream of its own. An int,
# not a string, whose hash Python salts per process.
_COLLATE_STREAM = -1

# What each pool's workers run, registered before the pool forks so that they inherit it.
_WORK = {}
_WORK_IDS = iter(range(1 << 62))


class BatchWork:
    """What runs in Python on a batch the C++ loader made: the per-sample tail of the dataset's
    transform (transforms.SampleTail) and the script's collate_fn over the samples, as torch's
    workers would hand them (image tensors, int labels). Returns the collate's result, or
    (images, labels)."""

    def __init__(self, tail, collate):
        self.tail = tail
        self.collate = collate
        self.reuse_memory = torch_memory.hold(self)

    def __call__(self, images, labels, seed, epoch, rank, index):
        with torch_memory.scope(self.reuse_memory):
            if self.tail is not None:
                images = self.tail(images, seed, epoch, rank, index)
            if self.collate is None:
                return images, labels
            samples = list(zip(images, labels.tolist()))
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(hash((seed, epoch, rank, index, _COLLATE_STREAM)) & (2**63 - 1))
                return self.collate(samples)


def _start_worker(counter, num_workers, work_id):
    torch.set_num_threads(1)  # as torch's workers: the processes are the parallelism
    with counter.get_lock():
        worker_id = counter.value
        counter.value += 1
    try:  # torch's own record of a worker (private; default_collate reads it)
        from torch.utils.data._utils import worker
        worker._worker_info = worker.WorkerInfo(id=worker_id, num_workers=num_workers, seed=torch.initial_seed(),
                                                dataset=None)
    except (ImportError, AttributeError, TypeError):
        pass


def _end(pool, work_id):
    try:
        pool.terminate()
    except AssertionError:  # CPython refuses when results are pending and its result thread has stopped
        for process in pool._pool:
            process.terminate()
    _WORK.pop(work_id, None)  # kept until now: a worker that dies is forked again, from this process


def _run(work_id, slot, count, labels, seed, epoch, rank, index):
    work, slots = _WORK[work_id]
    buffer = slots[slot]
    made = work(buffer[:count], torch.tensor(labels, dtype=torch.int64), seed, epoch, rank, index)
    return _apart_from(made, buffer)


def _apart_from(made, buffer):
    """`made` with every tensor that shares the slot's memory copied: the slot is filled again."""
    if isinstance(made, torch.Tensor):
        start = buffer.data_ptr()
        inside = made.numel() > 0 and start <= made.data_ptr() < start + buffer.numel() * buffer.element_size()
        return made.clone() if inside else made
    if isinstance(made, (list, tuple)):
        parts = [_apart_from(part, buffer) for part in made]
        try:
            return type(made)(parts) if not hasattr(made, "_fields") else type(made)(*parts)
        except TypeError:
            return parts
    if isinstance(made, dict):
        return {key: _apart_from(value, buffer) for key, value in made.items()}
    return made


class StagePool:
    """num_workers forked processes running a BatchWork on batches placed in shared-memory slots.

    The slots (`num_slots` buffers of the largest batch, in shared memory) are made before the
    processes fork, so the workers have them: a batch crosses as its slot's number, its labels as a
    list, and only the result comes back through torch's sharing of tensors. A slot is filled again
    once its batch came back (the iterating thread's bookkeeping)."""

    def __init__(self, work, num_workers, owner, batch_shape, dtype, num_slots):
        self.work_id = next(_WORK_IDS)
        self.slots = [torch.empty(batch_shape, dtype=dtype).share_memory_() for _ in range(num_slots)]
        _WORK[self.work_id] = (work, self.slots)
        context = multiprocessing.get_context("fork")
        self.pool = context.Pool(num_workers, initializer=_start_worker,
                                 initargs=(context.Value("i", 0), num_workers, self.work_id))
        weakref.finalize(owner, _end, self.pool, self.work_id)

    def submit(self, slot, images, labels, seed, epoch, rank, index):
        """Places batch `index` in `slot` and has a worker make its Python part."""
        self.slots[slot][:len(images)].copy_(images)
        return self.pool.apply_async(_run, (self.work_id, slot, len(images), labels.tolist(), seed, epoch, rank,
                                            index))

    def wait(self, result, seconds=0.1):
        """The result of a submitted batch; raises what the worker raised, or RuntimeError when a
        worker died (its batch would never come). Waits in slices, so that Ctrl-C is seen."""
        while True:
            try:
                return result.get(seconds)
            except _multiprocessing.TimeoutError:
                dead = [process.exitcode for process in self.pool._pool if process.exitcode not in (None, 0)]
                if dead:
                    self.pool.terminate()
                    raise RuntimeError(f"a feeder worker process died (exit code {dead[0]}) while it made a "
                                       f"batch") from None
