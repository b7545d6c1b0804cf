"""One TF1 Estimator program, run unchanged but for its import line, under TensorFlow 2.15
(`import tensorflow.compat.v1 as tf`) and under shoal (`import shoal.compat.v1 as tf`):
python/tests/tf_compat_test.py runs it both ways and compares the metrics.

    python wide_deep_numpy.py tensorflow|shoal MODEL_DIR      -> one JSON line of metrics

The data is generated (numpy, seeded): a click-through-like label from a colour, a city, an age
and hours, with an interaction between colour and city.
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


def make_data(rows, seed):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "black"], size=rows)
    city = rng.choice([f"c{i}" for i in range(40)], size=rows)
    age = rng.uniform(18, 80, size=rows).astype(np.float32)
    hours = rng.integers(1, 60, size=rows).astype(np.float32)
    city_id = np.array([int(c[1:]) for c in city])
    logit = (colour == "red") * 1.2 - (colour == "blue") * 0.8 + (age - 45) / 15 + \
        np.where((colour == "green") & (city_id % 4 == 0), 2.0, 0.0) + (city_id % 3) * 0.4 - 1
    label = (rng.uniform(size=rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return {"colour": colour.astype(object), "city": city.astype(object), "age": age,
            "hours": hours}, label


fc = tf.feature_column
colour = fc.categorical_column_with_vocabulary_list("colour", ["red", "green", "blue", "black"])
city = fc.categorical_column_with_hash_bucket("city", 100)
age = fc.numeric_column("age")
age_buckets = fc.bucketized_column(age, [25, 35, 45, 55, 65])
wide = [colour, city, age_buckets, fc.crossed_column(["colour", "city"], 1000)]
deep = [fc.numeric_column("age", normalizer_fn=lambda x: (x - 49.0) / 18.0),
        fc.numeric_column("hours", normalizer_fn=lambda x: (x - 30.0) / 17.0),
        fc.indicator_column(colour), fc.embedding_column(city, 8)]

est = tf.estimator.DNNLinearCombinedClassifier(
    model_dir=sys.argv[2], linear_feature_columns=wide, dnn_feature_columns=deep,
    dnn_hidden_units=[32, 16],
    config=tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=1000))
train_x, train_y = make_data(20000, 1)
test_x, test_y = make_data(5000, 2)
est.train(tf.estimator.inputs.numpy_input_fn(train_x, train_y, batch_size=64, num_epochs=3,
                                             shuffle=True))
metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn(test_x, test_y, batch_size=500,
                                                          shuffle=False))
predictions = list(est.predict(tf.estimator.inputs.numpy_input_fn(
    {k: v[:3] for k, v in test_x.items()}, shuffle=False)))
print(json.dumps({"accuracy": float(metrics["accuracy"]), "auc": float(metrics["auc"]),
                  "loss": float(metrics["loss"]), "global_step": int(metrics["global_step"]),
                  "prediction_keys": sorted(predictions[0])}))
