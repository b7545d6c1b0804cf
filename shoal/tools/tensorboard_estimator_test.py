"""TensorBoard loads what `shoal train` writes: the training scalars in MODEL_DIR (loss, speed,
input stall, embedding table sizes every run.log_step_count_steps steps) and the evaluation in
MODEL_DIR/eval, which must equal summary.json's and eval/metrics.json's figures. TensorBoard is the
PyPI package of scripts/requirements-test.txt; the binary comes from $SHOAL_BIN, set by ctest
(shoal/tools/CMakeLists.txt):

    SHOAL_BIN=build/shoal $(scripts/python-env.sh) -m pytest -q \\
        shoal/tools/tensorboard_estimator_test.py

The data set and config are job_cli_test.py's (write_job).
"""
import json
import logging
import math
import os
import re
import subprocess

import numpy as np
import pytest

from job_cli_test import FINAL_STEP, write_job

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402

LOG_STEPS = 4
HISTOGRAM_STEPS = 8


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    shoal = os.environ.get("SHOAL_BIN")
    if not shoal or not os.access(shoal, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")
    directory = tmp_path_factory.mktemp("job")
    job = write_job(directory, directory / "model", log_step_count_steps=LOG_STEPS)
    result = subprocess.run([shoal, "train", job.config, "--set",
                             f"run.save_histograms_steps={HISTOGRAM_STEPS}"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return job


@pytest.fixture
def no_tensorboard_warnings(caplog):
    """Fails the test if TensorBoard logs a warning about our files, or (at DEBUG) a truncated or
    corrupt record, as in shoal/summary/tensorboard_compat_test.py."""
    caplog.set_level(logging.DEBUG, logger="tensorboard")
    yield
    complaints = [r.getMessage() for r in caplog.get_records("call")
                  if r.levelno >= logging.WARNING
                  or re.search(r"truncated|corrupt|data ?loss", r.getMessage(), re.IGNORECASE)]
    assert not complaints, complaints


def load_scalars(directory):
    """{tag: [(step, value)]} of the event files in `directory`."""
    accumulator = event_accumulator.EventAccumulator(
        str(directory), size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"]}


def read_json(*path):
    with open(os.path.join(*map(str, path))) as f:
        return json.load(f)


def test_training_scalars(job, no_tensorboard_warnings):
    scalars = load_scalars(job.model_dir)
    tables = {"wide", "city_embedding"}  # wide columns share "wide"; embedding: column + _embedding
    assert set(scalars) == {"loss", "global_step/sec", "examples/sec", "input/stall_fraction",
                            "input/vocabulary_miss_rate/color"} | {
        f"embedding/{table}/{figure}" for table in tables for figure in ("rows", "bytes")}

    # Every LOG_STEPS steps, and once more at the end of training.
    final_step = read_json(job.model_dir, "summary.json")["global_step"]
    assert final_step == FINAL_STEP
    steps = list(range(LOG_STEPS, final_step + 1, LOG_STEPS))
    if final_step % LOG_STEPS:
        steps.append(final_step)
    for tag, points in scalars.items():
        assert [step for step, _ in points] == steps, tag
        assert all(math.isfinite(value) for _, value in points), tag

    assert all(0 < loss < 1.5 for _, loss in scalars["loss"]), scalars["loss"]
    assert all(value > 0 for _, value in scalars["examples/sec"])
    assert all(value > 0 for _, value in scalars["global_step/sec"])
    assert all(0 <= value <= 1 for _, value in scalars["input/stall_fraction"])
    # Every color is in the vocabulary (messy_data_test.py has misses).
    assert all(value == 0 for _, value in scalars["input/vocabulary_miss_rate/color"])

    # A row per id seen: at most the distinct ids of the training data (hashing may merge some).
    cities = {row["city"] for row in job.train_rows}
    colors = {row["color"] for row in job.train_rows}
    for table, ids in (("city_embedding", len(cities)), ("wide", len(cities) + len(colors))):
        rows = [value for _, value in scalars[f"embedding/{table}/rows"]]
        assert all(0 < r <= ids for r in rows), (table, rows)
        assert rows == sorted(rows), (table, rows)  # tables only grow
        assert all(value > 0 for _, value in scalars[f"embedding/{table}/bytes"]), table


def test_histograms_of_variables_rows_and_activations(job, no_tensorboard_warnings):
    """run.save_histograms_steps: every dense variable, the looked-up rows' norms per table and the
    deep tower's activations, every HISTOGRAM_STEPS steps, as TensorBoard's histograms."""
    accumulator = event_accumulator.EventAccumulator(
        str(job.model_dir), size_guidance={event_accumulator.HISTOGRAMS: 0})
    accumulator.Reload()
    tags = set(accumulator.Tags()["histograms"])
    assert {"dnn/hidden_0/kernel", "dnn/hidden_0/bias", "dnn/logits/kernel",
            "dnn/hidden_0/activation", "dnn/logits", "embedding/city_embedding/row_norm",
            "embedding/wide/row_norm"} <= tags, tags
    steps = list(range(HISTOGRAM_STEPS, FINAL_STEP + 1, HISTOGRAM_STEPS))
    for tag in tags:
        events = accumulator.Histograms(tag)
        assert [e.step for e in events] == steps, tag
        for e in events:
            h = e.histogram_value
            assert sum(h.bucket) == h.num, tag  # every value in one bucket
            assert h.min <= h.max, tag
            assert list(h.bucket_limit) == sorted(h.bucket_limit), tag
    # The hidden kernel: [2 numeric + 3 indicator + 4 embedding, 8] Glorot-initialised values.
    for e in accumulator.Histograms("dnn/hidden_0/kernel"):
        h = e.histogram_value
        assert h.num == 9 * 8
        assert -2 < h.min < 0 < h.max < 2, h
    # ReLU activations of full batches of 32 rows (the histogram steps are not the last one).
    for e in accumulator.Histograms("dnn/hidden_0/activation"):
        assert e.histogram_value.num == 32 * 8
        assert e.histogram_value.min >= 0
    # A row per city the batch looked up, of dimension 4 (norms > 0).
    cities = {row["city"] for row in job.train_rows}
    for e in accumulator.Histograms("embedding/city_embedding/row_norm"):
        assert 0 < e.histogram_value.num <= len(cities)
        assert e.histogram_value.min > 0


def test_evaluation_scalars_equal_the_metrics_files(job, no_tensorboard_warnings):
    summary = read_json(job.model_dir, "summary.json")
    written = read_json(job.model_dir, "eval", "metrics.json")
    assert written["global_step"] == summary["global_step"]
    assert written["metrics"] == summary["metrics"]

    scalars = load_scalars(os.path.join(job.model_dir, "eval"))
    assert set(scalars) == set(written["metrics"]) | {"input/vocabulary_miss_rate/color"}
    assert scalars.pop("input/vocabulary_miss_rate/color") == [(summary["global_step"], 0.0)]
    for tag, points in scalars.items():
        # One evaluation (eval.throttle_secs is longer than the run): the final one.
        assert [step for step, _ in points] == [summary["global_step"]], tag
        assert points[0][1] == np.float32(written["metrics"][tag]), tag
