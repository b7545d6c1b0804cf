"""The tracer's core: symbolic tensors, the trace of one mode, variables and scopes.

A ``Trace`` records the ops a model_fn calls while it runs once on symbolic ``Tensor``s; each op
is a node ``{"op", "inputs", "where", ...attributes}`` of the graph format (docs/formats.md,
"Traced graph"), which the engine's ``graph`` model runs each step in C++. Shapes are tracked
statically (``None`` for the batch dimension) so that an op that cannot apply fails here, at the
user's line, rather than at the first step.
"""

import os
import sys

import numpy as np

from shoal import dtypes

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STACK = []


class UnsupportedError(NotImplementedError):
    """An op, or an argument of one, that shoal's graph cannot run."""


def user_line():
    """``file.py:LINE`` of the innermost frame outside the shoal package: the user's call."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


_DEFAULT = []  # the default graph's trace (tf.get_default_graph), made on first use


def current(api=None):  # noqa: ARG001 (kept for the callers' error context)
    """The active trace: a model_fn's while an Estimator traces it, else the default graph's
    (TF1's low-level programs build it at module level and run it in a Session)."""
    if _STACK:
        return _STACK[-1]
    return default_trace()


def default_trace():
    """The default graph's trace (mode "train": what a Session's steps run)."""
    if not _DEFAULT:
        from shoal.graph.model import GraphBuilder
        trace = Trace(GraphBuilder(), "train")
        trace.columns = []
        trace.placeholders = {}
        trace.default = True
        _DEFAULT.append(trace)
    return _DEFAULT[-1]


def reset_default_trace():
    _DEFAULT.clear()


def in_model_fn():
    """Whether an Estimator is tracing a model_fn now."""
    return bool(_STACK) and not getattr(_STACK[-1], "default", False)


def unsupported(api, what, supported=None):
    message = f"{api} ({user_line()}): {what}"
    if supported:
        message += f"; shoal supports {supported}"
    raise UnsupportedError(message)


class TensorShape:
    """The static shape of a Tensor, as TF's: ``None`` for a dimension known only at run time."""

    def __init__(self, dims):
        self.dims = None if dims is None else [None if d is None else int(d) for d in dims]

    def as_list(self):
        return list(self.dims)

    @property
    def ndims(self):
        return len(self.dims)

    rank = ndims

    def __len__(self):
        return len(self.dims)

    def __iter__(self):
        return iter(self.dims)

    def __getitem__(self, i):
        return self.dims[i]

    def __eq__(self, other):
        other = other.dims if isinstance(other, TensorShape) else list(other)
        return self.dims == other

    def num_elements(self):
        if any(d is None for d in self.dims):
            return None
        return int(np.prod(self.dims, dtype=np.int64))

    def __repr__(self):
        return "TensorShape([" + ", ".join("None" if d is None else str(d)
                                           for d in self.dims) + "])"


_DTYPES = {"float": dtypes.float32, "int": dtypes.int64, "bool": dtypes.bool,
           "string": dtypes.string}


class Tensor:
    """A symbolic value of the trace: node ``id`` of the mode's graph."""

    def __init__(self, trace, node_id, shape, kind, name=None):
        self.trace = trace
        self.id = node_id
        self._shape = list(shape)
        self.kind = kind  # float | int | bool | string
        self.name = name or f"{trace.nodes[node_id]['op']}_{node_id}:0"

    @property
    def shape(self):
        return TensorShape(self._shape)

    def get_shape(self):
        return self.shape

    @property
    def dtype(self):
        return _DTYPES[self.kind]

    @property
    def op(self):
        return self

    @property
    def graph(self):
        return self.trace

    def __repr__(self):
        return f"<shoal.Tensor '{self.name}' shape={self.shape} dtype={self.dtype!r}>"

    def __bool__(self):
        unsupported("bool(Tensor)", "a traced tensor has no value in Python (the graph runs in "
                                    "C++); branch on the mode or on Python values instead")

    def __len__(self):
        unsupported("len(Tensor)", "a traced tensor's length is known only at run time")

    def __iter__(self):
        unsupported("iterating a Tensor", "a traced tensor has no value in Python; use "
                                          "tf.unstack-free forms such as slicing")

    __hash__ = object.__hash__

    # Arithmetic: shoal.graph.ops installs the operators (a cycle kept out of this module).


class Trace:
    """One mode's trace. ``builder`` holds what is shared across modes (the variables)."""

    def __init__(self, builder, mode):
        self.builder = builder
        self.mode = mode
        self.nodes = []
        self.scopes = []
        self.variable_names = {}  # name -> Variable created in this trace
        self.optimizer = None
        self.train_op = None
        self.batch_norm = False
        self.losses = []  # tf.losses.* results (tf.losses.get_total_loss)

    def __enter__(self):
        _STACK.append(self)
        return self

    def __exit__(self, *exc):
        _STACK.remove(self)
        return False

    def add(self, op, inputs, out_shape, kind, api=None, **attrs):
        """Records node ``op`` of ``inputs`` (with ``attrs``); its result has the static shape
        ``out_shape`` (None for the batch) and value kind ``kind``."""
        node = {"op": op, "inputs": [t.id for t in inputs], "where": self._where(api)}
        for t in inputs:
            if t.trace is not self:
                raise ValueError(
                    f"{node['where']}: {t.name} is from another graph (as TF: a Tensor must be "
                    "from the same graph; a model_fn's ops take its own tensors, not ones built "
                    "outside it)")
        for k, v in attrs.items():
            if v is not None:
                node[k] = v
        self.nodes.append(node)
        return Tensor(self, len(self.nodes) - 1, out_shape, kind)

    @staticmethod
    def _where(api):
        line = user_line()
        return f"{line} ({api})" if api else line

    def scoped(self, name):
        return "/".join([s for s in self.scopes if s] + [name])

    def unique_name(self, base):
        """TF's naming of unnamed ops in a scope: base, base_1, base_2, ..."""
        name = self.scoped(base)
        if name not in self.variable_names:
            return name
        i = 1
        while f"{name}_{i}" in self.variable_names:
            i += 1
        return f"{name}_{i}"


def constant(value, kind=None, api="tf.constant", shape=None):
    """A Python or numpy value as a const node (float unless an int/bool kind is asked)."""
    trace = current(api)
    array = np.asarray(value)
    if array.dtype.kind in "USO":
        unsupported(api, "string constants are not supported in traced graphs")
    if kind is None:
        kind = {"b": "bool", "i": "int", "u": "int"}.get(array.dtype.kind, "float")
    if shape is not None:
        shape = [int(d) for d in shape]
        if array.size not in (1, int(np.prod(shape, dtype=np.int64))):
            raise ValueError(f"{api} ({user_line()}): {array.size} values for shape {shape}")
        if array.size != 1:
            array = array.reshape(shape)
    else:
        shape = list(array.shape)
    values = array.astype(np.float64).reshape(-1).tolist()
    return trace.add("const", [], shape, kind, api=api, shape=shape, values=values)


def as_tensor(value, api, like=None):
    """``value`` as a Tensor of the active trace: Python numbers take ``like``'s kind."""
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "pooled"):  # table rows of [batch, k] ids, not yet pooled
        value.fail(api)
    if type(value).__name__ == "Placeholder":  # shoal.estimator.export's: no graph input
        unsupported(api, f"{value!r} as a tensor: a string or shapeless tf.placeholder is no "
                         "graph input", "float and integer placeholders with a shape, the batch "
                                        "first (hash strings to ids before feeding them)")
    if hasattr(value, "num_buckets") and hasattr(value, "multi"):  # hashed string ids
        unsupported(api, f"{value!r} as a tensor", "hashed ids in tf.nn.embedding_lookup or "
                                                   "embedding_lookup_sparse of a variable")
    init = getattr(value, "initializer", None)
    if init is not None and hasattr(value, "shape") and hasattr(init, "spec"):
        # tf.zeros / tf.ones used as a value (an InitialValue of shoal.graph.variables).
        if init.spec["kind"] not in ("zeros", "constant"):
            unsupported(api, "a random tensor used as a value", "random values as a variable's "
                                                                 "initial value")
        return constant(init.spec.get("value", 0.0), "float", api, shape=value.shape)
    kind = None
    if like is not None and like.kind in ("float", "int") and np.asarray(value).dtype.kind in "iuf":
        kind = like.kind if np.asarray(value).dtype.kind != "f" else "float"
    return constant(value, kind, api)
