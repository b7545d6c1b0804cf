"""TF1 low-level programs (shoal.graph.session): a default graph of placeholders and variables,
run step by step by `sess.run(fetches, feed_dict)` in a Session or MonitoredTrainingSession, on
one machine and on a tf.train.ClusterSpec of ps and worker processes (the users' stories 003 and
004), each step in the C++ engine."""

import json
import os
import re
import secrets
import subprocess
import sys
import time

import numpy as np
import pytest

import shoal.compat.v1 as tf
from tf_config_cluster import free_ports

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HASHED_LR = os.path.join(REPO, "examples", "hashed_logistic_regression")


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def linear_regression_graph():
    x = tf.placeholder(tf.float32, shape=[None, 1], name="x")
    y = tf.placeholder(tf.float32, shape=[None, 1], name="y")
    w = tf.Variable(tf.zeros([1, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    pred = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.square(pred - y))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return x, y, pred, loss, step, train_op


def batch(rng, n=32):
    xs = rng.normal(size=(n, 1)).astype(np.float32)
    return xs, (0.8 * xs + 1).astype(np.float32)


def test_monitored_training_session_trains_stops_at_last_step_and_resumes(tmp_path):
    x, y, pred, loss, step, train_op = linear_regression_graph()
    rng = np.random.default_rng(0)
    ckpt = str(tmp_path / "ckpt")
    steps, losses, seen = 0, [], []
    hooks = [tf.train.StopAtStepHook(last_step=200)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt, hooks=hooks) as sess:
        assert sess.run(tf.global_variables_initializer()) is None
        while not sess.should_stop():
            xs, ys = batch(rng)
            _, value, at = sess.run([train_op, loss, step], feed_dict={x: xs, y: ys})
            losses.append(value)
            seen.append(at)
            steps += 1
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(train_op, feed_dict={x: xs, y: ys})
    assert steps == 200
    assert seen == list(range(200))  # the global step each step ran at
    assert losses[0] > 1 and losses[-1] < 1e-3
    assert tf.train.latest_checkpoint(ckpt).endswith("ckpt-200")
    # The trained values, evaluated on a feed with the checkpoint restored.
    sess = tf.Session()
    tf.train.Saver().restore(sess, tf.train.latest_checkpoint(ckpt))
    out = sess.run(pred, feed_dict={x: [[0.0], [1.0], [2.0]]})
    np.testing.assert_allclose(out, [[1.0], [1.8], [2.6]], atol=0.02)
    assert out.shape == (3, 1) and out.dtype == np.float32
    # A scalar fetch is the whole feed's value, as TF's.
    xs, ys = batch(rng, 50)
    mse = sess.run(loss, feed_dict={x: xs, y: ys + 0.5})
    want = np.mean((sess.run(pred, feed_dict={x: xs}) - (ys + 0.5)) ** 2)
    assert mse == pytest.approx(want, rel=1e-4) and mse == pytest.approx(0.25, abs=0.02)
    # A new session on the same directory resumes at step 200 (MonitoredTrainingSession
    # restores), and StopAtStepHook(num_steps) counts from there.
    seen = []
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=ckpt, hooks=[tf.train.StopAtStepHook(num_steps=30)]) as sess:
        while not sess.should_stop():
            xs, ys = batch(rng)
            seen.append(sess.run([train_op, step], feed_dict={x: xs, y: ys})[1])
    assert seen == list(range(200, 230))
    assert tf.train.latest_checkpoint(ckpt).endswith("ckpt-230")


def test_placeholder_with_default_is_fed_or_takes_its_default(tmp_path):
    """Story 004's fix for "You must feed a value for placeholder tensor": a placeholder with a
    default runs unfed."""
    x = tf.placeholder_with_default(np.array([[1.0], [2.0]], np.float32), [None, 1], name="x")
    w = tf.Variable(tf.ones([1, 1]), name="w")
    y = tf.matmul(x, w) * 3.0
    train_op = tf.train.GradientDescentOptimizer(1e-9).minimize(tf.reduce_mean(y))
    sess = tf.Session()
    sess.run(train_op)  # nothing fed: the default is the batch
    sess.close()
    restored = tf.Session()
    tf.train.Saver().restore(restored, tf.train.latest_checkpoint(sess._model_dir))
    np.testing.assert_allclose(restored.run(y), [[3.0], [6.0]], rtol=1e-6)
    np.testing.assert_allclose(restored.run(y, feed_dict={x: [[5.0]]}), [[15.0]], rtol=1e-6)


def test_a_plain_session_trains_on_each_feed_and_evaluates_after_close():
    x, y, pred, loss, step, train_op = linear_regression_graph()
    rng = np.random.default_rng(1)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for _ in range(150):
        xs, ys = batch(rng, 16)
        sess.run(train_op, feed_dict={x: xs, y: ys})
    sess.close()  # the engine saves its checkpoint when the session closes
    restored = tf.Session()
    tf.train.Saver().restore(restored, tf.train.latest_checkpoint(sess._model_dir))
    np.testing.assert_allclose(restored.run(pred, feed_dict={x: [[1.0]]}), [[1.8]], atol=0.05)


def test_multiclass_placeholders_accuracy_fetch_and_feed_errors(tmp_path):
    """Story 004's MNIST shape: x [None, d], one-hot y_ [None, classes], softmax cross-entropy,
    an accuracy tensor evaluated on a test feed."""
    rng = np.random.default_rng(2)
    centers = rng.normal(scale=3, size=(4, 20))
    def data(n):
        labels = rng.integers(0, 4, size=n)
        return (centers[labels] + rng.normal(size=(n, 20))).astype(np.float32), \
            np.eye(4, dtype=np.float32)[labels]
    x = tf.placeholder(tf.float32, [None, 20], name="x")
    y_ = tf.placeholder(tf.float32, [None, 4], name="y_")
    hidden = tf.layers.dense(x, 16, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 4)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    ckpt = str(tmp_path / "mnist")
    with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt,
                                           hooks=[tf.train.StopAtStepHook(last_step=300)]) as sess:
        xs, ys = data(10)
        with pytest.raises(ValueError, match=r"You must feed a value for placeholder tensor 'y_' "
                                             r"with dtype float32 and shape \[\?,4\]"):
            sess.run([train_op], feed_dict={x: xs})
        while not sess.should_stop():
            xs, ys = data(64)
            sess.run(train_op, feed_dict={x: xs, y_: ys})
    sess = tf.Session()
    tf.train.Saver().restore(sess, tf.train.latest_checkpoint(ckpt))
    xs, ys = data(2000)
    acc, predicted = sess.run([accuracy, tf.argmax(logits, 1)], feed_dict={x: xs, y_: ys})
    assert acc > 0.9
    assert predicted.shape == (2000,) and predicted.dtype == np.int64
    assert acc == pytest.approx(np.mean(predicted == ys.argmax(1)), abs=1e-6)
    # Fetching a training-only tensor in a training run names what a step gives.
    with pytest.raises(NotImplementedError, match="train op, its loss and the global step"):
        tf.Session().run([train_op, accuracy], feed_dict={x: xs, y_: ys})
    with pytest.raises(ValueError, match="rows"):
        sess.run(accuracy, feed_dict={x: xs, y_: ys[:5]})
    with pytest.raises(ValueError, match="takes 20 values per example"):
        sess.run(accuracy, feed_dict={x: xs[:, :5], y_: ys})


def test_keras_binary_crossentropy_and_pad_sequences_follow_keras():
    labels = tf.placeholder(tf.float32, [None, 1], name="labels")
    values = tf.placeholder(tf.float32, [None, 1], name="values")
    w = tf.Variable(tf.ones([1]), name="w")
    scaled = values * w
    as_probabilities = tf.keras.losses.binary_crossentropy(labels, scaled)
    from_sigmoid = tf.keras.losses.binary_crossentropy(labels, tf.sigmoid(scaled))
    from_logits = tf.keras.losses.binary_crossentropy(labels, scaled, from_logits=True)
    loss = tf.reduce_mean(from_logits)
    train_op = tf.train.GradientDescentOptimizer(1e-9).minimize(loss)
    sess = tf.Session()
    # One step at a negligible learning rate writes a checkpoint with w = 1 to evaluate with.
    y = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    v = np.array([[0.3], [0.3], [-2.0], [1.5]], np.float32)
    sess.run(train_op, feed_dict={labels: y, values: v})
    sess.close()
    restored = tf.Session()
    tf.train.Saver().restore(restored, tf.train.latest_checkpoint(sess._model_dir))
    got = restored.run([as_probabilities, from_sigmoid, from_logits],
                       feed_dict={labels: y, values: v})
    eps = 1e-7
    p = np.clip(v[:, 0], eps, 1 - eps)
    want_probabilities = -(y[:, 0] * np.log(p + eps) + (1 - y[:, 0]) * np.log(1 - p + eps))
    want_logits = np.maximum(v[:, 0], 0) - v[:, 0] * y[:, 0] + np.log1p(np.exp(-abs(v[:, 0])))
    np.testing.assert_allclose(got[0], want_probabilities, rtol=1e-5)
    np.testing.assert_allclose(got[1], want_logits, rtol=1e-5)  # the sigmoid's logits are used
    np.testing.assert_allclose(got[2], want_logits, rtol=1e-5)
    padded = tf.keras.preprocessing.sequence.pad_sequences([[1, 2, 3], [4], []])
    np.testing.assert_array_equal(padded, [[1, 2, 3], [0, 0, 4], [0, 0, 0]])
    cut = tf.keras.preprocessing.sequence.pad_sequences([[1, 2, 3], [4]], maxlen=2,
                                                        padding="post", truncating="post")
    np.testing.assert_array_equal(cut, [[1, 2], [4, 0]])


def test_graph_errors_name_the_line():
    words = tf.placeholder(tf.string, [None])
    with pytest.raises(NotImplementedError, match=r"session_test.py:\d+.*no graph input"):
        tf.reduce_sum(words)
    ids = tf.placeholder(tf.int64, [None, None], name="ids")
    with pytest.raises(NotImplementedError, match="read as values"):
        w = tf.Variable(tf.ones([1]), name="w")
        loss = tf.reduce_mean(tf.cast(ids, tf.float32) * w)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        tf.Session().run(train_op, feed_dict={ids: [[1, 2]]})
    with pytest.raises(NotImplementedError, match="Saver.save"):
        tf.train.Saver().save(tf.Session(), "/tmp/x")
    with pytest.raises(ValueError, match="no checkpoint"):
        tf.Session().run(loss, feed_dict={ids: [[1, 2]]})


def test_story_003_low_level_program_on_two_ps_reaches_the_linear_models_auc(tmp_path):
    """examples/hashed_logistic_regression/low_level.py: 2 ps and 2 workers, one process each,
    placeholders fed from a generator, a partitioned [10M, 1] weight, Adam; the ps exit when the
    job ends; the AUC beats the same model as shoal's linear model (what `model: {type: linear}`
    runs from YAML) on the same rows."""
    ports = ",".join(str(p) for p in free_ports(4))
    ckpt = str(tmp_path / "ckpt")
    out = subprocess.run([sys.executable, "low_level.py", "--local", "--ports", ports,
                          "--checkpoint_dir", ckpt], cwd=HASHED_LR, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # Every step of both workers, 3 epochs of 40 batches each: exact, none lost.
    assert "trained: global_step 240" in out.stdout, out.stdout[-3000:]
    assert "worker 0: 120 steps done" in out.stdout and "worker 1: 120 steps done" in out.stdout
    found = re.search(r"AUC (\d\.\d+)", out.stdout)
    assert found, out.stdout[-3000:]
    sessions_auc = float(found.group(1))
    # The same rows through LinearClassifier over the hashed ids.
    sys.path.insert(0, HASHED_LR)
    try:
        import story_data
    finally:
        sys.path.remove(HASHED_LR)
    def arrays(rows):
        ids = np.array([[story_data.hash_token(t) for t in row.split("\t")[1].split(" ")[2:]]
                        for row in rows], np.int64)
        labels = np.array([float(row.split("\t")[1].split(" ")[0]) for row in rows], np.float32)
        return ids, labels
    x, y = arrays(story_data.make_rows(40_000, 1))
    x_eval, y_eval = arrays(story_data.make_rows(10_000, 2))
    column = tf.feature_column.categorical_column_with_identity("feature", 10_000_000)
    linear = tf.estimator.LinearClassifier([column], model_dir=str(tmp_path / "linear"))
    linear.train(tf.estimator.inputs.numpy_input_fn({"feature": x}, y, batch_size=500,
                                                    num_epochs=3, shuffle=True))
    linear_auc = linear.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"feature": x_eval}, y_eval, batch_size=1000, shuffle=False))["auc"]
    assert sessions_auc >= linear_auc - 0.005, (sessions_auc, linear_auc)
    assert sessions_auc > 0.8


def distributed_mnist(tmp_path, last_step, kill_worker_after=None):
    """Runs python/tests/programs/distributed_mnist.py as ps 0 and workers 0-2, one process each;
    with `kill_worker_after` seconds, kills worker 1 (kill -9) that long after the start. Returns
    ({(job, index): exit code}, {(job, index): output})."""
    program = os.path.join(REPO, "python", "tests", "programs", "distributed_mnist.py")
    ports = ",".join(str(p) for p in free_ports(4))
    env = dict(os.environ, SHOAL_JOB_SECRET=secrets.token_hex(16))
    procs = {}
    for job, index in (("ps", 0), ("worker", 1), ("worker", 2), ("worker", 0)):
        procs[(job, index)] = subprocess.Popen(
            [sys.executable, program, "--job_name", job, "--task_index", str(index), "--ports",
             ports, "--dir", str(tmp_path / "ckpt"), "--last_step", str(last_step)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    outputs = {}
    try:
        if kill_worker_after is not None:
            time.sleep(kill_worker_after)
            procs[("worker", 1)].kill()
        for key, proc in procs.items():
            outputs[key] = proc.communicate(timeout=300)[0]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    return {key: proc.returncode for key, proc in procs.items()}, outputs


def test_story_004_distributed_mnist_on_one_ps_and_three_workers(tmp_path):
    """Story 004's program with a StopAtStepHook(last_step=600) in each worker's
    MonitoredTrainingSession: the job stops at step 600 for all three (each leaves its `with`
    block cleanly), the ps exits when the job ends, and the final checkpoint classifies the test
    feed."""
    codes, outputs = distributed_mnist(tmp_path, 600)
    for key, code in codes.items():
        assert code == 0, (key, outputs[key][-3000:])
    result = json.loads(outputs[("worker", 0)].strip().splitlines()[-1])
    step = int(result["checkpoint"].rsplit("-", 1)[1])
    assert 600 <= step <= 603, result  # async: steps already in flight at the stop still land
    assert result["accuracy"] > 0.9, result


def test_a_killed_fed_worker_does_not_stop_the_job(tmp_path):
    """Hand-started processes have nobody to restart a killed worker, and its feed died with it:
    the other workers go on to the last step, the chief stops waiting for the dead one after the
    heartbeat timeout (30 s) and completes the job, and the ps exits."""
    codes, outputs = distributed_mnist(tmp_path, 3000, kill_worker_after=4)
    assert codes[("worker", 1)] != 0
    for key in (("ps", 0), ("worker", 0), ("worker", 2)):
        assert codes[key] == 0, (key, outputs[key][-3000:])
    assert "not waiting for 1 dead trainers" in outputs[("worker", 0)]
    result = json.loads(outputs[("worker", 0)].strip().splitlines()[-1])
    assert int(result["checkpoint"].rsplit("-", 1)[1]) >= 3000, result
    assert result["accuracy"] > 0.9, result
