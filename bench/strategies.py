#!/usr/bin/env python3
"""Examples/s of shoal's strategies on a local cluster over loopback (issue 21). One command:

  bench/strategies.py [--rows N] [--mnist-epochs E] [--rounds R] [--trainers 2,4]

(defaults: 1,000,000 CTR rows, 3 Fashion-MNIST epochs as the example, 2 rounds; about 10
minutes on 2 vCPU)

For 2 and 4 trainers (the chief + 1 or 3 workers), each of
  parameter_server   1 PS, asynchronous (the default),
  ps sync            1 PS, run.sync_replicas = the number of trainers (TF's SyncReplicasOptimizer),
  all_reduce         no PS, every trainer a replica, gradients summed over a Gloo ring,
  hybrid             1 PS holding the embedding tables (and a copy of the dense variables),
                     the dense variables all-reduced on the trainers' ring,
on (a) the CTR model of bench/compare/shoal_ctr.yaml on `shoal gen-data ctr --seed 1` rows and
(b) Fashion-MNIST (examples/fashion_mnist/config.yaml, Debian's dataset-fashion-mnist). Each run
trains one epoch (--rows CTR rows; Fashion-MNIST's 60,000 images x --mnist-epochs), evaluates the
final checkpoint (the CTR held-out file, the 10,000 test images) and reports
  ex/s      the job's examples (summary.json) / the longest training time of its trainers (their
            "Training stopped ... examples in S s" lines: first batch to last step, start-up,
            checkpoints at the ends and evaluation excluded),
  AUC / accuracy   of the final evaluation (summary.json),
  wall s    of the whole `shoal launch`.
--models ctr_example instead trains examples/ctr/config.yaml as it is (3 epochs of 750K rows of
`shoal gen-data ctr --rows 1000000 --files 4 --max-vocabulary 1000 --seed 1`, as examples/ctr/run.sh
makes them; AUC on the fourth file): the issue's "CTR example with hybrid within 0.01 of the PS
AUC". Nothing is pinned; 4 trainers (plus a PS) on a 2-core machine are oversubscribed. The load
average is printed before each run. SHOAL_BIN names the binary (default build/shoal);
SHOAL_JOB_SECRET is set for the cluster when unset. Data and runs go to a temporary directory,
removed at the end unless --keep.
"""

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINING_STOPPED = re.compile(r"Training stopped \(.*\) at global step \d+ after \d+ steps, "
                              r"\d+ examples in ([0-9.]+) s")
STRATEGIES = ["parameter_server", "ps sync", "all_reduce", "hybrid"]


def log(message):
    print(f"strategies: {message}", file=sys.stderr, flush=True)


def launch_args(strategy, trainers):
    workers = ["--workers", str(trainers - 1)]
    if strategy == "parameter_server":
        return ["--ps", "1"] + workers
    if strategy == "ps sync":
        return ["--ps", "1"] + workers + ["--set", f"run.sync_replicas={trainers}"]
    if strategy == "hybrid":
        return ["--ps", "1"] + workers + ["--set", "run.strategy=hybrid"]
    return ["--ps", "0"] + workers + ["--set", "run.strategy=all_reduce"]


def run_one(args, env, work, model, strategy, trainers, rnd, config, overrides, metric):
    name = f"{model}-{strategy.replace(' ', '_')}-{trainers}-{rnd}"
    run_dir = os.path.join(work, name)
    os.makedirs(run_dir)
    model_dir = os.path.join(run_dir, "model")
    log_path = os.path.join(run_dir, "log.txt")
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    with open(log_path, "w") as out:
        code = subprocess.run([args.shoal_bin, "launch", config, "--model-dir", model_dir] +
                              launch_args(strategy, trainers) + overrides, env=env, stdout=out,
                              stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - t0
    record = {"model": model, "strategy": strategy, "trainers": trainers, "round": rnd,
              "load_before": round(load, 2), "wall_s": round(wall, 1), "log": log_path}
    if code != 0:
        record["error"] = f"shoal launch exited with {code}"
    else:
        with open(log_path) as f:
            seconds = [float(m.group(1)) for m in map(TRAINING_STOPPED.search, f) if m]
        summary = json.load(open(os.path.join(model_dir, "summary.json")))
        record.update(examples=summary["examples"], global_step=summary["global_step"],
                      train_s=max(seconds) if seconds else None,
                      trainer_lines=len(seconds), metric=summary["metrics"].get(metric))
        if seconds:
            record["examples_per_s"] = summary["examples"] / max(seconds)
        if len(seconds) != trainers:
            record["note"] = f"{len(seconds)} 'Training stopped' lines for {trainers} trainers"
    rate = record.get("examples_per_s")
    log(f"  {name}: " + (f"{rate:,.0f} ex/s, {metric} {record['metric']:.4f}, "
                         f"wall {record['wall_s']} s, load {record['load_before']}"
                         if rate else record.get("error", record.get("note", "?"))))
    return record


def table(records, model, metric):
    print(f"\n{model}: ex/s (range over rounds), final {metric}, wall s of the launch\n")
    print(f"| strategy | trainers | ex/s | {metric} | wall s | load before |")
    print("|---|---|---|---|---|---|")

    def span(values, fmt):
        values = [v for v in values if v is not None]
        if not values:
            return "failed"
        lo, hi = fmt.format(min(values)), fmt.format(max(values))
        return lo if lo == hi else f"{lo} - {hi}"

    for trainers in sorted({r["trainers"] for r in records}):
        for strategy in STRATEGIES:
            rs = [r for r in records if r["model"] == model and r["strategy"] == strategy and
                  r["trainers"] == trainers]
            if not rs:
                continue
            print(f"| {strategy} | {trainers} | {span([r.get('examples_per_s') for r in rs], '{:,.0f}')}"
                  f" | {span([r.get('metric') for r in rs], '{:.4f}')}"
                  f" | {span([r['wall_s'] for r in rs], '{:.0f}')}"
                  f" | {span([r['load_before'] for r in rs], '{:.1f}')} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shoal-bin", default=os.environ.get("SHOAL_BIN",
                                                         os.path.join(ROOT, "build", "shoal")))
    p.add_argument("--rows", type=int, default=1_000_000, help="CTR training rows")
    p.add_argument("--mnist-epochs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--trainers", default="2,4")
    p.add_argument("--models", default="ctr,mnist")
    p.add_argument("--keep", action="store_true", help="keep the data, models and logs")
    args = p.parse_args()
    if not os.access(args.shoal_bin, os.X_OK):
        raise SystemExit(f"strategies: {args.shoal_bin} is not an executable shoal binary "
                         "(cmake --build build --target shoal)")
    trainer_counts = [int(t) for t in args.trainers.split(",")]
    models = args.models.split(",")
    env = dict(os.environ)
    env.setdefault("SHOAL_JOB_SECRET", secrets.token_hex(16))
    work = tempfile.mkdtemp(prefix="shoal-strategies.")
    log(f"work in {work}; load average {os.getloadavg()}")
    records = []
    try:
        runs = []
        if "ctr" in models:
            data = os.path.join(work, "ctr-data")
            files = 4
            subprocess.run([args.shoal_bin, "gen-data", "ctr", "--rows",
                            str(args.rows + args.rows // files), "--files", str(files + 1),
                            "--max-vocabulary", "10000", "--seed", "1", "--out", data],
                           check=True, stdout=subprocess.DEVNULL)
            train = ", ".join(os.path.join(data, f"part-{i:05d}.txt") for i in range(files))
            overrides = ["--set", f"input.train.files=[{train}]",
                         "--set", f"input.eval.files=[{os.path.join(data, 'part-00004.txt')}]"]
            runs.append(("ctr", os.path.join(ROOT, "bench/compare/shoal_ctr.yaml"), overrides,
                         "auc"))
        if "ctr_example" in models:
            data = os.path.join(work, "ctr-example-data")
            subprocess.run([args.shoal_bin, "gen-data", "ctr", "--rows", "1000000", "--files", "4",
                            "--max-vocabulary", "1000", "--seed", "1", "--out", data],
                           check=True, stdout=subprocess.DEVNULL)
            train = ", ".join(os.path.join(data, f"part-{i:05d}.txt") for i in range(3))
            overrides = ["--set", f"input.train.files=[{train}]",
                         "--set", f"input.eval.files=[{os.path.join(data, 'part-00003.txt')}]"]
            runs.append(("ctr_example", os.path.join(ROOT, "examples/ctr/config.yaml"), overrides,
                         "auc"))
        if "mnist" in models:
            overrides = ["--set", f"input.train.num_epochs={args.mnist_epochs}",
                         "--set", "run.save_checkpoints_steps=0",
                         "--set", "eval.throttle_secs=100000", "--set", "eval.exporters=[]"]
            runs.append(("fashion_mnist", os.path.join(ROOT, "examples/fashion_mnist/config.yaml"),
                         overrides, "accuracy"))
        for rnd in range(1, args.rounds + 1):
            for model, config, overrides, metric in runs:
                for trainers in trainer_counts:
                    for strategy in STRATEGIES:
                        records.append(run_one(args, env, work, model, strategy, trainers, rnd,
                                               config, overrides, metric))
        with open(os.path.join(work, "runs.jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        for model, _, _, metric in runs:
            table(records, model, metric)
        log(f"load average at the end {os.getloadavg()}")
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
