"""Real multi-process clusters over gRPC on loopback: `shoal launch` and `shoal run` (docs/cluster.md).

Uses the small CSV task of job_cli_test.py (600 training rows, 2 epochs). $SHOAL_BIN is the binary
(ctest sets it).
"""
import json
import os
import signal
import socket
import subprocess
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
    # Async training on two trainers is not bit-identical, but as good.
    assert two["metrics"]["accuracy"] >= one["metrics"]["accuracy"] - 0.05, (one, two)
    assert two["metrics"]["auc"] >= one["metrics"]["auc"] - 0.03, (one, two)
    # The chief wrote the checkpoint with one shard file per PS.
    ckpt = tmp_path / "cluster" / f"ckpt-{two['global_step']}"
    assert sorted(p.name for p in ckpt.glob("*.data")) == [
        "shard-00000-of-00002.data", "shard-00001-of-00002.data"]


def test_launch_stops_at_max_steps_cluster_wide(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--ps", "1", "--workers", "1",
              "--model-dir", str(tmp_path / "m"), "--set", "run.max_steps=10")
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    # A trainer may finish the step it was in when the limit was reached: at most one more each.
    assert 10 <= summary["global_step"] <= 12, summary


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
