"""TF1's layers, nn functions, losses and metrics on traced tensors (``tf.layers``, ``tf.nn``,
``tf.losses``, ``tf.metrics``), with TF's names, defaults and reductions."""

import numbers

from shoal.graph import ops
from shoal.graph.core import Tensor, as_tensor, current, unsupported, user_line
from shoal.graph.variables import (Initializer, _declare, glorot_uniform_initializer,
                                   ones_initializer, zeros_initializer, Variable)

# ---- tf.nn ----


def bias_add(value, bias, data_format=None, name=None):
    return ops.add(value, bias)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """``tf.nn.dropout`` (TF1's keep_prob, or rate): applied in every mode, as in TF."""
    if noise_shape is not None:
        unsupported("tf.nn.dropout", "noise_shape")
    if rate is None:
        if keep_prob is None:
            raise ValueError(f"tf.nn.dropout ({user_line()}): give keep_prob or rate")
        if isinstance(keep_prob, Tensor):
            unsupported("tf.nn.dropout", "a keep_prob tensor", "a Python number")
        rate = 1.0 - float(keep_prob)
    return _dropout(x, float(rate), True, "tf.nn.dropout")


def _dropout(x, rate, training, api):
    x = as_tensor(x, api)
    if not 0 <= rate < 1:
        raise ValueError(f"{api} ({user_line()}): rate must be in [0, 1), got {rate}")
    if not training or rate == 0:
        return x
    return current(api).add("dropout", [x], x._shape, "float", api=api, rate=rate,
                            training=True)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    api = "tf.nn.sigmoid_cross_entropy_with_logits"
    labels, logits = _pair(api, labels, logits)
    return current(api).add("sigmoid_ce", [labels, logits], logits._shape, "float", api=api)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    api = "tf.nn.softmax_cross_entropy_with_logits"
    labels, logits = _pair(api, labels, logits)
    if len(logits._shape) != 2:
        unsupported(api, f"logits of shape {logits.shape}", "[batch, classes] logits")
    return current(api).add("softmax_ce", [labels, logits], logits._shape[:1], "float", api=api)


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    api = "tf.nn.sparse_softmax_cross_entropy_with_logits"
    labels = as_tensor(labels, api)
    logits = as_tensor(logits, api)
    if len(logits._shape) != 2:
        unsupported(api, f"logits of shape {logits.shape}", "[batch, classes] logits")
    if len(labels._shape) != 1:
        raise ValueError(f"{api} ({user_line()}): labels must be [batch] class ids, got "
                         f"{labels.shape}")
    return current(api).add("sparse_softmax_ce", [labels, logits], logits._shape[:1], "float",
                            api=api)


def _pair(api, labels, logits):
    labels = as_tensor(labels, api)
    logits = as_tensor(logits, api)
    if labels.kind != "float":
        labels = ops.cast(labels, "float")
    if len(labels._shape) != len(logits._shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(labels._shape, logits._shape)):
        raise ValueError(f"{api} ({user_line()}): labels {labels.shape} and logits "
                         f"{logits.shape} must have the same shape")
    return labels, logits


def l2_loss(t, name=None):
    return ops.multiply(ops.reduce_sum(ops.square(t)), 0.5)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """``tf.nn.embedding_lookup`` of a [vocab, dim] variable at integer ids.

    Ids that are an integer feature of the input make the variable an embedding table on the
    parameter servers (sharded by id, rows created as ids are first seen, so a 10M-row
    vocabulary costs only the ids the data has): ids ``[batch]`` give ``[batch, dim]`` rows, and
    ids ``[batch, k]`` give rows that must be summed or averaged over the ids
    (``tf.reduce_sum(rows, axis=1)``), which the engine pools as it looks them up. Other ids
    gather from the variable as a dense one."""
    api = "tf.nn.embedding_lookup"
    if max_norm is not None:
        unsupported(api, "max_norm")
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            unsupported(api, "a list of partitions", "one variable (a partitioner is accepted)")
        params = params[0]
    trace = current(api)
    if isinstance(ids, HashedFeature):
        return _table_lookup(trace, params, ids.name, ids.multi, ids.column(), api)
    ids = as_tensor(ids, api)
    source = trace.nodes[ids.id]
    if isinstance(params, Variable) and source["op"] == "feature" and ids.kind == "int" and \
            len(params._shape) == 2 and len(ids._shape) in (1, 2):
        from shoal import feature_column as fc
        identity = fc.categorical_column_with_identity(source["name"], params._shape[0])
        return _table_lookup(trace, params, source["name"], len(ids._shape) == 2, identity, api)
    return ops.gather(params, ids)


class HashedFeature:
    """A feature of string ids hashed in the dataset's map (``tf.string_to_hash_bucket_fast``,
    of ``tf.string_split(...).values`` for several per example): what embedding_lookup and
    embedding_lookup_sparse of a ``[num_buckets, dim]`` variable take."""

    def __init__(self, name, num_buckets, multi):
        self.name, self.num_buckets, self.multi = name, num_buckets, multi

    @property
    def values(self):  # code written for TF's SparseTensor
        return self

    def column(self):
        from shoal import feature_column as fc
        return fc.categorical_column_with_hash_bucket(self.name, self.num_buckets)

    def __repr__(self):
        return f"<hashed ids {self.name!r} in {self.num_buckets} buckets>"


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None):
    """``tf.nn.embedding_lookup_sparse`` of a ``[vocab, dim]`` variable by hashed ids (or a
    ``[batch, k]`` integer feature): the rows of each example combined (``sum``, ``mean``, TF's
    default, or ``sqrtn``) as the engine looks them up; ``[batch, dim]``."""
    api = "tf.nn.embedding_lookup_sparse"
    if sp_weights is not None:
        unsupported(api, "sp_weights", "None (weigh ids with a weighted_categorical_column)")
    if max_norm is not None:
        unsupported(api, "max_norm")
    combiner = combiner or "mean"
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"{api} ({user_line()}): combiner must be sum, mean or sqrtn, got "
                         f"{combiner!r}")
    rows = embedding_lookup(params, sp_ids)
    if isinstance(rows, PendingLookup):
        return rows.pooled(combiner, False)
    return rows  # one id per example: every combiner gives its row


def _row_initializer(spec, shape, api):
    """A dense variable's initializer as its table's (row) initializer."""
    kind = spec["kind"]
    if kind == "zeros" or (kind == "constant" and spec.get("value") == 0):
        return {"kind": "zeros"}
    if kind in ("truncated_normal", "normal"):
        return {"kind": kind, "stddev": spec["stddev"]}
    if kind == "uniform":
        return {"kind": "uniform", "minval": spec["minval"], "maxval": spec["maxval"]}
    if kind == "glorot_uniform":
        limit = (6.0 / (shape[0] + shape[1])) ** 0.5
        return {"kind": "uniform", "minval": -limit, "maxval": limit}
    unsupported(api, f"a table initialised to the constant {spec.get('value')}",
                "zeros, normal, truncated normal, uniform and glorot_uniform tables")


class PendingLookup:
    """Rows of ``[batch, k]`` ids from a table: usable only summed or averaged over the ids."""

    def __init__(self, trace, table, feature, dim, categorical):
        self.trace, self.table, self.feature, self.dim = trace, table, feature, dim
        self.categorical = categorical
        self.where = user_line()
        self._shape = [None, None, dim]

    def pooled(self, combiner, keep_dims):
        column = _lookup_column(self.trace, self.table, self.feature, self.dim, combiner,
                                self.categorical)
        out = self.trace.add("embedding", [], [None, self.dim], "float",
                             api="tf.nn.embedding_lookup", name=column.name, table=self.table)
        return ops.expand_dims(out, 1) if keep_dims else out

    def fail(self, api):
        unsupported(api, f"the rows of tf.nn.embedding_lookup at {self.where} (ids [batch, k]) "
                         "used other than summed or averaged over the ids",
                    "tf.reduce_sum / tf.reduce_mean(rows, axis=1)")


def _lookup_column(trace, table, feature, dim, combiner, categorical):
    from shoal import feature_column as fc
    name = f"lookup/{table}/{feature}/{combiner}"
    for c in trace.columns:
        if c.name == name:
            return c
    column = fc.EmbeddingColumn(categorical, dim, combiner, name, table)
    trace.columns.append(column)
    return column


def _table_lookup(trace, variable, feature, multi, categorical, api):
    """Rows of ``variable`` (the table) at the ids of ``feature`` by ``categorical``: [batch,
    dim] for one id per example, else a PendingLookup."""
    if not isinstance(variable, Variable) or len(variable._shape) != 2:
        unsupported(api, f"params {variable!r}", "a [vocab, dim] variable (tf.get_variable)")
    table = variable.var_name
    vocab, dim = variable._shape
    buckets = getattr(categorical, "num_buckets", vocab)
    if buckets > vocab:
        raise ValueError(f"{api} ({user_line()}): ids of {feature!r} reach {buckets - 1}, past "
                         f"the {vocab} rows of '{table}'")
    spec = trace.builder.variables[table]
    trace.builder.declare_table(table, dim, vocab,
                                _row_initializer(spec["initializer"], variable._shape, api),
                                f"{user_line()} ({api})")
    if not multi:
        column = _lookup_column(trace, table, feature, dim, "sum", categorical)
        return trace.add("embedding", [], [None, dim], "float", api=api, name=column.name,
                         table=table)
    return PendingLookup(trace, table, feature, dim, categorical)


# ---- tf.layers ----

def _layer_name(trace, name, base):
    if name:
        return trace.scoped(name)
    counts = trace.__dict__.setdefault("layer_counts", {})
    n = counts.get(base, 0)
    counts[base] = n + 1
    return trace.scoped(base if n == 0 else f"{base}_{n}")


def _initializer_spec(init, default, api):
    init = init if init is not None else default
    if isinstance(init, Initializer):
        return init.spec
    unsupported(api, f"initializer {init!r}", "tf.*_initializer objects")


def _activation(activation, x, api):
    if activation is None:
        return x
    if not callable(activation):
        raise ValueError(f"{api} ({user_line()}): activation must be callable")
    return activation(x)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """``tf.layers.dense``: variables ``<name>/kernel`` and ``<name>/bias``."""
    api = "tf.layers.dense"
    x = as_tensor(inputs, api)
    for arg, value in (("kernel_regularizer", kernel_regularizer),
                       ("bias_regularizer", bias_regularizer),
                       ("activity_regularizer", activity_regularizer),
                       ("kernel_constraint", kernel_constraint),
                       ("bias_constraint", bias_constraint)):
        if value is not None:
            unsupported(api, arg)
    if len(x._shape) != 2 or x._shape[1] is None:
        unsupported(api, f"inputs of shape {x.shape}", "[batch, width] inputs")
    trace = current(api)
    scope = _layer_name(trace, name, "dense")
    units = int(units)
    kernel = _layer_variable(trace, f"{scope}/kernel", [x._shape[1], units],
                             _initializer_spec(kernel_initializer,
                                               glorot_uniform_initializer(), api), api, reuse)
    y = ops.matmul(x, kernel)
    if use_bias:
        bias = _layer_variable(trace, f"{scope}/bias", [units],
                               _initializer_spec(bias_initializer, zeros_initializer(), api),
                               api, reuse)
        y = ops.add(y, bias)
    return _activation(activation, y, api)


def _layer_variable(trace, name, shape, spec, api, reuse=None, group="deep"):
    existing = trace.variable_names.get(name)
    if existing is not None:
        if not (reuse or getattr(trace, "reuse", None)):
            raise ValueError(f"{api} ({user_line()}): Variable {name} already exists")
        return existing
    _declare(trace, name, shape, spec, api, group)
    return Variable._bound(trace, name, shape, None, api)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        training=False, trainable=True, name=None, reuse=None, renorm=False,
                        fused=None, **kwargs):
    """``tf.layers.batch_normalization`` on [batch, width] inputs. ``training`` is a Python bool
    (``mode == tf.estimator.ModeKeys.TRAIN``); the moving statistics are updated by the step
    itself (no UPDATE_OPS to run)."""
    api = "tf.layers.batch_normalization"
    x = as_tensor(inputs, api)
    if len(x._shape) != 2 or axis not in (-1, 1) or x._shape[1] is None:
        unsupported(api, f"inputs {x.shape} with axis={axis}", "[batch, width] inputs, axis -1")
    if isinstance(training, Tensor):
        unsupported(api, "a training tensor", "a Python bool (mode == ModeKeys.TRAIN)")
    if renorm:
        unsupported(api, "renorm")
    trace = current(api)
    scope = _layer_name(trace, name, "batch_normalization")
    width = x._shape[1]
    gamma_spec = _initializer_spec(gamma_initializer, ones_initializer(), api) if scale else \
        {"kind": "constant", "value": 1.0}
    beta_spec = _initializer_spec(beta_initializer, zeros_initializer(), api) if center else \
        {"kind": "zeros"}
    gamma = _layer_variable(trace, f"{scope}/gamma", [width], gamma_spec, api, reuse)
    beta = _layer_variable(trace, f"{scope}/beta", [width], beta_spec, api, reuse)
    mean = _layer_variable(trace, f"{scope}/moving_mean", [width],
                           _initializer_spec(moving_mean_initializer, zeros_initializer(), api),
                           api, reuse, group="moving_average")
    variance = _layer_variable(trace, f"{scope}/moving_variance", [width],
                               _initializer_spec(moving_variance_initializer, ones_initializer(),
                                                 api), api, reuse, group="moving_average")
    trace.batch_norm = True
    return trace.add("batch_norm", [x, gamma, beta, mean, variance], x._shape, "float", api=api,
                     momentum=float(momentum), epsilon=float(epsilon), training=bool(training))


def layers_dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """``tf.layers.dropout``: only when ``training`` (a Python bool) is true."""
    if isinstance(training, Tensor):
        unsupported("tf.layers.dropout", "a training tensor", "a Python bool")
    return _dropout(inputs, float(rate), bool(training), "tf.layers.dropout")


def flatten(inputs, name=None, data_format=None):
    x = as_tensor(inputs, "tf.layers.flatten")
    rest = 1
    for d in x._shape[1:]:
        if d is None:
            unsupported("tf.layers.flatten", f"inputs {x.shape}", "known non-batch dimensions")
        rest *= d
    return ops.reshape(x, [-1, rest])


# ---- tf.losses (TF1 reductions) ----

class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"


def _reduce_loss(losses, weights, reduction, api):
    trace = current(api)
    weighted = losses if _is_one(weights) else ops.multiply(losses, weights)
    if reduction == Reduction.NONE:
        result = weighted
    elif reduction == Reduction.SUM:
        result = ops.reduce_sum(weighted)
    elif reduction == Reduction.SUM_OVER_BATCH_SIZE or (
            reduction == Reduction.SUM_BY_NONZERO_WEIGHTS and _is_number(weights)):
        # A non-zero number weighs every element alike: the mean.
        result = ops.reduce_mean(weighted)
        if _is_number(weights) and weights == 0:
            result = ops.multiply(result, 0.0)
    elif reduction in (Reduction.SUM_BY_NONZERO_WEIGHTS, Reduction.MEAN):
        stretched = ops.add(ops.multiply(losses, 0.0), weights)
        if reduction == Reduction.MEAN:
            denominator = ops.reduce_sum(stretched)
        else:
            denominator = ops.reduce_sum(ops.cast(ops.not_equal(stretched, 0.0), "float"))
        result = ops.divide(ops.reduce_sum(weighted), ops.maximum(denominator, 1e-12))
    else:
        raise ValueError(f"{api} ({user_line()}): unknown reduction {reduction!r}")
    trace.losses.append(result)
    return result


def _is_number(w):
    return isinstance(w, numbers.Real) and not isinstance(w, bool)


def _is_one(w):
    return _is_number(w) and w == 1


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.mean_squared_error"
    labels, predictions = _same_shape(api, labels, predictions)
    return _reduce_loss(ops.squared_difference(predictions, labels), weights, reduction, api)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.absolute_difference"
    labels, predictions = _same_shape(api, labels, predictions)
    return _reduce_loss(ops.abs(ops.subtract(predictions, labels)), weights, reduction, api)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=None,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.sigmoid_cross_entropy"
    labels, logits = _same_shape(api, multi_class_labels, logits)
    if label_smoothing:
        labels = ops.add(ops.multiply(labels, 1.0 - label_smoothing), 0.5 * label_smoothing)
    terms = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    return _reduce_loss(terms, weights, reduction, api)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=None, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.softmax_cross_entropy"
    labels, logits = _same_shape(api, onehot_labels, logits)
    if label_smoothing:
        classes = logits._shape[-1]
        labels = ops.add(ops.multiply(labels, 1.0 - label_smoothing), label_smoothing / classes)
    terms = softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return _reduce_loss(terms, weights, reduction, api)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=None,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.sparse_softmax_cross_entropy"
    labels = as_tensor(labels, api)
    if len(labels._shape) == 2 and labels._shape[1] == 1:
        labels = ops.squeeze(labels, axis=1)
    terms = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return _reduce_loss(terms, weights, reduction, api)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None, loss_collection=None,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    api = "tf.losses.log_loss"
    labels, p = _same_shape(api, labels, predictions)
    terms = ops.subtract(
        ops.negative(ops.multiply(labels, ops.log(ops.add(p, epsilon)))),
        ops.multiply(ops.subtract(1.0, labels), ops.log(ops.add(ops.subtract(1.0, p), epsilon))))
    return _reduce_loss(terms, weights, reduction, api)


def _same_shape(api, labels, predictions):
    labels = as_tensor(labels, api)
    predictions = as_tensor(predictions, api)
    if labels.kind != "float":
        labels = ops.cast(labels, "float")
    ls, ps = labels._shape, predictions._shape
    if len(ls) != len(ps):
        # TF squeezes or expands a trailing 1 to match ([B] against [B, 1]).
        if len(ls) == len(ps) + 1 and ls[-1] == 1:
            labels = ops.squeeze(labels, axis=-1)
        elif len(ps) == len(ls) + 1 and ps[-1] == 1:
            labels = ops.expand_dims(labels, -1)
        else:
            raise ValueError(f"{api} ({user_line()}): labels {labels.shape} and predictions "
                             f"{predictions.shape} have different ranks")
    return labels, predictions


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    trace = current("tf.losses.get_total_loss")
    if not trace.losses:
        raise ValueError(f"tf.losses.get_total_loss ({user_line()}): No losses found")
    return ops.add_n(trace.losses)


def add_loss(loss, loss_collection=None):
    current("tf.losses.add_loss").losses.append(as_tensor(loss, "tf.losses.add_loss"))


# ---- tf.metrics ----

class Metric:
    """One ``tf.metrics.*`` result: (value, update_op) both refer to it."""

    def __init__(self, kind, predictions, labels, weights, api):
        self.kind = kind
        self.predictions = predictions
        self.labels = labels
        self.weights = weights
        self.api = api
        self.where = user_line()

    def __iter__(self):
        return iter((self, self))


def _metric_weights(api, weights, like):
    if weights is None:
        return None
    w = as_tensor(weights, api)
    if w.kind != "float":
        w = ops.cast(w, "float")
    return ops.add(ops.multiply(like, 0.0), w)  # one weight per value


def _flat(t, api):
    t = as_tensor(t, api)
    if t.kind != "float":
        t = ops.cast(t, "float")
    return t


def _metric(kind, api, labels, predictions, weights):
    labels, predictions = _same_shape(api, labels, predictions) if labels is not None else \
        (None, _flat(predictions, api))
    predictions = _flat(predictions, api)
    m = Metric(kind, predictions, labels, _metric_weights(api, weights, predictions), api)
    return m, m


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    return _metric("mean", "tf.metrics.mean", None, values, weights)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    api = "tf.metrics.accuracy"
    labels, predictions = _same_shape(api, labels, predictions)
    hits = ops.cast(ops.equal(labels, ops.cast(predictions, "float")), "float")
    return _metric("mean", api, None, hits, weights)


def mean_squared_error_metric(labels, predictions, weights=None, metrics_collections=None,
                              updates_collections=None, name=None):
    return _metric("mean_squared_error", "tf.metrics.mean_squared_error", labels, predictions,
                   weights)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    api = "tf.metrics.mean_absolute_error"
    labels, predictions = _same_shape(api, labels, predictions)
    return _metric("mean", api, None, ops.abs(ops.subtract(predictions, labels)), weights)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal"):
    if curve != "ROC":
        unsupported("tf.metrics.auc", f"curve={curve!r}", "ROC")
    return _metric("auc", "tf.metrics.auc", labels, predictions, weights)


def _as_bool_float(t, api):
    return ops.cast(ops.not_equal(_flat(t, api), 0.0), "float")


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    api = "tf.metrics.precision"
    return _metric("precision", api, _as_bool_float(labels, api),
                   _as_bool_float(predictions, api), weights)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    api = "tf.metrics.recall"
    return _metric("recall", api, _as_bool_float(labels, api), _as_bool_float(predictions, api),
                   weights)


def keras_binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0, axis=-1):
    """``tf.keras.losses.binary_crossentropy``: per example, the mean over the last axis. As
    Keras: probabilities are clipped to [1e-7, 1 - 1e-7] (the output of ``tf.sigmoid`` is
    replaced by its logits), and ``from_logits=True`` takes logits."""
    api = "tf.keras.losses.binary_crossentropy"
    if label_smoothing:
        unsupported(api, "label_smoothing")
    if axis != -1:
        unsupported(api, f"axis={axis}", "axis=-1")
    y_pred = as_tensor(y_pred, api)
    y_true = as_tensor(y_true, api, like=y_pred)
    if y_true.kind != "float":
        y_true = ops.cast(y_true, "float")
    logits = y_pred if from_logits else getattr(y_pred, "sigmoid_of", None)
    if logits is None:
        epsilon = 1e-7
        p = ops.minimum(ops.maximum(y_pred, epsilon), 1.0 - epsilon)
        bce = y_true * ops.log(p + epsilon) + (1.0 - y_true) * ops.log(1.0 - p + epsilon)
        return ops.reduce_mean(-bce, axis=-1)
    return ops.reduce_mean(sigmoid_cross_entropy_with_logits(labels=y_true, logits=logits),
                           axis=-1)


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """``tf.keras.preprocessing.sequence.pad_sequences`` (NumPy, as Keras's): lists of ids as
    one ``[len(sequences), maxlen]`` array, padded with ``value`` and cut to ``maxlen``."""
    import numpy as np
    if padding not in ("pre", "post") or truncating not in ("pre", "post"):
        raise ValueError(f"pad_sequences: padding and truncating are 'pre' or 'post', got "
                         f"{padding!r} and {truncating!r}")
    lengths = [len(s) for s in sequences]
    if maxlen is None:
        maxlen = max(lengths, default=0)
    out = np.full((len(sequences), maxlen), value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        cut = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype=dtype)
        if padding == "post":
            out[i, :len(cut)] = cut
        else:
            out[i, -len(cut):] = cut
    return out
