#!/usr/bin/env python3
"""How well a short asynchronous job ends: the spread of its final evaluation over many runs.

    python3 bench/short_batches.py --bin build/shoal [--bin OTHER ...] [--runs 40]
                                   [--workers 1] [--set KEY=VALUE ...] [--keep]

The job is the one `python_spark_yarn` trains in cluster mode: examples/ctr/config.yaml on
10,000 rows of `shoal gen-data ctr --rows 20000 --files 4 --max-vocabulary 100 --seed 1` (files
0 and 1; file 3 is evaluated), 3 epochs of batches of 256, on `shoal launch --ps 1 --workers N`
(a chief and N workers training asynchronously). Each run changes only `input.train.seed`; the
order of the two trainers' updates changes by itself. The binaries take turns run by run, so that
the machine's load falls on all of them alike.

It prints, per binary, the minimum, median and maximum over the runs of the final loss,
prediction/mean (the label mean is 0.241) and AUC, and how many runs ended with a loss above
ln 2 (a coin's; the YARN test's bound), then one JSON line with every run's figures.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(os.path.dirname(HERE), "examples", "ctr", "config.yaml")
KEYS = ("loss", "prediction/mean", "auc")


def generate(binary, directory):
    subprocess.run([binary, "gen-data", "ctr", "--rows", "20000", "--files", "4",
                    "--max-vocabulary", "100", "--seed", "1", "--out", directory],
                   check=True, capture_output=True, timeout=300)


def run_job(binary, data, model_dir, seed, workers, overrides):
    files = [os.path.join(data, f"part-0000{i}.txt") for i in (0, 1)]
    command = [binary, "launch", CONFIG, "--model-dir", model_dir, "--ps", "1",
               "--workers", str(workers),
               "--set", f"input.train.files=[{','.join(files)}]",
               "--set", f"input.eval.files=[{os.path.join(data, 'part-00003.txt')}]",
               "--set", f"input.train.seed={seed}"]
    for item in overrides:
        command += ["--set", item]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with open(os.path.join(model_dir, "summary.json")) as f:
        metrics = json.load(f)["metrics"]
    return {key: metrics[key] for key in KEYS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", action="append", required=True,
                        help="a shoal binary (repeatable: they take turns)")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=1, help="workers besides the chief")
    parser.add_argument("--set", action="append", default=[], dest="overrides",
                        help="a config override for every run, e.g. input.train.batch_size=250")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if args.runs < 1 or args.workers < 0:
        parser.error("--runs must be >= 1 and --workers >= 0")
    binaries = [os.path.abspath(b) for b in args.bin]
    for b in binaries:
        if not os.access(b, os.X_OK):
            parser.error(f"--bin {b}: not an executable file")

    work = tempfile.mkdtemp(prefix="short_batches_")
    try:
        data = os.path.join(work, "data")
        generate(binaries[0], data)
        results = {b: [] for b in binaries}
        for seed in range(1, args.runs + 1):
            for k, b in enumerate(binaries):
                model_dir = os.path.join(work, f"model-{k}-{seed}")
                results[b].append(run_job(b, data, model_dir, seed, args.workers, args.overrides))
                shutil.rmtree(model_dir, ignore_errors=True)
            print(f"run {seed}/{args.runs}: " + "; ".join(
                f"{os.path.basename(b)} loss {results[b][-1]['loss']:.4f}" for b in binaries),
                file=sys.stderr)
        print(f"| binary | runs | loss min / median / max | prediction/mean min / median / max "
              f"| AUC min / median / max | loss > ln 2 |")
        print("|---|---|---|---|---|---|")
        for b in binaries:
            cells = []
            for key in KEYS:
                values = [r[key] for r in results[b]]
                cells.append(f"{min(values):.4f} / {statistics.median(values):.4f} / "
                             f"{max(values):.4f}")
            above = sum(r["loss"] > math.log(2) for r in results[b])
            print(f"| {b} | {len(results[b])} | " + " | ".join(cells) + f" | {above} |")
        print(json.dumps({"workers": args.workers, "overrides": args.overrides,
                          "runs": results}))
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
