"""An ImageNet-style training script as torch users write it (pytorch/examples' imagenet/main.py,
shrunk): ImageFolder + Compose + DistributedSampler with set_epoch, DistributedDataParallel over
gloo, and an evaluation reduced with all_reduce, its remainder read by an auxiliary loader over a
Subset of val_loader.dataset. Its port to feeder changes one line: the DataLoader's import.

    python3 imagenet_style.py TRAIN VAL --port P
Prints one line per rank and evaluation: "rank R epoch E acc1 A count N".
"""

import argparse
import datetime
import faulthandler
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
from torch.utils.data import Subset


def validate(val_loader, model, args, rank):
    def run_validate(loader):
        correct = torch.zeros(2)
        with torch.no_grad():
            for images, target in loader:
                output = model(images)
                correct[0] += (output.argmax(1) == target).sum()
                correct[1] += len(target)
        return correct

    model.eval()
    totals = run_validate(val_loader)
    dist.all_reduce(totals)
    if len(val_loader.sampler) * args.world_size < len(val_loader.dataset):
        aux_val_dataset = Subset(val_loader.dataset,
                                 range(len(val_loader.sampler) * args.world_size, len(val_loader.dataset)))
        aux_val_loader = DataLoader(aux_val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=1)
        if rank == 0:
            totals += run_validate(aux_val_loader)
        dist.broadcast(totals, 0)
    return 100.0 * totals[0].item() / totals[1].item(), int(totals[1].item())


def main_worker(rank, args):
    # A run that hangs prints every thread's stack and exits before the test's timeout, so a failure
    # says where it stopped.
    faulthandler.dump_traceback_later(480, exit=True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.world_size, timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 3))
    model = nn.parallel.DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(args.train, transforms.Compose([
        transforms.RandomResizedCrop(16), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    val_dataset = datasets.ImageFolder(args.val, transforms.Compose([
        transforms.Resize(20), transforms.CenterCrop(16), transforms.ToTensor(), normalize]))
    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    val_sampler = torch.utils.data.distributed.DistributedSampler(val_dataset, shuffle=False, drop_last=True)

    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
                              num_workers=2, pin_memory=True, sampler=train_sampler)
    val_loader = DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=2,
                            pin_memory=True, sampler=val_sampler)

    acc1, count = validate(val_loader, model, args, rank)
    print(f"rank {rank} epoch -1 acc1 {acc1:.3f} count {count}", flush=True)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for images, target in train_loader:
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc1, count = validate(val_loader, model, args, rank)
        print(f"rank {rank} epoch {epoch} acc1 {acc1:.3f} count {count} loss {loss.item():.4f}", flush=True)
    # torch 1.13's gloo deadlocks now and then at teardown, with either loader: the main thread,
    # holding the GIL, destroys the process group (the last reference, in DDP's Reducer) and joins
    # a gloo worker that is freeing the last collective's tensors, which needs the GIL
    # (~ProcessGroupGloo -> thread::join against TensorImpl::destroy_pyobj_if_needed, seen in about
    # one run in 30 even after a barrier). Each rank ends here, its results printed, without that
    # teardown.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("val")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.world_size = 2
    faulthandler.dump_traceback_later(500, exit=True)
    mp.spawn(main_worker, nprocs=args.world_size, args=(args,))
