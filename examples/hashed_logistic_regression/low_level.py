"""The users' Spark story (seed 003) as they wrote it: a TF1 low-level program, one process per
task of a `tf.train.ClusterSpec` (2 ps, workers), `placeholder`s fed from a Python generator of
`label<TAB>tokens` rows, a `[vocab_size, 1]` weight partitioned over the ps and looked up with
`embedding_lookup`, Adam, and `MonitoredTrainingSession` with a `StopAtStepHook`. Only the import
is shoal's (and, as every shoal job, a secret shared by the processes).

On shoal the partitioned variable is an embedding table on the parameter servers (rows only for
the ids the data has), every `sess.run` is one step of the C++ engine on the rows fed, the ps
exit when the job ends, and the chief (worker 0) checkpoints into CHECKPOINT_DIR.

    export SHOAL_JOB_SECRET=$(openssl rand -hex 16)
    python low_level.py --job_name=ps --task_index=0 &
    python low_level.py --job_name=ps --task_index=1 &
    python low_level.py --job_name=worker --task_index=1 &
    python low_level.py --job_name=worker --task_index=0     # the chief: prints the AUC

    python low_level.py --local    # starts all four processes itself
"""
import argparse
import datetime
import os
import secrets
import subprocess
import sys

import numpy as np
from story_data import auc, hash_token, make_rows

import shoal.compat.v1 as tf

vocab_size = 10_000_000

parser = argparse.ArgumentParser()
parser.add_argument("--job_name", default="worker")
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--ports", default="2220,2221,2222,2223", help="ps0,ps1,worker0,worker1")
parser.add_argument("--checkpoint_dir", default="/tmp/hashed_lr_low_level")
parser.add_argument("--num_epochs", type=int, default=3)
parser.add_argument("--local", action="store_true", help="start the whole cluster here")
args = parser.parse_args()


def batches(rows, batch_size=500):
    """The story's rdd_generator: hashed ids padded per batch, labels [batch, 1]."""
    for begin in range(0, len(rows), batch_size):
        feature_batch, label_batch = [], []
        for row in rows[begin:begin + batch_size]:
            toks = row.split("\t")[1].split(" ")
            label_batch.append([int(toks[0])])
            feature_batch.append([hash_token(elem) for elem in toks[2:]])
        yield tf.keras.preprocessing.sequence.pad_sequences(feature_batch), label_batch


def start_local_cluster():
    env = dict(os.environ, SHOAL_JOB_SECRET=os.environ.get("SHOAL_JOB_SECRET",
                                                           secrets.token_hex(16)))
    me = [sys.executable, os.path.abspath(__file__), "--ports", args.ports,
          "--checkpoint_dir", args.checkpoint_dir, "--num_epochs", str(args.num_epochs)]
    others = [subprocess.Popen(me + ["--job_name", job, "--task_index", str(i)], env=env)
              for job, i in (("ps", 0), ("ps", 1), ("worker", 1))]
    chief = subprocess.run(me + ["--job_name", "worker", "--task_index", "0"], env=env)
    codes = [p.wait() for p in others]
    sys.exit(max([chief.returncode] + codes))


if args.local:
    start_local_cluster()

ports = args.ports.split(",")
ps_spec = [f"localhost:{p}" for p in ports[:2]]
worker_spec = [f"localhost:{p}" for p in ports[2:]]
cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
num_ps = len(ps_spec)

if args.job_name == "ps":
    server.join()
    sys.exit(0)

print("{} worker start".format(datetime.datetime.now().isoformat()))
with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % args.task_index, cluster=cluster)):
    feature = tf.placeholder(tf.int64, shape=[None, None])
    label = tf.placeholder(tf.float32, shape=[None, 1])

    partitioner = tf.min_max_variable_partitioner(max_partitions=num_ps,
                                                  min_slice_size=64 << 20)
    with tf.variable_scope("sparse_embedding", partitioner=partitioner):
        embedding_matrix = tf.get_variable("weight", [vocab_size, 1], tf.float32,
                                           initializer=tf.random_normal_initializer(stddev=0.1),
                                           trainable=True)

    emb = tf.nn.embedding_lookup(embedding_matrix, feature)
    logit = tf.reduce_sum(emb, axis=1)
    pred_op = tf.nn.sigmoid(logit)
    loss_op = tf.reduce_mean(tf.keras.losses.binary_crossentropy(label, pred_op))
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.AdamOptimizer(learning_rate=1e-2).minimize(loss_op,
                                                                   global_step=global_step)
    init_op = tf.global_variables_initializer()

# Each worker trains its own share of the rows, num_epochs times.
rows = make_rows(40_000, 1)[args.task_index::len(worker_spec)]
is_chief = args.task_index == 0
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                       checkpoint_dir=args.checkpoint_dir,
                                       hooks=[tf.train.StopAtStepHook(last_step=100_000)]) as sess:
    sess.run(init_op)
    steps = 0
    for epoch in range(args.num_epochs):
        for feature_batch, label_batch in batches(rows):
            if sess.should_stop():
                break
            _, loss, step = sess.run([optimizer, loss_op, global_step],
                                     feed_dict={feature: feature_batch, label: label_batch})
            steps += 1
        print(f"worker {args.task_index}: epoch {epoch + 1}, global step {step}, loss {loss:.4f}")
print(f"worker {args.task_index}: {steps} steps done")

if is_chief:
    # The chief's session closed once every worker's had: the checkpoint holds all updates.
    eval_rows = make_rows(10_000, 2)
    sess = tf.Session()
    tf.train.Saver().restore(sess, tf.train.latest_checkpoint(args.checkpoint_dir))
    scores, labels = [], []
    for feature_batch, label_batch in batches(eval_rows, 2000):
        scores.append(sess.run(pred_op, feed_dict={feature: feature_batch}))
        labels.append(np.asarray(label_batch))
    print(f"AUC {auc(np.concatenate(labels).ravel(), np.concatenate(scores).ravel()):.4f}")
