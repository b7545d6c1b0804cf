"""The story's distributed main.py (seed 001): train_and_evaluate on a ps / chief / worker /
evaluator cluster, every role running this script with its own TF_CONFIG. Only the import is
shoal's, and the cluster comes from TF_CONFIG as `shoal launch --python` (or run-dist.sh) sets it.

    shoal launch --ps 1 --workers 2 --evaluator --python distributed.py --arg /tmp/lr_dist
"""
import logging
import random
import sys

import shoal.compat.v1 as tf
from model import MyEstimator

logging.getLogger().setLevel(logging.INFO)
model_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/temp_model_dir/"
batch_size = 1
train_number = 1000
test_number = 100


def input_fn(data_size):
    def actual_input_fn():
        def generator():
            for _ in range(data_size):
                datum = random.random()
                yield "\t".join(map(str, (datum, datum * 0.8 + 1)))

        def parse(line):
            fields = tf.decode_csv(line, [[0.0], [0.0]], field_delim="\t")
            return {"x": fields[0]}, fields[1]

        dataset = tf.data.Dataset.from_generator(generator, tf.string, tf.TensorShape([]))
        dataset = dataset.map(parse)
        return dataset.batch(batch_size)

    return actual_input_fn


def serving_input_fn():
    feature_tensors = {"x": tf.placeholder(tf.float32, shape=(None, 1), name="input_x")}
    receiver_tensor = tf.placeholder(tf.float32, shape=(None, 1), name="output_tensor")
    return tf.estimator.export.ServingInputReceiver(feature_tensors, receiver_tensor)


train_spec = tf.estimator.TrainSpec(input_fn(train_number), max_steps=500, hooks=None)
eval_spec = tf.estimator.EvalSpec(
    input_fn(test_number), steps=50, name=None, hooks=None,
    exporters=[tf.estimator.FinalExporter("final", serving_input_fn)],
    start_delay_secs=0, throttle_secs=0)

estimator = MyEstimator(model_dir, config=tf.estimator.RunConfig(save_checkpoints_steps=100))
metrics, exports = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
if metrics is not None:
    print("RESULT", {k: float(v) for k, v in metrics.items()}, exports, flush=True)
