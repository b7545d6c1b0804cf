#!/usr/bin/env python3
"""Kills tasks of a running `shoal launch` cluster and measures the recovery (docs/benchmarks.md).

For each role (ps, chief, worker) it runs --kills jobs; in each, once worker:0 has trained a few
steps and a random extra delay has passed, the role's task 0 is SIGKILLed. `shoal launch` restarts
it. The job is the small CSV task of shoal/tools/job_cli_test.py (600 rows) with 2 PS, the chief,
1 worker, 20 epochs of 1 KiB data tasks, a checkpoint every 10 steps and a 3 s heartbeat timeout.

Reported per role: jobs that still ended with exit 0 and every epoch complete; recovery time
(kill -> the model ready again, or for a worker -> its new incarnation registered, from the
processes' log timestamps); steps lost (PS: the global step at the rollback minus the restored
checkpoint's step, as the coordinator counts them; chief: the last step logged before the kill
minus the restored step, a lower bound since steps are logged every 5);
final AUC against the same job trained undisturbed.

    python3 bench/failure_recovery.py --bin build/shoal --kills 5
"""
import argparse
import datetime
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "shoal", "tools"))
from job_cli_test import write_job  # noqa: E402

SETTINGS = ["--set", "input.train.split_bytes=1024", "--set", "input.train.num_epochs=20",
            "--set", "run.heartbeat_timeout_secs=3"]
GLOG_TIME = re.compile(r"^(?:\[[a-z]+:\d+\] )?[IWE]\d{4} (\d\d:\d\d:\d\d\.\d{6}) ")


def log_time(line, day):
    found = GLOG_TIME.match(line)
    if not found:
        return None
    t = datetime.datetime.strptime(found.group(1), "%H:%M:%S.%f").time()
    return datetime.datetime.combine(day, t, tzinfo=datetime.timezone.utc).timestamp()


def run_one(binary, role, workdir, rng):
    job = write_job(os.path.join(workdir, "job"), os.path.join(workdir, "model"),
                    log_step_count_steps=5)
    model_dir = os.path.join(workdir, "m")
    launch = subprocess.Popen([binary, "launch", job.config, "--ps", "2", "--workers", "1",
                               "--max-restarts", "1", "--model-dir", model_dir, *SETTINGS],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = ""
    while not re.search(r"\[worker:0\] .*step \d+ \|", seen):
        line = launch.stdout.readline()
        if not line:
            break
        seen += line
    time.sleep(rng.uniform(0.0, 1.0))
    pids = []
    for pid in subprocess.run(["pgrep", "-f", model_dir], capture_output=True,
                              text=True).stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        task = json.loads(env.get(b"TF_CONFIG", b"{}")).get("task", {})
        if task.get("type") == role and task.get("index") == 0:
            pids.append(int(pid))
    killed_at = time.time()
    os.kill(pids[0], signal.SIGKILL)
    rest, _ = launch.communicate(timeout=600)
    out = seen + rest
    result = {"exit": launch.returncode, "epochs": None, "recovery": None, "steps_lost": None,
              "auc": None}
    tasks = re.search(r"\[chief:0\] data tasks: (\{.*\})", out)
    if tasks:
        result["epochs"] = json.loads(tasks.group(1))["epochs_completed"]
    summary = os.path.join(model_dir, "summary.json")
    if os.path.exists(summary):
        with open(summary) as f:
            result["auc"] = json.load(f)["metrics"].get("auc")
    rollbacks = re.search(r"\[chief:0\] rollbacks: (\[.*\])", out)
    if rollbacks:
        first = json.loads(rollbacks.group(1))[0]
        result["steps_lost"] = first["steps_lost"]
    # Recovery: from the kill to the first "model ready" after it (every trainer may train
    # again), or for a worker to its new incarnation's registration.
    day = datetime.datetime.now(datetime.timezone.utc).date()
    marker = "worker:0 restarted: incarnation" if role == "worker" else "model ready at global step"
    last_step = 0
    for line in out.splitlines():
        t = log_time(line, day)
        if t is None:
            continue
        step = re.search(r"\] step (\d+) \|", line)
        if step and t < killed_at:
            last_step = max(last_step, int(step.group(1)))
        if marker in line and t > killed_at and result["recovery"] is None:
            result["recovery"] = t - killed_at
        restored = re.search(r"\[chief:0\] .*Restored .* \(global step (\d+)\)", line)
        if role == "chief" and restored and t > killed_at and result["steps_lost"] is None:
            # At least: steps are logged every 5 steps, the last one before the kill counts.
            result["steps_lost"] = max(0, last_step - int(restored.group(1)))
    return result


def undisturbed_auc(binary, workdir):
    job = write_job(os.path.join(workdir, "job"), os.path.join(workdir, "model"))
    out = subprocess.run([binary, "launch", job.config, "--ps", "2", "--workers", "1",
                          "--model-dir", os.path.join(workdir, "m"), *SETTINGS],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:]
    with open(os.path.join(workdir, "m", "summary.json")) as f:
        return json.load(f)["metrics"]["auc"]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default="build/shoal")
    parser.add_argument("--kills", type=int, default=3, help="jobs per role")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = undisturbed_auc(args.bin, os.path.join(tmp, "undisturbed"))
        print(f"undisturbed: AUC {baseline:.4f}")
        print("| killed | jobs | survived (exit 0, 20 epochs) | recovery s, median (range) | "
              "steps lost, median (range) | final AUC, median (undisturbed "
              f"{baseline:.4f}) |")
        print("|---|---|---|---|---|---|")
        for role in ("ps", "chief", "worker"):
            results = []
            for i in range(args.kills):
                workdir = os.path.join(tmp, f"{role}{i}")
                os.makedirs(workdir)
                results.append(run_one(args.bin, role, workdir, rng))
                print(f"  {role} kill {i + 1}: {results[-1]}", file=sys.stderr)
            survived = sum(r["exit"] == 0 and r["epochs"] == 20 for r in results)
            rec = [r["recovery"] for r in results if r["recovery"] is not None]
            lost = [r["steps_lost"] for r in results if r["steps_lost"] is not None]
            rec_s = f"{median(rec):.2f} ({min(rec):.2f}-{max(rec):.2f})" if rec else "-"
            lost_s = f"{median(lost):g} ({min(lost)}-{max(lost)})" if lost else "-"
            print(f"| {role}:0 | {len(results)} | {survived} | {rec_s} | {lost_s} | "
                  f"{median([r['auc'] for r in results]):.4f} |")


if __name__ == "__main__":
    main()
