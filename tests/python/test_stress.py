"""Random sequences of what training loops do to a feeder.DataLoader (break out, start a new pass,
set_epoch, state_dict, load_state_dict, build a new loader), streamed and in memory, with 0 and 2
workers. Every batch must be the reference batch for its epoch and position, and nothing may hang:
a watchdog (faulthandler) prints every thread's Python stack and ends the process after a bound."""

import faulthandler
import json
import random
import sys

import pytest

import feeder

FASHION_MNIST_TEST = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
WINDOW = 400  # given explicitly: the default window of a streamed set follows the budget


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """FashionMNIST's test set in row groups of 250: streamed within 4 MiB, many windows an epoch."""
    out = tmp_path_factory.mktemp("stress") / "shards"
    feeder.convert(FASHION_MNIST_TEST, str(out) + "/", shard_rows=2500, row_group_size=250, layout="image")
    return out


class Model:
    """What the next batch must be: the loader's documented semantics, kept by hand."""

    def __init__(self):
        self.epoch = None
        self.position = 0
        self.next_epoch = 0
        self.pending = False  # load_state_dict() placed the loader mid-epoch

    def snapshot(self):
        return dict(vars(self))


def run_scenario(seed, source, streaming, reference, operations=60):
    rng = random.Random(seed)
    options = dict(batch_size=rng.choice([64, 100, 128]), shuffle=True, seed=rng.randrange(1000), shuffle_window=WINDOW)
    if streaming:
        options["memory_budget"] = "4MiB"

    def build():
        return feeder.DataLoader(source, num_workers=rng.choice([0, 2]), **options)

    def expected(epoch):
        key = (options["batch_size"], options["seed"], epoch)
        if key not in reference:
            ref = feeder.DataLoader(source, num_workers=0, memory_budget="64MiB", batch_size=options["batch_size"],
                                    shuffle=True, seed=options["seed"], shuffle_window=WINDOW)
            assert not ref.streaming
            ref.set_epoch(epoch)
            reference[key] = [labels.tolist() for _, labels in ref]
        return reference[key]

    loader = build()
    assert loader.streaming == streaming
    model = Model()
    saved = None
    iterator = None
    for step in range(operations):
        op = rng.choice(["iterate", "iterate", "iterate", "continue", "set_epoch", "state", "load", "rebuild"])
        where = f"seed {seed}, step {step}: {op}"
        if op in ("iterate", "continue"):
            if op == "iterate" or iterator is None:
                iterator = iter(loader)
                if model.pending:
                    model.pending = False
                else:
                    model.epoch, model.position = model.next_epoch, 0
                model.next_epoch = model.epoch + 1
            batches = expected(model.epoch)
            for _ in range(rng.randrange(1, len(batches) + 2)):
                try:
                    _, labels = next(iterator)
                except StopIteration:
                    assert model.position == len(batches), f"{where}: the epoch ended at batch {model.position}"
                    iterator = None
                    break
                assert model.position < len(batches), f"{where}: a batch past the epoch's end"
                assert labels.tolist() == batches[model.position], f"{where}: batch {model.position}"
                model.position += 1
        elif op == "set_epoch":
            epoch = rng.randrange(4) if model.epoch is None or rng.random() < 0.5 else model.epoch
            if model.pending and epoch != model.epoch:
                with pytest.raises(ValueError, match="after load_state_dict"):
                    loader.set_epoch(epoch)
            else:
                loader.set_epoch(epoch)
                model.next_epoch = epoch
        elif op == "state":
            saved = (json.loads(json.dumps(loader.state_dict())), model.snapshot())
            if model.epoch is not None:
                assert saved[0]["_num_yielded"] == model.position, where
        elif op == "load" and saved is not None:
            state, snapshot = saved
            loader.load_state_dict(state)
            vars(model).update(snapshot)
            model.pending = state["loader_state"] is not None and not state["_iterator_finished"]
            iterator = None  # load_state_dict ends the pass in progress
        elif op == "rebuild":
            del iterator
            iterator = None
            loader = build()
            model = Model()
            if saved is not None and rng.random() < 0.7:
                state, snapshot = saved
                loader.load_state_dict(state)
                vars(model).update(snapshot)
                model.pending = state["loader_state"] is not None and not state["_iterator_finished"]


@pytest.mark.parametrize("streaming", [False, True])
def test_random_breaks_restarts_and_resumes_give_the_reference_batches(shards, streaming):
    # sys.__stderr__: pytest captures sys.stderr, and the stacks of a hang must reach the log
    faulthandler.dump_traceback_later(120, exit=True, file=sys.__stderr__)  # a hang fails, with stacks
    try:
        reference = {}
        for seed in range(6):
            run_scenario(seed, shards, streaming, reference)
    finally:
        faulthandler.cancel_dump_traceback_later()
