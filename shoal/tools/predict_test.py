"""Batch prediction into a directory of one file per data task (docs/prediction.md): `shoal
predict --output DIR/` in one process and `shoal launch --predict-output DIR` over a cluster of
PS, a chief and workers, including a worker killed mid-prediction. Every input row must be scored
exactly once, with the scores of the single-process prediction and of the serving Predictor.

Uses the small CSV task of job_cli_test.py; the prediction input is 100,000 generated rows with
an `id` column that is passed through. $SHOAL_BIN is the binary (ctest sets it).
"""
import json
import os
import random
import signal
import subprocess
import time

import pytest

from cluster_test import data_tasks, run, task_pids
from job_cli_test import write_job
from serve_test import Server

ROWS = 100_000


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A trained model and the prediction input (id, x1, x2, color, city; no label)."""
    directory = tmp_path_factory.mktemp("predict")
    job = write_job(directory / "job", directory / "model")
    out = run("train", job.config)
    assert out.returncode == 0, out.stderr[-3000:]
    rng = random.Random(7)
    path = directory / "input.csv"
    with open(path, "w") as f:
        f.write("id,x1,x2,color,city\n")
        for i in range(ROWS):
            f.write(f"u{i},{rng.uniform(-1, 1):.4f},{rng.uniform(-1, 1):.4f},"
                    f"{rng.choice(['red', 'green', 'blue'])},city{rng.randrange(12)}\n")
    single = directory / "single.jsonl"
    out = run("predict", job.config, "--input", path, "--output", single, "--passthrough", "id")
    assert out.returncode == 0, out.stderr[-3000:]
    return job, path, scores_by_id([single])


def scores_by_id(files):
    """id -> logistic of every line of `files`; fails on an id seen twice."""
    scores = {}
    for path in files:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                assert row["id"] not in scores, f"{row['id']} scored twice ({path})"
                scores[row["id"]] = row["logistic"][0]
    return scores


def read_output(directory):
    """(_SUCCESS as a dict, id -> score over the part files); checks the directory's layout."""
    success = json.loads((directory / "_SUCCESS").read_text())
    parts = sorted(p.name for p in directory.iterdir() if p.name != "_SUCCESS")
    assert parts == [f"part-{i:05d}.jsonl" for i in range(success["tasks"])], parts
    assert success["files"] == [str(directory / name) for name in parts]
    return success, scores_by_id(directory / name for name in parts)


def assert_same_scores(got, expected):
    """Every input row once, with the single process's score (a different batching may round the
    matrix products differently)."""
    assert len(got) == len(expected) == ROWS
    assert got.keys() == expected.keys()
    worst = max(abs(got[k] - expected[k]) for k in expected)
    assert worst <= 1e-5, worst


def test_one_process_writes_a_file_per_task_and_success(trained, tmp_path):
    job, path, expected = trained
    out_dir = tmp_path / "out"
    out = run("predict", job.config, "--input", path, "--output", f"{out_dir}/",
              "--passthrough", "id", "--set", "input.eval.split_bytes=200000")
    assert out.returncode == 0, out.stderr[-3000:]
    success, got = read_output(out_dir)
    assert success["tasks"] >= 10 and success["rows"] == ROWS, success
    assert f"predicted {ROWS} examples into {out_dir} ({success['tasks']} files)" in out.stdout
    assert success["checkpoint"].endswith(f"ckpt-{success['global_step']}"), success
    assert_same_scores(got, expected)
    # A finished prediction is never overwritten.
    again = run("predict", job.config, "--input", path, "--output", f"{out_dir}/")
    assert again.returncode != 0
    assert "holds a finished prediction (_SUCCESS)" in again.stderr, again.stderr[-2000:]


def test_a_cluster_scores_every_row_exactly_once_with_a_worker_killed(trained, tmp_path):
    """2 PS, a chief and 2 workers lease small tasks; worker:0 is killed (SIGKILL) while it writes
    a task's file, and `shoal launch` starts it again: its unfinished tasks go back to the queue
    and are predicted again, and the output still holds every row once."""
    job, path, expected = trained
    out_dir = tmp_path / "out"
    model_dir = str(job.model_dir)  # named on the members' command lines: task_pids finds them
    launch = subprocess.Popen(
        [os.environ.get("SHOAL_BIN", "build/shoal"), "launch", job.config, "--ps", "2",
         "--workers", "2", "--model-dir", model_dir, "--predict-input", str(path), "--predict-output", str(out_dir),
         "--passthrough", "id", "--set", "input.eval.split_bytes=32768",
         "--set", "input.eval.batch_size=16"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Worker:0's first temporary task file: it holds a lease and is mid-task.
        deadline = time.time() + 120
        killed = False
        while time.time() < deadline and launch.poll() is None:
            if out_dir.is_dir() and any(".worker-0-" in name for name in os.listdir(out_dir)):
                victims = task_pids(model_dir, "worker", 0)
                assert len(victims) == 1, victims
                os.kill(victims[0], signal.SIGKILL)
                killed = True
                break
            time.sleep(0.002)
        assert killed, "worker:0 never started a task"
        printed, _ = launch.communicate(timeout=240)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
    assert launch.returncode == 0, printed[-5000:]
    assert "restarting worker:0 (restart 1" in printed, printed[-5000:]
    tasks = data_tasks(printed)
    assert tasks["released"] >= 1, tasks  # the killed incarnation's leases came back
    assert tasks["tasks_done_per_epoch"] == [tasks["tasks_per_epoch"]], tasks
    assert tasks["records_per_epoch"] == [ROWS], tasks
    success, got = read_output(out_dir)
    assert success["rows"] == ROWS and success["tasks"] == tasks["tasks_per_epoch"], success
    assert_same_scores(got, expected)

    # The serving Predictor, on the model's export, gives the same scores.
    base = os.path.join(model_dir, "export", "final")
    server = Server(os.environ.get("SHOAL_BIN", "build/shoal"), base)
    try:
        with open(path) as f:
            lines = f.read().splitlines()[1:501]
        instances = []
        for line in lines:
            _, x1, x2, color, city = line.split(",")
            instances.append({"x1": float(x1), "x2": float(x2), "color": color, "city": city})
        status, body = server.predict({"instances": instances})
        assert status == 200, body
        for line, prediction in zip(lines, body["predictions"]):
            assert abs(prediction["logistic"][0] - got[line.split(",")[0]]) <= 1e-5, line
    finally:
        server.stop()


def test_scoring_and_evaluating_need_no_training_data(trained, tmp_path):
    """Regression: predict and evaluate opened the *training* input for the model's layout, so a
    model could not be scored where its training data is absent (another machine, data deleted).
    They read only the model_dir and the input they score, in one process and on a cluster."""
    job, path, expected = trained
    gone = ["--set", "input.train.files=[/nonexistent/train-*.csv]"]
    single = tmp_path / "single.jsonl"
    out = run("predict", job.config, *gone, "--input", path, "--output", single,
              "--passthrough", "id")
    assert out.returncode == 0, out.stderr[-3000:]
    assert_same_scores(scores_by_id([single]), expected)

    out = run("evaluate", job.config, *gone)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "evaluation of" in out.stdout and "/nonexistent" not in out.stderr, out.stderr[-2000:]

    out_dir = tmp_path / "cluster"
    out = run("launch", job.config, *gone, "--ps", "1", "--workers", "1",
              "--predict-input", path, "--predict-output", out_dir, "--passthrough", "id",
              "--set", "input.eval.split_bytes=500000")
    assert out.returncode == 0, (out.stdout + out.stderr)[-5000:]
    _, got = read_output(out_dir)
    assert_same_scores(got, expected)


def test_a_cluster_prediction_without_a_checkpoint_fails_clearly(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--ps", "1", "--workers", "1",
              "--predict-output", str(tmp_path / "out"))
    assert out.returncode != 0
    assert "no checkpoint in model_dir" in out.stdout + out.stderr, out.stdout[-3000:]
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    # The worker saw the chief fail the job (exit code 3): it is not started again.
    assert "worker:0 exited with code 3" in out.stderr, out.stderr[-3000:]
    assert "restarting worker:0" not in out.stderr, out.stderr[-3000:]


def test_prediction_flags_need_an_output(tmp_path):
    job = write_job(tmp_path / "job", tmp_path / "model")
    out = run("launch", job.config, "--predict-input", "x.csv")
    assert out.returncode != 0
    assert "--predict-input and --passthrough need --predict-output" in out.stderr, out.stderr
