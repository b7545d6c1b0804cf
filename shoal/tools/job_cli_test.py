"""`shoal train | evaluate | predict | export CONFIG.yaml` as a user runs them: exit codes, what
they print, and the files they leave in MODEL_DIR (summary.json, eval/metrics.json, ckpt-N,
export/<exporter>/<version>/). Self-contained: each test writes a small CSV task and a wide & deep
config into its temporary directory. The binary comes from $SHOAL_BIN; ctest sets it
(shoal/tools/CMakeLists.txt):

    SHOAL_BIN=build/shoal $(scripts/python-env.sh) -m pytest -q shoal/tools/job_cli_test.py

tensorboard_estimator_test.py reuses write_job.
"""
import json
import math
import os
import random
import re
import shutil
import string
import subprocess
from collections import namedtuple

import pytest

COLORS = ("red", "green", "blue")
CITIES = tuple(f"city{i}" for i in range(12))
TRAIN_ROWS, EVAL_ROWS = 600, 200
BATCH_SIZE, EVAL_BATCH_SIZE, NUM_EPOCHS = 32, 50, 2
SAVE_CHECKPOINTS_STEPS = 10
# Batches straddle the epoch boundary (TF's repeat().batch()): 1200 rows are 37 full batches and
# one of 16.
FINAL_STEP = math.ceil(TRAIN_ROWS * NUM_EPOCHS / BATCH_SIZE)
SUMMARY_KEYS = {"global_step", "examples", "epochs_completed", "stop_reason", "checkpoint",
                "metrics", "export_path", "exports", "wall_time_secs", "rows_evicted",
                "vocabulary_misses"}
PREDICTION_KEYS = {"logistic", "class_ids", "logits"}

# The eval input's schema is an alias of the train input's, as in examples/titanic/config.yaml.
CONFIG = string.Template("""\
model_dir: $model_dir
features:
  numeric:
    - {name: x1}
    - {name: x2}
  vocabulary:
    - {name: color, vocabulary: [red, green, blue]}
  hashed:
    - {name: city, hash_bucket_size: 1000}
  embedding:
    - {categorical: city, dimension: 4}
  indicator:
    - {categorical: color}
  wide:
    - {categorical: color}
    - {categorical: city}
  label: label
model: {type: wide_deep, hidden_units: [8]}
input:
  train:
    files: [train.csv]
    format: csv
    schema: &schema
      - {name: x1}
      - {name: x2}
      - {name: color, type: string}
      - {name: city, type: string}
      - {name: label, type: int64}
    batch_size: $batch_size
    num_epochs: $num_epochs
  eval:
    files: [eval.csv]
    format: csv
    schema: *schema
    batch_size: $eval_batch_size
run:
  save_checkpoints_steps: $save_steps
  log_step_count_steps: $log_steps
eval:
  throttle_secs: 600
  exporters: [{name: final, type: final}]
""")

Job = namedtuple("Job", "config model_dir train_rows eval_rows")


def write_rows(path, count, seed, with_label=True):
    """Writes `count` rows of a learnable task, label = [x1 + x2 + shift(color) > 0], with a city
    column for the embedding; returns them as dicts."""
    rng = random.Random(seed)
    shift = {"red": 0.6, "green": 0.0, "blue": -0.3}
    rows = []
    for _ in range(count):
        row = {"x1": f"{rng.uniform(-1, 1):.4f}", "x2": f"{rng.uniform(-1, 1):.4f}",
               "color": rng.choice(COLORS), "city": rng.choice(CITIES)}
        row["label"] = int(float(row["x1"]) + float(row["x2"]) + shift[row["color"]] > 0)
        rows.append(row)
    columns = ["x1", "x2", "color", "city"] + (["label"] if with_label else [])
    with open(path, "w") as f:
        f.write(",".join(columns) + "\n")
        for row in rows:
            f.write(",".join(str(row[c]) for c in columns) + "\n")
    return rows


def write_job(directory, model_dir, log_step_count_steps=100):
    """train.csv, eval.csv and config.yaml (data paths relative to it) in `directory`."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    train_rows = write_rows(os.path.join(directory, "train.csv"), TRAIN_ROWS, seed=1)
    eval_rows = write_rows(os.path.join(directory, "eval.csv"), EVAL_ROWS, seed=2)
    config = os.path.join(directory, "config.yaml")
    with open(config, "w") as f:
        f.write(CONFIG.substitute(model_dir=model_dir, batch_size=BATCH_SIZE,
                                  num_epochs=NUM_EPOCHS, eval_batch_size=EVAL_BATCH_SIZE,
                                  save_steps=SAVE_CHECKPOINTS_STEPS,
                                  log_steps=log_step_count_steps))
    return Job(config, str(model_dir), train_rows, eval_rows)


@pytest.fixture(scope="module")
def shoal():
    path = os.environ.get("SHOAL_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")

    def run(*args):
        return subprocess.run([path, *map(str, args)], capture_output=True, text=True,
                              timeout=300)
    return run


def read_json(*path):
    with open(os.path.join(*map(str, path))) as f:
        return json.load(f)


def only_export(base):
    """The one version directory (unix seconds) of an export base."""
    versions = [name for name in os.listdir(base) if name.isdigit()]
    assert len(versions) == 1, versions
    return os.path.join(base, versions[0])


def printed_metrics(stdout):
    """The `  name   0.1234` lines of train's and evaluate's output."""
    return dict(re.findall(r"^  (\S+) +(-?\d+\.\d{4})$", stdout, re.MULTILINE))


def rounded(metrics):
    return {name: f"{value:.4f}" for name, value in metrics.items()}


def copy_model(job, destination):
    shutil.copytree(job.model_dir, destination)
    return str(destination)


Trained = namedtuple("Trained", "job result summary eval_metrics")


@pytest.fixture(scope="module")
def trained(shoal, tmp_path_factory):
    """One full training run, shared; tests that write into MODEL_DIR work on a copy."""
    directory = tmp_path_factory.mktemp("trained")
    job = write_job(directory, directory / "model")
    result = shoal("train", job.config)
    assert result.returncode == 0, result.stderr
    return Trained(job, result, read_json(job.model_dir, "summary.json"),
                   read_json(job.model_dir, "eval", "metrics.json"))


def test_train_prints_the_final_metrics_and_writes_the_summary(trained):
    job, result, summary = trained.job, trained.result, trained.summary
    assert set(summary) == SUMMARY_KEYS
    assert summary["global_step"] == FINAL_STEP
    assert summary["examples"] == TRAIN_ROWS * NUM_EPOCHS
    assert summary["epochs_completed"] == NUM_EPOCHS
    assert summary["stop_reason"] == "input exhausted"
    assert summary["checkpoint"] == os.path.join(job.model_dir, f"ckpt-{FINAL_STEP}")
    assert os.path.isdir(summary["checkpoint"])
    assert 0 < summary["wall_time_secs"] < 300
    assert summary["rows_evicted"] == {}  # run.evict_unseen_steps is 0: no eviction
    # Every color of the data is in the vocabulary.
    no_misses = {"color": {"values": EVAL_ROWS, "misses": 0, "rate": 0.0, "examples": []}}
    assert summary["vocabulary_misses"] == {
        "train": {"color": {**no_misses["color"], "values": TRAIN_ROWS * NUM_EPOCHS}},
        "eval": no_misses}

    metrics = summary["metrics"]
    assert {"loss", "accuracy", "auc", "precision", "recall", "label/mean"} <= set(metrics)
    assert metrics["accuracy"] > 0.75, metrics
    assert metrics["label/mean"] == sum(r["label"] for r in job.eval_rows) / EVAL_ROWS
    # The final evaluation is the one in eval/metrics.json, of the final checkpoint.
    assert trained.eval_metrics == {"global_step": FINAL_STEP, "examples": EVAL_ROWS,
                                    "checkpoint": summary["checkpoint"], "metrics": metrics,
                                    "vocabulary_misses": no_misses}

    export_path = only_export(os.path.join(job.model_dir, "export", "final"))
    assert summary["export_path"] == export_path
    assert summary["exports"] == [export_path]
    export = read_json(export_path, "export.json")
    assert export["global_step"] == FINAL_STEP
    assert (export["format"], export["format_version"]) == ("shoal-export", 2)
    assert (export["model_type"], export["head"]) == ("wide_deep", "binary")
    assert export["created_unix_secs"] == int(os.path.basename(export_path))
    assert os.path.isfile(os.path.join(export_path, "config.yaml"))
    assert os.path.isdir(os.path.join(export_path, "variables"))
    # Every file but export.json is listed with its size.
    listed = {name: info["bytes"] for name, info in export["files"].items()}
    on_disk = {os.path.relpath(os.path.join(d, f), export_path): os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(export_path) for f in files if f != "export.json"}
    assert listed == on_disk
    signature = export["signature"]
    assert [i["name"] for i in signature["inputs"]] == ["x1", "x2", "color", "city", "label"]
    assert [i["dtype"] for i in signature["inputs"]] == ["float", "float", "string", "string",
                                                         "int64"]
    assert signature["label"] == "label"
    assert {o["name"]: o["shape"] for o in signature["outputs"]} == {
        "logits": [1], "logistic": [1], "class_ids": [1]}

    checkpoints = sorted(int(name[5:]) for name in os.listdir(job.model_dir)
                         if name.startswith("ckpt-"))
    assert checkpoints == [10, 20, 30, FINAL_STEP]

    assert result.stdout.startswith(
        f"trained: global_step {FINAL_STEP}, {TRAIN_ROWS * NUM_EPOCHS} examples, ")
    assert f"final evaluation ({EVAL_ROWS} examples):\n" in result.stdout
    assert printed_metrics(result.stdout) == rounded(metrics)
    assert f"exported: {export_path}\n" in result.stdout
    assert result.stdout.endswith(f"summary: {job.model_dir}/summary.json\n")


def test_max_steps_stops_there_and_the_next_train_resumes(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "from_config")
    model_dir = str(tmp_path / "from_flag")

    first = shoal("train", job.config, "--set", "run.max_steps=7", "--model-dir", model_dir)
    assert first.returncode == 0, first.stderr
    summary = read_json(model_dir, "summary.json")
    assert (summary["global_step"], summary["stop_reason"]) == (7, "max_steps")
    assert summary["examples"] == 7 * BATCH_SIZE
    assert summary["epochs_completed"] == -1  # docs/estimator.md: stopped before the input ended
    assert summary["checkpoint"] == os.path.join(model_dir, "ckpt-7")
    assert not os.path.exists(job.model_dir)  # --model-dir replaced the config's

    second = shoal("train", job.config, "--set", "run.max_steps=15", "--model-dir", model_dir)
    assert second.returncode == 0, second.stderr
    assert f"Restored {model_dir}/ckpt-7 (global step 7)" in second.stderr
    summary = read_json(model_dir, "summary.json")
    assert (summary["global_step"], summary["stop_reason"]) == (15, "max_steps")
    assert summary["examples"] == 8 * BATCH_SIZE  # this run's only
    assert summary["checkpoint"] == os.path.join(model_dir, "ckpt-15")
    assert read_json(model_dir, "eval", "metrics.json")["global_step"] == 15
    assert second.stdout.startswith(f"trained: global_step 15, {8 * BATCH_SIZE} examples, ")


def test_evaluate_writes_metrics_json_and_prints_the_same(shoal, trained, tmp_path):
    model_dir = copy_model(trained.job, tmp_path / "model")
    os.remove(os.path.join(model_dir, "eval", "metrics.json"))
    result = shoal("evaluate", trained.job.config, "--model-dir", model_dir)
    assert result.returncode == 0, result.stderr
    written = read_json(model_dir, "eval", "metrics.json")
    checkpoint = os.path.join(model_dir, f"ckpt-{FINAL_STEP}")
    assert (written["global_step"], written["examples"], written["checkpoint"]) == (
        FINAL_STEP, EVAL_ROWS, checkpoint)
    # The checkpoint the training run evaluated in memory, on the same data.
    assert written["metrics"] == pytest.approx(trained.summary["metrics"], rel=1e-9)
    assert result.stdout == (
        f"evaluation of {checkpoint} at global step {FINAL_STEP} ({EVAL_ROWS} examples):\n"
        + "".join(f"  {name:<16} {value:.4f}\n" for name, value in written["metrics"].items())
        + f"metrics: {model_dir}/eval/metrics.json\n")
    assert printed_metrics(result.stdout) == rounded(written["metrics"])


def test_evaluate_steps_limits_the_batches(shoal, trained, tmp_path):
    model_dir = copy_model(trained.job, tmp_path / "model")
    result = shoal("evaluate", trained.job.config, "--model-dir", model_dir, "--steps", 1)
    assert result.returncode == 0, result.stderr
    written = read_json(model_dir, "eval", "metrics.json")
    assert (written["global_step"], written["examples"]) == (FINAL_STEP, EVAL_BATCH_SIZE)
    assert f"({EVAL_BATCH_SIZE} examples):\n" in result.stdout
    assert printed_metrics(result.stdout) == rounded(written["metrics"])


def read_predictions(text):
    predictions = [json.loads(line) for line in text.splitlines()]
    for p in predictions:
        assert set(p) == PREDICTION_KEYS, p
        assert all(len(values) == 1 for values in p.values()), p
        logit, logistic, class_id = p["logits"][0], p["logistic"][0], p["class_ids"][0]
        assert logistic == pytest.approx(1 / (1 + math.exp(-logit)), rel=1e-5, abs=1e-7)
        assert class_id == (1.0 if logistic > 0.5 else 0.0), p
    return predictions


def test_predict_writes_a_json_line_per_row(shoal, trained, tmp_path):
    output = tmp_path / "predictions.jsonl"
    result = shoal("predict", trained.job.config, "--output", output)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"predicted {EVAL_ROWS} examples into {output}\n"
    predictions = read_predictions(output.read_text())
    assert len(predictions) == EVAL_ROWS
    # In input order: the class ids score the final evaluation's accuracy.
    correct = sum(p["class_ids"][0] == row["label"]
                  for p, row in zip(predictions, trained.job.eval_rows))
    assert correct / EVAL_ROWS == trained.summary["metrics"]["accuracy"]


def test_predict_reads_input_without_the_label_column(shoal, trained, tmp_path):
    """Prediction drops the label (require_label false), also when the schema declares it."""
    unlabelled = tmp_path / "unlabelled.csv"
    write_rows(unlabelled, 7, seed=3, with_label=False)
    result = shoal("predict", trained.job.config, "--input", unlabelled)
    assert result.returncode == 0, result.stderr
    assert len(read_predictions(result.stdout)) == 7


def test_set_on_an_aliased_value_replaces_only_that_path(shoal, trained, tmp_path):
    """The eval schema is an alias of the train one; overriding it must leave input.train's."""
    unlabelled = tmp_path / "unlabelled.csv"
    write_rows(unlabelled, 7, seed=3, with_label=False)
    schema = "[{name: x1}, {name: x2}, {name: color, type: string}, {name: city, type: string}]"
    result = shoal("predict", trained.job.config, "--input", unlabelled,
                   "--set", f"input.eval.schema={schema}")
    assert result.returncode == 0, result.stderr
    assert len(read_predictions(result.stdout)) == 7


def test_export_writes_the_latest_checkpoint(shoal, trained, tmp_path):
    model_dir = copy_model(trained.job, tmp_path / "model")
    result = shoal("export", trained.job.config, "--model-dir", model_dir)
    assert result.returncode == 0, result.stderr
    path = only_export(os.path.join(model_dir, "export", "manual"))
    assert result.stdout == f"exported: {path}\n"
    assert read_json(model_dir, "checkpoint")["latest"] == f"ckpt-{FINAL_STEP}"
    assert read_json(path, "export.json")["global_step"] == FINAL_STEP
    assert os.path.isdir(os.path.join(path, "variables", f"ckpt-{FINAL_STEP}"))
    # A second export of the same step gets its own, later version directory.
    again = shoal("export", trained.job.config, "--model-dir", model_dir)
    assert again.returncode == 0, again.stderr
    second = again.stdout.removeprefix("exported: ").strip()
    assert int(os.path.basename(second)) > int(os.path.basename(path))


def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous_one(shoal, trained, tmp_path):
    model_dir = copy_model(trained.job, tmp_path / "model")
    latest = os.path.join(model_dir, f"ckpt-{FINAL_STEP}")
    (data,) = [os.path.join(latest, n) for n in os.listdir(latest) if n.endswith(".data")]
    os.truncate(data, os.path.getsize(data) // 2)
    result = shoal("evaluate", trained.job.config, "--model-dir", model_dir)
    assert result.returncode == 0, result.stderr
    previous = os.path.join(model_dir, "ckpt-30")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("W")]
    assert any(latest in line and previous in line for line in warnings), result.stderr
    written = read_json(model_dir, "eval", "metrics.json")
    assert (written["global_step"], written["checkpoint"]) == (30, previous)
    assert f"evaluation of {previous} at global step 30 " in result.stdout


def write_edited_config(job, old, new):
    """job's config with `old` (once in it) replaced; returns (path, line, column) of the edit."""
    with open(job.config) as f:
        text = f.read()
    assert text.count(old) == 1, old
    offset = text.index(old)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    path = os.path.join(os.path.dirname(job.config), "edited.yaml")
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    return path, line, column


def assert_fails(result, *fragments):
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    for fragment in fragments:
        assert fragment in error, error
    return error


def test_an_unknown_key_names_its_place_and_a_suggestion(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "model")
    path, line, column = write_edited_config(job, "hidden_units", "hiden_units")
    assert_fails(shoal("train", path),
                 f"{path}:{line}:{column}: model.hiden_units: unknown key",
                 "(did you mean 'hidden_units'?)")
    assert not os.path.exists(job.model_dir)


def test_an_unknown_key_in_set_names_the_override(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "model")
    assert_fails(shoal("train", job.config, "--set", "run.max_step=5"),
                 "--set run.max_step=5: run.max_step: unknown key (did you mean 'max_steps'?)")


def test_a_value_of_the_wrong_type_names_the_key(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "model")
    path, line, column = write_edited_config(job, f"batch_size: {BATCH_SIZE}", "batch_size: big")
    assert_fails(shoal("train", path), f"{path}:{line}:", "input.train.batch_size", "'big'")


def test_a_missing_data_file_is_named(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "model")
    os.remove(tmp_path / "train.csv")
    assert_fails(shoal("train", job.config), str(tmp_path / "train.csv"))


def test_a_missing_config_file_is_named(shoal, tmp_path):
    missing = tmp_path / "nowhere.yaml"
    for command in ("train", "evaluate", "predict", "export"):
        assert_fails(shoal(command, missing), str(missing))


def test_an_unknown_model_type_lists_the_known_ones(shoal, tmp_path):
    job = write_job(tmp_path, tmp_path / "model")
    path, _, _ = write_edited_config(job, "type: wide_deep", "type: wide_and_deep")
    assert_fails(shoal("train", path), "model.type", "'wide_and_deep'",
                 "known: deepfm, dnn, graph, linear, wide_deep")


@pytest.mark.parametrize("command", ["evaluate", "predict", "export"])
def test_using_a_model_before_training_says_to_train_it(shoal, tmp_path, command):
    job = write_job(tmp_path, tmp_path / "model")
    assert_fails(shoal(command, job.config), "train the model first")


@pytest.mark.parametrize("args, named", [
    (["train"], "CONFIG"),
    (["train", "config.yaml", "--bogus"], "--bogus"),
    (["evaluate", "config.yaml", "--steps", "abc"], "--steps"),
])
def test_a_bad_command_line_is_a_usage_error(shoal, args, named):
    result = shoal(*args)
    assert result.returncode == 2, result.stderr  # shoal_main.cc: usage errors exit 2
    assert named in result.stderr


@pytest.mark.parametrize("command", ["train", "evaluate", "predict", "export"])
def test_help_describes_the_job_flags(shoal, command):
    result = shoal(command, "--help")
    assert result.returncode == 0, result.stderr
    assert "--set" in result.stdout and "--model-dir" in result.stdout
