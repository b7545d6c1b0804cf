"""The Python package's Estimator API on the C++ engine (docs/python.md): canned estimators over
numpy/pandas and file inputs, results equal to the YAML path, hooks, errors, predict, export,
variables, Ctrl-C. Needs the installed package (scripts/python-package.sh); the 4-process
TF_CONFIG cluster is in cluster_test.py."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

import shoal.compat.v1 as tf
from shoal import errors

SHOAL_BIN = os.environ.get("SHOAL_BIN")


def linear_data(rows=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=rows).astype(np.float32)
    y = (2 * x + 1 + rng.normal(0, 0.01, size=rows)).astype(np.float32)
    return x, y


def ctr_frame(rows, seed):
    """A small CTR-like table: two categorical and two numeric columns, a 0/1 label."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "black"], size=rows)
    city = rng.choice([f"c{i}" for i in range(30)], size=rows)
    age = rng.uniform(18, 80, size=rows).round(1)
    hours = rng.integers(1, 60, size=rows)
    logit = (colour == "red") * 1.5 - (colour == "blue") * 1.0 + (age - 45) / 15 + \
        np.array([int(c[1:]) % 3 for c in city]) * 0.5 - 1
    label = (rng.uniform(size=rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return pd.DataFrame({"colour": colour, "city": city, "age": age, "hours": hours,
                         "label": label})


def wide_deep_columns():
    colour = tf.feature_column.categorical_column_with_vocabulary_list(
        "colour", ["red", "green", "blue", "black"])
    city = tf.feature_column.categorical_column_with_hash_bucket("city", 100)
    age = tf.feature_column.numeric_column("age", normalizer_fn=lambda x: (x - 49.0) / 18.0)
    age_buckets = tf.feature_column.bucketized_column(
        tf.feature_column.numeric_column("age"), [30, 40, 50, 60])
    linear = [colour, city, age_buckets, tf.feature_column.crossed_column([colour, "city"], 500)]
    deep = [age, tf.feature_column.numeric_column("hours"),
            tf.feature_column.indicator_column(colour),
            tf.feature_column.embedding_column(city, 4)]
    return linear, deep


def test_a_linear_regressor_learns_a_line_from_numpy(tmp_path):
    x, y = linear_data()
    est = tf.estimator.LinearRegressor(
        [tf.feature_column.numeric_column("x")], model_dir=str(tmp_path / "m"),
        optimizer=tf.train.GradientDescentOptimizer(0.1))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=5,
                                                 shuffle=True))
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False))
    assert metrics["global_step"] == 313  # 10000 rows in batches of 32 spanning epochs, as TF
    assert metrics["loss"] < 0.01
    names = est.get_variable_names()
    weights = [n for n in names if "dense" in n or "kernel" in n or "weights" in n]
    assert weights, names
    values = {n: est.get_variable_value(n) for n in names
              if n.startswith("linear") and "slot" not in n}
    flat = np.concatenate([np.ravel(v) for v in values.values()])
    assert np.any(np.abs(flat - 2.0) < 0.1), values  # the weight of x
    assert np.any(np.abs(flat - 1.0) < 0.1), values  # the bias


def test_same_config_same_metrics_as_the_yaml_path(tmp_path):
    """A make_csv_dataset wide & deep trained through Python and the same job as YAML through
    `shoal train`: one thread, the same seed -> the same metrics, to the last digit printed."""
    if not SHOAL_BIN:
        pytest.skip("SHOAL_BIN (the CLI) is not set")
    train_csv, eval_csv = tmp_path / "train.csv", tmp_path / "eval.csv"
    ctr_frame(3000, 1).to_csv(train_csv, index=False)
    ctr_frame(1000, 2).to_csv(eval_csv, index=False)
    linear, deep = wide_deep_columns()
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "py"), linear_feature_columns=linear,
        dnn_feature_columns=deep, dnn_hidden_units=[16, 8],
        config=tf.estimator.RunConfig(tf_random_seed=7, save_checkpoints_steps=1000))

    def input_fn(path, epochs, shuffle):
        return lambda: tf.data.experimental.make_csv_dataset(
            str(path), batch_size=64, label_name="label", num_epochs=epochs, shuffle=shuffle,
            shuffle_seed=3)

    est.train(input_fn(train_csv, 2, True))
    py_metrics = est.evaluate(input_fn(eval_csv, 1, False))

    # The same job as YAML: column types as make_csv_dataset inferred them.
    config = tmp_path / "job.yaml"
    config.write_text(textwrap.dedent(f"""\
        model_dir: {tmp_path / "yaml"}
        features:
          numeric:
            - {{name: age, normalizer: standardize, mean: 49.0, stddev: 18.0}}
            - {{name: hours}}
          hashed: [{{name: city, hash_bucket_size: 100}}]
          vocabulary: [{{name: colour, vocabulary: [red, green, blue, black]}}]
          bucketized: [{{name: age_bucketized, source: age, boundaries: [30, 40, 50, 60]}}]
          crossed: [{{name: colour_X_city, keys: [colour, city], hash_bucket_size: 500}}]
          embedding: [{{categorical: city, dimension: 4}}]
          indicator: [{{categorical: colour}}]
          wide: [{{categorical: colour}}, {{categorical: city}}, {{categorical: age_bucketized}},
                 {{categorical: colour_X_city}}]
          label: label
        model: {{type: wide_deep, hidden_units: [16, 8]}}
        wide_optimizer: {{name: ftrl, learning_rate: 0.2}}
        run: {{seed: 7, save_checkpoints_steps: 1000, save_checkpoints_secs: 0}}
        input:
          train:
            files: [{train_csv}]
            format: csv
            schema: [{{name: colour, type: string}}, {{name: city, type: string}},
                     {{name: age, type: float}}, {{name: hours, type: int64}},
                     {{name: label, type: int64}}]
            batch_size: 64
            num_epochs: 2
            shuffle_buffer: 10000
            shuffle_files: true
            seed: 3
          eval:
            files: [{eval_csv}]
            format: csv
            schema: [{{name: colour, type: string}}, {{name: city, type: string}},
                     {{name: age, type: float}}, {{name: hours, type: int64}},
                     {{name: label, type: int64}}]
            batch_size: 64
        """))
    subprocess.run([SHOAL_BIN, "train", str(config)], check=True, capture_output=True)
    out = subprocess.run([SHOAL_BIN, "evaluate", str(config)], check=True,
                         capture_output=True, text=True).stdout
    with open(tmp_path / "yaml" / "eval" / "metrics.json") as f:
        yaml_metrics = json.load(f)["metrics"]
    assert py_metrics["auc"] > 0.7, py_metrics
    for name in ("loss", "auc", "accuracy"):
        assert py_metrics[name] == pytest.approx(yaml_metrics[name], abs=1e-6), (name, out)


def test_pandas_input_with_a_label_vocabulary_predicts_class_strings(tmp_path):
    df = ctr_frame(2000, 3)
    labels = df.pop("label").map({0: "no", 1: "yes"})
    linear, deep = wide_deep_columns()
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "m"), linear_feature_columns=linear, dnn_feature_columns=deep,
        dnn_hidden_units=[8], label_vocabulary=["no", "yes"])
    est.train(tf.estimator.inputs.pandas_input_fn(df, labels, shuffle=True, num_epochs=3))
    metrics = est.evaluate(tf.estimator.inputs.pandas_input_fn(df, labels, shuffle=False))
    assert metrics["auc"] > 0.7
    predictions = list(est.predict(tf.estimator.inputs.pandas_input_fn(
        df.head(5), shuffle=False)))
    assert len(predictions) == 5
    p = predictions[0]
    assert set(p) >= {"logits", "logistic", "probabilities", "class_ids", "classes"}
    assert p["classes"][0] in (b"no", b"yes")
    assert p["probabilities"].sum() == pytest.approx(1.0, abs=1e-6)
    assert p["classes"][0] == [b"no", b"yes"][int(p["class_ids"][0])]
    only = list(est.predict(tf.estimator.inputs.pandas_input_fn(df.head(3), shuffle=False),
                            predict_keys=["logistic"]))
    assert [set(o) for o in only] == [{"logistic"}] * 3
    bad = labels.copy()
    bad.iloc[7] = "maybe"
    with pytest.raises(ValueError, match="row 7: label 'maybe' is not in label_vocabulary"):
        est.train(tf.estimator.inputs.pandas_input_fn(df, bad, shuffle=False))


def test_a_hook_stops_training_and_sees_the_steps(tmp_path):
    x, y = linear_data()

    class Recorder(tf.train.SessionRunHook):
        def __init__(self):
            self.calls, self.steps, self.losses = [], [], []

        def begin(self):
            self.calls.append("begin")

        def after_create_session(self, session, coord):
            self.calls.append("after_create_session")

        def before_run(self, run_context):
            return tf.train.SessionRunArgs({"step": tf.train.get_global_step(), "loss": "loss"})

        def after_run(self, run_context, run_values):
            self.steps.append(run_values.results["step"])
            self.losses.append(run_values.results["loss"])
            if run_values.results["step"] + 1 >= 12:
                run_context.request_stop()

        def end(self, session):
            self.calls.append("end")

    hook = Recorder()
    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=10, num_epochs=None,
                                                 shuffle=True), hooks=[hook])
    assert hook.calls == ["begin", "after_create_session", "end"]
    assert hook.steps == list(range(12))
    assert all(np.isfinite(hook.losses))
    assert est.latest_checkpoint().endswith("ckpt-12")
    # StopAtStepHook, then max_steps across calls.
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, num_epochs=None, shuffle=False),
              hooks=[tf.train.StopAtStepHook(num_steps=5)])
    assert est.latest_checkpoint().endswith("ckpt-17")
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, num_epochs=None, shuffle=False),
              max_steps=20)
    assert est.latest_checkpoint().endswith("ckpt-20")


def test_a_hooks_exception_reaches_the_caller_and_the_checkpoint_stays(tmp_path):
    x, y = linear_data()

    class Boom(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            raise RuntimeError("boom from the hook")

    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"))
    with pytest.raises(RuntimeError, match="boom from the hook"):
        est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False), hooks=[Boom()])


def test_bad_arguments_are_clear_errors(tmp_path):
    fc = tf.feature_column
    with pytest.raises(ValueError, match=r"numeric_column\('a'\): shape must be positive"):
        fc.numeric_column("a", shape=(0,))
    with pytest.raises(ValueError, match="normalizer_fn is not one of the forms"):
        fc.numeric_column("a", normalizer_fn=lambda x: x ** 2)
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.LinearClassifier([fc.numeric_column("a")], n_classes=1)
    with pytest.raises(ValueError, match="Items of feature_columns must be a DenseColumn"):
        tf.estimator.DNNClassifier([4], [fc.categorical_column_with_hash_bucket("c", 10)])
    with pytest.raises(ValueError, match="shuffle must be provided explicitly"):
        tf.estimator.inputs.numpy_input_fn({"a": np.zeros(3)}, np.zeros(3))
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        tf.estimator.LinearRegressor([fc.numeric_column("a")], model_dir=str(tmp_path)).train(
            lambda: None, steps=1, max_steps=2)
    # The engine's own check, as a ValueError naming the column: a feature the data lacks.
    est = tf.estimator.LinearRegressor([fc.numeric_column("missing")],
                                       model_dir=str(tmp_path / "m"))
    with pytest.raises(errors.InvalidArgumentError, match="missing") as e:
        est.train(tf.estimator.inputs.numpy_input_fn({"a": np.zeros(4)}, np.zeros(4),
                                                     shuffle=False))
    assert isinstance(e.value, ValueError)
    # A missing file: NotFoundError, a FileNotFoundError.
    with pytest.raises(FileNotFoundError):
        est.train(lambda: tf.data.experimental.make_csv_dataset(
            str(tmp_path / "nope-*.csv"), 32, label_name="y"))
    # Prediction before training.
    with pytest.raises(ValueError, match="Could not find trained model"):
        list(est.predict(tf.estimator.inputs.numpy_input_fn({"missing": np.zeros(2)},
                                                            shuffle=False)))


def test_export_is_served_by_the_engines_predictor(tmp_path):
    x, y = linear_data()
    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"),
                                       optimizer=tf.train.GradientDescentOptimizer(0.1))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, num_epochs=3, shuffle=True))
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec([tf.feature_column.numeric_column("x")]))
    path = est.export_saved_model(str(tmp_path / "export"), receiver)
    assert isinstance(path, bytes)
    path = path.decode()
    with open(os.path.join(path, "export.json")) as f:
        meta = json.load(f)
    assert meta["global_step"] == int(est.latest_checkpoint().rsplit("-", 1)[1])
    assert [i["name"] for i in meta["signature"]["inputs"]] == ["x"]
    if SHOAL_BIN:  # the CLI scores the same rows as predict
        rows = tmp_path / "rows.csv"
        rows.write_text("x\n0.5\n-0.25\n")
        out = subprocess.run([SHOAL_BIN, "inspect", path], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    got = [p["predictions"][0] for p in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": np.array([0.5, -0.25], dtype=np.float32)}, shuffle=False))]
    assert got == pytest.approx([2.0, 0.5], abs=0.1)


def test_ctrl_c_stops_training_with_its_checkpoint(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""\
        import numpy as np, sys
        import shoal.compat.v1 as tf
        x = np.random.default_rng(0).uniform(size=100000).astype(np.float32)
        est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
            model_dir={str(tmp_path / "m")!r},
            config=tf.estimator.RunConfig(save_checkpoints_steps=100000))
        class Ready(tf.train.SessionRunHook):
            def after_run(self, ctx, values):
                if not hasattr(self, "said"):
                    self.said = print("training", flush=True)
        try:
            est.train(tf.estimator.inputs.numpy_input_fn({{"x": x}}, 2 * x, batch_size=8,
                      num_epochs=None, shuffle=True), hooks=[Ready()])
        except KeyboardInterrupt:
            print("interrupted at", est.latest_checkpoint(), flush=True)
            sys.exit(42)
        """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "training"
    time.sleep(0.5)
    sent = time.time()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 42, out
    assert time.time() - sent < 10
    checkpoint = out.strip().split()[-1]
    step = int(checkpoint.rsplit("-", 1)[1])
    assert step > 0 and os.path.isdir(checkpoint)


def test_training_releases_the_gil(tmp_path):
    """Another Python thread runs freely while the engine trains."""
    import threading
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(50000, 64)).astype(np.float32)
    y = x.sum(axis=1)
    est = tf.estimator.DNNRegressor([64, 64], [tf.feature_column.numeric_column("x", 64)],
                                    model_dir=str(tmp_path / "m"))
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=spin)
    thread.start()
    start = time.time()
    try:
        est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, num_epochs=2,
                                                     shuffle=False))
    finally:
        done.set()
        thread.join()
    seconds = time.time() - start
    # With the GIL held by the C++ call the thread would not tick at all during training (C++
    # never yields it); free, it ticks about once a millisecond (once per 100 ms asked, for a
    # machine loaded by other tests).
    assert ticks[0] >= max(10, 0.01 * seconds * 1000), (ticks[0], seconds)


def test_from_tensor_slices_trains_like_numpy_input(tmp_path):
    x, y = linear_data(1000)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(1000, seed=1).batch(
            50).repeat(4)

    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"),
                                       optimizer=tf.train.GradientDescentOptimizer(0.2))
    est.train(input_fn)
    assert est.latest_checkpoint().endswith("ckpt-80")  # 4 epochs x 20 batches
    metrics = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(100))
    assert metrics["loss"] < 0.01


def test_text_lines_parsed_with_decode_csv(tmp_path):
    """TF's TextLineDataset + decode_csv shape: the map's dict names the fields; the header line
    is skipped; the label is popped."""
    df = ctr_frame(2000, 5)
    df[["label", "colour", "age", "hours", "city"]].to_csv(tmp_path / "d.csv", index=False)
    names = ["label", "colour", "age", "hours", "city"]
    defaults = [[0], [""], [0.0], [0.0], [""]]

    def parse(line):
        fields = tf.io.decode_csv(line, defaults)
        features = dict(zip(names, fields))
        return features, features.pop("label")

    def input_fn():
        return tf.data.TextLineDataset([str(tmp_path / "d.csv")]).skip(1).map(parse).shuffle(
            1000, seed=1).repeat(4).batch(32)

    fc = tf.feature_column
    colour = fc.categorical_column_with_vocabulary_list("colour", ["red", "green", "blue",
                                                                   "black"])
    est = tf.estimator.LinearClassifier(
        [colour, fc.bucketized_column(fc.numeric_column("age"), [30, 45, 60])],
        model_dir=str(tmp_path / "m"))
    est.train(input_fn)
    metrics = est.evaluate(lambda: tf.data.TextLineDataset(str(tmp_path / "d.csv")).skip(1).map(
        parse).batch(500))
    assert metrics["auc"] > 0.7, metrics
    assert est.latest_checkpoint().endswith("ckpt-250")  # repeat then batch: 8000 / 32, as TF
    with pytest.raises(ValueError, match="must parse the record"):
        tf.data.TextLineDataset(str(tmp_path / "d.csv")).map(lambda line: {"x": line})


def test_saving_listeners_hear_every_checkpoint(tmp_path):
    x, y = linear_data(1000)

    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.calls = []

        def begin(self):
            self.calls.append("begin")

        def before_save(self, session, global_step_value):
            self.calls.append(f"before@{global_step_value}")

        def after_save(self, session, global_step_value):
            self.calls.append(f"after@{global_step_value}")

        def end(self, session, global_step_value):
            self.calls.append(f"end@{global_step_value}")

    listener = Listener()
    est = tf.estimator.LinearRegressor(
        [tf.feature_column.numeric_column("x")], model_dir=str(tmp_path / "m"),
        config=tf.estimator.RunConfig(save_checkpoints_steps=10))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=40, num_epochs=1,
                                                 shuffle=False), saving_listeners=[listener])
    assert listener.calls == ["begin", "before@10", "after@10", "before@20", "after@20",
                              "before@25", "after@25", "end@25"]

    class Refuse(tf.train.CheckpointSaverListener):
        def before_save(self, session, global_step_value):
            raise OSError("disk full, says the listener")

    with pytest.raises(OSError, match="disk full, says the listener"):
        est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=40, num_epochs=1,
                                                     shuffle=False), saving_listeners=[Refuse()])


def test_batch_norm_model_served_by_shoal_serve_as_predict_scores_it(tmp_path):
    """batch_norm=True: trained, predicted, exported, and served by `shoal serve` (the C++
    Predictor, no Python) with the same scores as Estimator.predict."""
    import urllib.request
    df = ctr_frame(3000, 6)
    labels = df.pop("label")
    linear, deep = wide_deep_columns()
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "m"), linear_feature_columns=linear, dnn_feature_columns=deep,
        dnn_hidden_units=[16, 8], batch_norm=True)
    est.train(tf.estimator.inputs.pandas_input_fn(df, labels, shuffle=True, num_epochs=20))
    metrics = est.evaluate(tf.estimator.inputs.pandas_input_fn(df, labels, shuffle=False))
    assert metrics["auc"] > 0.7, metrics
    names = est.get_variable_names()
    assert "dnn/hidden_0/batch_norm/moving_mean" in names, names
    assert np.any(est.get_variable_value("dnn/hidden_0/batch_norm/moving_mean") != 0)
    rows = df.head(4)
    expected = [p["logistic"][0] for p in est.predict(
        tf.estimator.inputs.pandas_input_fn(rows, shuffle=False))]
    if not SHOAL_BIN:
        return
    path = est.export_saved_model(str(tmp_path / "export")).decode()
    server = subprocess.Popen([SHOAL_BIN, "serve", path, "--port", "0", "--name", "m"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = int(line.strip().rsplit(":", 1)[1])
        instances = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                     for r in rows.to_dict("records")]
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/models/m:predict",
            data=json.dumps({"instances": instances}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            served = json.loads(response.read())["predictions"]
    finally:
        server.kill()
        server.wait()
    got = [p["logistic"][0] for p in served]
    assert got == pytest.approx(expected, abs=1e-5), (got, expected, line)


def test_string_labels_in_files_through_label_vocabulary(tmp_path):
    """make_csv_dataset with string labels: the engine maps them (features.label_vocabulary)."""
    df = ctr_frame(2000, 7)
    df["label"] = df["label"].map({0: "no", 1: "yes"})
    df.to_csv(tmp_path / "d.csv", index=False)
    colour = tf.feature_column.categorical_column_with_vocabulary_list(
        "colour", ["red", "green", "blue", "black"])
    est = tf.estimator.LinearClassifier([colour, tf.feature_column.bucketized_column(
        tf.feature_column.numeric_column("age"), [30, 45, 60])], model_dir=str(tmp_path / "m"),
        label_vocabulary=["no", "yes"])

    def input_fn(epochs):
        return lambda: tf.data.experimental.make_csv_dataset(
            str(tmp_path / "d.csv"), 64, label_name="label", num_epochs=epochs, shuffle=False)

    est.train(input_fn(3))
    assert est.evaluate(input_fn(1))["auc"] > 0.7
    df.loc[5, "label"] = "maybe"
    df.to_csv(tmp_path / "d.csv", index=False)
    # A bad record: the file and line (row 5 is line 7, after the header) and the value.
    with pytest.raises(ValueError, match="d.csv:7: label column 'label': 'maybe' is not in "
                                         "label_vocabulary"):
        est.train(input_fn(1))


def test_weight_column_weighs_examples(tmp_path):
    """Every other label flipped: weight 0 on those makes the model learn the true labels."""
    df = ctr_frame(4000, 8)
    labels = df.pop("label").copy()
    flipped = np.arange(len(df)) % 2 == 1
    noisy = labels.where(~flipped, 1 - labels)
    df["w"] = np.where(flipped, 0.0, 1.0).astype(np.float32)
    linear, deep = wide_deep_columns()
    aucs = {}
    for weighted in (False, True):
        est = tf.estimator.DNNLinearCombinedClassifier(
            model_dir=str(tmp_path / str(weighted)), linear_feature_columns=linear,
            dnn_feature_columns=deep, dnn_hidden_units=[8],
            weight_column="w" if weighted else None)
        est.train(tf.estimator.inputs.pandas_input_fn(df, noisy, shuffle=True, num_epochs=5))
        clean = df.assign(w=np.float32(1.0))  # evaluation reads the weight column too, as TF
        aucs[weighted] = est.evaluate(tf.estimator.inputs.pandas_input_fn(
            clean, labels, shuffle=False))["auc"]
    assert aucs[True] > 0.7 and aucs[True] > aucs[False] + 0.1, aucs
    # A numeric_column names it too; the weight is not a model input, so predicting without it
    # works.
    est = tf.estimator.LinearClassifier(
        [tf.feature_column.categorical_column_with_vocabulary_list("colour", ["red", "blue"])],
        model_dir=str(tmp_path / "lin"), weight_column=tf.feature_column.numeric_column("w"))
    est.train(tf.estimator.inputs.pandas_input_fn(df, noisy, shuffle=False))
    assert len(list(est.predict(tf.estimator.inputs.pandas_input_fn(
        df[["colour"]].head(3), shuffle=False)))) == 3


def test_weighted_categorical_column_weighs_each_id(tmp_path):
    """TF's weighted_categorical_column: y = sum over an example's ids of coef[id] * weight. A
    linear model on the weighted column fits it; on the same ids unweighted it cannot."""
    fc = tf.feature_column
    rng = np.random.default_rng(5)
    rows = 4000
    ids = rng.integers(0, 4, size=(rows, 2))
    w = rng.uniform(0.1, 2.0, size=(rows, 2)).astype(np.float32)
    coef = np.array([1.0, -2.0, 3.0, 0.5])
    y = (coef[ids] * w).sum(axis=1).astype(np.float32)
    identity = fc.categorical_column_with_identity("ids", 4)
    weighted = fc.weighted_categorical_column(identity, "w")
    assert weighted.name == "ids_weighted_by_w"
    spec = fc.make_parse_example_spec([weighted])
    assert isinstance(spec["w"], fc.VarLenFeature) and spec["w"].dtype == tf.float32
    assert isinstance(spec["ids"], fc.VarLenFeature)

    def loss(column, name):
        est = tf.estimator.LinearRegressor([column], model_dir=str(tmp_path / name),
                                           optimizer=tf.train.AdagradOptimizer(0.5))
        features = {"ids": ids, "w": w}
        est.train(tf.estimator.inputs.numpy_input_fn(features, y, batch_size=64, num_epochs=10,
                                                     shuffle=True))
        return est, est.evaluate(tf.estimator.inputs.numpy_input_fn(features, y,
                                                                    shuffle=False))["loss"]

    est, weighted_loss = loss(weighted, "weighted")
    _, plain_loss = loss(identity, "plain")
    assert weighted_loss < 0.01, weighted_loss
    assert plain_loss > 0.3, plain_loss
    # One row by hand: ids [2, 0] weighing [1, 0.5] -> 3 * 1 + 1 * 0.5.
    got = next(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"ids": np.array([[2, 0]]), "w": np.array([[1.0, 0.5]], np.float32)}, shuffle=False)))
    assert abs(float(got["predictions"][0]) - 3.5) < 0.1, got

    # Weights must line up with the ids; a crossed column is not weighable.
    est = tf.estimator.LinearRegressor([weighted], model_dir=str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="row 0 has 2 values in 'ids' but 1 weights in 'w'"):
        est.train(tf.estimator.inputs.numpy_input_fn(
            {"ids": ids[:8], "w": w[:8, 0]}, y[:8], batch_size=8, num_epochs=1, shuffle=False))
    with pytest.raises(ValueError, match="cannot be weighted"):
        fc.weighted_categorical_column(fc.crossed_column(["a", "b"], 10), "w")


def test_tfrecord_dataset_parsed_with_parse_single_example(tmp_path):
    """TFRecords of tf.train.Example (written by `shoal convert`), read through TF's
    TFRecordDataset(...).map(parse_single_example) shape by the engine's reader."""
    if not SHOAL_BIN:
        pytest.skip("SHOAL_BIN (the CLI, for convert) is not set")
    ctr_frame(3000, 9)[["colour", "age", "label"]].to_csv(tmp_path / "d.csv", index=False)
    subprocess.run([SHOAL_BIN, "convert", "--format", "csv", "--out", str(tmp_path / "tfr"),
                    str(tmp_path / "d.csv")], check=True, capture_output=True)
    spec = {"colour": tf.io.FixedLenFeature([], tf.string),
            "age": tf.io.FixedLenFeature([], tf.float32),
            "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        features = tf.io.parse_single_example(record, spec)
        return features, features.pop("label")

    def input_fn(epochs):
        return lambda: tf.data.TFRecordDataset(str(tmp_path / "tfr" / "part-*.tfrecord")).map(
            parse).repeat(epochs).batch(64)

    fc = tf.feature_column
    est = tf.estimator.LinearClassifier(
        [fc.categorical_column_with_vocabulary_list("colour", ["red", "green", "blue", "black"]),
         fc.bucketized_column(fc.numeric_column("age"), [30, 45, 60])],
        model_dir=str(tmp_path / "m"))
    est.train(input_fn(4))
    assert est.latest_checkpoint().endswith(f"ckpt-{(4 * 3000 + 63) // 64}")
    assert est.evaluate(input_fn(1))["auc"] > 0.7
    with pytest.raises(ValueError, match="must parse the record"):
        tf.data.TFRecordDataset(str(tmp_path / "tfr" / "part-*.tfrecord")).map(lambda r: {"r": r})


def test_from_generator_as_in_the_users_post(tmp_path):
    """The users' post 001: a generator of tab-separated lines, parsed with decode_csv."""
    import random

    def generator():
        rng = random.Random(1)
        for _ in range(2000):
            datum = rng.random()
            yield "\t".join(map(str, (datum, datum * 0.8 + 1)))

    def parse(line):
        fields = tf.decode_csv(line, [[0.0], [0.0]], field_delim="\t")
        return {"x": fields[0]}, fields[1]

    def train_input_fn():
        dataset = tf.data.Dataset.from_generator(generator, tf.string, None)
        return dataset.map(parse).repeat(10).batch(20)

    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"),
                                       optimizer=tf.train.GradientDescentOptimizer(0.3))
    est.train(train_input_fn)
    assert est.latest_checkpoint().endswith("ckpt-1000")
    assert est.evaluate(lambda: tf.data.Dataset.from_generator(generator, tf.string).map(
        parse).batch(100))["loss"] < 1e-3
    # A generator of (features, label) pairs: an in-memory table.
    def pairs():
        for i in range(100):
            yield {"x": i / 100}, 0.8 * i / 100 + 1

    est.train(lambda: tf.data.Dataset.from_generator(pairs).batch(10), steps=5)
    assert est.latest_checkpoint().endswith("ckpt-1005")


def test_predict_runs_hooks_and_stops_when_the_consumer_does(tmp_path):
    x, y = linear_data(1000)
    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False))

    class Count(tf.train.SessionRunHook):
        batches = 0

        def after_run(self, run_context, run_values):
            Count.batches += 1

    hook = Count()
    predictions = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x}, batch_size=100, shuffle=False), hooks=[hook]))
    assert len(predictions) == 1000 and Count.batches == 10
    # Taking 3 of a long prediction and dropping the generator stops the engine's run.
    big = np.tile(x, 200)
    generator = est.predict(tf.estimator.inputs.numpy_input_fn({"x": big}, batch_size=10,
                                                               shuffle=False))
    first = [next(generator) for _ in range(3)]
    generator.close()
    assert len(first) == 3


def test_a_cluster_refuses_inputs_that_live_in_one_process(tmp_path, monkeypatch):
    """numpy inputs live in one process: refused. A generator's lines are written under the
    (shared) model_dir, where the chief hands them out as data tasks: accepted."""
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
        "task": {"type": "chief", "index": 0}}))
    est = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "m"))
    x, y = linear_data(100)
    lines = lambda: tf.data.Dataset.from_generator(  # noqa: E731
        lambda: (f"{a}\t{b}" for a, b in zip(x, y)), tf.string).map(
            lambda line: (lambda f: ({"x": f[0]}, f[1]))(
                tf.io.decode_csv(line, [[0.0], [0.0]], field_delim="\t"))).batch(10)
    numpy = tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False)
    with pytest.raises(ValueError, match="numpy_input_fn in a cluster: an in-memory input"):
        tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(numpy),
                                        tf.estimator.EvalSpec(numpy))
    monkeypatch.delenv("SHOAL_JOB_SECRET", raising=False)
    with pytest.raises(ValueError, match="no job secret"):  # past the input checks
        tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(lines),
                                        tf.estimator.EvalSpec(lines))
    written = sorted(p.name for p in (tmp_path / "m" / "inputs" / "chief-0").iterdir())
    assert written == ["generator-0.txt", "generator-1.txt"]
    assert (tmp_path / "m" / "inputs" / "chief-0" / "generator-0.txt").read_text().count(
        "\n") == 100


def test_strategies_map_to_run_strategy_and_others_are_refused(monkeypatch):
    """RunConfig(train_distribute=...): MultiWorkerMirroredStrategy is run.strategy all_reduce
    (with its timeout), ParameterServerStrategy the default; one-machine strategies and foreign
    objects are refused, naming what to use."""
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
         "task": {"type": "worker", "index": 0}}))
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=45)
    mwms = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    assert mwms.num_replicas_in_sync == 3
    with mwms.scope():
        config = tf.estimator.RunConfig(train_distribute=mwms, eval_distribute=mwms)
    run = config.run_section()
    assert run["strategy"] == "all_reduce" and run["collective_timeout_secs"] == 45, run
    assert config.num_ps_replicas == 0 and config.num_worker_replicas == 3
    ps = tf.estimator.RunConfig(
        train_distribute=tf.distribute.experimental.ParameterServerStrategy())
    assert ps.run_section()["strategy"] == "parameter_server"
    assert "strategy" not in tf.estimator.RunConfig().run_section()
    # shoal's own: tables on the PS, dense variables on the trainers' ring.
    hybrid = tf.distribute.experimental.HybridStrategy(communication_options=options)
    run = tf.estimator.RunConfig(train_distribute=hybrid).run_section()
    assert run["strategy"] == "hybrid" and run["collective_timeout_secs"] == 45, run
    assert hybrid.num_replicas_in_sync == 3
    with pytest.raises(NotImplementedError, match="MirroredStrategy"):
        tf.distribute.MirroredStrategy()
    with pytest.raises(NotImplementedError, match="MultiWorkerMirroredStrategy"):
        tf.estimator.RunConfig(train_distribute=object())
    with pytest.raises(ValueError, match="timeout_seconds"):
        tf.distribute.experimental.CommunicationOptions(timeout_seconds=0)
