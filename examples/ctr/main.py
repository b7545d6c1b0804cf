"""Criteo-style CTR wide & deep with TF1's DNNLinearCombinedClassifier, on shoal: the Python
twin of config.yaml (the same columns, optimizers and input), for one process.

    py=$(scripts/python-package.sh) && "$py" examples/ctr/main.py DATA_DIR MODEL_DIR

DATA_DIR holds `shoal gen-data ctr --files 4` output (examples/ctr/run.sh makes it): parts 0-2
train 3 epochs, part 3 evaluates, a final export follows, as `shoal train` does with config.yaml.
Prints the final metrics as JSON; bench/python_overhead.sh times it against the CLI.
"""
import json
import sys
import time

import shoal.compat.v1 as tf

CROSSES = [("C14", "C19"), ("C4", "C11"), ("C19", "C26"), ("C4", "C15")]


def main(data, model_dir):
    fc = tf.feature_column
    numeric = [fc.numeric_column(f"I{i}", normalizer_fn=tf.math.log1p) for i in range(1, 14)]
    categorical = {f"C{i}": fc.categorical_column_with_hash_bucket(f"C{i}", 0)
                   for i in range(1, 27)}
    crossed = [fc.crossed_column([categorical[a], categorical[b]], 0) for a, b in CROSSES]
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir,
        linear_feature_columns=list(categorical.values()) + crossed,
        linear_optimizer=tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.001,
                                                l2_regularization_strength=0.001),
        dnn_feature_columns=numeric + [fc.embedding_column(c, 8) for c in categorical.values()],
        dnn_optimizer=tf.train.AdagradOptimizer(0.1), dnn_hidden_units=[64, 32],
        config=tf.estimator.RunConfig(save_checkpoints_secs=60, keep_checkpoint_max=3,
                                      log_step_count_steps=200))
    train = [f"{data}/part-0000{i}.txt" for i in range(3)]
    train_spec = tf.estimator.TrainSpec(
        lambda: tf.data.CriteoDataset(train).shuffle(20000, seed=1).repeat(3).batch(256))
    eval_spec = tf.estimator.EvalSpec(
        lambda: tf.data.CriteoDataset(f"{data}/part-00003.txt").batch(4096), steps=None,
        throttle_secs=600, exporters=[tf.estimator.FinalExporter("final", None)])
    start = time.time()
    metrics, exports = tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    print(json.dumps({"seconds": round(time.time() - start, 2), "auc": float(metrics["auc"]),
                      "loss": float(metrics["loss"]), "global_step": int(metrics["global_step"]),
                      "exports": exports}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
