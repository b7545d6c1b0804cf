"""One TF1 low-level program (placeholders, a Session loop with feed_dict, a checkpoint restored
to evaluate), run unchanged but for its import line under TensorFlow 2.15 and under shoal, where
every `sess.run` of the train op is one step of the engine: python/tests/tf_compat_test.py
compares the two.

    python session_numpy.py tensorflow|shoal CHECKPOINT_DIR      -> one JSON line

Deterministic (constant and zero initializers, fixed batches, plain gradient descent): the losses
of every step and the final predictions must agree to float rounding. The ids go through
`embedding_lookup` of a [vocab, 1] variable (a table on shoal's parameter servers, a dense
gather in TF) and the loss is Keras's binary cross-entropy of a sigmoid.
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

checkpoint_dir = sys.argv[2]
rng = np.random.default_rng(7)
batches = []
for _ in range(40):
    lengths = rng.integers(1, 6, size=16)
    ids = tf.keras.preprocessing.sequence.pad_sequences(
        [list(rng.integers(1, 50, size=n)) for n in lengths])
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = (x[:, :1] + (ids % 3 == 0).sum(axis=1, keepdims=True) * 0.5 > 0.7).astype(np.float32)
    batches.append((ids, x, y))

ids = tf.placeholder(tf.int64, shape=[None, None], name="ids")
x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
label = tf.placeholder(tf.float32, shape=[None, 1], name="label")
weights = tf.get_variable("weight", [50, 1], tf.float32, initializer=tf.zeros_initializer())
kernel = tf.get_variable("kernel", [3, 1], initializer=tf.constant_initializer(0.1))
bias = tf.get_variable("bias", [1], initializer=tf.constant_initializer(-0.2))
logit = tf.reduce_sum(tf.nn.embedding_lookup(weights, ids), axis=1) + tf.matmul(x, kernel) + bias
probability = tf.sigmoid(logit)
loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(label, probability))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=global_step)

losses = []
with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, save_checkpoint_secs=None,
                                       save_checkpoint_steps=40,
                                       hooks=[tf.train.StopAtStepHook(last_step=40)]) as sess:
    for b_ids, b_x, b_y in batches:
        if sess.should_stop():
            break
        _, value = sess.run([train_op, loss], feed_dict={ids: b_ids, x: b_x, label: b_y})
        losses.append(float(value))

sess = tf.Session()
tf.train.Saver().restore(sess, tf.train.latest_checkpoint(checkpoint_dir))
b_ids, b_x, b_y = batches[0]
p, final_loss = sess.run([probability, loss], feed_dict={ids: b_ids, x: b_x, label: b_y})
print(json.dumps({"losses": losses, "p": p.ravel().tolist(), "loss": float(final_loss)}))
