"""What the three CTR peers of bench/compare share: the model's shape, the data's layout, the
optimizer settings, the analytic FLOP count, the exact AUC, and the progress-line protocol.

Plain Python (no numpy at import time), so both the system python (PyTorch, the driver) and the
TensorFlow virtualenv can import it.
"""

import socket
import sys
import time

NUM_NUMERIC = 13
NUM_CATEGORICAL = 26
NUMERIC = [f"I{i}" for i in range(1, NUM_NUMERIC + 1)]
CATEGORICAL = [f"C{i}" for i in range(1, NUM_CATEGORICAL + 1)]
COLUMNS = ["label"] + NUMERIC + CATEGORICAL  # Criteo text layout, tab-separated

EMBEDDING_DIM = 16
HIDDEN_UNITS = [256, 128, 64]
# The crosses of the wide part: the pairs `shoal gen-data ctr --seed 1` gives weights to (its
# generator.json lists them; run.sh checks that they still match). Same as examples/ctr.
CROSSES = [("C14", "C19"), ("C4", "C11"), ("C19", "C26"), ("C4", "C15")]

# Bucket counts of the fixed-size peers (TF's hash buckets, PyTorch's tables). shoal keys its
# dynamic tables by the full 64-bit hash and needs none. The data has at most 10,000 values per
# column (run.sh's --max-vocabulary), so 10x that keeps collisions rare; the crosses get 1M.
HASH_BUCKETS = 100_000
CROSS_BUCKETS = 1_000_000

# Optimizers (also in shoal_ctr.yaml): TF's DNNLinearCombinedClassifier defaults in kind --
# Adagrad for the deep part, FTRL for the wide part -- with the learning rates of TF's single
# canned estimators (DNNClassifier 0.05, LinearClassifier 0.2; the combined estimator's own
# defaults, 0.001 and 0.005, barely move in one epoch). Everything else is TF's default.
DEEP_LEARNING_RATE = 0.05
DEEP_INITIAL_ACCUMULATOR = 0.1
WIDE_LEARNING_RATE = 0.2
WIDE_LEARNING_RATE_POWER = -0.5
WIDE_INITIAL_ACCUMULATOR = 0.1
WIDE_L1 = 0.0
WIDE_L2 = 0.0

BATCH_SIZE = 512


def deep_input_width():
    return NUM_NUMERIC + NUM_CATEGORICAL * EMBEDDING_DIM


def dense_multiply_adds(layers):
    """Multiply-adds of one example's forward pass through dense layers of these widths."""
    return sum(a * b for a, b in zip(layers, layers[1:]))


def training_flops_per_example(layers, input_needs_gradient):
    """Training FLOPs per example of dense layers of these widths: forward 2 FLOPs per
    multiply-add; backward 2 per multiply-add for the weights' gradients, and 2 more for the
    gradients of each layer's input -- except the first layer's when its input is data that
    needs none. Embedding lookups, pooling, the wide part's sums, activations, the loss and the
    optimizers' updates are memory-bound and not counted."""
    macs = dense_multiply_adds(layers)
    first = layers[0] * layers[1]
    return 6 * macs - (0 if input_needs_gradient else 2 * first)


def ctr_training_flops_per_example():
    """The CTR model: its first layer's input holds the embeddings, which need their gradient,
    so 6 x the multiply-adds: 6 x (429x256 + 256x128 + 128x64 + 64x1)."""
    return training_flops_per_example([deep_input_width()] + HIDDEN_UNITS + [1], True)


def mlp_training_flops_per_example(layers=(784, 256, 10)):
    """The Fashion-MNIST MLP: its input is pixels, so 4 x 784x256 + 6 x 256x10."""
    return training_flops_per_example(list(layers), False)


def free_ports(n):
    """`n` free TCP ports of loopback (for the peers' clusters)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def exact_auc(labels, scores):
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties counted half. numpy arrays."""
    import numpy as np

    labels = np.asarray(labels, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if labels.shape != scores.shape:
        raise ValueError(f"{labels.shape[0]} labels but {scores.shape[0]} scores")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores), dtype=np.float64)
    # Average ranks over runs of equal scores.
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(scores)]))
    average = (starts + ends + 1) / 2.0  # 1-based average rank of each run
    ranks[order] = np.repeat(average, ends - starts)
    positives = labels > 0.5
    n_pos = int(positives.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUC needs both classes in the held-out labels")
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def log_loss(labels, probabilities):
    import numpy as np

    p = np.clip(np.asarray(probabilities, dtype=np.float64), 1e-7, 1 - 1e-7)
    y = np.asarray(labels, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def read_labels(path):
    """The label column (field 1) of a Criteo text file, as float32."""
    import numpy as np

    with open(path, "rb") as f:
        return np.array([float(line.split(b"\t", 1)[0]) for line in f if line.strip()],
                        dtype=np.float32)


def progress(global_step, examples=None):
    """The line the driver (bench/compare/compare.py) times: it stamps each line on arrival."""
    extra = f" examples={examples}" if examples is not None else ""
    print(f"progress global_step={global_step}{extra} t={time.time():.3f}", flush=True)


def result(**fields):
    """The script's final figures, one JSON line the driver reads."""
    import json

    print("result " + json.dumps(fields, sort_keys=True), flush=True)


def die(message):
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)
