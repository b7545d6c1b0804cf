"""Story 004's distributed MNIST as TF1 users write it: one process per task of a ClusterSpec
(`--job_name ps|worker --task_index i`), placeholders fed by `mon_sess.run` in a
MonitoredTrainingSession loop with a StopAtStepHook, `server.join()` on the ps. The images are
synthetic (10 classes around random 784-pixel centres) so that the test needs no download.

    python distributed_mnist.py --job_name ps --task_index 0 --ports P0,P1,... --dir DIR

The chief (worker 0) prints one JSON line: the global step it ended at and the accuracy of the
final checkpoint on a test feed, evaluated with `sess.run(accuracy, feed_dict=...)`.
"""
import argparse
import json

import numpy as np

import shoal.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--job_name")
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--ports")
parser.add_argument("--dir")
parser.add_argument("--last_step", type=int, default=600)
args = parser.parse_args()

ports = args.ports.split(",")
ps_spec = [f"localhost:{ports[0]}"]
worker_spec = [f"localhost:{p}" for p in ports[1:]]
cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)

centers = np.random.default_rng(0).uniform(0, 1, size=(10, 784)).astype(np.float32)


def next_batch(rng, n):
    labels = rng.integers(0, 10, size=n)
    images = np.clip(centers[labels] + rng.normal(scale=0.6, size=(n, 784)), 0, 1)
    return images.astype(np.float32), np.eye(10, dtype=np.float32)[labels]


if args.job_name == "ps":
    server.join()
elif args.job_name == "worker":
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % args.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        y_ = tf.placeholder(tf.float32, [None, 10], name="y_")
        W1 = tf.Variable(tf.truncated_normal([784, 64], stddev=0.05))
        b1 = tf.Variable(tf.zeros([64]))
        hidden = tf.nn.relu(tf.matmul(x, W1) + b1)
        W2 = tf.Variable(tf.truncated_normal([64, 10], stddev=0.05))
        b2 = tf.Variable(tf.zeros([10]))
        y = tf.matmul(hidden, W2) + b2
        cross_entropy = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(0.05).minimize(cross_entropy,
                                                            global_step=global_step)
        correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

    rng = np.random.default_rng(1 + args.task_index)
    hooks = [tf.train.StopAtStepHook(last_step=args.last_step)]
    step = 0
    with tf.train.MonitoredTrainingSession(master=server.target,
                                           is_chief=(args.task_index == 0),
                                           checkpoint_dir=args.dir, hooks=hooks) as mon_sess:
        while not mon_sess.should_stop():
            batch_xs, batch_ys = next_batch(rng, 100)
            _, step = mon_sess.run([train_op, global_step], feed_dict={x: batch_xs, y_: batch_ys})
    if args.task_index == 0:
        sess = tf.Session()
        checkpoint = tf.train.latest_checkpoint(args.dir)
        tf.train.Saver().restore(sess, checkpoint)
        test_xs, test_ys = next_batch(np.random.default_rng(99), 2000)
        print(json.dumps({"checkpoint": checkpoint, "last_step_seen": int(step),
                          "accuracy": float(sess.run(accuracy,
                                                     feed_dict={x: test_xs, y_: test_ys}))}))
