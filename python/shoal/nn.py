"""``tf.nn`` activations the canned estimators take by name (``activation_fn=tf.nn.relu``).

They compute on numpy arrays too; the engine runs its own C++ versions.
"""

import numpy as np

__all__ = ["relu", "tanh", "sigmoid"]


def relu(features, name=None):
    return np.maximum(features, 0)


def tanh(x, name=None):
    return np.tanh(x)


def sigmoid(x, name=None):
    return 1 / (1 + np.exp(-np.asarray(x)))


for _f in (relu, tanh, sigmoid):
    _f.shoal_name = _f.__name__
