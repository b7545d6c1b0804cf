"""Driver of bench/compare/mwms.sh: shoal's `run.strategy: all_reduce` against TensorFlow 2.15's
MultiWorkerMirroredStrategy (Keras model.fit), 2 trainers each over loopback, on the same CTR
rows; examples/s of both in each round and the exact AUC of both on the same held-out rows.

Runs under the TensorFlow virtualenv's python (it has numpy for the AUC). Each round runs TF, then
shoal, back to back, so that a busy period of the machine tends to hit both; the report gives every
round and the range.

Rates:
  shoal       the job's examples (summary.json) / the longest training time of its trainers (the
              "Training stopped ... examples in S s" log line: from the first batch to the last
              step, start-up and final checkpoint excluded);
  TF steady   the examples after the first --warmup-steps global steps / their time (a Keras
              callback's stamps): leaves out tracing, the first all-reduces and the pipeline fill;
  TF fit      the job's examples / model.fit's whole time on worker 0 (those included).
The 3x goal of issue 21 is judged on TF's steady rate, the more favourable to TF.
"""

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING_STOPPED = re.compile(r"Training stopped \(.*\) at global step \d+ after \d+ steps, "
                              r"\d+ examples in ([0-9.]+) s")


def log(message):
    print(f"mwms: {message}", file=sys.stderr, flush=True)


def result_line(path):
    with open(path) as f:
        for line in reversed(f.readlines()):
            if line.startswith("result "):
                return json.loads(line[len("result "):])
    raise SystemExit(f"mwms: no result line in {path}")


class Bench:
    def __init__(self, args):
        self.args = args
        self.data = os.path.join(args.work, "data")
        self.env = dict(os.environ)
        self.env.pop("TF_CONFIG", None)
        self.env.setdefault("SHOAL_JOB_SECRET", secrets.token_hex(16))
        self.env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        self.records = []

    def generate(self):
        a = self.args
        total = a.rows + a.rows // a.files  # the held-out file is as large as a training file
        log(f"generating {total} rows in {a.files + 1} files")
        subprocess.run([a.shoal_bin, "gen-data", "ctr", "--rows", str(total), "--files",
                        str(a.files + 1), "--max-vocabulary", str(a.max_vocabulary), "--seed",
                        "1", "--out", self.data], check=True, stdout=subprocess.DEVNULL)
        crosses = [tuple(c) for c in json.load(open(os.path.join(self.data,
                                                                 "generator.json")))["crosses"]]
        if crosses != M.CROSSES:
            raise SystemExit(f"mwms: the generator's crosses {crosses} differ from {M.CROSSES}")
        self.train_files = [os.path.join(self.data, f"part-{i:05d}.txt") for i in range(a.files)]
        self.eval_file = os.path.join(self.data, f"part-{a.files:05d}.txt")
        self.labels = M.read_labels(self.eval_file)

    def auc(self, predictions):
        import numpy as np

        p = np.asarray(predictions, dtype=np.float64)
        if len(p) != len(self.labels):
            raise SystemExit(f"mwms: {len(p)} predictions for {len(self.labels)} held-out rows")
        return round(M.exact_auc(self.labels, p), 4), round(M.log_loss(self.labels, p), 4)

    def tf_round(self, run):
        a = self.args
        run_dir = os.path.join(a.work, f"tf-{run}")
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        model_dir = os.path.join(run_dir, "model")
        script = os.path.join(HERE, "tf_mwms_ctr.py")
        ports = M.free_ports(2)
        cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
        load = os.getloadavg()[0]
        procs, logs = [], []
        t0 = time.monotonic()
        for index in range(2):
            env = dict(self.env)
            env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                           "task": {"type": "worker", "index": index}})
            path = os.path.join(run_dir, f"worker-{index}.log")
            logs.append(path)
            procs.append(subprocess.Popen(
                [a.tf_python, script, "train", "--train-files"] + self.train_files +
                ["--model-dir", model_dir, "--batch-size", str(a.batch_size),
                 "--warmup-steps", str(a.warmup_steps)],
                env=env, stdout=open(path, "w"), stderr=subprocess.STDOUT))
        for p, path in zip(procs, logs):
            if p.wait(timeout=a.timeout) != 0:
                raise SystemExit(f"mwms: a TF worker exited with {p.returncode}; see {path}")
        wall = time.monotonic() - t0
        res = result_line(logs[0])
        preds = os.path.join(run_dir, "predictions.npy")
        subprocess.run([a.tf_python, script, "predict", "--eval-file", self.eval_file,
                        "--model-dir", model_dir, "--predictions", preds], check=True,
                       env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import numpy as np

        auc, loss = self.auc(np.load(preds))
        self.record({"peer": "TF MWMS", "run": run, "examples": res["examples"],
                     "steps": res["steps"], "rate": res["examples_per_s_steady"],
                     "rate_fit": res["examples_per_s_fit"], "fit_s": res["fit_s"],
                     "first_step_s": res["first_step_s"],
                     "wall_s": round(wall, 1), "auc": auc, "logloss": loss, "load": load})

    def shoal_round(self, run):
        a = self.args
        run_dir = os.path.join(a.work, f"shoal-{run}")
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        model_dir = os.path.join(run_dir, "model")
        config = os.path.join(HERE, "shoal_ctr_wide_deep_128.yaml")
        overrides = ["--set", "input.train.files=[%s]" % ", ".join(self.train_files),
                     "--set", f"input.eval.files=[{self.eval_file}]",
                     "--set", f"input.train.batch_size={a.batch_size}"]
        path = os.path.join(run_dir, "log.txt")
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        code = subprocess.run([a.shoal_bin, "launch", config, "--ps", "0", "--workers", "1",
                               "--set", "run.strategy=all_reduce", "--model-dir", model_dir] +
                              overrides, env=self.env, stdout=open(path, "w"),
                              stderr=subprocess.STDOUT).returncode
        wall = time.monotonic() - t0
        if code != 0:
            raise SystemExit(f"mwms: shoal launch exited with {code}; see {path}")
        seconds = [float(m.group(1)) for m in map(TRAINING_STOPPED.search, open(path)) if m]
        if len(seconds) != 2:
            raise SystemExit(f"mwms: expected 2 'Training stopped' lines in {path}")
        summary = json.load(open(os.path.join(model_dir, "summary.json")))
        preds_path = os.path.join(run_dir, "predictions.jsonl")
        subprocess.run([a.shoal_bin, "predict", config, "--model-dir", model_dir, "--output",
                        preds_path] + overrides, check=True, env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(preds_path) as f:
            preds = [json.loads(line)["logistic"][0] for line in f]
        auc, loss = self.auc(preds)
        self.record({"peer": "shoal all_reduce", "run": run, "examples": summary["examples"],
                     "steps": summary["global_step"], "rate": summary["examples"] / max(seconds),
                     "train_s": max(seconds), "wall_s": round(wall, 1), "auc": auc,
                     "logloss": loss, "load": load})

    def record(self, r):
        self.records.append(r)
        with open(os.path.join(self.args.work, "runs.jsonl"), "a") as f:
            f.write(json.dumps(r, sort_keys=True) + "\n")
        extra = f" (whole fit {r['rate_fit']:,.0f})" if "rate_fit" in r else ""
        log(f"  {r['peer']} run {r['run']}: {r['rate']:,.0f} ex/s{extra}, auc {r['auc']:.4f}, "
            f"logloss {r['logloss']:.4f}, load {r['load']:.2f} before")

    def report(self):
        def span(values, fmt):
            lo, hi = min(values), max(values)
            return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
                fmt.format(lo) + " - " + fmt.format(hi)

        print("| peer (2 trainers, loopback) | run | examples | ex/s | AUC | log loss | "
              "load before |")
        print("|---|---|---|---|---|---|---|")
        for r in self.records:
            rate = f"{r['rate']:,.0f}"
            if "rate_fit" in r:
                rate += f" (whole fit {r['rate_fit']:,.0f}; first step {r['first_step_s']:.0f} s)"
            print(f"| {r['peer']} | {r['run']} | {r['examples']:,} | {rate} | {r['auc']:.4f} | "
                  f"{r['logloss']:.4f} | {r['load']:.2f} |")
        tf = [r for r in self.records if r["peer"] == "TF MWMS"]
        sh = [r for r in self.records if r["peer"] == "shoal all_reduce"]
        ratios = [s["rate"] / t["rate"] for s, t in zip(sh, tf)]
        ratios_fit = [s["rate"] / t["rate_fit"] for s, t in zip(sh, tf)]
        print()
        print(f"TF MWMS steady ex/s: {span([r['rate'] for r in tf], '{:,.0f}')}; "
              f"whole fit: {span([r['rate_fit'] for r in tf], '{:,.0f}')}; "
              f"AUC {span([r['auc'] for r in tf], '{:.4f}')}")
        print(f"shoal all_reduce ex/s: {span([r['rate'] for r in sh], '{:,.0f}')}; "
              f"AUC {span([r['auc'] for r in sh], '{:.4f}')}")
        gaps = [s["auc"] - t["auc"] for s, t in zip(sh, tf)]
        print(f"AUC shoal - TF (same round): {span(gaps, '{:+.4f}')}")
        met = "met in every round" if min(ratios) >= 3 else "not met"
        print(f"shoal / TF (same round): {span(ratios, '{:.1f}')}x against TF's steady rate, "
              f"{span(ratios_fit, '{:.1f}')}x against its whole fit; goal >= 3x: {met}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shoal-bin", required=True)
    p.add_argument("--tf-python", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--rows", type=int, default=200_000, help="training rows")
    p.add_argument("--files", type=int, default=4, help="training files (>= 2: TF shards by file)")
    p.add_argument("--max-vocabulary", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=M.BATCH_SIZE, help="per trainer")
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--timeout", type=int, default=1800)
    args = p.parse_args()
    bench = Bench(args)
    bench.generate()
    for run in range(1, args.rounds + 1):
        bench.tf_round(run)
        bench.shoal_round(run)
    bench.report()


if __name__ == "__main__":
    main()
