"""Compatibility with the real TensorFlow 2.15 Estimator: the same program
(programs/wide_deep_numpy.py), with only its import changed, gives comparable metrics under both.
TensorFlow runs in bench/compare's virtualenv (bench/compare/tf-env.sh; ~600 MB on first use)."""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(HERE, "programs", "wide_deep_numpy.py")
MODEL_FN_PROGRAM = os.path.join(HERE, "programs", "model_fn_numpy.py")


def tf_python():
    return subprocess.run([os.path.join(ROOT, "bench", "compare", "tf-env.sh")],
                          capture_output=True, text=True, check=True).stdout.strip()


def run(python, which, model_dir, program=PROGRAM):
    out = subprocess.run([python, program, which, str(model_dir)], capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_same_program_under_tensorflow_and_shoal(tmp_path):
    ours = run(sys.executable, "shoal", tmp_path / "shoal")
    theirs = run(tf_python(), "tensorflow", tmp_path / "tf")
    print("shoal:", ours, "\ntensorflow:", theirs)
    assert ours["global_step"] == theirs["global_step"]  # 3 epochs of 20000 rows, batch 64
    assert ours["auc"] > 0.75 and theirs["auc"] > 0.75
    # TensorFlow's own figures move a little from run to run (its input queue's threads); the
    # two measured 0.010 apart in AUC and accuracy.
    assert abs(ours["auc"] - theirs["auc"]) < 0.03, (ours, theirs)
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 0.03, (ours, theirs)
    # Every key TF's canned classifier predicts is there.
    assert set(theirs["prediction_keys"]) <= set(ours["prediction_keys"]), (ours, theirs)


def test_the_same_model_fn_under_tensorflow_and_shoal(tmp_path):
    """A deterministic model_fn (constant initializers, no shuffling, gradient descent) traced by
    shoal and built by TensorFlow: the same trained variables, loss and predictions to float
    rounding, so every op, gradient and loss reduction it uses is TF's."""
    ours = run(sys.executable, "shoal", tmp_path / "shoal", MODEL_FN_PROGRAM)
    theirs = run(tf_python(), "tensorflow", tmp_path / "tf", MODEL_FN_PROGRAM)
    print("shoal:", ours, "\ntensorflow:", theirs)
    assert ours["global_step"] == theirs["global_step"] == 40
    for name, values in theirs["variables"].items():
        assert np.allclose(ours["variables"][name], values, rtol=1e-4, atol=1e-5), name
    assert abs(ours["loss"] - theirs["loss"]) < 1e-4, (ours, theirs)
    for key in ("accuracy", "mean_p", "mse"):
        assert abs(ours[key] - theirs[key]) < 1e-4, key
    # TF's AUC interpolates 200 thresholds, shoal's 10,000 buckets.
    assert abs(ours["auc"] - theirs["auc"]) < 0.01, (ours["auc"], theirs["auc"])
    assert np.allclose(ours["p"], theirs["p"], atol=1e-5)


def test_the_same_low_level_session_program_under_tensorflow_and_shoal(tmp_path):
    """programs/session_numpy.py: placeholders fed step by step, ids looked up in a [vocab, 1]
    variable, Keras's binary cross-entropy, MonitoredTrainingSession with StopAtStepHook, then a
    restored checkpoint evaluated on a feed: every step's loss and the predictions agree."""
    program = os.path.join(HERE, "programs", "session_numpy.py")
    ours = run(sys.executable, "shoal", tmp_path / "shoal", program)
    theirs = run(tf_python(), "tensorflow", tmp_path / "tf", program)
    assert len(ours["losses"]) == len(theirs["losses"]) == 40
    assert np.allclose(ours["losses"], theirs["losses"], rtol=1e-4, atol=1e-5), (ours, theirs)
    assert np.allclose(ours["p"], theirs["p"], atol=1e-5)
    assert abs(ours["loss"] - theirs["loss"]) < 1e-4
    assert ours["losses"][-1] < ours["losses"][0] - 0.1  # it learned
