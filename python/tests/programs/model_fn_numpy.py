"""One TF1 program with its own model_fn, run unchanged but for its import line under TensorFlow
2.15 (`import tensorflow.compat.v1 as tf`) and under shoal (`import shoal.compat.v1 as tf`, where
the model_fn is traced into a graph the engine runs): python/tests/tf_compat_test.py compares the
two.

    python model_fn_numpy.py tensorflow|shoal MODEL_DIR      -> one JSON line

Everything is deterministic (constant initializers, no shuffling, plain gradient descent), so
the trained variables and the evaluation loss must agree to float rounding: the ops, their
gradients, the losses' reductions and the metrics are checked against TF's own.
"""
import json
import sys

import numpy as np

if sys.argv[1] == "tensorflow":
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)
else:
    import shoal.compat.v1 as tf


def model_fn(features, labels, mode, params):
    x = features["x"]
    h = tf.layers.dense(x, 4, activation=tf.nn.tanh,
                        kernel_initializer=tf.constant_initializer(0.1),
                        bias_initializer=tf.constant_initializer(0.05))
    h = tf.concat([h, tf.square(x[:, :1]), tf.expand_dims(tf.reduce_mean(x, axis=1), -1)], 1)
    logits = tf.layers.dense(h, 1, kernel_initializer=tf.constant_initializer(-0.2))
    scale = tf.get_variable("scale", [], initializer=tf.constant_initializer(1.0))
    logits = logits * scale + tf.reduce_sum(tf.maximum(x, 0.0), axis=1, keepdims=True) * 0.1
    probabilities = tf.sigmoid(logits)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"p": probabilities})
    y = tf.reshape(labels, [-1, 1])
    loss = tf.losses.sigmoid_cross_entropy(y, logits) + 0.01 * tf.nn.l2_loss(scale) + \
        tf.losses.mean_squared_error(y, probabilities, weights=0.5)
    if mode == tf.estimator.ModeKeys.EVAL:
        classes = tf.cast(probabilities > 0.5, tf.float32)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.metrics.accuracy(y, classes),
            "mean_p": tf.metrics.mean(probabilities),
            "mse": tf.metrics.mean_squared_error(y, probabilities),
            "auc": tf.metrics.auc(y, probabilities)})
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1000, 3)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1] + 0.3 * rng.normal(size=1000) > 0).astype(np.float32)
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=50, num_epochs=2,
                                                 shuffle=False))
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=100,
                                                              num_epochs=1, shuffle=False))
    p = [float(r["p"][0]) for r in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x[:5]}, shuffle=False))]
    variables = {name: np.asarray(est.get_variable_value(name)).ravel().tolist()
                 for name in ("dense/kernel", "dense/bias", "dense_1/kernel", "scale")}
    print(json.dumps({k: float(v) for k, v in metrics.items()} | {"p": p,
                                                                   "variables": variables}))


if __name__ == "__main__":
    main(sys.argv[2])
