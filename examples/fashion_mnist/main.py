"""Fashion-MNIST with TF1's DNNClassifier, on shoal: the Python twin of config.yaml.

    py=$(scripts/python-package.sh) && "$py" examples/fashion_mnist/main.py [MODEL_DIR]

Reads Debian's dataset-fashion-mnist IDX files into numpy (scripts/install-deps.sh installs
them), trains 3 epochs of the 784-256-128-10 MLP with Adam and prints the test metrics (accuracy
about 0.87, as `shoal train examples/fashion_mnist/config.yaml`).
"""
import gzip
import sys
import tempfile

import numpy as np

import shoal.compat.v1 as tf

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(images_file, labels_file):
    with gzip.open(f"{DATA}/{images_file}") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(f"{DATA}/{labels_file}") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return images.astype(np.float32) / 255.0, labels


def main(model_dir):
    train_x, train_y = read_idx("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    test_x, test_y = read_idx("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    est = tf.estimator.DNNClassifier(
        hidden_units=[256, 128], feature_columns=[tf.feature_column.numeric_column("image", 784)],
        n_classes=10, optimizer=tf.train.AdamOptimizer(0.001), model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=42, save_checkpoints_steps=500,
                                      keep_checkpoint_max=3))
    est.train(tf.estimator.inputs.numpy_input_fn({"image": train_x}, train_y, batch_size=128,
                                                 num_epochs=3, shuffle=True))
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"image": test_x}, test_y, batch_size=1000, shuffle=False))
    for name in sorted(metrics):
        print(f"  {name:16} {metrics[name]:.4f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="fashion_mnist-"))
