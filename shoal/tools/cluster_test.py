"""Real multi-process clusters over gRPC on loopback: `shoal launch` and `shoal run` (docs/cluster.md).

Uses the small CSV task of job_cli_test.py (600 training rows, 2 epochs). $SHOAL_BIN is the binary
(ctest sets it).
"""
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from job_cli_test import write_job

SHOAL = os.environ.get("SHOAL_BIN", "build/shoal")
SECRET = "0123456789abcdef0123456789abcdef"


def run(*args, env=None, timeout=300):
    return subprocess.run([SHOAL, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_launch_trains_like_one_process(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    single = run("train", job.config, "--model-dir", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr[-3000:]
    out = run("launch", job.config, "--ps", "2", "--workers", "1",
              "--model-dir", str(tmp_path / "cluster"))
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    # Every process's lines are prefixed with its task, and every task took part.
    for task in ("ps:0", "ps:1", "chief:0", "worker:0"):
        assert f"[{task}] " in out.stdout, task
    assert "[worker:0] " in out.stdout and "trained" in out.stdout
    one = json.loads((tmp_path / "single" / "summary.json").read_text())
    two = json.loads((tmp_path / "cluster" / "summary.json").read_text())
    # The same data passes: the global step counts every trainer's updates (each trainer's
    # share may end in its own partial batch: at most one more step per trainer).
    assert one["global_step"] <= two["global_step"] <= one["global_step"] + 2, (one, two)
    assert two["stop_reason"] == "input exhausted"
    # The job's examples and epochs, summed over the trainers: exactly one process's.
    assert two["examples"] == one["examples"] == len(job.train_rows) * 2, (one, two)
    assert two["epochs_completed"] == one["epochs_completed"] == 2, (one, two)
    # Async training on two trainers is not bit-identical, but as good.
    assert two["metrics"]["accuracy"] >= one["metrics"]["accuracy"] - 0.05, (one, two)
    assert two["metrics"]["auc"] >= one["metrics"]["auc"] - 0.03, (one, two)
    # The completion protocol's stages, in order, each logged by the chief's coordinator.
    stages = re.findall(r"\[chief:0\] .*coordinator.cc:\d+\] completion: ([a-z ]+) \(", out.stdout)
    assert stages == ["final pushes", "final checkpoint", "final evaluation", "exporters",
                      "shutdown"], out.stdout[-5000:]
    # The chief wrote the checkpoint with one shard file per PS.
    ckpt = tmp_path / "cluster" / f"ckpt-{two['global_step']}"
    assert sorted(p.name for p in ckpt.glob("*.data")) == [
        "shard-00000-of-00002.data", "shard-00001-of-00002.data"]
    # Every checkpoint is one cut across both PS: the worker was held for the snapshots.
    for manifest in (tmp_path / "cluster").glob("ckpt-*/MANIFEST.json"):
        extra = json.loads(manifest.read_text())["extra"]
        assert extra["consistent_cut"] is True, (manifest, extra)
    cuts = re.findall(r"\[chief:0\] .*Checkpoint (\d+): one cut across the parameter servers, "
                      r"hold wait", out.stdout)
    assert str(two["global_step"]) in cuts, out.stdout[-5000:]


def test_launch_stops_at_max_steps_cluster_wide(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--ps", "1", "--workers", "1",
              "--model-dir", str(tmp_path / "m"), "--set", "run.max_steps=10")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    # A trainer may finish the step it was in when the limit was reached: at most one more each.
    assert 10 <= summary["global_step"] <= 12, summary


def test_the_chief_evicts_unseen_rows_on_every_ps_before_its_checkpoints(tmp_path):
    """run.evict_unseen_steps over gRPC: the first 64 training rows have cities never seen again,
    so the chief's checkpoint 10 evicts their rows from both PS (unseen for more than 3 steps),
    and the summary counts them per table."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    train = os.path.join(os.path.dirname(job.config), "train.csv")
    with open(train) as f:
        lines = f.read().splitlines()
    for i in range(1, 65):  # after the header; the city is the 4th column
        fields = lines[i].split(",")
        fields[3] = f"gone{i % 6}"
        lines[i] = ",".join(fields)
    with open(train, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = run("launch", job.config, "--ps", "2", "--workers", "1",
              "--model-dir", str(tmp_path / "m"), "--set", "input.train.num_epochs=1",
              "--set", "run.evict_unseen_steps=3")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    evicted = summary["rows_evicted"]
    assert evicted == {"city_embedding": 6, "wide": 6}, summary  # the six gone cities' rows
    # Only the chief evicts, once per checkpoint after step 3, and its lines add up to the summary.
    lines = re.findall(r"^\[(\S+)\] .*Evicted (\d+) rows unseen for 3 steps before checkpoint (\d+)",
                       out.stdout, re.MULTILINE)
    assert lines and {task for task, _, _ in lines} == {"chief:0"}, out.stdout[-3000:]
    assert sum(int(n) for _, n, _ in lines) == sum(evicted.values()), (lines, summary)
    assert int(lines[-1][2]) == summary["global_step"]


@pytest.mark.parametrize("hidden", ["8", "40000"])
def test_sync_training_with_one_trainer_equals_one_process_exactly(tmp_path, hidden):
    """run.sync_replicas=1 and only the chief training: every update is its step, applied once
    by the PS over gRPC -- the same parameters and metrics as `shoal train`, bit for bit. With
    40000 hidden units the first kernel ([9, 40000], 1.4 MB) is split by rows over the two PS."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    layers = f"model.hidden_units=[{hidden}]"
    single = run("train", job.config, "--model-dir", str(tmp_path / "single"), "--set", layers)
    assert single.returncode == 0, single.stderr[-3000:]
    out = run("launch", job.config, "--ps", "2", "--workers", "0", "--set", layers,
              "--model-dir", str(tmp_path / "sync"), "--set", "run.sync_replicas=1")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    assert "sync training over 1 replica" in out.stdout
    one = json.loads((tmp_path / "single" / "summary.json").read_text())
    sync = json.loads((tmp_path / "sync" / "summary.json").read_text())
    assert sync["global_step"] == one["global_step"], (one, sync)
    assert sync["metrics"] == one["metrics"], (one, sync)  # equal floats, not close ones
    entries = run("inspect", str(tmp_path / "sync" / f"ckpt-{sync['global_step']}")).stdout
    split = re.findall(r"dnn/hidden_0/kernel@rows-\d+-\d+", entries)
    assert len(split) == (2 if hidden == "40000" else 0), entries


def test_sync_training_aggregates_two_trainers_per_step(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    single = run("train", job.config, "--model-dir", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr[-3000:]
    out = run("launch", job.config, "--ps", "2", "--workers", "1",
              "--model-dir", str(tmp_path / "sync"), "--set", "run.sync_replicas=2")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    assert "sync training over 2 replicas" in out.stdout
    one = json.loads((tmp_path / "single" / "summary.json").read_text())
    sync = json.loads((tmp_path / "sync" / "summary.json").read_text())
    # Each version holds one step of each trainer, so the same data passes take half the global
    # steps (the trainers' shares differ by a partial batch: one more step at most).
    half = one["global_step"] / 2
    assert half - 1 <= sync["global_step"] <= half + 1, (one, sync)
    assert sync["stop_reason"] == "input exhausted"
    # The trainer that ran out of input first (the shares differ here) was dropped from the
    # replicas, so the other finished alone instead of waiting for it.
    worker_steps = int(re.search(r"worker:0 trained (\d+) steps", out.stdout).group(1))
    assert worker_steps != sync["global_step"], out.stdout[-5000:]
    assert "sync training now aggregates 1 trainer per step" in out.stdout
    # Half the updates with the mean gradient of twice the examples, at the same learning rate:
    # a little behind one process on this small task, but trained.
    assert sync["metrics"]["accuracy"] >= one["metrics"]["accuracy"] - 0.05, (one, sync)
    assert sync["metrics"]["auc"] >= one["metrics"]["auc"] - 0.05, (one, sync)


def task_pids(model_dir, task_type, index=None):
    """Pids of the job's `shoal run` processes of one task type (from their TF_CONFIG), or of one
    task when `index` is given."""
    found = subprocess.run(["pgrep", "-f", str(model_dir)], capture_output=True, text=True)
    pids = []
    for pid in found.stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        config = json.loads(env.get(b"TF_CONFIG", b"{}"))
        task = config.get("task", {})
        if task.get("type") == task_type and index in (None, task.get("index")):
            pids.append(int(pid))
    return pids


def launch_and_kill(job, model_dir, task_type, *args, ps=1, after_checkpoint=False):
    """Runs `shoal launch` with `ps` PS and 1 worker (and `args`), SIGKILLs the first task of
    `task_type` once worker:0 logged a training step -- or, with `after_checkpoint`, once a
    checkpoint after step 0 is in model_dir (no wait on the launcher's output, which a loaded
    machine can deliver seconds late; for trainers in lockstep, where it means every trainer
    trains) -- and returns (exit code, everything printed)."""
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", str(ps), "--workers", "1",
                               "--model-dir", str(model_dir), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = ""
        deadline = time.time() + 120
        if after_checkpoint:
            while time.time() < deadline and launch.poll() is None and not any(
                    p.name != "ckpt-0" for p in model_dir.glob("ckpt-*")):
                time.sleep(0.005)
            assert launch.poll() is None, "the job ended before a checkpoint after step 0"
        else:
            while time.time() < deadline and not re.search(r"\[worker:0\] .*step \d+ \|", seen):
                line = launch.stdout.readline()
                if not line:
                    break
                seen += line
            assert re.search(r"\[worker:0\] .*step \d+ \|", seen), seen[-3000:]
        victims = task_pids(model_dir, task_type, 0)
        assert len(victims) == 1, victims
        os.kill(victims[0], signal.SIGKILL)
        rest, _ = launch.communicate(timeout=240)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
    return launch.returncode, seen + rest


def launch_and_kill_worker(job, model_dir, *args):
    return launch_and_kill(job, model_dir, "worker", *args)


def test_sync_training_goes_on_when_a_worker_dies(tmp_path):
    """A worker killed mid-training never commits again: once the coordinator declares it dead
    (heartbeat timeout, 30 s), the chief drops it from the replicas and trains on alone. (3000
    steps: the kill must land before the last; 600 left a margin of well under a second.)"""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=10)
    model_dir = tmp_path / "m"
    code, out = launch_and_kill_worker(job, model_dir, "--max-restarts", "0",
                                       "--set", "input.train.num_epochs=0",
                                       "--set", "run.max_steps=3000",
                                       "--set", "run.sync_replicas=2")
    assert code == 0, out[-5000:]
    assert "sync training now aggregates 1 trainer per step (worker:0 is dead)" in out, out[-5000:]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["global_step"] == 3000, summary
    assert summary["stop_reason"] == "max_steps", summary


def data_tasks(stdout):
    """The chief's `data tasks: {...}` line (the coordinator's queue figures)."""
    found = re.search(r"\[chief:0\] data tasks: (\{.*\})", stdout)
    assert found, stdout[-5000:]
    return json.loads(found.group(1))


def test_data_tasks_give_every_record_exactly_once_per_epoch(tmp_path):
    """Chief + 3 workers lease small byte-range tasks from the coordinator: over 2 epochs every
    task is done once per epoch, and the records trained per epoch are exactly the file's rows."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--ps", "1", "--workers", "3",
              "--model-dir", str(tmp_path / "m"), "--set", "input.train.split_bytes=1024")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    tasks = data_tasks(out.stdout)
    n = tasks["tasks_per_epoch"]
    assert n >= 8, tasks
    assert tasks["records_per_epoch"] == [len(job.train_rows)] * 2, tasks
    assert tasks["tasks_done_per_epoch"] == [n, n], tasks
    assert tasks["epochs_completed"] == 2, tasks
    assert tasks["duplicate_completions"] == 0 and tasks["released"] == 0, tasks
    assert sum(tasks["tasks_by_trainer"].values()) == 2 * n, tasks
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["stop_reason"] == "input exhausted", summary


def test_a_paused_worker_takes_fewer_tasks_and_epochs_stay_exact(tmp_path):
    """worker:1 is frozen (SIGSTOP) for 3 seconds once training has begun: the chief and worker:0
    lease the tasks it would have had statically, and every epoch still has each record exactly
    once."""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", "1", "--workers", "2",
                               "--model-dir", str(model_dir),
                               "--set", "input.train.split_bytes=1024",
                               "--set", "input.train.num_epochs=6"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(launch.stdout), daemon=True)
    reader.start()
    try:
        # Paused once training has begun (the chief waits for every trainer to register first;
        # on a loaded machine that may take seconds), so the pause costs worker:1 training time.
        deadline = time.time() + 60
        while time.time() < deadline and not any(
                re.search(r"\[(chief|worker):0\] .*step \d+ \|", line) for line in list(lines)):
            time.sleep(0.01)
        paused = task_pids(model_dir, "worker", 1)
        assert len(paused) == 1, paused
        os.kill(paused[0], signal.SIGSTOP)
        time.sleep(3)
        os.kill(paused[0], signal.SIGCONT)
        launch.wait(timeout=240)
        reader.join(timeout=30)
        out = "".join(lines)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.wait()
    assert launch.returncode == 0, out[-5000:]
    tasks = data_tasks(out)
    n = tasks["tasks_per_epoch"]
    assert tasks["records_per_epoch"] == [len(job.train_rows)] * 6, tasks
    assert tasks["tasks_done_per_epoch"] == [n] * 6, tasks
    by = tasks["tasks_by_trainer"]
    # A static split gives each of 3 trainers a third; the paused one gets fewer than either
    # other trainer, which take more than their static shares together.
    assert by.get("worker:1", 0) < min(by["chief:0"], by["worker:0"]), tasks
    assert by["chief:0"] + by["worker:0"] > 2 * (6 * n) / 3, tasks


# The kill tests' job: small byte-range tasks, and enough epochs that
# training lasts seconds after the victim's first logged step, so the kill lands mid-training even
# on a fast, idle machine (8 epochs took 0.3-0.7 s, and a CI run once killed too late).
KILL_EPOCHS = 40
KILL_TEST_SETTINGS = ["--set", "input.train.split_bytes=1024",
                      "--set", f"input.train.num_epochs={KILL_EPOCHS}"]


@pytest.mark.parametrize("restarts", [0, 1])
def test_a_killed_worker_s_tasks_go_back_to_the_queue(tmp_path, restarts):
    """worker:0 is SIGKILLed while training asynchronously. Without restarts, once the coordinator
    declares it dead (run.heartbeat_timeout_secs 3) its leased tasks go back to the queue and the
    chief trains them; with one, `shoal launch` starts it again and its new incarnation's
    registration returns them at once. Either way the job ends with every epoch complete,
    evaluated and exported."""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    code, out = launch_and_kill_worker(job, model_dir, "--max-restarts", str(restarts),
                                       *KILL_TEST_SETTINGS,
                                       "--set", "run.heartbeat_timeout_secs=3")
    assert code == 0, out[-5000:]
    tasks = data_tasks(out)
    n = tasks["tasks_per_epoch"]
    assert tasks["tasks_done_per_epoch"] == [n] * KILL_EPOCHS, tasks
    assert tasks["epochs_completed"] == KILL_EPOCHS, tasks
    # At least once: the dead worker's unfinished tasks were trained again by the chief.
    assert all(r >= len(job.train_rows) for r in tasks["records_per_epoch"]), tasks
    assert tasks["released"] >= 1, tasks
    assert "go back to the queue" in out, out[-5000:]
    if restarts:
        assert "restarting worker:0 (restart 1 of 1)" in out, out[-5000:]
        assert "worker:0 restarted: its" in out, out[-5000:]
        assert "worker:0" in tasks["tasks_by_trainer"], tasks
    else:
        assert "worker:0 is dead" in out, out[-5000:]
    assert "exported: " in out, out[-3000:]
    assert (model_dir / "eval" / "metrics.json").exists()


def undisturbed_metrics(tmp_path, job):
    """The final metrics of the kill tests' job trained in one process."""
    out = run("train", job.config, *KILL_TEST_SETTINGS, "--model-dir", str(tmp_path / "alone"))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads((tmp_path / "alone" / "summary.json").read_text())["metrics"]


def assert_finished_like_undisturbed(tmp_path, job, model_dir, out):
    """Exit 0 is checked by the caller; here: every epoch complete (each task at least once),
    exported, evaluated, and as good as the job trained in one process."""
    tasks = data_tasks(out)
    n = tasks["tasks_per_epoch"]
    assert tasks["tasks_done_per_epoch"] == [n] * KILL_EPOCHS, tasks
    assert tasks["epochs_completed"] == KILL_EPOCHS, tasks
    assert all(r >= len(job.train_rows) for r in tasks["records_per_epoch"]), tasks
    assert "exported: " in out, out[-3000:]
    assert (model_dir / "eval" / "metrics.json").exists()
    summary = json.loads((model_dir / "summary.json").read_text())
    assert summary["epochs_completed"] == KILL_EPOCHS, summary
    alone = undisturbed_metrics(tmp_path, job)
    assert summary["metrics"]["accuracy"] >= alone["accuracy"] - 0.05, (summary, alone)
    assert summary["metrics"]["auc"] >= alone["auc"] - 0.03, (summary, alone)


def test_a_killed_ps_rolls_the_cluster_back_to_the_last_checkpoint(tmp_path):
    """ps:0 of 2 is SIGKILLed mid-training. `shoal launch` restarts it; its new incarnation holds
    nothing, so the coordinator rolls the whole cluster back: every trainer's incarnation is
    retired, they rejoin, and the chief restores both PS and the data-task queue from the last
    checkpoint. Training finishes with every epoch complete, evaluated and exported."""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    code, out = launch_and_kill(job, model_dir, "ps", "--max-restarts", "1",
                                *KILL_TEST_SETTINGS, "--set", "run.heartbeat_timeout_secs=3",
                                ps=2)
    assert code == 0, out[-5000:]
    assert "restarting ps:0 (restart 1 of 1)" in out, out[-5000:]
    assert "[worker:0] " in out and "worker:0: rejoining the job" in out, out[-5000:]
    found = re.search(r"\[chief:0\] rollbacks: (\[.*\])", out)
    assert found, out[-5000:]
    rollbacks = json.loads(found.group(1))
    assert len(rollbacks) >= 1, rollbacks
    for r in rollbacks:
        assert r["reason"].startswith("ps:0 "), r
        assert 0 <= r["to_step"] <= r["from_step"], r
        assert r["steps_lost"] == r["from_step"] - r["to_step"], r
        assert re.search(r"/ckpt-\d+$", r["checkpoint"]), r
        assert 0 < r["recovery_seconds"] < 60, r
    assert_finished_like_undisturbed(tmp_path, job, model_dir, out)


def test_a_killed_chief_is_restarted_and_resumes_from_the_last_checkpoint(tmp_path):
    """The chief (and with it the coordinator) is SIGKILLed mid-training. `shoal launch` starts it
    again; the PS and the evaluator register with the new coordinator, the worker rejoins, and
    the new chief restores the last checkpoint with its data-task queue and finishes the job."""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    code, out = launch_and_kill(job, model_dir, "chief", "--max-restarts", "1", "--evaluator",
                                *KILL_TEST_SETTINGS, "--set", "run.heartbeat_timeout_secs=3")
    assert code == 0, out[-5000:]
    assert "restarting chief:0 (restart 1 of 1)" in out, out[-5000:]
    assert "[ps:0] " in out and "registered again" in out, out[-5000:]
    assert "worker:0: rejoining the job" in out, out[-5000:]
    assert re.search(r"\[chief:0\] .*Restored .*ckpt-\d+", out), out[-5000:]
    assert "[evaluator:0] " in out
    assert_finished_like_undisturbed(tmp_path, job, model_dir, out)


def test_a_killed_evaluator_is_restarted_and_reports_the_final_evaluation(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    code, out = launch_and_kill(job, model_dir, "evaluator", "--max-restarts", "1", "--evaluator",
                                *KILL_TEST_SETTINGS, "--set", "run.heartbeat_timeout_secs=3")
    assert code == 0, out[-5000:]
    assert "restarting evaluator:0 (restart 1 of 1)" in out, out[-5000:]
    summary = json.loads((model_dir / "summary.json").read_text())
    assert f"final evaluation at global step {summary['global_step']} reported" in out
    assert_finished_like_undisturbed(tmp_path, job, model_dir, out)


def read_until(launch, pattern, timeout=120):
    """The launcher's lines up to and including the first that matches `pattern`."""
    seen = ""
    deadline = time.time() + timeout
    while time.time() < deadline and not re.search(pattern, seen):
        line = launch.stdout.readline()
        if not line:
            break
        seen += line
    assert re.search(pattern, seen), seen[-3000:]
    return seen


def test_a_chief_killed_after_the_job_ended_tells_the_others_and_exits_0(tmp_path):
    """Regression (chaos soak, issue 18): the chief was SIGKILLed after it had ended the job, while
    it waited for the last task to see the end; the PS had seen it and exited 0. `shoal launch`
    started the chief again, which waited 2 minutes for that PS and failed the job (exit 1). The
    chief now records the end in model_dir first (job_end.json, with the launcher's SHOAL_JOB_ID);
    the new chief finds it, tells the tasks still running and exits 0. The worker is stopped
    after its last push so that the chief is still waiting for it once the PS has exited."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    model_dir = tmp_path / "m"
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", "1", "--workers", "1",
                               "--max-restarts", "1", "--model-dir", str(model_dir),
                               "--set", "run.heartbeat_timeout_secs=5"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    worker = []
    try:
        seen = read_until(launch, r"\[worker:0\] .*worker:0 trained")
        worker = task_pids(model_dir, "worker", 0)
        assert len(worker) == 1, worker
        os.kill(worker[0], signal.SIGSTOP)
        seen += read_until(launch, r"\[chief:0\] .*job done at global step")
        deadline = time.time() + 20
        while task_pids(model_dir, "ps") and time.time() < deadline:
            time.sleep(0.05)
        assert not task_pids(model_dir, "ps"), "the PS did not exit on the job's end"
        chief = task_pids(model_dir, "chief", 0)
        assert len(chief) == 1, chief  # still waiting for the stopped worker to see the end
        os.kill(chief[0], signal.SIGKILL)
        os.kill(worker[0], signal.SIGCONT)
        rest, _ = launch.communicate(timeout=60)
    finally:
        for pid in worker:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)  # the launcher and every member
            launch.communicate()
    out = seen + rest
    assert launch.returncode == 0, out[-5000:]
    assert "restarting chief:0 (restart 1 of 1)" in out, out[-5000:]
    assert "ended successfully before this chief started" in out, out[-5000:]
    assert "Restored" not in out.split("restarting chief:0")[1], out[-5000:]
    assert json.loads((model_dir / "job_end.json").read_text())["global_step"] == \
        json.loads((model_dir / "summary.json").read_text())["global_step"]


def test_an_evaluator_that_missed_the_restarted_chief_s_end_exits_0(tmp_path):
    """Regression (chaos soak, issue 18): the evaluator was busy when the chief was killed and had
    not registered again when the restarted chief finished the job and exited; it kept calling
    the gone coordinator until `shoal launch` stopped it 30 s later (on its own it would have
    given up after 2 min with exit 1). A member that cannot reach the coordinator now ends well
    when model_dir records this job's end. The evaluator is stopped from before the kill until
    the new chief has exited."""
    job = write_job(tmp_path / "job", tmp_path / "model", log_step_count_steps=5)
    model_dir = tmp_path / "m"
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", "1", "--workers", "1",
                               "--evaluator", "--max-restarts", "1", "--model-dir", str(model_dir),
                               *KILL_TEST_SETTINGS, "--set", "run.heartbeat_timeout_secs=3"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    evaluator = []
    try:
        seen = read_until(launch, r"\[(chief|worker):0\] .*\] step \d+ \|")
        evaluator = task_pids(model_dir, "evaluator", 0)
        chief = task_pids(model_dir, "chief", 0)
        assert len(evaluator) == 1 and len(chief) == 1, (evaluator, chief)
        os.kill(evaluator[0], signal.SIGSTOP)
        os.kill(chief[0], signal.SIGKILL)
        seen += read_until(launch, r"\[chief:0\] .*job done at global step")
        deadline = time.time() + 20
        while task_pids(model_dir, "chief") and time.time() < deadline:
            time.sleep(0.05)
        assert not task_pids(model_dir, "chief"), "the restarted chief did not exit"
        os.kill(evaluator[0], signal.SIGCONT)
        rest, _ = launch.communicate(timeout=20)  # shoal launch's exit_grace is 30 s
    finally:
        for pid in evaluator:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)  # the launcher and every member
            launch.communicate()
    out = seen + rest
    assert launch.returncode == 0, out[-5000:]
    assert "restarting chief:0 (restart 1 of 1)" in out, out[-5000:]
    assert "evaluator:0: the coordinator is gone" in out, out[-5000:]
    assert "records that the job ended successfully" in out, out[-5000:]
    assert "evaluator:0 exited with code" not in out, out[-5000:]  # launch logs failed exits


def test_a_ps_lost_during_the_final_evaluation_rolls_back_and_the_job_finishes(tmp_path):
    """Regression (chaos soak, issue 18): a PS was SIGKILLed while the chief waited for the
    evaluator's evaluation of the final checkpoint. Its new incarnation started a rollback, which
    cleared the completion stage, so the evaluator never reported, and the chief kept waiting (up
    to run.completion_timeout_secs, 30 min). The chief now sees the rollback in that wait: the
    next generation restores the final checkpoint and the evaluator reports. The evaluator is
    stopped from the stage's start until the rollback began, so that it cannot report first."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    model_dir = tmp_path / "m"
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", "2", "--workers", "1",
                               "--evaluator", "--max-restarts", "1", "--model-dir", str(model_dir),
                               "--set", "run.heartbeat_timeout_secs=5"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    evaluator = []
    try:
        seen = read_until(launch, r"\[chief:0\] .*completion: final evaluation")
        evaluator = task_pids(model_dir, "evaluator", 0)
        assert len(evaluator) == 1, evaluator
        os.kill(evaluator[0], signal.SIGSTOP)
        ps = task_pids(model_dir, "ps", 0)
        assert len(ps) == 1, ps
        os.kill(ps[0], signal.SIGKILL)
        seen += read_until(launch, r"rolling the cluster back .*ps:0 restarted", timeout=30)
        os.kill(evaluator[0], signal.SIGCONT)
        rest, _ = launch.communicate(timeout=60)
    finally:
        for pid in evaluator:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)  # the launcher and every member
            launch.communicate()
    out = seen + rest
    assert launch.returncode == 0, out[-5000:]
    assert "waiting for the evaluator's evaluation of the final checkpoint: ps:0 restarted" in out
    rollbacks = json.loads(re.search(r"\[chief:0\] rollbacks: (\[.*\])", out).group(1))
    assert [r["reason"] for r in rollbacks] == ["ps:0 restarted"], rollbacks
    assert rollbacks[0]["steps_lost"] == 0, rollbacks  # the final checkpoint was taken
    summary = json.loads((model_dir / "summary.json").read_text())
    assert f"final evaluation at global step {summary['global_step']} reported" in out
    tasks = data_tasks(out)
    assert tasks["epochs_completed"] == 2, tasks
    assert tasks["records_per_epoch"] == [len(job.train_rows)] * 2, tasks


def cluster_env(ports, task_type, index, secret=SECRET):
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "ps": [f"127.0.0.1:{ports[1]}"]}
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}))
    if secret is not None:
        env["SHOAL_JOB_SECRET"] = secret
    return env


def test_run_without_a_secret_refuses_to_start(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("run", job.config, env=cluster_env(free_ports(2), "ps", 0, secret=None))
    assert out.returncode == 1
    assert "SHOAL_JOB_SECRET" in out.stderr


def test_run_without_tf_config_says_so(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    env = dict(os.environ, SHOAL_JOB_SECRET=SECRET)
    env.pop("TF_CONFIG", None)
    out = run("run", job.config, env=env)
    assert out.returncode == 1
    assert "TF_CONFIG" in out.stderr


def test_a_bad_tf_config_names_the_field(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    env = cluster_env(free_ports(2), "worker", 3)
    out = run("run", job.config, env=env)
    assert out.returncode == 1
    assert "TF_CONFIG: task" in out.stderr, out.stderr


def test_a_member_with_the_wrong_secret_is_refused(tmp_path):
    """A chief with the job's secret, a PS with another: the chief refuses the PS's calls, and the
    PS fails at once naming the refusal instead of serving a job it does not belong to."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    ports = free_ports(2)
    chief = subprocess.Popen([SHOAL, "run", job.config, "--model-dir", str(tmp_path / "m")],
                             env=cluster_env(ports, "chief", 0), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        wrong = "another-secret-of-32-characters!"
        ps = run("run", job.config, "--model-dir", str(tmp_path / "m"),
                 env=cluster_env(ports, "ps", 0, secret=wrong), timeout=180)
        assert ps.returncode == 1
        assert "UNAUTHENTICATED" in ps.stderr or "secret" in ps.stderr, ps.stderr[-3000:]
        assert SECRET not in ps.stderr and wrong not in ps.stderr
    finally:
        chief.send_signal(signal.SIGTERM)
        out, _ = chief.communicate(timeout=30)
        assert SECRET not in out


def test_launch_forwards_ctrl_c_and_everything_exits(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    # Endless input: the job only ends by the signal.
    launch = subprocess.Popen([SHOAL, "launch", job.config, "--ps", "1", "--workers", "1",
                               "--model-dir", str(tmp_path / "m"),
                               "--set", "input.train.num_epochs=0",
                               "--set", "run.max_steps=100000000"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    seen = ""
    while time.time() < deadline and "| loss" not in seen:
        line = launch.stdout.readline()
        if not line:
            break
        seen += line
    assert "| loss" in seen, seen[-3000:]  # training is under way
    launch.send_signal(signal.SIGINT)
    rest, _ = launch.communicate(timeout=60)
    assert launch.returncode != 0
    # No process of the job is left.
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "m")], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_the_evaluator_evaluates_checkpoints_and_the_final_one(tmp_path):
    """With an evaluator the chief does not evaluate: the evaluator evaluates the checkpoints as
    they come, runs the exporters, and in the completion's final-evaluation stage evaluates the
    final checkpoint and reports it (with its exports) to the chief for the summary. The chief
    learns of an evaluator when it registers (as in TF, the cluster does not list it) and
    evaluates as without one until then; a start delay of 1 s (TF's default is 120) gives it the
    time to register: without one, a CI run under load had the chief's first step, and so its
    first evaluation, 0.1 s before the evaluator registered."""
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--ps", "1", "--workers", "1", "--evaluator",
              "--model-dir", str(tmp_path / "m"), "--set", "eval.throttle_secs=0",
              "--set", "eval.start_delay_secs=1",
              "--set", "input.train.split_bytes=1024", "--set", "input.train.num_epochs=150")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    evaluated = [line for line in out.stdout.splitlines()
                 if line.startswith("[evaluator:0] ") and "evaluator: " in line
                 and "ckpt-" in line]
    assert len(evaluated) >= 2, out.stdout[-3000:]
    # Its last evaluation is the final checkpoint, whose metrics are the job's.
    assert f"ckpt-{summary['global_step']} at global step {summary['global_step']}" in evaluated[-1]
    assert f"final evaluation at global step {summary['global_step']} reported" in out.stdout
    metrics = json.loads((tmp_path / "m" / "eval" / "metrics.json").read_text())
    assert metrics["global_step"] == summary["global_step"]
    assert metrics["metrics"]["loss"] == pytest.approx(summary["metrics"]["loss"], abs=1e-6)
    # The chief evaluated nothing itself; the exports it reports are the evaluator's.
    assert not re.search(r"\[chief:0\] .*Evaluation at global step", out.stdout), out.stdout[-3000:]
    assert re.search(r"/export/final/\d+$", summary["export_path"]), summary
    assert os.path.exists(os.path.join(summary["export_path"], "export.json"))
    assert f"[chief:0] exported: {summary['export_path']}" in out.stdout
