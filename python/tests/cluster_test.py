"""Every role in Python: four processes run the same script with their own TF_CONFIG (a parameter
server, the chief, a worker, the evaluator), as TF users do with run-dist.sh. The job trains
exactly its epochs over the data tasks, evaluates, exports, and every process exits 0."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
from tf_config_cluster import run_cluster

SCRIPT = textwrap.dedent("""\
    import json, sys
    import shoal.compat.v1 as tf

    data, model_dir = sys.argv[1], sys.argv[2]
    colour = tf.feature_column.categorical_column_with_vocabulary_list(
        "colour", ["red", "green", "blue"])
    age = tf.feature_column.numeric_column("age", normalizer_fn=lambda x: (x - 50) / 20)
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir, linear_feature_columns=[colour],
        dnn_feature_columns=[age, tf.feature_column.indicator_column(colour)],
        dnn_hidden_units=[8], config=tf.estimator.RunConfig(save_checkpoints_steps=20))

    def input_fn(pattern, epochs):
        return lambda: tf.data.experimental.make_csv_dataset(
            pattern, batch_size=50, label_name="label", num_epochs=epochs, shuffle=False)

    serving = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec([colour, age]))
    class CountSteps(tf.train.SessionRunHook):
        steps = 0

        def after_run(self, run_context, run_values):
            CountSteps.steps += 1

        def end(self, session):
            print(f"STEPS {CountSteps.steps}", flush=True)

    class Saves(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            print(f"SAVED {global_step_value}", flush=True)

    train_spec = tf.estimator.TrainSpec(input_fn(data + "/train-*.csv", 2), hooks=[CountSteps()],
                                        saving_listeners=[Saves()])
    eval_spec = tf.estimator.EvalSpec(
        input_fn(data + "/eval.csv", 1), steps=None, start_delay_secs=0, throttle_secs=1,
        exporters=[tf.estimator.FinalExporter("final", serving)])
    metrics, exports = tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    if metrics is not None:
        print("RESULT " + json.dumps({"auc": float(metrics["auc"]), "exports": exports}),
              flush=True)
    """)


def write_data(data, rows_per_file, files, seed):
    rng = np.random.default_rng(seed)
    for name in [f"train-{i}.csv" for i in range(files)] + ["eval.csv"]:
        colour = rng.choice(["red", "green", "blue"], size=rows_per_file)
        age = rng.uniform(20, 80, size=rows_per_file).round(1)
        p = 1 / (1 + np.exp(-((colour == "red") * 2.0 - 1 + (age - 50) / 10)))
        label = (rng.uniform(size=rows_per_file) < p).astype(int)
        pd.DataFrame({"colour": colour, "age": age, "label": label}).to_csv(
            data / name, index=False)


def test_four_python_processes_train_evaluate_export_and_exit(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_data(data, 200, 6, 1)
    script = tmp_path / "main.py"
    script.write_text(SCRIPT)
    model_dir = tmp_path / "model"
    codes, texts = run_cluster([sys.executable, str(script), str(data), str(model_dir)],
                               tmp_path)
    assert codes == {"ps": 0, "chief": 0, "worker": 0, "evaluator": 0}, \
        "\n".join(f"--- {t} (exit {codes.get(t)}):\n{texts[t][-3000:]}" for t in texts)
    result = json.loads(next(line for line in texts["chief"].splitlines()
                             if line.startswith("RESULT "))[len("RESULT "):])
    assert result["auc"] > 0.7, result
    # Hooks ran on both trainers (each printed its count at end()), and together they saw every
    # step of the job: how the data tasks split between the two depends on who asked first (a
    # worker that starts late may get none), so only the sum is fixed. The chief's listener heard
    # the saves.
    steps = {t: int(next(line for line in texts[t].splitlines() if line.startswith("STEPS "))[6:])
             for t in ("chief", "worker")}
    assert steps["chief"] + steps["worker"] > 0, steps
    saved = [int(line[6:]) for line in texts["chief"].splitlines() if line.startswith("SAVED ")]
    assert saved and saved == sorted(saved), saved
    with open(model_dir / "summary.json") as f:
        summary = json.load(f)
    assert summary["examples"] == 2 * 6 * 200  # exactly two epochs over the data tasks
    assert summary["epochs_completed"] == 2
    assert saved[-1] == summary["global_step"] == steps["chief"] + steps["worker"]
    exports = list((model_dir / "export" / "final").iterdir())
    assert len(exports) == 1 and (exports[0] / "export.json").exists()


def test_multi_worker_mirrored_strategy_trains_without_parameter_servers(tmp_path):
    """RunConfig(train_distribute=tf.distribute.experimental.MultiWorkerMirroredStrategy()) with a
    TF_CONFIG that lists no ps, as TF's multi-worker tutorial: the chief and the worker train in
    lockstep as one ring (run.strategy all_reduce), exactly two epochs over the data tasks, and the
    evaluator evaluates and the chief exports."""
    data = tmp_path / "data"
    data.mkdir()
    write_data(data, 200, 6, 3)
    script = tmp_path / "main.py"
    script.write_text(SCRIPT.replace(
        "config=tf.estimator.RunConfig(save_checkpoints_steps=20)",
        "config=tf.estimator.RunConfig(save_checkpoints_steps=20, train_distribute="
        "tf.distribute.experimental.MultiWorkerMirroredStrategy())"))
    model_dir = tmp_path / "model"
    codes, texts = run_cluster([sys.executable, str(script), str(data), str(model_dir)],
                               tmp_path, with_ps=False)
    assert codes == {"chief": 0, "worker": 0, "evaluator": 0}, \
        "\n".join(f"--- {t} (exit {codes.get(t)}):\n{texts[t][-3000:]}" for t in texts)
    for task in ("chief", "worker"):
        assert "joining the ring of 2 of 2 trainers" in texts[task], texts[task][-3000:]
    result = json.loads(next(line for line in texts["chief"].splitlines()
                             if line.startswith("RESULT "))[len("RESULT "):])
    assert result["auc"] > 0.7, result
    with open(model_dir / "summary.json") as f:
        summary = json.load(f)
    assert summary["examples"] == 2 * 6 * 200  # exactly two epochs over the data tasks
    assert summary["epochs_completed"] == 2
    # Both trainers run every step together: each one's hooks see every global step.
    steps = {t: int(next(line for line in texts[t].splitlines() if line.startswith("STEPS "))[6:])
             for t in ("chief", "worker")}
    assert steps == {"chief": summary["global_step"], "worker": summary["global_step"]}, steps
    assert "Replicas identical at step" in texts["worker"], texts["worker"][-3000:]


def test_shoal_launch_python_starts_the_script_in_every_role(tmp_path):
    """`shoal launch --python main.py`: the launcher makes the ports, the secret and each task's
    TF_CONFIG, as it does for `shoal run` members."""
    shoal_bin = os.environ.get("SHOAL_BIN")
    if not shoal_bin:
        import pytest
        pytest.skip("SHOAL_BIN (the CLI) is not set")
    data = tmp_path / "data"
    data.mkdir()
    write_data(data, 150, 4, 2)
    script = tmp_path / "main.py"
    script.write_text(SCRIPT)
    model_dir = tmp_path / "model"
    out = subprocess.run(
        [shoal_bin, "launch", "--ps", "1", "--workers", "1", "--evaluator", "--python",
         str(script), "--arg", str(data), "--arg", str(model_dir), "--interpreter",
         sys.executable], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines() + out.stderr.splitlines()
    assert any(line.startswith("[chief:0] RESULT ") for line in lines), lines[-20:]
    with open(model_dir / "summary.json") as f:
        assert json.load(f)["examples"] == 2 * 4 * 150
    bad = subprocess.run([shoal_bin, "launch", "--python", str(tmp_path / "nope.py")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "does not exist" in bad.stderr
