"""PyTorch's side of the CTR comparison: the wide & deep model of shoal_ctr.yaml in plain PyTorch
(Debian's python3-torch), one process, on the same Criteo text files.

Data: each file is parsed once, before training, with pandas' C CSV reader into numpy arrays
(numeric: log1p(max(x, 0)), missing = 0; categorical: pandas' vectorised 64-bit hash of the hex
string, modulo HASH_BUCKETS; crosses: a 64-bit mix of the two keys' hashes, modulo CROSS_BUCKETS;
a missing value or a cross with a missing key is no id). The parse time is reported apart
(`parse_s`), so the driver can give the rate with and without it.

Model: one nn.Embedding (sparse gradients) holding the 26 columns' tables of dim 16 one after the
other (row 0 is a shared all-zero padding row for missing values: an empty mean-pooled bag, as in
TF and shoal); numeric + embeddings -> Linear/ReLU 256, 128, 64 -> 1. Wide part: one nn.Embedding
of dim 1 (sparse gradients) for the 26 columns' and the 4 crosses' weights, summed, plus a bias.
Loss: binary cross-entropy with logits, mean over the batch.
Optimizers: torch.optim.Adagrad (lr 0.05, initial accumulator 0.1) for the deep part, the
embeddings included (sparse rows); the wide part with FTRL-Proximal written here (PyTorch has no
FTRL), following TF's FtrlOptimizer formulas (lr 0.2, power -0.5, accumulator 0.1, no l1/l2),
applied to the rows of the batch only. Initialisation like TF's: Glorot-uniform kernels, zero
biases, embeddings truncated-normal with stddev 1/sqrt(16), wide weights zero.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

_MIX = np.uint64(0x9E3779B97F4A7C15)


def parse(files):
    """Returns (labels [N], numeric [N,13] float32, deep ids [N,26] int64, wide ids [N,30])."""
    dtypes = {"label": np.float32}
    dtypes.update({name: np.float32 for name in M.NUMERIC})
    dtypes.update({name: object for name in M.CATEGORICAL})
    frames = [pd.read_csv(f, sep="\t", header=None, names=M.COLUMNS, dtype=dtypes,
                          na_filter=True, keep_default_na=False, na_values=[""],
                          engine="c") for f in files]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    n = len(frame)
    labels = frame["label"].to_numpy(dtype=np.float32)
    numeric = frame[M.NUMERIC].to_numpy(dtype=np.float32)
    numeric = np.log1p(np.maximum(np.nan_to_num(numeric, nan=0.0), 0.0)).astype(np.float32)

    hashes, present = {}, {}
    for name in M.CATEGORICAL:
        column = frame[name]
        present[name] = column.notna().to_numpy()
        hashes[name] = pd.util.hash_array(column.fillna("").to_numpy(dtype=object))
    buckets = np.uint64(M.HASH_BUCKETS)
    deep = np.zeros((n, M.NUM_CATEGORICAL), dtype=np.int64)
    wide = np.zeros((n, M.NUM_CATEGORICAL + len(M.CROSSES)), dtype=np.int64)
    for c, name in enumerate(M.CATEGORICAL):
        # Row 0 is the padding row; column c owns rows 1 + c*B .. (c+1)*B.
        ids = 1 + c * M.HASH_BUCKETS + (hashes[name] % buckets).astype(np.int64)
        ids[~present[name]] = 0
        deep[:, c] = ids
        wide[:, c] = ids
    cross_base = 1 + M.NUM_CATEGORICAL * M.HASH_BUCKETS
    with np.errstate(over="ignore"):
        for k, (a, b) in enumerate(M.CROSSES):
            mixed = hashes[a] * _MIX + hashes[b]
            mixed ^= mixed >> np.uint64(29)
            ids = cross_base + k * M.CROSS_BUCKETS + \
                (mixed % np.uint64(M.CROSS_BUCKETS)).astype(np.int64)
            ids[~(present[a] & present[b])] = 0
            wide[:, M.NUM_CATEGORICAL + k] = ids
    return labels, numeric, deep, wide


def wide_rows():
    return 1 + M.NUM_CATEGORICAL * M.HASH_BUCKETS + len(M.CROSSES) * M.CROSS_BUCKETS


class WideDeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(1 + M.NUM_CATEGORICAL * M.HASH_BUCKETS, M.EMBEDDING_DIM,
                                      padding_idx=0, sparse=True)
        with torch.no_grad():
            nn.init.trunc_normal_(self.embedding.weight, std=M.EMBEDDING_DIM ** -0.5,
                                  a=-2 * M.EMBEDDING_DIM ** -0.5, b=2 * M.EMBEDDING_DIM ** -0.5)
            self.embedding.weight[0].zero_()
        layers, width = [], M.deep_input_width()
        for units in M.HIDDEN_UNITS:
            layers += [nn.Linear(width, units), nn.ReLU()]
            width = units
        layers.append(nn.Linear(width, 1))
        self.dnn = nn.Sequential(*layers)
        for module in self.dnn:
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        self.wide = nn.Embedding(wide_rows(), 1, padding_idx=0, sparse=True)
        nn.init.zeros_(self.wide.weight)
        self.wide_bias = nn.Parameter(torch.zeros(1))

    def forward(self, numeric, deep_ids, wide_ids):
        embedded = self.embedding(deep_ids).reshape(deep_ids.shape[0], -1)
        deep_logit = self.dnn(torch.cat([numeric, embedded], dim=1))
        wide_logit = self.wide(wide_ids).sum(dim=1) + self.wide_bias
        return (deep_logit + wide_logit).squeeze(1)


class SparseFtrl:
    """FTRL-Proximal as TF's FtrlOptimizer computes it (learning_rate_power -0.5), for the wide
    table's rows in the batch (a sparse gradient) and for the dense bias."""

    def __init__(self, params, lr, initial_accumulator, l1, l2):
        self.lr, self.l1, self.l2 = lr, l1, l2
        self.state = [(p, torch.full_like(p, initial_accumulator), torch.zeros_like(p))
                      for p in params]

    def _update(self, w, n, z, g):
        n_new = n + g * g
        sigma = (n_new.sqrt() - n.sqrt()) / self.lr
        z = z + g - sigma * w
        shrunk = torch.sign(z) * self.l1 - z
        denominator = n_new.sqrt() / self.lr + 2 * self.l2
        w_new = torch.where(z.abs() > self.l1, shrunk / denominator, torch.zeros_like(z))
        return w_new, n_new, z

    @torch.no_grad()
    def step(self):
        for p, n, z in self.state:
            if p.grad is None:
                continue
            g = p.grad
            if g.is_sparse:
                g = g.coalesce()
                rows = g.indices()[0]
                w_new, n_new, z_new = self._update(p[rows], n[rows], z[rows], g.values())
                p[rows], n[rows], z[rows] = w_new, n_new, z_new
            else:
                w_new, n_new, z_new = self._update(p, n, z, g)
                p.copy_(w_new)
                n.copy_(n_new)
                z.copy_(z_new)

    def zero_grad(self):
        for p, _, _ in self.state:
            p.grad = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-files", nargs="+", required=True)
    parser.add_argument("--eval-file", required=True)
    parser.add_argument("--predictions", required=True, help="output .npy of held-out probabilities")
    parser.add_argument("--batch-size", type=int, default=M.BATCH_SIZE)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--log-every", type=int, default=100, help="progress line every N steps")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)

    print("phase parse_start", flush=True)
    t0 = time.time()
    labels, numeric, deep, wide = parse(args.train_files)
    labels, numeric = torch.from_numpy(labels), torch.from_numpy(numeric)
    deep, wide = torch.from_numpy(deep), torch.from_numpy(wide)
    parse_s = time.time() - t0

    model = WideDeep()
    deep_params = [model.embedding.weight] + list(model.dnn.parameters())
    adagrad = torch.optim.Adagrad(deep_params, lr=M.DEEP_LEARNING_RATE,
                                  initial_accumulator_value=M.DEEP_INITIAL_ACCUMULATOR)
    ftrl = SparseFtrl([model.wide.weight, model.wide_bias], M.WIDE_LEARNING_RATE,
                      M.WIDE_INITIAL_ACCUMULATOR, M.WIDE_L1, M.WIDE_L2)
    loss_fn = nn.BCEWithLogitsLoss()
    n = labels.shape[0]
    step = 0
    t_train = time.time()
    for _ in range(args.epochs):
        for begin in range(0, n, args.batch_size):
            end = min(begin + args.batch_size, n)
            logits = model(numeric[begin:end], deep[begin:end], wide[begin:end])
            loss = loss_fn(logits, labels[begin:end])
            adagrad.zero_grad(set_to_none=True)
            ftrl.zero_grad()
            loss.backward()
            adagrad.step()
            ftrl.step()
            step += 1
            if step % args.log_every == 0:
                M.progress(step)
    train_s = time.time() - t_train
    print("phase train_end", flush=True)

    t_eval = time.time()
    eval_labels, eval_numeric, eval_deep, eval_wide = parse([args.eval_file])
    model.eval()
    probabilities = []
    with torch.no_grad():
        for begin in range(0, len(eval_labels), 4096):
            s = slice(begin, begin + 4096)
            probabilities.append(torch.sigmoid(model(torch.from_numpy(eval_numeric[s]),
                                                     torch.from_numpy(eval_deep[s]),
                                                     torch.from_numpy(eval_wide[s]))).numpy())
    probabilities = np.concatenate(probabilities)
    np.save(args.predictions, probabilities.astype(np.float32))
    M.result(examples=int(n * args.epochs), steps=step, parse_s=round(parse_s, 3),
             train_s=round(train_s, 3), eval_s=round(time.time() - t_eval, 3),
             threads=args.threads, final_loss=float(loss))


if __name__ == "__main__":
    main()
