"""The hashed logistic regression of the users' Spark story (seed 003), as a model_fn: each
example is a list of tokens hashed into a vocabulary of 10M ids, and the model is one weight per
id, `tf.get_variable("weight", [vocab_size, 1], partitioner=...)` looked up with
`tf.nn.embedding_lookup`, summed, and trained with Adam. Only the import is shoal's.

On shoal the [vocab_size, 1] variable becomes an embedding table on the parameter servers: rows
exist only for the ids the data has, so the 10M-row vocabulary costs what the data uses.

    python main.py [MODEL_DIR]   # the AUC of the model_fn, of LinearClassifier and the best one
"""
import sys
import zlib

import numpy as np
from story_data import auc

import shoal.compat.v1 as tf

vocab_size = 10_000_000
tokens_per_example = 12


def make_data(rows, seed, token_weights):
    """Rows of `tokens_per_example` hashed tokens (Zipf-distributed over 5,000 words, id 0 kept
    for padding as in the story) and labels drawn from the tokens' true weights."""
    rng = np.random.default_rng(seed)
    words = rng.zipf(1.3, size=(rows, tokens_per_example)) % len(token_weights)
    ids = np.vectorize(lambda w: zlib.crc32(f"tok{w}".encode()) % (vocab_size - 1) + 1)(words)
    z = token_weights[words].sum(axis=1) / np.sqrt(tokens_per_example)
    labels = (rng.uniform(size=rows) < 1 / (1 + np.exp(-z))).astype(np.float32)
    return ids.astype(np.int64), labels, z


def model_fn(features, labels, mode, params):
    partitioner = tf.min_max_variable_partitioner(max_partitions=params["num_ps"],
                                                  min_slice_size=64 << 20)
    with tf.variable_scope("sparse_embedding", partitioner=partitioner):
        embedding_matrix = tf.get_variable(
            "weight", [vocab_size, 1], tf.float32,
            initializer=tf.random_normal_initializer(stddev=0.1), trainable=True)
    emb = tf.nn.embedding_lookup(embedding_matrix, features["feature"])
    logit = tf.reduce_sum(emb, axis=1)
    pred = tf.nn.sigmoid(logit)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"pred": pred})
    label = tf.reshape(labels, [-1, 1])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logit))
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "auc": tf.metrics.auc(label, pred)})
    train_op = tf.train.AdamOptimizer(learning_rate=1e-2).minimize(
        loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir):
    token_weights = np.random.default_rng(0).normal(scale=3.0, size=5000)
    x, y, _ = make_data(40_000, 1, token_weights)
    x_eval, y_eval, truth = make_data(10_000, 2, token_weights)
    train = tf.estimator.inputs.numpy_input_fn({"feature": x}, y, batch_size=500, num_epochs=3,
                                               shuffle=True)
    evaluate = tf.estimator.inputs.numpy_input_fn({"feature": x_eval}, y_eval, batch_size=1000,
                                                  shuffle=False)
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir + "/model_fn",
                                 params={"num_ps": 2})
    est.train(train)
    traced = est.evaluate(evaluate)
    # The same model as a canned linear model (what `model: {type: linear}` runs from YAML).
    ids = tf.feature_column.categorical_column_with_identity("feature", vocab_size)
    linear = tf.estimator.LinearClassifier([ids], model_dir=model_dir + "/linear")
    linear.train(train)
    canned = linear.evaluate(evaluate)
    print(f"best AUC {auc(y_eval, truth):.4f} (the generator's true weights)")
    print(f"model_fn AUC {traced['auc']:.4f} loss {traced['loss']:.4f}")
    print(f"LinearClassifier AUC {canned['auc']:.4f} loss {canned['loss']:.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hashed_lr")
