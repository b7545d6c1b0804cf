"""PyTorch's side of the Fashion-MNIST comparison: the MLP 784-256-10 (ReLU) of shoal_mnist.yaml
in plain PyTorch (Debian's python3-torch), one process: batch 128, Adam (lr 0.001, betas 0.9/0.999,
epsilon 1e-8, as shoal's defaults), softmax cross-entropy, the training images
shuffled each epoch, pixels scaled to [0, 1]. The IDX files are read into memory first (not
timed: the driver times training by the progress lines). Prints progress lines and a final result
line with the test accuracy.
"""

import argparse
import gzip
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


def read_idx(path):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        data = f.read()
    if data[:2] != b"\0\0":
        M.die(f"{path}: not an IDX file")
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(images_path):
    labels_path = images_path.replace("images-idx3", "labels-idx1")
    images = read_idx(images_path).reshape(-1, 784).astype(np.float32) / 255.0
    labels = read_idx(labels_path).astype(np.int64)
    return torch.from_numpy(images), torch.from_numpy(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, help="train-images-idx3-ubyte(.gz)")
    parser.add_argument("--test", required=True, help="t10k-images-idx3-ubyte(.gz)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--log-every", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    x, y = load(args.train)
    test_x, test_y = load(args.test)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    for module in model:
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        order = torch.randperm(x.shape[0])
        for begin in range(0, x.shape[0], args.batch_size):
            idx = order[begin:begin + args.batch_size]
            loss = loss_fn(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step % args.log_every == 0:
                M.progress(step)
    train_s = time.time() - t0
    with torch.no_grad():
        accuracy = float((model(test_x).argmax(dim=1) == test_y).float().mean())
    M.result(examples=int(x.shape[0]) * args.epochs, steps=step, train_s=round(train_s, 3),
             accuracy=round(accuracy, 4), threads=args.threads)


if __name__ == "__main__":
    main()
