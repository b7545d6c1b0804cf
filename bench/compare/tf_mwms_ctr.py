"""TensorFlow 2.15's side of the all_reduce comparison (issue 21, bench/compare/mwms.sh): the Keras
wide & deep of the TensorFlowOnSpark story, trained with model.fit under
tf.distribute.experimental.MultiWorkerMirroredStrategy on the Criteo text files of
`shoal gen-data ctr`, against shoal's `run.strategy: all_reduce` (shoal_ctr_wide_deep_128.yaml).

  train    one worker of a TF_CONFIG {"cluster": {"worker": [...]}} (worker 0 is the chief): every
           worker must be started; they train in lockstep, gradients summed over TF's ring
           (CollectiveCommunication AUTO, i.e. RING on CPU). Worker 0 writes its weights to
           --model-dir; prints one `result` line with its timing.
  predict  one process, no TF_CONFIG: loads the weights and writes the held-out file's click
           probabilities (float32 .npy); the driver computes the exact AUC.

The model (tf.keras.experimental.WideDeepModel, BinaryCrossentropy on the sigmoid of the sum):
  linear: DenseFeatures of the 26 hashed columns and the 4 crosses, each as a 1-dimensional
          embedding_column with the sum combiner (a linear weight per id: indicator_column would
          make a 6.6M-wide dense input), then Dense(1) with its kernel initialised to 1; FTRL (lr
          0.2, power -0.5, accumulator 0.1).
  deep:   DenseFeatures of the 13 numeric columns (log1p) and the 26 hashed columns embedded in
          dimension 16 (mean) -> BatchNormalization -> Dense(128, relu) -> Dense(1); Adagrad (lr
          0.05, accumulator 0.1).
The batch is global: --batch-size examples per worker per step, so a step takes
batch-size x workers rows, as a shoal all_reduce step does. tf.data: TextLineDataset of the files
(FILE auto-sharding: each worker reads its own files) -> batch -> decode_csv in a parallel map ->
prefetch.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HIDDEN = 128


def feature_columns():
    fc = tf.feature_column
    numeric = [fc.numeric_column(name, normalizer_fn=lambda x: tf.math.log1p(tf.maximum(x, 0.0)))
               for name in M.NUMERIC]
    hashed = {name: fc.categorical_column_with_hash_bucket(name, M.HASH_BUCKETS)
              for name in M.CATEGORICAL}
    crosses = [fc.crossed_column([a, b], hash_bucket_size=M.CROSS_BUCKETS) for a, b in M.CROSSES]
    linear = [fc.embedding_column(c, 1, combiner="sum", initializer=tf.zeros_initializer())
              for c in list(hashed.values()) + crosses]
    deep = numeric + [fc.embedding_column(hashed[name], M.EMBEDDING_DIM, combiner="mean")
                      for name in M.CATEGORICAL]
    return linear, deep


def build_model():
    linear_columns, deep_columns = feature_columns()
    # Kernel 1: the output starts as the plain sum of the ids' weights, a linear model (Keras'
    # random kernel scaled each column's weights; the AUC was the same, 0.6236 against 0.6242).
    linear = tf.keras.Sequential([tf.keras.layers.DenseFeatures(linear_columns),
                                  tf.keras.layers.Dense(1, kernel_initializer="ones")])
    deep = tf.keras.Sequential([tf.keras.layers.DenseFeatures(deep_columns),
                                tf.keras.layers.BatchNormalization(),
                                tf.keras.layers.Dense(HIDDEN, activation="relu"),
                                tf.keras.layers.Dense(1)])
    model = tf.keras.experimental.WideDeepModel(linear, deep, activation="sigmoid")
    model.compile(
        optimizer=[tf.keras.optimizers.Ftrl(learning_rate=M.WIDE_LEARNING_RATE,
                                            learning_rate_power=M.WIDE_LEARNING_RATE_POWER,
                                            initial_accumulator_value=M.WIDE_INITIAL_ACCUMULATOR,
                                            l1_regularization_strength=M.WIDE_L1,
                                            l2_regularization_strength=M.WIDE_L2),
                   tf.keras.optimizers.Adagrad(learning_rate=M.DEEP_LEARNING_RATE,
                                               initial_accumulator_value=M.DEEP_INITIAL_ACCUMULATOR)],
        loss=tf.keras.losses.BinaryCrossentropy())
    return model


def dataset(files, batch_size, with_labels=True):
    defaults = [[0.0]] + [[0.0]] * M.NUM_NUMERIC + [[""]] * M.NUM_CATEGORICAL

    def decode(lines):
        fields = tf.io.decode_csv(lines, record_defaults=defaults, field_delim="\t", na_value="")
        features = dict(zip(M.COLUMNS, fields))
        label = features.pop("label")
        return (features, label) if with_labels else features

    ds = tf.data.TextLineDataset(files).batch(batch_size)
    ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
    return ds.with_options(options)


class StepClock(tf.keras.callbacks.Callback):
    """Stamps the end of every training batch (global steps: all workers run each one)."""

    def __init__(self, every):
        super().__init__()
        self.every = every
        self.stamps = []

    def on_train_batch_end(self, batch, logs=None):
        self.stamps.append(time.time())
        if (batch + 1) % self.every == 0:
            M.progress(batch + 1)


def count_rows(files):
    total = 0
    for path in files:
        with open(path, "rb") as f:
            total += sum(1 for line in f if line.strip())
    return total


def train(args):
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    workers = len(tf_config.get("cluster", {}).get("worker", [])) or 1
    index = tf_config.get("task", {}).get("index", 0)
    if args.intra_threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_threads)
    tf.keras.utils.set_random_seed(42)
    t_start = time.time()
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = build_model()
    clock = StepClock(args.log_every)
    global_batch = args.batch_size * workers
    t_fit = time.time()
    model.fit(dataset(args.train_files, global_batch), epochs=1, callbacks=[clock], verbose=0)
    t_end = time.time()
    # Every worker saves (the save may run collectives); only worker 0's copy is kept.
    target = args.model_dir if index == 0 else os.path.join(args.model_dir, f"worker-{index}")
    model.save_weights(os.path.join(target, "weights"))
    examples = count_rows(args.train_files)  # the whole job's, as every step is global
    steps = len(clock.stamps)
    warm = min(args.warmup_steps, steps - 1)
    steady_examples = examples - warm * global_batch
    M.result(role=f"worker:{index}", workers=workers, steps=steps, examples=examples,
             startup_s=round(t_fit - t_start, 3), fit_s=round(t_end - t_fit, 3),
             first_step_s=round(clock.stamps[0] - t_fit, 3),
             examples_per_s_fit=examples / (t_end - t_fit),
             warmup_steps=warm,
             examples_per_s_steady=steady_examples / (clock.stamps[-1] - clock.stamps[warm - 1])
             if warm > 0 else examples / (clock.stamps[-1] - t_fit))


def predict(args):
    model = build_model()
    ds = dataset([args.eval_file], 4096, with_labels=False)
    model(next(iter(ds)))  # builds the variables before the restore
    model.load_weights(os.path.join(args.model_dir, "weights")).expect_partial()
    probabilities = model.predict(ds, verbose=0).reshape(-1)
    np.save(args.predictions, probabilities.astype(np.float32))
    M.result(predictions=int(probabilities.shape[0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["train", "predict"])
    parser.add_argument("--train-files", nargs="+", default=[])
    parser.add_argument("--eval-file")
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--predictions", help="predict: output .npy file")
    parser.add_argument("--batch-size", type=int, default=M.BATCH_SIZE, help="per worker")
    parser.add_argument("--intra-threads", type=int, default=0, help="0: TF's default")
    parser.add_argument("--inter-threads", type=int, default=0)
    parser.add_argument("--warmup-steps", type=int, default=20,
                        help="steps left out of the steady rate (tracing, pipeline fill)")
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args()
    if args.action == "train":
        if not args.train_files:
            M.die("train needs --train-files")
        train(args)
    else:
        if not (args.predictions and args.eval_file):
            M.die("predict needs --eval-file and --predictions")
        predict(args)


if __name__ == "__main__":
    main()
