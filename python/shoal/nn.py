"""``tf.nn``: activations (also the canned estimators' ``activation_fn=tf.nn.relu``), and inside a
traced model_fn the nn ops of shoal.graph (docs/python.md, "Porting a TF1 program").

On numpy arrays the activations compute in numpy; on traced tensors they record graph ops.
"""

import numpy as np

from shoal.graph import ops as _ops
from shoal.graph.core import Tensor as _Tensor
from shoal.graph.layers import (bias_add, dropout, embedding_lookup,  # noqa: F401
                                embedding_lookup_sparse, l2_loss,
                                sigmoid_cross_entropy_with_logits,
                                softmax_cross_entropy_with_logits,
                                softmax_cross_entropy_with_logits_v2,
                                sparse_softmax_cross_entropy_with_logits)
from shoal.graph.ops import log_softmax, softmax  # noqa: F401

__all__ = ["relu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout", "bias_add",
           "embedding_lookup", "embedding_lookup_sparse", "l2_loss", "sigmoid_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits"]


def relu(features, name=None):
    if isinstance(features, _Tensor):
        return _ops.relu(features)
    return np.maximum(features, 0)


def tanh(x, name=None):
    if isinstance(x, _Tensor):
        return _ops.tanh(x)
    return np.tanh(x)


def sigmoid(x, name=None):
    if isinstance(x, _Tensor):
        return _ops.sigmoid(x)
    return 1 / (1 + np.exp(-np.asarray(x)))


for _f in (relu, tanh, sigmoid):
    _f.shoal_name = _f.__name__


def __getattr__(name):
    """tf.nn ops shoal's graphs do not have: an error naming the op and what tf.nn has."""
    if name.startswith("__"):
        raise AttributeError(name)
    from shoal.graph.core import user_line
    raise AttributeError(f"tf.nn.{name} ({user_line()}) is not supported by shoal.compat.v1. "
                         f"Supported in tf.nn: {', '.join(sorted(__all__))} (docs/porting.md "
                         "lists every op)")
