#!/usr/bin/env python3
"""A second CTR data set for bench/compare, made without shoal (issue 23: every goal on "a second
data set made by another generator").

    python3 bench/compare/gen_ctr.py --rows N --files F --max-vocabulary V --out DIR [--seed S]

Writes DIR/part-00000.txt ... part-<F-1>.txt in the layout `shoal gen-data ctr` uses and all
three peers read (Criteo's text layout: label, 13 integer columns, 26 categorical columns of
8 hex digits, tab-separated, an empty field for a missing value) and DIR/generator.json with the
fields compare.py reads. Everything else differs from shoal's generator on purpose:

- categorical values follow a Zipf law over each column's vocabulary (exponent 1.05-1.3, so a
  few values dominate as in real logs), the vocabularies are log-uniform in [20, V], missing
  rates in [0, 0.3], and the hex strings are random 32-bit values, not hashes of an index;
- integer columns are negative binomial counts with 0-40% missing;
- the label is Bernoulli of a logistic model made of per-value weights of 10 columns, a
  weight per value pair of the crosses in ctr_model.py, the log1p of four counts and a bias
  that puts the click rate near 22%.

"best_auc" is the exact AUC of the true click probabilities on the last file (the held-out one),
the ceiling any model can reach. NumPy only; about a minute per million rows on one core.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctr_model as M  # noqa: E402

CHUNK = 100_000


def zipf_sampler(rng, vocabulary, exponent):
    """Returns f(n) drawing n ranks in [0, vocabulary) with P(rank r) ~ 1 / (r + 1)^exponent."""
    weights = 1.0 / np.arange(1, vocabulary + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return lambda n: np.minimum(np.searchsorted(cdf, rng.random(n)), vocabulary - 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, required=True, help="rows in all, over every file")
    p.add_argument("--files", type=int, required=True, help="files; the last one is held out")
    p.add_argument("--max-vocabulary", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.rows < a.files or a.files < 2:
        p.error("need --files >= 2 and at least one row per file")
    if a.max_vocabulary < 20:
        p.error("--max-vocabulary must be >= 20")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)

    # The columns.
    vocab = np.exp(rng.uniform(np.log(20), np.log(a.max_vocabulary), M.NUM_CATEGORICAL))
    vocab = vocab.astype(np.int64)
    exponents = rng.uniform(1.05, 1.3, M.NUM_CATEGORICAL)
    cat_missing = rng.uniform(0.0, 0.3, M.NUM_CATEGORICAL)
    samplers = [zipf_sampler(rng, int(v), e) for v, e in zip(vocab, exponents)]
    # Each column's values as text, rank order; index v (the vocabulary size) is the empty field.
    names = []
    for v in vocab:
        codes = rng.choice(1 << 32, size=int(v), replace=False)
        names.append(np.array([f"{c:08x}" for c in codes] + [""], dtype=object))
    num_missing = rng.uniform(0.0, 0.4, M.NUM_NUMERIC)
    num_mean = np.exp(rng.uniform(0.0, 5.0, M.NUM_NUMERIC))
    num_shape = rng.uniform(0.3, 2.0, M.NUM_NUMERIC)

    # The label's model.
    informative = rng.choice(M.NUM_CATEGORICAL, size=10, replace=False)
    value_weights = {int(c): rng.normal(0.0, 0.4, int(vocab[c])) for c in informative}
    cross_cols = [(M.CATEGORICAL.index(x), M.CATEGORICAL.index(y)) for x, y in M.CROSSES]
    pair_table = 1 << 16
    pair_weights = [rng.normal(0.0, 0.35, pair_table) for _ in cross_cols]
    numeric_informative = rng.choice(M.NUM_NUMERIC, size=4, replace=False)
    numeric_weights = rng.normal(0.0, 0.25, 4)
    bias = -1.6

    rows_per_file = [a.rows // a.files + (1 if i < a.rows % a.files else 0)
                     for i in range(a.files)]
    held_out_p, held_out_y = [], []
    clicks = 0
    for f, file_rows in enumerate(rows_per_file):
        path = os.path.join(a.out, f"part-{f:05d}.txt")
        with open(path, "w") as out:
            done = 0
            while done < file_rows:
                n = min(CHUNK, file_rows - done)
                done += n
                ranks = np.stack([s(n) for s in samplers], axis=1)  # n x 26
                logit = np.full(n, bias)
                for c, w in value_weights.items():
                    logit += w[ranks[:, c]]
                for (x, y), w in zip(cross_cols, pair_weights):
                    logit += w[(ranks[:, x] * 1_000_003 + ranks[:, y]) % pair_table]
                counts = np.empty((n, M.NUM_NUMERIC), dtype=np.int64)
                for j in range(M.NUM_NUMERIC):
                    # Negative binomial with mean num_mean[j]: a gamma-Poisson mixture.
                    lam = rng.gamma(num_shape[j], num_mean[j] / num_shape[j], n)
                    counts[:, j] = rng.poisson(lam)
                for w, j in zip(numeric_weights, numeric_informative):
                    logit += w * (np.log1p(counts[:, j]) - np.log1p(num_mean[j]))
                prob = 1.0 / (1.0 + np.exp(-logit))
                label = (rng.random(n) < prob).astype(np.int64)
                clicks += int(label.sum())
                if f == a.files - 1:
                    held_out_p.append(prob)
                    held_out_y.append(label)
                # Missing values, drawn after the label: a missing field hides the value only.
                for c in range(M.NUM_CATEGORICAL):
                    ranks[rng.random(n) < cat_missing[c], c] = vocab[c]
                num_text = counts.astype(str).astype(object)
                for j in range(M.NUM_NUMERIC):
                    num_text[rng.random(n) < num_missing[j], j] = ""
                columns = [label.astype(str).astype(object)]
                columns += [num_text[:, j] for j in range(M.NUM_NUMERIC)]
                columns += [names[c][ranks[:, c]] for c in range(M.NUM_CATEGORICAL)]
                out.write("".join("\t".join(r) + "\n" for r in zip(*columns)))
        print(f"gen_ctr: wrote {path} ({file_rows} rows)", file=sys.stderr)

    y = np.concatenate(held_out_y)
    best = M.exact_auc(y, np.concatenate(held_out_p)) if 0 < y.sum() < len(y) else 0.5
    meta = {
        "generator": "bench/compare/gen_ctr.py (NumPy)",
        "seed": a.seed,
        "rows": a.rows,
        "files": a.files,
        "max_vocabulary": a.max_vocabulary,
        "crosses": [list(c) for c in M.CROSSES],
        "best_auc": round(float(best), 6),
        "click_rate": round(clicks / a.rows, 4),
        "categorical": [{"name": M.CATEGORICAL[c], "vocabulary_size": int(vocab[c]),
                         "missing_rate": round(float(cat_missing[c]), 4),
                         "zipf_exponent": round(float(exponents[c]), 3)}
                        for c in range(M.NUM_CATEGORICAL)],
    }
    with open(os.path.join(a.out, "generator.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
    print(f"gen_ctr: {a.rows} rows, click rate {meta['click_rate']}, best AUC {meta['best_auc']}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
