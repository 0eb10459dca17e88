#!/usr/bin/env python3
"""Trains torchvision's MobileNetV2, converted to dsconv (``dsconv.convert``), on Fashion-MNIST,
and the same network unconverted the same way, and prints both accuracies.

Fashion-MNIST (Debian's dataset-fashion-mnist: 10 classes of 28x28 grey images) is padded to
the 32x32x3 input of the networks' CIFAR-size configuration. On a machine without a GPU the
converted network runs dsconv's host platform (its GPU kernels executed on the CPU), which is
slow: the defaults (a narrow network, a few hundred small steps) finish in minutes there.

    PYTHONPATH=python /usr/bin/python3 examples/torch_train.py               # CPU, minutes
    PYTHONPATH=python python3 examples/torch_train.py --device cuda --steps 2000 --batch 128 --width 1.0
"""

import argparse
import copy
import gzip
import os
import sys
import time

import numpy as np
import torch
from torch import nn
import torchvision

import dsconv

DATA = "/usr/share/datasets/fashion-mnist"


def load_split(kind):
    """Images [N, 3, 32, 32] float (grey replicated, padded by 2, normalised) and labels [N]."""
    with gzip.open(os.path.join(DATA, f"{kind}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA, f"{kind}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    x = nn.functional.pad((x - 0.286) / 0.353, (2, 2, 2, 2)).expand(-1, 3, -1, -1).contiguous()
    return x, torch.from_numpy(labels.astype(np.int64))


def progress(label, done, total, loss, started):
    width = 30
    filled = width * done // total
    rate = done / max(time.time() - started, 1e-9)
    sys.stdout.write(f"\r{label:>11} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} steps  "
                     f"loss {loss:.3f}  {rate:.1f} steps/s")
    sys.stdout.flush()
    if done == total:
        sys.stdout.write("\n")


def accuracy(model, x, y, batch, device, memory_format):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            xb = x[i:i + batch].to(device).contiguous(memory_format=memory_format)
            correct += (model(xb).argmax(1).cpu() == y[i:i + batch]).sum().item()
    return correct / len(x)


def train(label, model, data, args, memory_format):
    (x, y), (xt, yt) = data
    device = torch.device(args.device)
    model.to(device).to(memory_format=memory_format)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=4e-5)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps)
    generator = torch.Generator().manual_seed(args.seed)
    before = accuracy(model, xt, yt, args.batch, device, memory_format)
    started = time.time()
    for step in range(args.steps):
        model.train()
        idx = torch.randint(0, len(x), (args.batch,), generator=generator)
        xb = x[idx].to(device).contiguous(memory_format=memory_format)
        loss = nn.functional.cross_entropy(model(xb), y[idx].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 5 == 4 or step + 1 == args.steps:
            progress(label, step + 1, args.steps, loss.item(), started)
    seconds = time.time() - started
    after = accuracy(model, xt, yt, args.batch, device, memory_format)
    print(f"{label:>11}: test accuracy {100 * before:.1f}% before, {100 * after:.1f}% after {args.steps} steps "
          f"of {args.batch} ({seconds:.0f} s)")
    return after


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=float, default=0.35, help="MobileNetV2's width multiplier")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--test-images", type=int, default=1000, help="test images scored (of 10000)")
    parser.add_argument("--channels-last", action="store_true", help="NHWC tensors (dsconv's NHWC kernels)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only-converted", action="store_true", help="skip the unconverted model")
    args = parser.parse_args()

    x, y = load_split("train")
    xt, yt = load_split("t10k")
    data = ((x, y), (xt[:args.test_images], yt[:args.test_images]))
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    torch.manual_seed(args.seed)
    reference = torchvision.models.mobilenet_v2(num_classes=10, width_mult=args.width)
    converted = dsconv.convert(copy.deepcopy(reference))
    print(f"MobileNetV2 (width {args.width}) on Fashion-MNIST, {args.device}, "
          f"{'channels_last' if args.channels_last else 'NCHW'}: "
          f"{sum(isinstance(m, dsconv.DepthwiseConv2d) for m in converted.modules())} depthwise and "
          f"{sum(isinstance(m, dsconv.PointwiseConv2d) for m in converted.modules())} 1x1 layers run by dsconv")
    ours = train("dsconv", converted, data, args, memory_format)
    if not args.only_converted:
        theirs = train("PyTorch", reference, data, args, memory_format)
        print(f"accuracy: dsconv {100 * ours:.1f}%, PyTorch {100 * theirs:.1f}% (same initial weights, same batches)")


if __name__ == "__main__":
    main()
