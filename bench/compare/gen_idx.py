#!/usr/bin/env python3
"""A second image data set for bench/compare's MLP, made without shoal or Fashion-MNIST (issue 23:
every goal on "a second data set made by another generator").

    python3 bench/compare/gen_idx.py --out DIR [--train 60000] [--test 10000] [--seed 3]

Writes DIR/train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
t10k-labels-idx1-ubyte.gz in the IDX layout of (Fashion-)MNIST, so that shoal's `fashion_mnist`
input format and bench/compare/torch_mnist.py read them unchanged: 28x28 grey images of 10
classes. Each class is a template of 3-6 random Gaussian strokes; an image is its class's
template moved by up to 3 pixels, blended with up to 35% of another class's template, scaled in
brightness and given pixel noise. NumPy only; a few seconds.
"""

import argparse
import gzip
import os
import struct

import numpy as np

SIDE = 28
PAD = 3


def templates(rng, classes=10):
    y, x = np.mgrid[0:SIDE + 2 * PAD, 0:SIDE + 2 * PAD].astype(np.float64)
    out = np.zeros((classes, SIDE + 2 * PAD, SIDE + 2 * PAD))
    for c in range(classes):
        for _ in range(rng.integers(3, 7)):
            cy, cx = rng.uniform(PAD + 4, SIDE + PAD - 4, 2)
            sy, sx = rng.uniform(1.0, 6.0, 2)
            angle = rng.uniform(0, np.pi)
            dy, dx = y - cy, x - cx
            u = dy * np.cos(angle) + dx * np.sin(angle)
            v = -dy * np.sin(angle) + dx * np.cos(angle)
            out[c] += np.exp(-0.5 * ((u / sy) ** 2 + (v / sx) ** 2))
        out[c] *= 255.0 / out[c].max()
    return out


def images(rng, tmpl, n):
    classes = len(tmpl)
    labels = rng.integers(0, classes, n)
    other = (labels + rng.integers(1, classes, n)) % classes
    mix = rng.uniform(0.0, 0.35, n)
    shifts = rng.integers(0, 2 * PAD + 1, (n, 2))
    out = np.empty((n, SIDE, SIDE), dtype=np.float64)
    for i in range(n):
        sy, sx = shifts[i]
        window = (slice(sy, sy + SIDE), slice(sx, sx + SIDE))
        out[i] = (1 - mix[i]) * tmpl[labels[i]][window] + mix[i] * tmpl[other[i]][window]
    out *= rng.uniform(0.6, 1.1, (n, 1, 1))
    out += rng.normal(0.0, 20.0, out.shape)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8), labels.astype(np.uint8)


def write_idx(path, array):
    magic = {1: 0x801, 3: 0x803}[array.ndim]
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(struct.pack(">I", magic))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.tobytes())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=60_000)
    p.add_argument("--test", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=3)
    a = p.parse_args()
    if a.train < 1 or a.test < 1:
        p.error("--train and --test must be >= 1")
    rng = np.random.default_rng(a.seed)
    tmpl = templates(rng)
    os.makedirs(a.out, exist_ok=True)
    for prefix, n in (("train", a.train), ("t10k", a.test)):
        x, y = images(rng, tmpl, n)
        write_idx(os.path.join(a.out, f"{prefix}-images-idx3-ubyte.gz"), x)
        write_idx(os.path.join(a.out, f"{prefix}-labels-idx1-ubyte.gz"), y)


if __name__ == "__main__":
    main()
