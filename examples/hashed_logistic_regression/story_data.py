"""The rows of low_level.py: text as the story's Spark job reads it, and the AUC it reports."""
import zlib

import numpy as np

VOCAB_SIZE = 10_000_000
TOKENS_PER_EXAMPLE = 12


def make_rows(rows, seed):
    """`day<TAB>label _ tok tok ...` rows: tokens Zipf-distributed over 5,000 words, labels drawn
    from the words' true weights (main.py's data, as text)."""
    token_weights = np.random.default_rng(0).normal(scale=3.0, size=5000)
    rng = np.random.default_rng(seed)
    words = rng.zipf(1.3, size=(rows, TOKENS_PER_EXAMPLE)) % len(token_weights)
    z = token_weights[words].sum(axis=1) / np.sqrt(TOKENS_PER_EXAMPLE)
    labels = (rng.uniform(size=rows) < 1 / (1 + np.exp(-z))).astype(int)
    return [f"20200503\t{label} _ " + " ".join(f"tok{w}" for w in ws)
            for label, ws in zip(labels, words)]


def hash_token(token, vocab_size=VOCAB_SIZE):
    """The story's `mmh3.hash128(elem, signed=False) % (vocab_size - 1) + 1`, with zlib's CRC-32
    (in the standard library): id 0 stays free for padding."""
    return zlib.crc32(token.encode()) % (vocab_size - 1) + 1


def auc(labels, scores):
    """ROC AUC by ranks (Mann-Whitney)."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = labels > 0.5
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
