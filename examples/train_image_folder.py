#!/usr/bin/env python3
"""Trains a small CNN on a folder of images in torchvision's ImageFolder layout (root/<class>/<image>),
fed by feeder: JPEG, PNG and WebP decoded, cropped, flipped and normalised on feeder's C++ workers.

    build/venv/bin/python3 examples/train_image_folder.py TRAIN_DIR [--val VAL_DIR] [--epochs 5]
        [--image-size 64] [--batch-size 64] [--workers 2]

Without --val, the accuracy is measured on the training folder with the evaluation transform.
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import feeder

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class SmallCNN(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train")
    parser.add_argument("--val")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    train = feeder.DataLoader(args.train, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                              seed=args.seed, image_size=args.image_size, augment="random_resized_crop",
                              normalize=(MEAN, STD))
    val = feeder.DataLoader(args.val or args.train, batch_size=args.batch_size, num_workers=args.workers,
                            image_size=args.image_size, augment="center_crop", normalize=(MEAN, STD))
    classes = train.dataset.classes
    print(f"{len(train.dataset)} training images in {len(classes)} classes: {', '.join(classes)}")
    model = SmallCNN(len(classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        total_loss, seen = 0.0, 0
        for images, labels in train:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * labels.shape[0]
            seen += labels.shape[0]
        model.eval()
        correct, count = 0, 0
        with torch.no_grad():
            for images, labels in val:
                correct += (model(images).argmax(1) == labels).sum().item()
                count += labels.shape[0]
        print(f"epoch {epoch + 1}: loss {total_loss / seen:.4f}, accuracy {correct / count:.4f}, "
              f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
