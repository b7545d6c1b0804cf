"""Driver of the framework comparison (bench/compare/run.sh calls it; see RESULTS.md).

Generates one CTR data set (`shoal gen-data ctr`, or with --data numpy gen_ctr.py, which
shares no code with shoal), then for each of --runs rounds trains every
peer on it once, in this order (so that a slow period of the shared machine touches all peers):
shoal in one process, shoal launch 1 PS + 1 trainer, 1 PS + 2 trainers, TF Estimator in one
process and as TF_CONFIG clusters of the same shapes, PyTorch in one process; then the
Fashion-MNIST MLP in shoal and PyTorch (--mnist-data numpy: gen_idx.py's images instead). Each run appends one JSON line to OUT/runs.jsonl;
report.py turns them into the table.

A "trainer" is a process that trains: shoal's chief trains (as TF's does), so 1 PS + 1 trainer is
`shoal launch --ps 1 --workers 0` and TF_CONFIG {chief, ps}; 1 PS + 2 trainers is `--workers 1`
and {chief, worker, ps}.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402
import procwatch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def log(message):
    print(f"compare: {message}", file=sys.stderr, flush=True)


class Runner:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        # One directory per generator, so that switching --data keeps both data sets.
        self.data = os.path.join(self.work, "data" if args.data == "shoal" else "data-numpy")
        self.out = open(os.path.join(args.out, "runs.jsonl"), "a", buffering=1)
        self.env = dict(os.environ)
        # Debian's OpenBLAS misdetects AMD EPYC guests without a core type; SkylakeX was the
        # fastest in scripts/bench.sh where the CPU has AVX-512, and would fault where it has
        # not, so Haswell (AVX2 + FMA) there. PyTorch's Linear layers use it.
        self.env.setdefault("OPENBLAS_CORETYPE", _openblas_core())
        self.env.pop("TF_CONFIG", None)
        self.env["TF_CPP_MIN_LOG_LEVEL"] = "1"

    # Data ----------------------------------------------------------------------------------

    def generate(self):
        a = self.args
        files = a.train_files + 1
        total = a.rows + a.rows // a.train_files  # the held-out file is as large as a train file
        meta = os.path.join(self.data, "generator.json")
        if os.path.exists(meta):
            g = json.load(open(meta))
            if g.get("rows") == total and g.get("files") == files and \
                    g.get("max_vocabulary") == a.max_vocabulary:
                log(f"reusing data in {self.data}")
                return g
        shutil.rmtree(self.data, ignore_errors=True)
        log(f"generating {total} rows in {files} files ({a.data}'s generator)")
        if a.data == "shoal":
            argv = [a.shoal_bin, "gen-data", "ctr", "--seed", "1"]
        else:
            argv = [sys.executable, os.path.join(HERE, "gen_ctr.py"), "--seed", "7"]
        subprocess.run(argv + ["--rows", str(total), "--files", str(files), "--max-vocabulary",
                               str(a.max_vocabulary), "--out", self.data],
                       check=True, stdout=subprocess.DEVNULL)
        g = json.load(open(meta))
        crosses = [tuple(c) for c in g["crosses"]]
        if crosses != M.CROSSES:
            raise SystemExit(f"compare: the generator's crosses {crosses} differ from the models' "
                             f"{M.CROSSES} (ctr_model.py, shoal_ctr.yaml): update both")
        return g

    def mnist_dir(self):
        """Fashion-MNIST (Debian's dataset-fashion-mnist), or gen_idx.py's images, made once."""
        if self.args.mnist_data == "fashion":
            return MNIST_DIR
        path = os.path.join(self.work, "mnist-numpy")
        if not os.path.exists(os.path.join(path, "t10k-labels-idx1-ubyte.gz")):
            log("generating the MLP's images (gen_idx.py)")
            subprocess.run([sys.executable, os.path.join(HERE, "gen_idx.py"), "--out", path],
                           check=True)
        return path

    def train_files(self):
        return [os.path.join(self.data, f"part-{i:05d}.txt") for i in range(self.args.train_files)]

    def eval_file(self):
        return os.path.join(self.data, f"part-{self.args.train_files:05d}.txt")

    # One measured run ----------------------------------------------------------------------

    def _finish(self, record, group, examples_per_step, wall_s):
        try:
            record.update(group.training_window(examples_per_step))
        except ValueError as e:
            record["error"] = str(e)
        record["peak_rss_mib"] = group.peak_rss_mib()
        record["wall_s"] = round(wall_s, 2)
        record["total_cpu_s"] = round(group.total_cpu_s(), 2)
        record["machine_cores"] = os.cpu_count()
        record["loadavg_before"] = self._load_before
        self.out.write(json.dumps(record, sort_keys=True) + "\n")
        rate = record.get("examples_per_s")
        log(f"  {record['bench']} {record['peer']} run {record['run']}: "
            f"{rate:,.0f} ex/s, {record.get('cores_used', 0):.2f} cores, "
            f"auc {record.get('auc', float('nan')):.4f}, rss {record['peak_rss_mib']}"
            if rate else f"  {record['peer']} run {record['run']}: {record.get('error')}")

    def _group(self, name):
        self._load_before = round(os.getloadavg()[0], 2)
        run_dir = os.path.join(self.work, name)
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        return run_dir, procwatch.Group(os.path.join(run_dir, "log.txt"))

    @staticmethod
    def _check(code, what, run_dir):
        if code != 0:
            raise SystemExit(f"compare: {what} exited with {code}; see {run_dir}/log.txt")

    def _result_line(self, group, name):
        for line in reversed(group.lines.get(name, [])):
            if line.startswith("result "):
                return json.loads(line[len("result "):])
        return {}

    def _auc(self, predictions):
        import numpy as np

        labels = self._labels()
        p = np.asarray(predictions, dtype=np.float64)
        if len(p) != len(labels):
            raise SystemExit(f"compare: {len(p)} predictions for {len(labels)} held-out rows")
        return round(M.exact_auc(labels, p), 5), round(M.log_loss(labels, p), 5)

    def _labels(self):
        if not hasattr(self, "_cached_labels"):
            self._cached_labels = M.read_labels(self.eval_file())
        return self._cached_labels

    # shoal ---------------------------------------------------------------------------------

    def shoal_ctr(self, run, trainers):
        a = self.args
        peer = "shoal" if trainers == 0 else f"shoal launch 1 PS + {trainers} trainer" + \
            ("s" if trainers > 1 else "")
        run_dir, group = self._group(f"shoal-ctr-{trainers}-{run}")
        model_dir = os.path.join(run_dir, "model")
        overrides = ["--set", "input.train.files=[%s]" % ", ".join(self.train_files()),
                     "--set", f"input.eval.files=[{self.eval_file()}]",
                     "--set", f"run.log_step_count_steps={a.log_every}"]
        for setting in a.shoal_set:
            overrides += ["--set", setting]
        config = os.path.join(HERE, "shoal_ctr.yaml")
        if trainers == 0:
            threads = ["--set", f"run.train_threads={a.shoal_threads}"]
            argv = [a.shoal_bin, "train", config, "--model-dir", model_dir] + overrides + threads
        else:
            argv = [a.shoal_bin, "launch", config, "--ps", "1", "--workers", str(trainers - 1),
                    "--model-dir", model_dir] + overrides
        t0 = time.monotonic()
        group.start("shoal" if trainers == 0 else "launcher", argv, env=self.env)
        code = group.wait("shoal" if trainers == 0 else "launcher")
        wall = time.monotonic() - t0
        group.close()
        self._check(code, peer, run_dir)
        summary = json.load(open(os.path.join(model_dir, "summary.json")))
        # The exact AUC from `shoal predict` on the held-out file (not timed).
        preds_path = os.path.join(run_dir, "predictions.jsonl")
        subprocess.run([a.shoal_bin, "predict", config, "--model-dir", model_dir,
                        "--output", preds_path] + overrides, check=True, env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(preds_path) as f:
            preds = [json.loads(line)["logistic"][0] for line in f]
        auc, loss = self._auc(preds)
        record = {"bench": "ctr", "peer": peer, "trainers": max(trainers, 1),
                  "processes": 1 if trainers == 0 else trainers + 1, "run": run,
                  "auc": auc, "logloss": loss, "own_auc": summary["metrics"].get("auc"),
                  "examples": summary.get("examples"), "global_step": summary.get("global_step"),
                  "settings": "parse_threads 2, prefetch_batches 4 (shoal_ctr.yaml)" +
                              (f"; run.train_threads {a.shoal_threads}" if trainers == 0 else "") +
                              "".join(f"; {x}" for x in a.shoal_set)}
        self._finish(record, group, a.batch_size, wall)

    def shoal_mnist(self, run):
        a = self.args
        run_dir, group = self._group(f"shoal-mnist-{run}")
        model_dir = os.path.join(run_dir, "model")
        argv = [a.shoal_bin, "train", os.path.join(HERE, "shoal_mnist.yaml"), "--model-dir",
                model_dir, "--set", f"input.train.num_epochs={a.mnist_epochs}",
                "--set", f"run.train_threads={a.shoal_threads}",
                "--set", "input.train.files=[%s]" % os.path.join(
                    self.mnist_dir(), "train-images-idx3-ubyte.gz"),
                "--set", "input.eval.files=[%s]" % os.path.join(
                    self.mnist_dir(), "t10k-images-idx3-ubyte.gz")]
        t0 = time.monotonic()
        group.start("shoal", argv, env=self.env)
        code = group.wait("shoal")
        wall = time.monotonic() - t0
        group.close()
        self._check(code, "shoal (Fashion-MNIST)", run_dir)
        summary = json.load(open(os.path.join(model_dir, "summary.json")))
        record = {"bench": "mnist", "peer": "shoal", "trainers": 1, "processes": 1, "run": run,
                  "accuracy": summary["metrics"].get("accuracy"),
                  "settings": "parse_threads 2, prefetch_batches 4 (defaults); "
                              f"run.train_threads {a.shoal_threads}"}
        self._finish(record, group, 128, wall)

    # TensorFlow ----------------------------------------------------------------------------

    def tf_ctr(self, run, trainers):
        a = self.args
        peer = "TF Estimator" if trainers == 0 else f"TF Estimator 1 PS + {trainers} trainer" + \
            ("s" if trainers > 1 else "")
        run_dir, group = self._group(f"tf-ctr-{trainers}-{run}")
        model_dir = os.path.join(run_dir, "model")
        script = os.path.join(HERE, "tf_estimator_ctr.py")
        intra, inter = (a.tf_threads if trainers == 0 else a.tf_cluster_threads)
        common = ["--train-files"] + self.train_files() + [
            "--eval-file", self.eval_file(), "--model-dir", model_dir,
            "--batch-size", str(a.batch_size), "--log-every", str(a.log_every),
            "--intra-threads", str(intra), "--inter-threads", str(inter)]
        t0 = time.monotonic()
        if trainers == 0:
            group.start("single", [a.tf_python, script, "train"] + common, env=self.env)
            code = group.wait("single")
            wall = time.monotonic() - t0
            self._check(code, peer, run_dir)
        else:
            ports = M.free_ports(trainers + 1)
            cluster = {"chief": [f"127.0.0.1:{ports[0]}"],
                       "ps": [f"127.0.0.1:{ports[1]}"]}
            if trainers > 1:
                cluster["worker"] = [f"127.0.0.1:{p}" for p in ports[2:]]
            roles = [("ps", 0), ("chief", 0)] + [("worker", i) for i in range(trainers - 1)]
            for kind, index in roles:
                env = dict(self.env)
                env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                               "task": {"type": kind, "index": index}})
                group.start(f"{kind}:{index}", [a.tf_python, script, "train"] + common, env=env)
            codes = {name: group.wait(name, timeout=a.timeout)
                     for name in ["chief:0"] + [f"worker:{i}" for i in range(trainers - 1)]}
            wall = time.monotonic() - t0
            group.terminate("ps:0")  # TF's PS never exits by itself
            for name, code in codes.items():
                self._check(code, f"{peer} {name}", run_dir)
        group.close()
        preds_path = os.path.join(run_dir, "predictions.npy")
        subprocess.run([a.tf_python, script, "predict", "--eval-file", self.eval_file(),
                        "--model-dir", model_dir, "--predictions", preds_path], check=True,
                       env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import numpy as np

        auc, loss = self._auc(np.load(preds_path))
        ckpt = open(os.path.join(model_dir, "checkpoint")).readline()
        record = {"bench": "ctr", "peer": peer, "trainers": max(trainers, 1),
                  "processes": 1 if trainers == 0 else trainers + 1, "run": run,
                  "auc": auc, "logloss": loss, "checkpoint": ckpt.strip(),
                  "settings": f"intra_op {intra}, inter_op {inter}; tf.data: batch then "
                              "decode_csv in map(AUTOTUNE), prefetch(AUTOTUNE)"}
        self._finish(record, group, a.batch_size, wall)

    # PyTorch -------------------------------------------------------------------------------

    def torch_env(self):
        env = dict(self.env)
        env["OPENBLAS_NUM_THREADS"] = str(self.args.torch_blas_threads)
        return env

    def torch_settings(self):
        return (f"torch.set_num_threads({self.args.torch_threads}), OPENBLAS_NUM_THREADS="
                f"{self.args.torch_blas_threads}, OPENBLAS_CORETYPE={self.env['OPENBLAS_CORETYPE']}")

    def torch_ctr(self, run):
        a = self.args
        run_dir, group = self._group(f"torch-ctr-{run}")
        preds_path = os.path.join(run_dir, "predictions.npy")
        argv = ["/usr/bin/python3", os.path.join(HERE, "torch_ctr.py"), "--train-files"] + \
            self.train_files() + ["--eval-file", self.eval_file(), "--predictions", preds_path,
                                  "--batch-size", str(a.batch_size), "--threads",
                                  str(a.torch_threads), "--log-every", str(a.log_every)]
        t0 = time.monotonic()
        group.start("torch", argv, env=self.torch_env())
        code = group.wait("torch")
        wall = time.monotonic() - t0
        group.close()
        self._check(code, "PyTorch", run_dir)
        import numpy as np

        res = self._result_line(group, "torch")
        auc, loss = self._auc(np.load(preds_path))
        # Parsing included: from just before the pre-parse to the end of training.
        with_parse_s, with_parse_cpu = group.phase_window("parse_start", "train_end")
        record = {"bench": "ctr", "peer": "PyTorch", "trainers": 1, "processes": 1, "run": run,
                  "auc": auc, "logloss": loss, "parse_s": res.get("parse_s"),
                  "train_s": res.get("train_s"), "examples": res.get("examples"),
                  "examples_per_s_with_parse": res["examples"] / with_parse_s,
                  "cores_used_with_parse": with_parse_cpu / with_parse_s,
                  "settings": self.torch_settings() + "; pandas pre-parse (own row when "
                                                      "included)"}
        self._finish(record, group, a.batch_size, wall)

    def torch_mnist(self, run):
        a = self.args
        run_dir, group = self._group(f"torch-mnist-{run}")
        argv = ["/usr/bin/python3", os.path.join(HERE, "torch_mnist.py"),
                "--train", os.path.join(self.mnist_dir(), "train-images-idx3-ubyte.gz"),
                "--test", os.path.join(self.mnist_dir(), "t10k-images-idx3-ubyte.gz"),
                "--epochs", str(a.mnist_epochs), "--threads", str(a.torch_threads)]
        t0 = time.monotonic()
        group.start("torch", argv, env=self.torch_env())
        code = group.wait("torch")
        wall = time.monotonic() - t0
        group.close()
        self._check(code, "PyTorch (Fashion-MNIST)", run_dir)
        res = self._result_line(group, "torch")
        record = {"bench": "mnist", "peer": "PyTorch", "trainers": 1, "processes": 1,
                  "run": run, "accuracy": res.get("accuracy"),
                  "settings": self.torch_settings()}
        self._finish(record, group, 128, wall)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="training rows")
    p.add_argument("--train-files", type=int, default=5)
    p.add_argument("--max-vocabulary", type=int, default=10_000)
    p.add_argument("--data", choices=["shoal", "numpy"], default="shoal",
                   help="the CTR data's generator: `shoal gen-data ctr`, or gen_ctr.py (NumPy, "
                        "shoal not involved)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=M.BATCH_SIZE)
    p.add_argument("--log-every", type=int, default=0, help="steps per progress line (0: ~25)")
    p.add_argument("--mnist-epochs", type=int, default=3)
    p.add_argument("--mnist-data", choices=["fashion", "numpy"], default="fashion",
                   help="the MLP's images: Fashion-MNIST, or gen_idx.py's (NumPy)")
    p.add_argument("--peers", default="shoal,shoal-cluster,tf,tf-cluster,torch,mnist",
                   help="comma-separated subset")
    p.add_argument("--tf-threads", default="2,2", help="intra,inter op threads, one process")
    p.add_argument("--tf-cluster-threads", default="2,2", help="intra,inter per TF process")
    p.add_argument("--torch-threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--torch-blas-threads", type=int, default=2,
                   help="OPENBLAS_NUM_THREADS for PyTorch (its Linear layers call OpenBLAS)")
    p.add_argument("--shoal-threads", type=int, default=os.cpu_count(),
                   help="run.train_threads of shoal's one-process runs (default: the cores)")
    p.add_argument("--shoal-set", action="append", default=[], metavar="KEY=VALUE",
                   help="an extra --set for shoal's CTR runs (repeatable), e.g. run.pipeline_pull=on")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--shoal-bin", required=True)
    p.add_argument("--tf-python", required=True)
    p.add_argument("--work", required=True, help="data and run directories")
    p.add_argument("--out", required=True, help="directory of runs.jsonl")
    a = p.parse_args()
    a.tf_threads = tuple(int(x) for x in a.tf_threads.split(","))
    a.tf_cluster_threads = tuple(int(x) for x in a.tf_cluster_threads.split(","))
    if a.log_every == 0:
        a.log_every = max(5, a.rows // a.batch_size // 25)
    peers = set(a.peers.split(","))
    unknown = peers - {"shoal", "shoal-cluster", "tf", "tf-cluster", "torch", "mnist"}
    if unknown:
        p.error(f"unknown peers {sorted(unknown)}")
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    g = r.generate()
    with open(os.path.join(a.out, "machine.json"), "w") as f:
        json.dump({"cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                   "best_auc": g["best_auc"], "data": a.data, "mnist_data": a.mnist_data, "rows": a.rows, "eval_rows": a.rows // a.train_files,
                   "max_vocabulary": a.max_vocabulary, "batch_size": a.batch_size,
                   "log_every": a.log_every, "runs": a.runs,
                   "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}, f)
    for run in range(1, a.runs + 1):
        log(f"round {run} of {a.runs}")
        if "shoal" in peers:
            r.shoal_ctr(run, 0)
        if "shoal-cluster" in peers:
            r.shoal_ctr(run, 1)
            r.shoal_ctr(run, 2)
        if "tf" in peers:
            r.tf_ctr(run, 0)
        if "tf-cluster" in peers:
            r.tf_ctr(run, 1)
            r.tf_ctr(run, 2)
        if "torch" in peers:
            r.torch_ctr(run)
        if "mnist" in peers:
            r.shoal_mnist(run)
            r.torch_mnist(run)


def _openblas_core():
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    return "SkylakeX" if "avx512f" in flags else "Haswell"


def _cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
