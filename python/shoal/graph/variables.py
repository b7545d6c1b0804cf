"""Variables, initializers and scopes of traced model_fns (TF1's ``tf.Variable``,
``tf.get_variable``, ``tf.variable_scope``, ``tf.*_initializer``).

A variable is declared once per graph with its shape and initializer; every mode's trace binds
it by name, and the engine keeps it on the parameter servers (initialised there from the graph's
seed and the variable's name, so a run is reproducible). TF's partitioners are accepted: shoal's
parameter servers already split large variables and tables by rows.
"""

import contextlib
import numbers

import numpy as np

from shoal.graph.core import Tensor, constant, current, unsupported, user_line


class Initializer:
    """An initializer the engine runs: ``spec`` is the graph format's ``initializer``."""

    def __init__(self, spec, api):
        self.spec = spec
        self.api = api

    def __call__(self, shape, dtype=None, partition_info=None):
        return InitialValue(self, [int(d) for d in shape])


class InitialValue:
    """What ``initializer(shape)``, ``tf.zeros(shape)`` or ``tf.truncated_normal(shape)`` give
    as a variable's initial value."""

    def __init__(self, initializer, shape):
        self.initializer = initializer
        self.shape = shape


def zeros_initializer(dtype=None):
    return Initializer({"kind": "zeros"}, "tf.zeros_initializer")


def ones_initializer(dtype=None):
    return Initializer({"kind": "constant", "value": 1.0}, "tf.ones_initializer")


def constant_initializer(value=0, dtype=None, verify_shape=False):
    array = np.asarray(value, dtype=np.float64)
    if array.size != 1 and not np.all(array == array.reshape(-1)[0]):
        unsupported("tf.constant_initializer", "a list of different values",
                    "one value for every element")
    return Initializer({"kind": "constant", "value": float(array.reshape(-1)[0])},
                       "tf.constant_initializer")


def glorot_uniform_initializer(seed=None, dtype=None):
    return Initializer({"kind": "glorot_uniform"}, "tf.glorot_uniform_initializer")


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    if mean != 0:
        unsupported("tf.truncated_normal_initializer", f"mean={mean}", "mean 0")
    return Initializer({"kind": "truncated_normal", "stddev": float(stddev)},
                       "tf.truncated_normal_initializer")


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    if mean != 0:
        unsupported("tf.random_normal_initializer", f"mean={mean}", "mean 0")
    return Initializer({"kind": "normal", "stddev": float(stddev)}, "tf.random_normal_initializer")


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=None):
    maxval = 1.0 if maxval is None else maxval
    return Initializer({"kind": "uniform", "minval": float(minval), "maxval": float(maxval)},
                       "tf.random_uniform_initializer")


xavier_initializer = glorot_uniform_initializer


def zeros(shape, dtype=None, name=None):
    return InitialValue(zeros_initializer(), [int(d) for d in shape])


def ones(shape, dtype=None, name=None):
    return InitialValue(ones_initializer(), [int(d) for d in shape])


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    return InitialValue(truncated_normal_initializer(mean, stddev), [int(d) for d in shape])


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    return InitialValue(random_normal_initializer(mean, stddev), [int(d) for d in shape])


def random_uniform(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
    return InitialValue(random_uniform_initializer(minval, maxval), [int(d) for d in shape])


def _initializer_of(initial_value, api):
    """(initializer spec, shape) of a tf.Variable's initial value."""
    if isinstance(initial_value, InitialValue):
        return initial_value.initializer.spec, initial_value.shape
    if callable(initial_value) and not isinstance(initial_value, Tensor):
        return _initializer_of(initial_value(), api)
    if isinstance(initial_value, Tensor):
        unsupported(api, "an initial value computed by the graph",
                    "numbers, arrays of one repeated value, tf.zeros/ones/truncated_normal and "
                    "initializers")
    array = np.asarray(initial_value, dtype=np.float64)
    if array.size == 0:
        raise ValueError(f"{api} ({user_line()}): an empty initial value")
    first = float(array.reshape(-1)[0])
    if not np.all(array == first):
        unsupported(api, "an initial array of different values",
                    "one repeated value, tf.truncated_normal or an initializer")
    spec = {"kind": "zeros"} if first == 0 else {"kind": "constant", "value": first}
    return spec, list(array.shape)


class Variable(Tensor):
    """``tf.Variable`` / ``tf.get_variable``'s result: a tensor bound to a parameter."""

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None,
                 validate_shape=True, collections=None, **kwargs):
        api = "tf.Variable"
        if initial_value is None:
            raise ValueError(f"{api} ({user_line()}): initial_value must be given")
        spec, shape = _initializer_of(initial_value, api)
        trace = current(api)
        full = trace.unique_name(name or "Variable")
        _declare(trace, full, shape, spec, api)
        self._bind(trace, full, shape, dtype, api)

    def _bind(self, trace, name, shape, dtype, api):
        node = trace.add("variable", [], shape, "float", api=api, name=name)
        Tensor.__init__(self, trace, node.id, shape, _kind_of(dtype), name=f"{name}:0")
        self.var_name = name
        trace.variable_names[name] = self

    @classmethod
    def _bound(cls, trace, name, shape, dtype, api):
        v = cls.__new__(cls)
        v._bind(trace, name, shape, dtype, api)
        return v

    @property
    def value(self):
        return self

    def read_value(self):
        return self

    def assign(self, *args, **kwargs):
        unsupported("Variable.assign", "assignments inside the graph",
                    "updates by an optimizer's minimize")

    assign_add = assign_sub = assign


def _kind_of(dtype):
    if dtype is None:
        return "float"
    kind = getattr(dtype, "kind", None)
    if kind not in (None, "float"):
        unsupported("a variable", f"dtype {dtype!r}", "float32 variables")
    return "float"


def _declare(trace, name, shape, spec, api, group="deep"):
    if not name:
        raise ValueError(f"{api} ({user_line()}): a variable needs a name")
    for d in shape:
        if not isinstance(d, numbers.Integral) or d < 1:
            raise ValueError(f"{api} ({user_line()}): variable '{name}' has shape {shape}: "
                             "every dimension must be known and >= 1")
    if spec["kind"] == "glorot_uniform" and len(shape) < 1:
        unsupported(api, f"glorot_uniform on the scalar variable '{name}'",
                    "a zeros or constant initializer for scalars")
    trace.builder.declare(name, shape, spec, group, f"{user_line()} ({api})")


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """``tf.variable_scope``: names variables ``scope/name``. ``initializer`` becomes the
    default of get_variable inside; a ``partitioner`` is accepted (shoal shards by rows)."""
    trace = current("tf.variable_scope")
    name = getattr(name_or_scope, "name", name_or_scope) or default_name or ""
    trace.scopes.append(name)
    saved = (getattr(trace, "default_initializer", None), getattr(trace, "reuse", None))
    if initializer is not None:
        trace.default_initializer = initializer
    if reuse is not None:
        trace.reuse = reuse
    try:
        yield _Scope(trace.scoped("")[:-1] if name else "")
    finally:
        trace.scopes.pop()
        trace.default_initializer, trace.reuse = saved


class _Scope:
    def __init__(self, name):
        self.name = name
        self.original_name_scope = name + "/" if name else ""


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """``tf.name_scope``: names ops only, so it changes nothing shoal records."""
    yield name


AUTO_REUSE = "auto_reuse"


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=True, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """``tf.get_variable``: glorot_uniform by default, as TF for float variables."""
    api = "tf.get_variable"
    trace = current(api)
    full = trace.scoped(name)
    if regularizer is not None:
        unsupported(api, "regularizer", "an explicit penalty added to the loss")
    existing = trace.variable_names.get(full)
    if existing is not None:
        if not getattr(trace, "reuse", None):
            raise ValueError(f"{api} ({user_line()}): Variable {full} already exists, disallowed."
                             " Did you mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        return existing
    if isinstance(initializer, (numbers.Real, np.ndarray, list)) and shape is None:
        spec, shape = _initializer_of(initializer, api)
    else:
        if shape is None:
            raise ValueError(f"{api} ({user_line()}): Shape of a new variable ({full}) must be "
                             "fully defined")
        shape = [int(d) for d in shape]
        initializer = initializer or getattr(trace, "default_initializer", None) or \
            glorot_uniform_initializer()
        if isinstance(initializer, Initializer):
            spec = initializer.spec
        elif isinstance(initializer, (numbers.Real, np.ndarray, list)):
            spec, _ = _initializer_of(np.broadcast_to(np.asarray(initializer, np.float64),
                                                      shape), api)
        else:
            unsupported(api, f"initializer {initializer!r}", "tf.*_initializer objects")
    _declare(trace, full, shape, spec, api)
    return Variable._bound(trace, full, shape, dtype, api)


def fixed_size_partitioner(num_shards, axis=0):
    return _Partitioner()


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    return _Partitioner()


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    return _Partitioner()


class _Partitioner:
    """TF's partitioners: accepted; shoal's parameter servers split variables by rows."""

    def __call__(self, shape, dtype):
        return [1] * len(shape)


__all__ = ["Variable", "get_variable", "variable_scope", "name_scope", "AUTO_REUSE",
           "zeros_initializer", "ones_initializer", "constant_initializer",
           "glorot_uniform_initializer", "truncated_normal_initializer",
           "random_normal_initializer", "random_uniform_initializer", "xavier_initializer",
           "zeros", "ones", "truncated_normal", "random_normal", "random_uniform",
           "fixed_size_partitioner", "min_max_variable_partitioner",
           "variable_axis_size_partitioner", "constant", "Initializer"]
