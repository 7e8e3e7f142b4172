"""Reuse of the large CPU tensors a loader's Python part makes (a transform's tail, a collate_fn).

Their pages would otherwise be faulted in afresh for every batch, which can cost more than the work
itself (see python/torch_memory.cpp). Tensors of at least 128 KiB made on the iterating thread
inside `scope()` come from a cache of blocks freed before, at most 1 GiB of them idle; values never
change. Off where the extension was built without LibTorch or for another torch, and with
FEEDER_REUSE_TORCH_MEMORY=0 in the environment."""

import contextlib
import os
import weakref

import torch

try:
    from . import _torch_memory as _native
except ImportError:  # built without LibTorch (pip install): every tensor as torch makes it
    _native = None


def _major_minor(version):
    return version.split("+")[0].split(".")[:2]


# Resolved once, at import.
_ENABLED = (_native is not None and os.environ.get("FEEDER_REUSE_TORCH_MEMORY", "1") != "0"
            and _major_minor(_native.torch_version) == _major_minor(torch.__version__))


def hold(owner):
    """While `owner` lives, freed blocks wait for reuse; when the last owner goes they are unmapped.
    False when reuse is off (or another CPU allocator was installed at a higher priority)."""
    if not _ENABLED or not _native.install():
        return False
    _native.hold()
    weakref.finalize(owner, _native.release)
    return True


@contextlib.contextmanager
def scope(active):
    """The calling thread's large CPU tensors come from the cache while inside, when `active`."""
    if not active:
        yield
        return
    _native.enter()
    try:
        yield
    finally:
        _native.leave()


def stats():
    """The cache's counts (tests, diagnostics); None when reuse is off."""
    return _native.stats() if _ENABLED else None
