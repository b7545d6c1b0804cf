"""TF1's tensor ops on traced tensors: arithmetic, reductions, shapes, activations and the
cross-entropy terms. Each records one or a few nodes of the graph format (docs/formats.md,
"Traced graph"); the engine's kernels are nn/ops_broadcast.h's, with TF's semantics.
"""

import numbers

import numpy as np

from shoal.graph.core import (Tensor, TensorShape, as_tensor,
                              current, unsupported, user_line)

# ---- static shapes ----


def _broadcast(a, b, api):
    out = []
    for i in range(max(len(a), len(b))):
        da = a[i - (max(len(a), len(b)) - len(a))] if i >= max(len(a), len(b)) - len(a) else 1
        db = b[i - (max(len(a), len(b)) - len(b))] if i >= max(len(a), len(b)) - len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None or db is None:
            out.append(da if db is None else db)
        elif da == db:
            out.append(da)
        else:
            raise ValueError(f"{api} ({user_line()}): shapes {TensorShape(a)} and "
                             f"{TensorShape(b)} do not broadcast")
    return out


def _result_kind(a, b):
    if "float" in (a.kind, b.kind):
        return "float"
    if "int" in (a.kind, b.kind):
        return "int"
    return a.kind


def _numeric(api, *tensors):
    for t in tensors:
        if t.kind == "string":
            unsupported(api, "string tensors reach the model only through feature columns "
                             "(tf.feature_column.input_layer)")


def _binary(fn, a, b, api):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_tensor(a, api)
    a = as_tensor(a, api, like=b if isinstance(b, Tensor) else None)
    b = as_tensor(b, api, like=a)
    _numeric(api, a, b)
    shape = _broadcast(a._shape, b._shape, api)
    return current(api).add("binary", [a, b], shape, _result_kind(a, b), api=api, fn=fn)


def _compare(fn, a, b, api):
    a = as_tensor(a, api, like=b if isinstance(b, Tensor) else None)
    b = as_tensor(b, api, like=a)
    _numeric(api, a, b)
    shape = _broadcast(a._shape, b._shape, api)
    return current(api).add("compare", [a, b], shape, "bool", api=api, fn=fn)


def _unary(fn, x, api, kind=None):
    x = as_tensor(x, api)
    _numeric(api, x)
    return current(api).add("unary", [x], x._shape, kind or ("float" if fn not in (
        "neg", "abs", "square", "sign") else x.kind), api=api, fn=fn)


# ---- arithmetic ----

def add(x, y, name=None):
    return _binary("add", x, y, "tf.add")


def subtract(x, y, name=None):
    return _binary("sub", x, y, "tf.subtract")


def multiply(x, y, name=None):
    return _binary("mul", x, y, "tf.multiply")


def divide(x, y, name=None):
    x = as_tensor(x, "tf.divide", like=y if isinstance(y, Tensor) else None)
    if x.kind != "float":
        x = cast(x, "float")
    return _binary("div", x, y, "tf.divide")


def maximum(x, y, name=None):
    return _binary("maximum", x, y, "tf.maximum")


def minimum(x, y, name=None):
    return _binary("minimum", x, y, "tf.minimum")


def squared_difference(x, y, name=None):
    return _binary("squared_difference", x, y, "tf.squared_difference")


def negative(x, name=None):
    return _unary("neg", x, "tf.negative")


def add_n(inputs, name=None):
    inputs = list(inputs)
    if not inputs:
        raise ValueError(f"tf.add_n ({user_line()}): inputs must not be empty")
    total = inputs[0]
    for t in inputs[1:]:
        total = _binary("add", total, t, "tf.add_n")
    return as_tensor(total, "tf.add_n")


def equal(x, y, name=None):
    return _compare("equal", x, y, "tf.equal")


def not_equal(x, y, name=None):
    return _compare("not_equal", x, y, "tf.not_equal")


def less(x, y, name=None):
    return _compare("less", x, y, "tf.less")


def less_equal(x, y, name=None):
    return _compare("less_equal", x, y, "tf.less_equal")


def greater(x, y, name=None):
    return _compare("greater", x, y, "tf.greater")


def greater_equal(x, y, name=None):
    return _compare("greater_equal", x, y, "tf.greater_equal")


def exp(x, name=None):
    return _unary("exp", x, "tf.exp")


def log(x, name=None):
    return _unary("log", x, "tf.log")


def log1p(x, name=None):
    return _unary("log1p", x, "tf.math.log1p")


def sqrt(x, name=None):
    return _unary("sqrt", x, "tf.sqrt")


def rsqrt(x, name=None):
    return _unary("rsqrt", x, "tf.rsqrt")


def square(x, name=None):
    return _unary("square", x, "tf.square")


def abs(x, name=None):  # noqa: A001 (TF's name)
    return _unary("abs", x, "tf.abs")


def reciprocal(x, name=None):
    return _unary("reciprocal", x, "tf.reciprocal")


def sign(x, name=None):
    return _unary("sign", x, "tf.sign")


def floor(x, name=None):
    return _unary("floor", x, "tf.floor")


def round(x, name=None):  # noqa: A001 (TF's name)
    return _unary("round", x, "tf.round")


def pow(x, y, name=None):  # noqa: A001 (TF's name)
    if isinstance(y, numbers.Real) and not isinstance(y, bool):
        if y == 2:
            return square(x)
        if y == 0.5:
            return sqrt(x)
        if y == 1:
            return as_tensor(x, "tf.pow")
        if y == -1:
            return reciprocal(x)
    unsupported("tf.pow", f"exponent {y!r}", "the exponents 2, 0.5, 1 and -1")


def sigmoid(x, name=None):
    x = as_tensor(x, "tf.sigmoid")
    _numeric("tf.sigmoid", x)
    out = current().add("sigmoid", [x], x._shape, "float", api="tf.sigmoid")
    out.sigmoid_of = x  # Keras's binary_crossentropy takes a sigmoid's input as the logits
    return out


def tanh(x, name=None):
    x = as_tensor(x, "tf.tanh")
    _numeric("tf.tanh", x)
    return current().add("tanh", [x], x._shape, "float", api="tf.tanh")


def relu(features, name=None):
    x = as_tensor(features, "tf.nn.relu")
    _numeric("tf.nn.relu", x)
    return current().add("relu", [x], x._shape, x.kind, api="tf.nn.relu")


def softmax(logits, axis=None, name=None, dim=None):
    x = as_tensor(logits, "tf.nn.softmax")
    _last_axis("tf.nn.softmax", x, axis if axis is not None else dim)
    return current().add("softmax", [x], x._shape, "float", api="tf.nn.softmax")


def log_softmax(logits, axis=None, name=None, dim=None):
    x = as_tensor(logits, "tf.nn.log_softmax")
    _last_axis("tf.nn.log_softmax", x, axis if axis is not None else dim)
    return current().add("log_softmax", [x], x._shape, "float", api="tf.nn.log_softmax")


def _last_axis(api, x, axis):
    if axis is not None and axis not in (-1, len(x._shape) - 1):
        unsupported(api, f"axis={axis}", "the last axis")
    if not x._shape:
        raise ValueError(f"{api} ({user_line()}): needs a tensor of rank >= 1")


def stop_gradient(input, name=None):  # noqa: A002 (TF's name)
    x = as_tensor(input, "tf.stop_gradient")
    return current().add("stop_gradient", [x], x._shape, x.kind, api="tf.stop_gradient")


def identity(input, name=None):  # noqa: A002 (TF's name)
    x = as_tensor(input, "tf.identity")
    return current().add("identity", [x], x._shape, x.kind, api="tf.identity")


def cast(x, dtype, name=None):
    x = as_tensor(x, "tf.cast")
    kind = dtype if isinstance(dtype, str) else getattr(dtype, "kind", None)
    if kind is None:
        from shoal import dtypes
        kind = dtypes._kind(dtype)
    if kind not in ("float", "int", "bool"):
        unsupported("tf.cast", f"to {dtype!r}", "casts between float, int and bool")
    _numeric("tf.cast", x)
    return current().add("cast", [x], x._shape, kind, api="tf.cast", fn=kind)


to_float = lambda x, name=None: cast(x, "float")  # noqa: E731 (TF1's shorthands)
to_int64 = lambda x, name=None: cast(x, "int")  # noqa: E731
to_int32 = to_int64


# ---- matmul ----

def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    api = "tf.matmul"
    a = as_tensor(a, api)
    b = as_tensor(b, api)
    _numeric(api, a, b)
    if a_is_sparse or b_is_sparse:
        unsupported(api, "a_is_sparse / b_is_sparse")
    transpose_a = transpose_a or adjoint_a
    transpose_b = transpose_b or adjoint_b
    if len(a._shape) != 2 or len(b._shape) != 2:
        unsupported(api, f"operands of shapes {a.shape} and {b.shape}", "rank-2 matrices")
    m, k = (a._shape[1], a._shape[0]) if transpose_a else a._shape
    k2, n = (b._shape[1], b._shape[0]) if transpose_b else b._shape
    if k is not None and k2 is not None and k != k2:
        raise ValueError(f"{api} ({user_line()}): inner dimensions of {a.shape} and {b.shape} "
                         "differ")
    return current().add("matmul", [a, b], [m, n], _result_kind(a, b), api=api,
                         transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def tensordot(a, b, axes, name=None):
    if axes == 1 or axes == [[len(getattr(a, "_shape", [])) - 1], [0]]:
        return matmul(a, b)
    unsupported("tf.tensordot", f"axes={axes!r}", "axes=1 on matrices (tf.matmul)")


# ---- reductions ----

def _axes(api, x, axis):
    rank = len(x._shape)
    if axis is None:
        return list(range(rank))
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    out = []
    for a in axes:
        if not isinstance(a, numbers.Integral) or not -rank <= a < rank:
            raise ValueError(f"{api} ({user_line()}): axis {a!r} of a rank-{rank} tensor")
        out.append(int(a) % rank)
    return sorted(set(out))


def _reduce(fn, api, input_tensor, axis, keepdims, keep_dims):
    pooling = getattr(input_tensor, "pooled", None)
    if pooling is not None:  # rows of a table looked up by [batch, k] ids (embedding_lookup)
        if fn not in ("sum", "mean") or axis not in (1, -2, [1], (1,)):
            input_tensor.fail(f"{api}(axis={axis})")
        return pooling(fn, bool(keepdims if keepdims is not None else keep_dims))
    x = as_tensor(input_tensor, api)
    _numeric(api, x)
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes = _axes(api, x, axis)
    if keep:
        shape = [1 if i in axes else d for i, d in enumerate(x._shape)]
    else:
        shape = [d for i, d in enumerate(x._shape) if i not in axes]
    kind = "float" if fn == "mean" else x.kind
    if x.kind == "int" and fn == "mean":
        x = cast(x, "float")  # TF's integer mean truncates; shoal's is the float mean
    return current().add("reduce", [x], shape, kind, api=api, fn=fn, axes=axes, keep_dims=keep)


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("sum", "tf.reduce_sum", input_tensor,
                   axis if axis is not None else reduction_indices, keepdims, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("mean", "tf.reduce_mean", input_tensor,
                   axis if axis is not None else reduction_indices, keepdims, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("max", "tf.reduce_max", input_tensor,
                   axis if axis is not None else reduction_indices, keepdims, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("min", "tf.reduce_min", input_tensor,
                   axis if axis is not None else reduction_indices, keepdims, keep_dims)


def argmax(input, axis=None, name=None, dimension=None, output_type=None):  # noqa: A002
    x = as_tensor(input, "tf.argmax")
    axis = axis if axis is not None else dimension
    if axis is None:
        axis = 0  # TF1's default
    rank = len(x._shape)
    if not isinstance(axis, numbers.Integral) or axis % max(rank, 1) != rank - 1:
        unsupported("tf.argmax", f"axis={axis!r} of a rank-{rank} tensor", "the last axis")
    return current().add("argmax", [x], x._shape[:-1], "int", api="tf.argmax")


# ---- shapes ----

def reshape(tensor, shape, name=None):
    api = "tf.reshape"
    x = as_tensor(tensor, api)
    shape = [int(d) for d in shape]
    if sum(1 for d in shape if d == -1) > 1:
        raise ValueError(f"{api} ({user_line()}): at most one -1 in shape {shape}")
    static = [None if d == -1 else d for d in shape]
    known_in = x.shape.num_elements()
    if known_in is not None and -1 not in shape and int(np.prod(shape)) != known_in:
        raise ValueError(f"{api} ({user_line()}): {known_in} values do not fit shape {shape}")
    if known_in is not None and -1 in shape:
        rest = int(np.prod([d for d in shape if d != -1]))
        if rest == 0 or known_in % rest:
            raise ValueError(f"{api} ({user_line()}): {known_in} values do not fit {shape}")
        static = [known_in // rest if d == -1 else d for d in shape]
    return current().add("reshape", [x], static, x.kind, api=api, shape=shape)


def _reshape_static(x, static, api):
    """Reshape to a static shape with at most one None (the batch)."""
    if sum(1 for d in static if d is None) > 1:
        unsupported(api, f"a result of shape {TensorShape(static)} (two unknown dimensions)")
    shape = [-1 if d is None else d for d in static]
    return current().add("reshape", [x], static, x.kind, api=api, shape=shape)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002 (TF's name)
    x = as_tensor(input, "tf.expand_dims")
    axis = axis if axis is not None else dim
    rank = len(x._shape)
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"tf.expand_dims ({user_line()}): axis {axis} of rank {rank}")
    axis = axis % (rank + 1)
    return _reshape_static(x, x._shape[:axis] + [1] + x._shape[axis:], "tf.expand_dims")


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 (TF's name)
    x = as_tensor(input, "tf.squeeze")
    axis = axis if axis is not None else squeeze_dims
    rank = len(x._shape)
    if axis is None:
        axes = [i for i, d in enumerate(x._shape) if d == 1]
    else:
        axes = [a % rank for a in ([axis] if isinstance(axis, numbers.Integral) else axis)]
        for a in axes:
            if x._shape[a] not in (1, None):
                raise ValueError(f"tf.squeeze ({user_line()}): dimension {a} of {x.shape} is "
                                 "not 1")
    return _reshape_static(x, [d for i, d in enumerate(x._shape) if i not in axes],
                           "tf.squeeze")


def concat(values, axis, name=None):
    api = "tf.concat"
    values = [as_tensor(v, api) for v in values]
    if not values:
        raise ValueError(f"{api} ({user_line()}): nothing to concatenate")
    rank = len(values[0]._shape)
    if not -rank <= axis < rank:
        raise ValueError(f"{api} ({user_line()}): axis {axis} of rank {rank}")
    axis %= rank
    shape = list(values[0]._shape)
    for v in values[1:]:
        if len(v._shape) != rank:
            raise ValueError(f"{api} ({user_line()}): ranks of {values[0].shape} and {v.shape} "
                             "differ")
        for d in range(rank):
            if d != axis and None not in (shape[d], v._shape[d]) and shape[d] != v._shape[d]:
                raise ValueError(f"{api} ({user_line()}): shapes {values[0].shape} and "
                                 f"{v.shape} differ outside axis {axis}")
        shape[axis] = None if None in (shape[axis], v._shape[axis]) else shape[axis] + \
            v._shape[axis]
    kinds = {v.kind for v in values}
    kind = "float" if "float" in kinds else "int" if "int" in kinds else values[0].kind
    return current().add("concat", values, shape, kind, api=api, axis=axis)


def transpose(a, perm=None, name=None, conjugate=False):
    x = as_tensor(a, "tf.transpose")
    rank = len(x._shape)
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"tf.transpose ({user_line()}): perm {perm} for rank {rank}")
    return current().add("transpose", [x], [x._shape[p] for p in perm], x.kind,
                         api="tf.transpose", axes=perm)


def slice(input_, begin, size, name=None):  # noqa: A001 (TF's name)
    x = as_tensor(input_, "tf.slice")
    begin = [int(b) for b in begin]
    size = [int(s) for s in size]
    if len(begin) != len(x._shape) or len(size) != len(x._shape):
        raise ValueError(f"tf.slice ({user_line()}): begin/size of length {len(begin)} for rank "
                         f"{len(x._shape)}")
    shape = []
    for d, (b, s) in enumerate(zip(begin, size)):
        dim = x._shape[d]
        if s == -1:
            shape.append(None if dim is None else dim - b)
        else:
            if dim is not None and b + s > dim:
                raise ValueError(f"tf.slice ({user_line()}): [{b}, +{s}) of dimension {dim}")
            shape.append(s)
    return current().add("slice", [x], shape, x.kind, api="tf.slice", begin=begin, size=size)


def _getitem(x, key):
    """x[...] with ints, slices with step 1, None (new axis) and Ellipsis."""
    api = "Tensor[...]"
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        fill = len(x._shape) - (len(key) - 1 - sum(1 for k in key if k is None))
        key = key[:i] + (np.s_[:],) * fill + key[i + 1:]
    begin, size, out_shape = [], [], []
    d = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        if d >= len(x._shape):
            raise ValueError(f"{api} ({user_line()}): too many indices for {x.shape}")
        dim = x._shape[d]
        if isinstance(k, numbers.Integral):
            if dim is None and k < 0:
                unsupported(api, "a negative index into the batch dimension")
            i = k % dim if dim is not None else k
            begin.append(i)
            size.append(1)
        elif isinstance(k, type(np.s_[:])):
            if k.step not in (None, 1):
                unsupported(api, f"slice step {k.step}", "step 1")
            if dim is None:
                if k.start not in (None, 0) or k.stop is not None:
                    unsupported(api, "a partial slice of the batch dimension")
                begin.append(0)
                size.append(-1)
                out_shape.append(None)
            else:
                start, stop, _ = k.indices(dim)
                begin.append(start)
                size.append(max(stop - start, 0))
                out_shape.append(max(stop - start, 0))
        else:
            unsupported(api, f"index {k!r}", "ints, slices, None and ...")
        d += 1
    while d < len(x._shape):
        begin.append(0)
        size.append(-1)
        out_shape.append(x._shape[d])
        d += 1
    sliced = current(api).add("slice", [x], [s if s != -1 else x._shape[i]
                                             for i, s in enumerate(size)],
                              x.kind, api=api, begin=begin, size=size)
    if [s if s != -1 else x._shape[i] for i, s in enumerate(size)] == out_shape:
        return sliced
    return _reshape_static(sliced, out_shape, api)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    x = as_tensor(indices, "tf.one_hot")
    if axis not in (None, -1):
        unsupported("tf.one_hot", f"axis={axis}", "the last axis")
    return current().add("one_hot", [x], x._shape + [int(depth)], "float", api="tf.one_hot",
                         depth=int(depth), on_value=float(1 if on_value is None else on_value),
                         off_value=float(0 if off_value is None else off_value))


def gather(params, indices, validate_indices=None, axis=None, name=None, batch_dims=0):
    if axis not in (None, 0) or batch_dims:
        unsupported("tf.gather", f"axis={axis}, batch_dims={batch_dims}", "axis 0")
    p = as_tensor(params, "tf.gather")
    ids = as_tensor(indices, "tf.gather")
    if ids.kind not in ("int",):
        raise ValueError(f"tf.gather ({user_line()}): indices must be integers, got "
                         f"{ids.dtype!r}")
    return current().add("gather", [p, ids], ids._shape + p._shape[1:], p.kind,
                         api="tf.gather")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    x = as_tensor(tensor, "tf.zeros_like")
    return _binary("mul", x, 0, "tf.zeros_like") if x.kind != "bool" else cast(x, "float")


def ones_like(tensor, dtype=None, name=None, optimize=True):
    return _binary("add", zeros_like(tensor), 1, "tf.ones_like")


def where_(*args, **kwargs):
    unsupported("tf.where", "data-dependent selection", "tf.maximum/minimum or a product with "
                                                        "a 0/1 mask")


# ---- Tensor operators ----

def _install_operators():
    T = Tensor
    T.__add__ = lambda a, b: _binary("add", a, b, "+")
    T.__radd__ = lambda a, b: _binary("add", b, a, "+")
    T.__sub__ = lambda a, b: _binary("sub", a, b, "-")
    T.__rsub__ = lambda a, b: _binary("sub", b, a, "-")
    T.__mul__ = lambda a, b: _binary("mul", a, b, "*")
    T.__rmul__ = lambda a, b: _binary("mul", b, a, "*")
    T.__truediv__ = lambda a, b: divide(a, b)
    T.__rtruediv__ = lambda a, b: divide(b, a)
    T.__neg__ = lambda a: _unary("neg", a, "-x")
    T.__abs__ = lambda a: _unary("abs", a, "abs")
    T.__pow__ = lambda a, b: pow(a, b)
    T.__matmul__ = lambda a, b: matmul(a, b)
    T.__rmatmul__ = lambda a, b: matmul(b, a)
    T.__lt__ = lambda a, b: _compare("less", a, b, "<")
    T.__le__ = lambda a, b: _compare("less_equal", a, b, "<=")
    T.__gt__ = lambda a, b: _compare("greater", a, b, ">")
    T.__ge__ = lambda a, b: _compare("greater_equal", a, b, ">=")
    T.__getitem__ = _getitem


_install_operators()

__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "numbers", "np", "Tensor", "TensorShape", "UnsupportedError", "as_tensor", "constant",
    "current", "unsupported", "user_line")]
