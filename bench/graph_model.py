"""A traced model_fn against the canned model it spells out: the cost of running a graph.

The DNN of DNNClassifier(hidden_units=[256, 128]) over 32 numeric features is written as a
model_fn with the canned model's variable names and math (so both train the same model), and
both train on the same 400,000 generated rows, batch 256, one epoch, one training thread; so does
the same DNN as a low-level program (placeholders fed by `sess.run` from NumPy, one engine step
per run). The three alternate `--repeat` times (default 5), each in a fresh model_dir, so that a
machine's drift hits all alike; prints one JSON line: each run's examples/s, their medians and
ratios, the AUCs.

    py=$(scripts/python-package.sh) && "$py" bench/graph_model.py [--rows N] [--repeat K]
"""
import statistics
import argparse
import json
import tempfile
import time

import numpy as np

import shoal.compat.v1 as tf

HIDDEN = [256, 128]
WIDTH = 32


def data(rows, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, WIDTH)).astype(np.float32)
    z = x[:, :8].sum(axis=1) - x[:, 8:16].sum(axis=1) + np.sin(x[:, 16] * 2)
    y = (z + rng.normal(size=rows) > 0).astype(np.int64)
    return {"x": x}, y


def dnn_logits(net):
    """DNNClassifier's network with its variable names: ReLU layers, then one logit."""
    for i, units in enumerate(HIDDEN):
        with tf.variable_scope(f"dnn/hidden_{i}"):
            kernel = tf.get_variable("kernel", [net.shape[1], units])
            bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
        net = tf.nn.relu(tf.matmul(net, kernel) + bias)
    with tf.variable_scope("dnn/logits"):
        return tf.matmul(net, tf.get_variable("kernel", [HIDDEN[-1], 1])) + \
            tf.get_variable("bias", [1], initializer=tf.zeros_initializer())


def model_fn(features, labels, mode):
    logits = dnn_logits(tf.feature_column.input_layer(
        features, [tf.feature_column.numeric_column("x", shape=(WIDTH,))]))
    label = tf.reshape(labels, [-1, 1])
    loss = tf.losses.sigmoid_cross_entropy(label, logits)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=tf.train.AdagradOptimizer(0.05).minimize(loss),
        eval_metric_ops={"auc": tf.metrics.auc(label, tf.sigmoid(logits))})


def timed_session(x, y, batch, model_dir):
    """The same DNN as a low-level program: placeholders fed batch by batch from NumPy in a
    MonitoredTrainingSession loop (one engine step per sess.run)."""
    tf.reset_default_graph()
    inputs = tf.placeholder(tf.float32, [None, WIDTH], name="x")
    label = tf.placeholder(tf.float32, [None, 1], name="label")
    logits = dnn_logits(inputs)
    loss = tf.losses.sigmoid_cross_entropy(label, logits)
    train_op = tf.train.AdagradOptimizer(0.05).minimize(loss)
    features = x["x"]
    labels = y.astype(np.float32).reshape(-1, 1)
    order = np.random.default_rng(0).permutation(len(labels))
    start = time.perf_counter()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=model_dir) as sess:
        for begin in range(0, len(order), batch):
            rows = order[begin:begin + batch]
            sess.run(train_op, feed_dict={inputs: features[rows], label: labels[rows]})
    return time.perf_counter() - start


def timed_train(est, x, y, batch):
    start = time.perf_counter()
    est.train(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=batch, num_epochs=1,
                                                 shuffle=True))
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x, y = data(args.rows, 1)
    x_eval, y_eval = data(50_000, 2)
    evaluate = tf.estimator.inputs.numpy_input_fn(x_eval, y_eval, batch_size=1000, shuffle=False)
    config = tf.estimator.RunConfig(tf_random_seed=3, log_step_count_steps=10_000)
    out = {"rows": args.rows, "batch": args.batch, "canned_runs": [], "traced_runs": [],
           "session_runs": []}
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            traced = tf.estimator.Estimator(model_fn, model_dir=tmp + "/traced", config=config)
            canned = tf.estimator.DNNClassifier(
                HIDDEN, [tf.feature_column.numeric_column("x", shape=(WIDTH,))],
                model_dir=tmp + "/canned", config=config)
            for name, est in (("canned", canned), ("traced", traced)):
                seconds = timed_train(est, x, y, args.batch)
                out[f"{name}_runs"].append(round(args.rows / seconds))
                if run == 0:
                    out[f"{name}_auc"] = round(float(est.evaluate(evaluate)["auc"]), 4)
            seconds = timed_session(x, y, args.batch, tmp + "/session")
            out["session_runs"].append(round(args.rows / seconds))
    for name in ("canned", "traced", "session"):
        out[f"{name}_examples_per_sec"] = round(statistics.median(out[f"{name}_runs"]))
    out["traced_over_canned"] = round(out["traced_examples_per_sec"] /
                                      out["canned_examples_per_sec"], 3)
    out["session_over_canned"] = round(out["session_examples_per_sec"] /
                                       out["canned_examples_per_sec"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
