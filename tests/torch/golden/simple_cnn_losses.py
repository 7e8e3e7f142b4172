#!/usr/bin/python3
"""Golden values for tests/torch/train_golden_test.cpp, computed by PyTorch (Debian's python3-torch).

The same SimpleCNN as feeder's (src/train/simple_cnn.cpp), with weights and batches made from
formulas both sides can compute without files, trained for a few Adam steps (lr 1e-3) in fp32 on the
CPU with one thread. Prints the loss of every step and checksums of the parameters afterwards, in
the form the C++ test stores them. Run it again and paste the output when the recipe changes:

    /usr/bin/python3 tests/torch/golden/simple_cnn_losses.py
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH_SIZE = 8
NUM_STEPS = 4


class SimpleCNN(nn.Module):
    """The article's SimpleCNN, in its own order (ReLU, then pooling): the same function as feeder's."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.reshape(x.size(0), 32 * 7 * 7)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def formula_parameters(model):
    """Parameter k (in the order conv1.weight, conv1.bias, conv2.weight, ...) element i:
    sin(0.731 * i + k) / sqrt(fan_in), computed in double, stored as float."""
    with torch.no_grad():
        for k, (name, parameter) in enumerate(model.named_parameters()):
            layer = getattr(model, name.split(".")[0])
            fan_in = layer.weight[0].numel()
            values = [math.sin(0.731 * i + k) / math.sqrt(fan_in) for i in range(parameter.numel())]
            parameter.copy_(torch.tensor(values, dtype=torch.float64).reshape(parameter.shape))


def formula_batch(step):
    """Pixels (b * 131 + p * 17 + step * 7) mod 256 over the image's flat index p, divided by 255;
    labels (b * 3 + step) mod 10."""
    b = torch.arange(BATCH_SIZE, dtype=torch.int64).reshape(BATCH_SIZE, 1)
    p = torch.arange(28 * 28, dtype=torch.int64).reshape(1, 28 * 28)
    pixels = (b * 131 + p * 17 + step * 7) % 256
    images = pixels.to(torch.float32).div(255.0).reshape(BATCH_SIZE, 1, 28, 28)
    labels = (torch.arange(BATCH_SIZE, dtype=torch.int64) * 3 + step) % 10
    return images, labels


def main():
    torch.set_num_threads(1)
    model = SimpleCNN()
    formula_parameters(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    print("// Losses of steps 0..%d" % (NUM_STEPS - 1))
    for step in range(NUM_STEPS):
        images, labels = formula_batch(step)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        print("%.9g," % loss.item())
    print("// Sum and sum of squares of every parameter after the last step")
    for name, parameter in model.named_parameters():
        p = parameter.detach().to(torch.float64)
        print('{"%s", %.12g, %.12g},' % (name, p.sum().item(), (p * p).sum().item()))


if __name__ == "__main__":
    main()
