"""Titanic with TF1's DNNLinearCombinedClassifier (wide & deep), on shoal: the Python twin of
config.yaml, with pandas.

    py=$(scripts/python-package.sh) && "$py" examples/titanic/main.py [MODEL_DIR]

Needs ../shared/data/titanic/train.csv (beside the repository, as config.yaml); holds out 20% of
the rows (a seeded pandas sample, not config.yaml's hash split) and prints the holdout metrics
(accuracy about 0.8).
"""
import os
import sys
import tempfile

import pandas as pd

import shoal.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "shared", "data", "titanic", "train.csv")


def columns():
    fc = tf.feature_column
    age = fc.numeric_column("Age", default_value=29.7, normalizer_fn=lambda x: (x - 29.7) / 14.5)
    age_buckets = fc.bucketized_column(fc.numeric_column("Age"), [5, 12, 18, 25, 35, 45, 60])
    sex = fc.categorical_column_with_vocabulary_list("Sex", ["male", "female"])
    embarked = fc.categorical_column_with_vocabulary_list("Embarked", ["S", "C", "Q"],
                                                          num_oov_buckets=1)
    pclass = fc.categorical_column_with_identity("Pclass", 4)
    ticket = fc.categorical_column_with_hash_bucket("Ticket", 1000)
    wide = [sex, pclass, age_buckets, embarked, fc.crossed_column([sex, pclass], 100),
            fc.crossed_column([sex, age_buckets], 100)]
    deep = [age, fc.numeric_column("Fare", normalizer_fn=tf.math.log1p),
            fc.numeric_column("SibSp"), fc.numeric_column("Parch"),
            fc.embedding_column(ticket, 4), fc.indicator_column(sex),
            fc.indicator_column(embarked), fc.indicator_column(pclass),
            fc.indicator_column(age_buckets)]
    return wide, deep


def main(model_dir):
    if not os.path.exists(DATA):
        sys.exit(f"{DATA} is missing (the Titanic data beside the repository)")
    df = pd.read_csv(DATA)
    df["Fare"] = df["Fare"].fillna(0)
    df["Embarked"] = df["Embarked"].fillna("S")
    holdout = df.sample(frac=0.2, random_state=1)
    train = df.drop(holdout.index)
    features = ["Age", "Fare", "SibSp", "Parch", "Sex", "Embarked", "Pclass", "Ticket"]
    wide, deep = columns()
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=model_dir, linear_feature_columns=wide, dnn_feature_columns=deep,
        dnn_hidden_units=[32, 16], linear_optimizer=tf.train.FtrlOptimizer(0.1),
        dnn_optimizer=tf.train.AdagradOptimizer(0.05),
        config=tf.estimator.RunConfig(tf_random_seed=7))
    est.train(tf.estimator.inputs.pandas_input_fn(train[features], train["Survived"],
                                                  batch_size=32, num_epochs=40, shuffle=True))
    metrics = est.evaluate(tf.estimator.inputs.pandas_input_fn(
        holdout[features], holdout["Survived"], shuffle=False))
    for name in sorted(metrics):
        print(f"  {name:16} {metrics[name]:.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="titanic-"))
