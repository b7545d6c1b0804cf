"""TensorFlow's side of the CTR comparison: tf.compat.v1.estimator.DNNLinearCombinedClassifier
(the Estimator of the parameter-server era, with tf.compat.v1.train optimizers) on the same
Criteo text files and the same model as shoal_ctr.yaml and torch_ctr.py.

  train    one process (no TF_CONFIG), or one member of a TF_CONFIG parameter-server cluster
           (chief / worker / ps) through tf.estimator.train_and_evaluate, the way TF 2.15 ran
           between-graph replication: variables on the PS (replica_device_setter), each trainer
           pushing its updates asynchronously. Trainer i of N reads every N-th line of the
           training files (Dataset.shard), so the cluster trains the same examples once.
  predict  writes the held-out file's click probabilities (float32 .npy) from the latest
           checkpoint of model_dir; the driver computes the AUC.

Feature columns, equivalent to shoal's: numeric_column with log1p(max(x, 0)) (a missing value is
0, as in shoal), categorical_column_with_hash_bucket (HASH_BUCKETS buckets; '' = missing = no id),
embedding_column dim 16 with mean pooling, crossed_column (CROSS_BUCKETS buckets) for the crosses.
Input: TextLineDataset -> shard -> batch -> tf.io.decode_csv on whole batches in a parallel map
(AUTOTUNE) -> prefetch (AUTOTUNE), the fast tf.data recipe for text.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def poll_chief_every_second():
    """A non-chief worker polls for the chief's initialisation of the variables every
    recovery_wait_secs, 30 s by default, which Estimator does not expose: a worker starting a
    moment after the chief idles for 30 s. 1 s is its best setting."""
    manager = tf1.train.SessionManager
    original = manager.__init__

    def init(self, *args, **kwargs):
        kwargs["recovery_wait_secs"] = 1
        original(self, *args, **kwargs)

    manager.__init__ = init


def feature_columns():
    fc = tf.feature_column
    numeric = [fc.numeric_column(name, normalizer_fn=lambda x: tf.math.log1p(tf.maximum(x, 0.0)))
               for name in M.NUMERIC]
    hashed = {name: fc.categorical_column_with_hash_bucket(name, M.HASH_BUCKETS)
              for name in M.CATEGORICAL}
    embeddings = [fc.embedding_column(hashed[name], M.EMBEDDING_DIM, combiner="mean")
                  for name in M.CATEGORICAL]
    crosses = [fc.crossed_column([a, b], hash_bucket_size=M.CROSS_BUCKETS) for a, b in M.CROSSES]
    linear = [hashed[name] for name in M.CATEGORICAL] + crosses
    return linear, numeric + embeddings


def make_input_fn(files, batch_size, num_shards=1, shard_index=0, with_labels=True):
    defaults = [[0.0]] + [[0.0]] * M.NUM_NUMERIC + [[""]] * M.NUM_CATEGORICAL

    def decode(lines):
        fields = tf.io.decode_csv(lines, record_defaults=defaults, field_delim="\t",
                                  na_value="")
        features = dict(zip(M.COLUMNS, fields))
        label = features.pop("label")
        return (features, label) if with_labels else features

    def input_fn():
        ds = tf.data.TextLineDataset(files)
        if num_shards > 1:
            ds = ds.shard(num_shards, shard_index)
        ds = ds.batch(batch_size)
        ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    return input_fn


class ProgressHook(tf1.train.SessionRunHook):
    """Prints the global step every `every` local steps (the driver times the lines)."""

    def __init__(self, every):
        self._every = every
        self._local = 0

    def begin(self):
        self._global_step = tf1.train.get_global_step()

    def before_run(self, run_context):
        return tf1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        self._local += 1
        if self._local % self._every == 0:
            M.progress(int(run_values.results) + 1)


def session_config(args, tf_config):
    config = tf1.ConfigProto(intra_op_parallelism_threads=args.intra_threads,
                             inter_op_parallelism_threads=args.inter_threads)
    task = tf_config.get("task", {})
    if task.get("type") in ("chief", "worker"):
        # What RunConfig sets by default for TF_CONFIG clusters (it does not when a session_config
        # is given): a trainer talks to the PS and itself only.
        config.device_filters.extend(["/job:ps", f"/job:{task['type']}/task:{task['index']}"])
    return config


def make_estimator(args, tf_config):
    linear_columns, dnn_columns = feature_columns()
    run_config = tf.estimator.RunConfig(
        model_dir=args.model_dir,
        session_config=session_config(args, tf_config),
        save_checkpoints_steps=10**9,  # i.e. at the start and at the end only
        save_summary_steps=10**9,
        log_step_count_steps=10**9,
        keep_checkpoint_max=1,
        tf_random_seed=42,
        experimental_max_worker_delay_secs=0)  # workers start at once (TF's default waits 5 s each)
    return tf1.estimator.DNNLinearCombinedClassifier(
        model_dir=args.model_dir,
        linear_feature_columns=linear_columns,
        linear_optimizer=lambda: tf1.train.FtrlOptimizer(
            learning_rate=M.WIDE_LEARNING_RATE,
            learning_rate_power=M.WIDE_LEARNING_RATE_POWER,
            initial_accumulator_value=M.WIDE_INITIAL_ACCUMULATOR,
            l1_regularization_strength=M.WIDE_L1, l2_regularization_strength=M.WIDE_L2),
        dnn_feature_columns=dnn_columns,
        dnn_optimizer=lambda: tf1.train.AdagradOptimizer(
            learning_rate=M.DEEP_LEARNING_RATE,
            initial_accumulator_value=M.DEEP_INITIAL_ACCUMULATOR),
        dnn_hidden_units=M.HIDDEN_UNITS,
        dnn_activation_fn=tf.nn.relu,
        loss_reduction=tf1.losses.Reduction.SUM_OVER_BATCH_SIZE,  # the mean, as shoal and torch
        config=run_config)


def train(args):
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    estimator = make_estimator(args, tf_config)
    hooks = [ProgressHook(args.log_every)]
    if not tf_config:
        estimator.train(make_input_fn(args.train_files, args.batch_size), hooks=hooks)
        M.result(role="single", global_step=int(estimator.get_variable_value("global_step")))
        return
    poll_chief_every_second()
    cluster = tf_config.get("cluster", {})
    task = tf_config.get("task", {})
    trainers = ["chief:%d" % i for i in range(len(cluster.get("chief", [])))] + \
               ["worker:%d" % i for i in range(len(cluster.get("worker", [])))]
    me = "%s:%d" % (task.get("type"), task.get("index", 0))
    if task.get("type") == "ps":
        shard_index, num_shards = 0, 1  # the PS trains nothing; its input_fn is never called
    elif me in trainers:
        shard_index, num_shards = trainers.index(me), len(trainers)
    else:
        M.die(f"TF_CONFIG: task {me} is not a chief or worker of the cluster")
    train_spec = tf.estimator.TrainSpec(
        make_input_fn(args.train_files, args.batch_size, num_shards, shard_index), hooks=hooks)
    # No evaluator runs: the driver evaluates the final checkpoint with `predict` afterwards.
    eval_spec = tf.estimator.EvalSpec(make_input_fn([args.eval_file], 4096), steps=None,
                                      throttle_secs=10**9)
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    M.result(role=me)


def predict(args):
    estimator = make_estimator(args, {})
    if estimator.latest_checkpoint() is None:
        M.die(f"no checkpoint in {args.model_dir}")
    batches = estimator.predict(make_input_fn([args.eval_file], 4096, with_labels=False),
                                predict_keys=["logistic"], yield_single_examples=False)
    probabilities = np.concatenate([b["logistic"].reshape(-1) for b in batches])
    np.save(args.predictions, probabilities.astype(np.float32))
    M.result(predictions=int(probabilities.shape[0]), checkpoint=estimator.latest_checkpoint())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["train", "predict"])
    parser.add_argument("--train-files", nargs="+", default=[])
    parser.add_argument("--eval-file", required=True)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--predictions", help="predict: output .npy file")
    parser.add_argument("--batch-size", type=int, default=M.BATCH_SIZE)
    parser.add_argument("--intra-threads", type=int, default=2)
    parser.add_argument("--inter-threads", type=int, default=2)
    parser.add_argument("--control-flow", choices=["v1", "v2"], default="v1",
                        help="v1: TF 1's tf.cond (needed on a PS cluster); v2: TF 2's default")
    parser.add_argument("--log-every", type=int, default=100, help="progress line every N steps")
    args = parser.parse_args()
    tf1.logging.set_verbosity(tf1.logging.WARN)
    if args.control_flow == "v1":
        # The canned estimators' zero_fraction summaries build a tf.cond that reads a variable;
        # with control flow v2 (TF 2's default) a PS cluster fails at session start with "Cannot
        # colocate nodes ... incompatible jobs: '/job:ps/task:0/device:CPU:0' and
        # '/job:chief/task:0'". Control flow v1 (TF 1's) places it correctly.
        tf1.disable_control_flow_v2()
    if args.action == "train":
        if not args.train_files:
            M.die("train needs --train-files")
        train(args)
    else:
        if not args.predictions:
            M.die("predict needs --predictions")
        predict(args)


if __name__ == "__main__":
    main()
