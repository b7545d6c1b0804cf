"""TF1's names on shoal: ``import shoal.compat.v1 as tf``.

    tf.estimator          canned estimators, RunConfig, specs, train_and_evaluate, exporters,
                          hooks, inputs.numpy_input_fn / pandas_input_fn, export
    tf.feature_column     the feature columns
    tf.train              optimizers and hooks
    tf.data               TFRecordDataset, TextLineDataset, experimental.make_csv_dataset
    tf.io                 parse_single_example, parse_example, decode_csv, FixedLenFeature, ...
    tf.errors             the engine's exceptions (InvalidArgumentError is a ValueError)
    tf.distribute         MultiWorkerMirroredStrategy (all-reduce), ParameterServerStrategy
    tf.float32, tf.int64, tf.string, ...; tf.placeholder; tf.logging; tf.app.run

Inside a model_fn (traced into a graph the engine runs; docs/python.md, "Porting a TF1 program"):
    tensor ops            tf.matmul, tf.reduce_sum/mean/max/min, tf.concat, tf.reshape, tf.cast,
                          arithmetic and comparison operators, tf.exp/log/sqrt/square, ...
    tf.nn, tf.layers      relu/sigmoid/tanh/softmax, dropout, embedding_lookup, cross-entropies;
                          dense, batch_normalization, dropout, flatten
    tf.losses, tf.metrics TF1's losses (with their reductions) and streaming metrics
    variables             tf.Variable, tf.get_variable, tf.variable_scope, initializers

docs/python.md has the table of what is there, what differs and what is missing.
"""

import logging as _logging
import sys as _sys
import types as _types

from shoal import data, distribute, errors, estimator, feature_column, nn, train  # noqa: F401
from shoal.data import (decode_csv, parse_example, parse_single_example,  # noqa: F401
                        string_split, string_to_hash_bucket_fast)
from shoal.dtypes import (bool, double, float16, float32, float64, half, int8,  # noqa: F401,A004
                          int16, int32, int64, string, uint8, DType)
from shoal.graph.default_graph import (Graph, get_default_graph, placeholder,  # noqa: F401
                                       reset_default_graph)
from shoal.graph.servers import device  # noqa: F401
from shoal.graph.session import (InteractiveSession, Session,  # noqa: F401
                                 global_variables_initializer, local_variables_initializer)
from shoal.feature_column import FixedLenFeature, VarLenFeature, log1p as _log1p  # noqa: F401

strings = _types.ModuleType("shoal.compat.v1.strings", "tf.strings inside tf.data maps")
strings.to_hash_bucket_fast = string_to_hash_bucket_fast
strings.split = lambda input, sep=None, maxsplit=-1, name=None: string_split(  # noqa: E731
    input, " " if sep is None else sep)

io = _types.ModuleType("shoal.compat.v1.io", "tf.io: parsing inside tf.data maps")
io.parse_single_example = parse_single_example
io.parse_example = parse_example
io.decode_csv = decode_csv
io.FixedLenFeature = FixedLenFeature
io.VarLenFeature = VarLenFeature

from shoal.graph import layers as _layers  # noqa: E402
from shoal.graph import ops as _ops  # noqa: E402
from shoal.graph import variables as _variables  # noqa: E402
from shoal.graph.core import Tensor, TensorShape  # noqa: E402,F401
from shoal.graph.core import in_model_fn as _in_model_fn  # noqa: E402

for _name in _ops.__all__:
    if _name != "where_":
        globals()[_name] = getattr(_ops, _name)
where = _ops.where_
for _name in _variables.__all__:
    globals()[_name] = getattr(_variables, _name)
sigmoid = nn.sigmoid
tanh = nn.tanh
truediv = div = _ops.divide


def log1p(x, name=None):
    """tf.math.log1p: a graph op on traced tensors; in a numeric_column's normalizer_fn, what
    shoal runs in C++."""
    return _ops.log1p(x) if isinstance(x, Tensor) else _log1p(x)


math = _types.ModuleType("shoal.compat.v1.math", "tf.math")
for _name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "exp", "log",
              "sqrt", "rsqrt", "square", "abs", "reciprocal", "sign", "floor", "round", "pow",
              "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "argmax", "equal",
              "not_equal", "less", "less_equal", "greater", "greater_equal", "squared_difference",
              "negative", "add_n", "sigmoid", "tanh"):
    setattr(math, _name, globals()[_name])
math.log1p = log1p
math.truediv = math.divide


def placeholder_with_default(input, shape, name=None):  # noqa: A002 (TF's name)
    """Inside a model_fn the default is what flows (nothing is fed to a traced graph); in a
    low-level program, a placeholder that a run may feed, else its default is fed."""
    from shoal.graph import default_graph
    if _in_model_fn() or isinstance(input, Tensor):
        return _ops.identity(input)
    return default_graph.placeholder_with_default(input, shape, name)


def group(*inputs, **kwargs):
    """tf.group of a train_op with update ops (which shoal's graph does not need): the train_op."""
    from shoal.graph.model import TrainOp
    ops_ = [i for i in inputs if i is not None]
    train_ops = [i for i in ops_ if isinstance(i, TrainOp)]
    if len(train_ops) == 1:
        return train_ops[0]
    raise NotImplementedError("tf.group: shoal groups one optimizer.minimize() with update ops "
                              f"only; got {ops_!r}")


def no_op(name=None):
    return None


class GraphKeys:
    UPDATE_OPS = "update_ops"
    TRAINABLE_VARIABLES = "trainable_variables"
    GLOBAL_VARIABLES = "variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    LOSSES = "losses"


def get_collection(key, scope=None):
    """UPDATE_OPS and the other collections are empty: batch normalization's moving statistics
    are updated by the step itself."""
    if key in (GraphKeys.UPDATE_OPS, GraphKeys.REGULARIZATION_LOSSES):
        return []
    raise NotImplementedError(f"tf.get_collection({key!r}) is not supported in shoal's graphs")


class control_dependencies:  # noqa: N801 (TF's name)
    """A no-op: a traced graph's ops run in the order the outputs need them."""

    def __init__(self, control_inputs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


layers = _types.ModuleType("shoal.compat.v1.layers", "tf.layers")
layers.dense = _layers.dense
layers.batch_normalization = _layers.batch_normalization
layers.dropout = _layers.layers_dropout
layers.flatten = _layers.flatten

losses = _types.ModuleType("shoal.compat.v1.losses", "tf.losses (TF1)")
for _name in ("mean_squared_error", "absolute_difference", "sigmoid_cross_entropy",
              "softmax_cross_entropy", "sparse_softmax_cross_entropy", "log_loss",
              "get_total_loss", "add_loss", "Reduction"):
    setattr(losses, _name, getattr(_layers, _name))

metrics = _types.ModuleType("shoal.compat.v1.metrics", "tf.metrics (TF1)")
for _name in ("mean", "accuracy", "auc", "precision", "recall", "mean_absolute_error"):
    setattr(metrics, _name, getattr(_layers, _name))
metrics.mean_squared_error = _layers.mean_squared_error_metric

initializers = _types.ModuleType("shoal.compat.v1.initializers", "tf.initializers")
initializers.zeros = _variables.zeros_initializer
initializers.ones = _variables.ones_initializer
initializers.constant = _variables.constant_initializer
initializers.glorot_uniform = _variables.glorot_uniform_initializer
initializers.truncated_normal = _variables.truncated_normal_initializer
initializers.random_normal = _variables.random_normal_initializer
keras_initializers = initializers

keras = _types.ModuleType("shoal.compat.v1.keras", "tf.keras: the losses and helpers TF1 "
                                                   "programs use")
keras.losses = _types.ModuleType("shoal.compat.v1.keras.losses", "tf.keras.losses")
keras.losses.binary_crossentropy = _layers.keras_binary_crossentropy
keras.preprocessing = _types.ModuleType("shoal.compat.v1.keras.preprocessing", "")
keras.preprocessing.sequence = _types.ModuleType("shoal.compat.v1.keras.preprocessing.sequence",
                                                 "")
keras.preprocessing.sequence.pad_sequences = _layers.pad_sequences
keras.initializers = initializers

summary = _types.ModuleType("shoal.compat.v1.summary", "tf.summary inside a model_fn")


def _summary_noop(name, tensor=None, *args, **kwargs):
    """Accepted and not recorded: the engine writes loss, metrics and histograms itself
    (docs/python.md)."""
    return None


summary.scalar = summary.histogram = summary.image = summary.text = _summary_noop
summary.merge_all = lambda *a, **k: None

# tf.logging (TF1) and tf.compat.v1.logging: Python's logging, logger "shoal".
logging = _types.ModuleType("shoal.compat.v1.logging", "tf.logging on Python's logging")
logging.DEBUG, logging.INFO, logging.WARN, logging.ERROR, logging.FATAL = (
    _logging.DEBUG, _logging.INFO, _logging.WARNING, _logging.ERROR, _logging.CRITICAL)


def _set_verbosity(level):
    _logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s")
    _logging.getLogger("shoal").setLevel(level)


logging.set_verbosity = _set_verbosity
logging.info = _logging.getLogger("shoal").info
logging.warning = logging.warn = _logging.getLogger("shoal").warning
logging.error = _logging.getLogger("shoal").error
logging.debug = _logging.getLogger("shoal").debug

app = _types.ModuleType("shoal.compat.v1.app", "tf.app")


def _run(main=None, argv=None):
    main = main or _sys.modules["__main__"].main
    _sys.exit(main(argv if argv is not None else _sys.argv))


app.run = _run

compat = _types.ModuleType("shoal.compat.v1.compat", "tf.compat")
compat.v1 = _sys.modules[__name__]


def _missing(prefix, names):
    """A module's __getattr__ (PEP 562): an op shoal's graphs do not have is an error naming it,
    the user's line, and what the module has."""
    def missing(name):
        if name.startswith("__"):
            raise AttributeError(name)
        from shoal.graph.core import user_line
        supported = sorted(n for n, v in names().items()
                           if not n.startswith("_") and not isinstance(v, _types.ModuleType))
        raise AttributeError(
            f"{prefix}{name} ({user_line()}) is not supported by shoal.compat.v1. Supported in "
            f"{prefix.rstrip('.') or 'tf'}: {', '.join(supported)} (docs/porting.md lists every "
            "op)")
    return missing


__getattr__ = _missing("tf.", lambda: globals())
for _module in (layers, losses, metrics, math, initializers, summary, io, logging, app, strings,
                keras, keras.losses):
    _module.__getattr__ = _missing(f"tf.{_module.__name__.rsplit('.', 1)[-1]}.",
                                   lambda m=_module: vars(m))
