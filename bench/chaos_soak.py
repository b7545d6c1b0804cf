#!/usr/bin/env python3
"""Chaos soak: kills one random member of each of N `shoal launch` jobs and checks that every job
still ends well (docs/benchmarks.md, "Chaos soak (issue 18)"; docs/reliability.md, "Chaos soak").

Each job is the small CSV task of shoal/tools/job_cli_test.py (600 rows, wide & deep) on 2 PS, the
chief, 2 workers and an evaluator, with `--max-restarts 1`: 30 epochs of 1 KiB data tasks (17 per
epoch), a checkpoint every 10 steps, a 3 s heartbeat timeout. One member (ps:0/1, chief:0,
worker:0/1, evaluator:0) is SIGKILLed once per job, at one of three moments:

- random: once a trainer has logged a step, plus a random 0-1.5 s (a kill after the job ended
  counts as "missed");
- checkpoint: a PS or the chief, as soon as a checkpoint's temporary files (`*.tmp-*`,
  docs/checkpoint.md) appear in the model_dir, skipping a random 0-3 checkpoints first;
- final: the chief or the evaluator, a random 0-1 s after the chief logged the completion stage
  "final evaluation": while the evaluator evaluates and exports the final checkpoint, or later
  in the completion (the chief's summary, the job's end and the chief's wait for every task to
  see it); the stage the kill landed in is reported per job.

A job survives when `shoal launch` exits 0 within --timeout with the final evaluation and export
done, every epoch complete and every record trained at least once per epoch (the chief's
`data tasks:` summary). Reported per killed role and moment: survived / jobs, recovery time (kill
-> the chief's next `model ready` for a PS or the chief, -> the new incarnation registered for a
worker or the evaluator, from the log timestamps) and steps lost (PS: the coordinator's
rollback count; chief: the last step logged before the kill minus the restored step, a lower
bound; workers and the evaluator lose no update). Failed jobs' logs and model_dir listings are
kept under --keep, and so are those of jobs that survived but took longer than --slow seconds.

    python3 bench/chaos_soak.py --bin build/shoal --jobs 100 --seed 1 --keep /tmp/chaos-failures
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "shoal", "tools"))
from job_cli_test import write_job  # noqa: E402

EPOCHS = 30
SETTINGS = ["--ps", "2", "--workers", "2", "--evaluator", "--max-restarts", "1",
            "--set", "input.train.split_bytes=1024", "--set", f"input.train.num_epochs={EPOCHS}",
            "--set", "run.heartbeat_timeout_secs=3", "--set", "run.save_checkpoints_steps=10"]
MEMBERS = ["ps:0", "ps:1", "chief:0", "worker:0", "worker:1", "evaluator:0"]
MOMENTS = {"random": 0.6, "checkpoint": 0.2, "final": 0.2}
GLOG_TIME = re.compile(r"^(?:\[[a-z]+:\d+\] )?[IWE]\d{4} (\d\d:\d\d:\d\d\.\d{6}) ")
TRAINING = re.compile(r"\[(?:worker|chief):\d\] .*\] step \d+ \|")
FINAL_STAGE = "completion: final evaluation"


def plan(rng, victims, moments):
    """(victim, moment) for one job, among `victims` and `moments` when given."""
    while True:
        victim, moment = draw(rng)
        if victim in (victims or [victim]) and moment in (moments or [moment]):
            return victim, moment


def draw(rng):
    moment = rng.choices(list(MOMENTS), weights=list(MOMENTS.values()))[0]
    if moment == "checkpoint":
        return rng.choice(["ps:0", "ps:1", "chief:0"]), moment
    if moment == "final":
        return rng.choice(["chief:0", "evaluator:0"]), moment
    return rng.choice(MEMBERS), moment


def member_pid(model_dir, member):
    """The pid of the job's `shoal run` process playing `member` (from its TF_CONFIG), or None."""
    role, index = member.split(":")
    found = subprocess.run(["pgrep", "-f", model_dir], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        task = json.loads(env.get(b"TF_CONFIG", b"{}")).get("task", {})
        if task.get("type") == role and task.get("index") == int(index):
            return int(pid)
    return None


class Output:
    """The launcher's output, read by a thread; `wait_for` blocks until a line matches."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, pattern, deadline):
        """True once a line matches `pattern` (a compiled regex), False at EOF or the deadline."""
        seen = 0
        with self.cond:
            while time.time() < deadline:
                for line in self.lines[seen:]:
                    if pattern.search(line):
                        return True
                seen = len(self.lines)
                if self.closed:
                    return False
                self.cond.wait(0.05)
        return False

    def text(self):
        with self.cond:
            return "".join(self.lines)


def checkpoint_writing(model_dir):
    """Whether a checkpoint's temporary file is in the model_dir or one of its ckpt-N dirs."""
    try:
        entries = list(os.scandir(model_dir))
    except OSError:
        return False
    for entry in entries:
        if ".tmp" in entry.name:
            return True
        if entry.name.startswith("ckpt-") and entry.is_dir():
            try:
                if any(".tmp" in name for name in os.listdir(entry.path)):
                    return True
            except OSError:
                pass
    return False


def wait_for_checkpoint_write(model_dir, skip, deadline, output):
    """Waits for the (skip+1)-th checkpoint write seen; False at the job's end or the deadline."""
    writing = False
    while time.time() < deadline and not output.closed:
        now_writing = checkpoint_writing(model_dir)
        if now_writing and not writing:
            if skip == 0:
                return True
            skip -= 1
        writing = now_writing
        time.sleep(0.001)
    return False


def kill_at_moment(job, output, rng, deadline):
    """Waits for the job's kill moment and SIGKILLs the victim; the kill's time, or None."""
    victim, moment = job["victim"], job["moment"]
    if not output.wait_for(TRAINING, deadline):
        return None
    if moment == "random":
        time.sleep(rng.uniform(0.0, 1.5))
    elif moment == "checkpoint":
        # The pid first: the kill follows the temporary file's appearance within a millisecond or
        # two, well inside a write (10-90 ms here).
        pid = member_pid(job["model_dir"], victim)
        if pid is None or not wait_for_checkpoint_write(job["model_dir"], rng.randint(0, 3),
                                                        deadline, output):
            return None
        killed_at = time.time()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        job["mid_write"] = checkpoint_writing(job["model_dir"])
        return killed_at
    elif moment == "final":
        if not output.wait_for(re.compile(re.escape(FINAL_STAGE)), deadline):
            return None
        time.sleep(rng.uniform(0.0, 1.0))
    pid = member_pid(job["model_dir"], victim)
    if pid is None:
        return None
    killed_at = time.time()
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return None
    return killed_at


def run_job(binary, job, rng, timeout):
    """Runs one job with its kill; fills in job["exit"], job["killed_at"], job["out"]."""
    config = write_job(os.path.join(job["dir"], "job"), job["model_dir"], log_step_count_steps=5)
    start = time.time()
    launch = subprocess.Popen([binary, "launch", config.config, "--model-dir", job["model_dir"],
                               *SETTINGS], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    output = Output(launch.stdout)
    try:
        job["killed_at"] = kill_at_moment(job, output, rng, start + timeout)
        job["exit"] = launch.wait(timeout=max(0.0, start + timeout - time.time()))
    except subprocess.TimeoutExpired:
        job["exit"] = "timeout"
    finally:  # also when the soak itself is interrupted: no member outlives its job
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait()
    output.thread.join(timeout=10)
    job["seconds"] = time.time() - start
    job["out"] = output.text()


def log_time(line, near):
    """A glog line's time as a unix time, on the day that puts it nearest to `near`."""
    found = GLOG_TIME.match(line)
    if not found:
        return None
    t = datetime.datetime.strptime(found.group(1), "%H:%M:%S.%f").time()
    day = datetime.datetime.fromtimestamp(near, datetime.timezone.utc).date()
    stamp = datetime.datetime.combine(day, t, tzinfo=datetime.timezone.utc).timestamp()
    if stamp - near > 43200:
        stamp -= 86400
    elif near - stamp > 43200:
        stamp += 86400
    return stamp


def chief_json(out, name):
    found = re.search(rf"\[chief:0\] {name}: ([\[{{].*[\]}}])", out)
    return json.loads(found.group(1)) if found else None


def check_outcome(job):
    """Why the job did not end well ("" when it did): exit, evaluation, export, data tasks."""
    out = job["out"]
    if job["exit"] != 0:
        return f"exit {job['exit']}"
    if "[chief:0] final evaluation (" not in out:
        return "no final evaluation"
    exported = re.findall(r"\[chief:0\] exported: (\S+)", out)
    if not exported or not all(os.path.isdir(p) for p in exported):
        return "no export"
    tasks = chief_json(out, "data tasks")
    if tasks is None:
        return "no data tasks summary"
    n = tasks["tasks_per_epoch"]
    if (tasks["epochs_completed"] != EPOCHS or tasks["tasks_done_per_epoch"] != [n] * EPOCHS
            or tasks["records_per_epoch"] != [job["rows"]] * EPOCHS):
        return f"incomplete epochs: {json.dumps(tasks)}"
    return ""


def stage_at_kill(job):
    """The chief's completion stage when the kill landed ("training" before the first one)."""
    stage = "training"
    for line in job["out"].splitlines():
        t = log_time(line, job["killed_at"])
        if t is None or t > job["killed_at"] or not line.startswith("[chief:0]"):
            continue
        found = re.search(r"completion: (.*) \(", line)
        if found:
            stage = found.group(1)
        elif "job done at global step" in line:
            stage = "job done"
    return stage


def measure_recovery(job):
    """Recovery seconds and steps lost after the kill (None when not measurable)."""
    out, killed_at, victim = job["out"], job["killed_at"], job["victim"]
    role = victim.split(":")[0]
    # A chief restarted after the job's end does not load the model: it only ends the job again.
    marker = {"worker": f"{victim} restarted: incarnation",
              "evaluator": "evaluator:0 restarted: incarnation",
              "chief": "model ready at global|ended successfully before this chief started"}.get(
                  role, "model ready at global")
    recovery, last_step, lost = None, 0, None
    for line in out.splitlines():
        t = log_time(line, killed_at)
        if t is None:
            continue
        step = re.search(r"\] step (\d+) \|", line)
        if step and t < killed_at:
            last_step = max(last_step, int(step.group(1)))
        if recovery is None and t > killed_at and re.search(marker, line):
            recovery = t - killed_at
        restored = re.search(r"\[chief:0\] .*Restored .* \(global step (\d+)\)", line)
        if role == "chief" and restored and t > killed_at and lost is None:
            lost = max(0, last_step - int(restored.group(1)))
    if role == "ps":
        rollbacks = chief_json(out, "rollbacks")
        lost = sum(r["steps_lost"] for r in rollbacks) if rollbacks else None
    elif role in ("worker", "evaluator") or (role == "chief" and lost is None and recovery):
        lost = 0
    return recovery, lost


def keep_failed(job, keep):
    """Moves a failed job's directory under `keep` with its log and model_dir listing."""
    with open(os.path.join(job["dir"], "launch.log"), "w") as f:
        f.write(job["out"])
    listing = subprocess.run(["ls", "-lR", job["model_dir"]], capture_output=True, text=True)
    with open(os.path.join(job["dir"], "model_dir.txt"), "w") as f:
        f.write(listing.stdout + listing.stderr)
    os.makedirs(keep, exist_ok=True)
    target = os.path.join(keep, os.path.basename(job["dir"]))
    shutil.rmtree(target, ignore_errors=True)
    shutil.move(job["dir"], target)
    return target


def span(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def report(jobs, slow):
    """The Markdown report: one row per killed role and moment, then the failures."""
    lines = ["| killed | moment | jobs | kills landed | survived | every epoch complete | "
             "recovery, s: median (range) | steps lost: median (range) |",
             "|---|---|---|---|---|---|---|---|"]
    for role in ("ps", "chief", "worker", "evaluator"):
        for moment in MOMENTS:
            group = [j for j in jobs if j["victim"].startswith(role) and j["moment"] == moment]
            if not group:
                continue
            landed = [j for j in group if j["killed_at"] is not None]
            lines.append(
                f"| {role} | {moment} | {len(group)} | {len(landed)} | "
                f"{sum(not j['failure'] for j in group)} | {sum(j['epochs_ok'] for j in group)} | "
                f"{span([j['recovery'] for j in landed], '.2f')} | "
                f"{span([j['steps_lost'] for j in landed], 'g')} |")
    survived = sum(not j["failure"] for j in jobs)
    landed = sum(j["killed_at"] is not None for j in jobs)
    lines.append(f"| **all** | | {len(jobs)} | {landed} | **{survived}** | "
                 f"{sum(j['epochs_ok'] for j in jobs)} | "
                 f"{span([j['recovery'] for j in jobs if j['killed_at']], '.2f')} | |")
    lines.append("")
    lines.append(f"Survived: {survived} / {len(jobs)} jobs ({landed} kills landed).")
    for j in jobs:
        if not j["failure"] and j["seconds"] > slow:
            lines.append(f"- job {j['index']} (survived, slow): {j['victim']} killed at "
                         f"{j['moment']} (chief's stage: {j['stage']}): {j['seconds']:.1f} s "
                         f"(kept in {j.get('kept', '-')})")
        if j["failure"]:
            lines.append(f"- job {j['index']}: {j['victim']} killed at {j['moment']} "
                         f"(chief's stage: {j['stage']}): "
                         f"{j['failure']} (kept in {j.get('kept', '-')})")
    return "\n".join(lines)


def assess(job):
    """Fills in the job's failure ("" when it survived), epochs_ok, recovery, steps_lost, stage."""
    job["failure"] = check_outcome(job)
    job["epochs_ok"] = (not job["failure"].startswith(("incomplete", "no data"))
                        and chief_json(job["out"], "data tasks") is not None)
    job["recovery"], job["steps_lost"] = (
        measure_recovery(job) if job["killed_at"] else (None, None))
    job["stage"] = stage_at_kill(job) if job["killed_at"] else "-"
    if job["moment"] == "checkpoint" and job["killed_at"]:
        job["stage"] = ("checkpoint write: temporary file still there after the kill"
                        if job.get("mid_write") else "checkpoint write just ended")


def print_job(job):
    """One line per job on stderr, as the soak goes."""
    kill = f"killed in {job['stage']}" if job["killed_at"] else "kill missed"
    kept = f"; kept in {job['kept']}" if "kept" in job else ""
    print(f"job {job['index']}: {job['victim']} at {job['moment']}: {kill}, "
          f"{job['failure'] or 'ok'}, {job['seconds']:.1f} s, recovery {job['recovery']}, "
          f"steps lost {job['steps_lost']}{kept}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--bin", default="build/shoal")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", default="chaos-failures", help="where failed jobs are kept")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per job")
    parser.add_argument("--slow", type=float, default=20.0,
                        help="seconds after which a job that survived is kept and listed as slow")
    parser.add_argument("--victim", action="append", choices=MEMBERS,
                        help="kill only these members (to chase one failure)")
    parser.add_argument("--moment", action="append", choices=list(MOMENTS),
                        help="kill only at these moments")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanups of run_job
    binary = os.path.abspath(args.bin)
    rng = random.Random(args.seed)
    jobs = []
    with tempfile.TemporaryDirectory(prefix="chaos-soak-") as tmp:
        for i in range(args.jobs):
            victim, moment = plan(rng, args.victim, args.moment)
            job = {"index": i, "victim": victim, "moment": moment, "rows": 600,
                   "dir": os.path.join(tmp, f"job-{i:03d}-{victim.replace(':', '')}-{moment}")}
            job["model_dir"] = os.path.join(job["dir"], "m")
            os.makedirs(job["dir"])
            run_job(binary, job, rng, args.timeout)
            assess(job)
            if job["failure"] or job["seconds"] > args.slow:
                job["kept"] = keep_failed(job, os.path.abspath(args.keep))
            else:
                shutil.rmtree(job["dir"])
            print_job(job)
            jobs.append({k: v for k, v in job.items() if k != "out"})
    print(report(jobs, args.slow))
    return 0 if all(not j["failure"] for j in jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
