"""TF1's default graph (``tf.get_default_graph``, ``tf.Graph``) and its placeholders: ops called
outside a model_fn record into the default graph's trace, which a session runs
(shoal.graph.session; docs/porting.md, "Sessions and servers").
"""

import numpy as np

from shoal import dtypes
from shoal.graph import core
from shoal.graph.core import Tensor, user_line

__all__ = ["Graph", "get_default_graph", "reset_default_graph", "placeholder",
           "placeholder_with_default"]


class Graph:
    """``tf.Graph``: ops record into the graph made default by ``as_default()``."""

    def __init__(self, trace=None):
        if trace is None:
            from shoal.graph.model import GraphBuilder
            trace = core.Trace(GraphBuilder(), "train")
            trace.columns, trace.placeholders, trace.default = [], {}, True
        self._trace = trace

    def as_default(self):
        graph = self

        class _Default:
            def __enter__(self):
                core._DEFAULT.append(graph._trace)
                return graph

            def __exit__(self, *exc):
                core._DEFAULT.remove(graph._trace)
                return False
        return _Default()

    def finalize(self):
        pass

    def get_tensor_by_name(self, name):
        for t in self._trace.placeholders.values():
            if t.name == name or t.name.split(":")[0] == name:
                return t
        raise KeyError(f"the graph has no placeholder named {name!r} (shoal finds placeholders "
                       "by name; keep the Python tensors of other ops)")


def get_default_graph():
    return Graph(core.default_trace())


def reset_default_graph():
    core.reset_default_trace()


def placeholder(dtype, shape=None, name=None):
    """``tf.placeholder``: outside a model_fn, an input of the default graph that ``feed_dict``
    fills (the first dimension is the batch); inside a serving input function, a named input of
    the export."""
    from shoal.estimator.export import Placeholder
    api = "tf.placeholder"
    if dtypes._kind(dtype) is None:
        raise TypeError(f"{api} ({user_line()}): {dtype!r} is not a dtype")
    if core.in_model_fn() or dtypes.is_string(dtype) or not shape:
        # A serving input function's string or shapeless input; a graph op on it is an error
        # naming the op (it is no tensor).
        return Placeholder(dtype, shape, name)
    trace = core.current(api)
    user_shape = shape
    shape = [None] + [None if d is None else int(d) for d in list(shape)[1:]]
    base = name or "Placeholder"
    feature = base
    i = 0
    while feature in trace.placeholders:
        i += 1
        feature = f"{base}_{i}"
    kind = {"int": "int", "bool": "bool"}.get(dtypes._kind(dtype), "float")
    tensor = trace.add("feature", [], shape, kind, api=api, name=feature,
                       shape=[-1 if d is None else d for d in shape])
    tensor.name = f"{feature}:0"
    tensor.placeholder = (dtype, user_shape, feature)
    trace.placeholders[feature] = tensor
    return tensor


def placeholder_with_default(input, shape, name=None):  # noqa: A002 (TF's name)
    """``tf.placeholder_with_default`` of a low-level program: a placeholder whose value, when a
    run does not feed it, is ``input`` (the default's rows are then the batch)."""
    default = np.asarray(input)
    kind = "int64" if default.dtype.kind in "iu" else "bool" if default.dtype.kind == "b" \
        else "float32"
    tensor = placeholder(getattr(dtypes, kind), shape, name or "PlaceholderWithDefault")
    if not isinstance(tensor, Tensor):
        core.unsupported("tf.placeholder_with_default", "a default without a batch dimension",
                         "a [batch, ...] default")
    tensor.default = default
    return tensor
