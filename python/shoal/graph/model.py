"""Tracing a model_fn: one run per mode on symbolic features and labels, recorded into the graph
the engine's ``graph`` model runs (docs/formats.md, "Traced graph").

``trace_model_fn`` returns a ``TracedModel``: the graph (variables and the three modes), the
feature columns the engine must build for it (numeric columns for the raw features the model
reads directly, and the columns given to ``tf.feature_column.input_layer``), the optimizer of
``minimize`` and how predictions come back to Python.
"""

import inspect

from shoal.graph import layers
from shoal.graph.core import Tensor, Trace, UnsupportedError, current, user_line

GRAPH_VERSION = 1
MODES = ("train", "eval", "infer")


class GraphBuilder:
    """What the modes' traces share: the variables, declared once with shape and initializer."""

    def __init__(self):
        self.variables = {}
        self.tables = {}  # variables embedding_lookup made tables: name -> spec

    def declare_table(self, name, dim, vocab, initializer, where):
        known = self.tables.get(name)
        entry = {"name": name, "dim": dim, "vocab": vocab, "initializer": initializer}
        if known is None:
            self.tables[name] = dict(entry, where=where)
        elif {k: known[k] for k in entry} != entry:
            raise ValueError(f"{where}: table '{name}' is looked up as {entry} here and as "
                             f"{ {k: known[k] for k in entry} } at {known['where']}")

    def declare(self, name, shape, spec, group, where):
        entry = {"name": name, "shape": list(shape), "initializer": dict(spec), "group": group}
        known = self.variables.get(name)
        if known is None:
            self.variables[name] = entry
            entry["where"] = where
        elif (known["shape"], known["initializer"], known["group"]) != \
                (entry["shape"], entry["initializer"], entry["group"]):
            raise ValueError(f"{where}: variable '{name}' has shape {entry['shape']} and "
                             f"initializer {entry['initializer']} here, but shape "
                             f"{known['shape']} and {known['initializer']} at {known['where']}: "
                             "every mode of the model_fn must declare it alike")


class EstimatorSpec:
    """``tf.estimator.EstimatorSpec`` of a traced model_fn."""

    def __init__(self, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                 export_outputs=None, training_chief_hooks=None, training_hooks=None,
                 scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        self.mode = mode
        self.predictions = predictions
        self.loss = loss
        self.train_op = train_op
        self.eval_metric_ops = eval_metric_ops or {}
        self.export_outputs = export_outputs
        self.training_hooks = tuple(training_hooks or ()) + tuple(training_chief_hooks or ())
        self.evaluation_hooks = tuple(evaluation_hooks or ())
        self.prediction_hooks = tuple(prediction_hooks or ())
        if scaffold is not None and getattr(scaffold, "init_fn", None) is not None:
            raise UnsupportedError("EstimatorSpec: scaffold.init_fn is not supported (use "
                                   "warm_start_from to start from another model's values)")


class TrainOp:
    """What ``optimizer.minimize`` returns: the graph's update, applied by the engine."""

    def __init__(self, optimizer, loss):
        self.optimizer = optimizer
        self.loss = loss
        self.name = "train_op"


def minimize(optimizer, loss, global_step=None, var_list=None, gate_gradients=1,
             aggregation_method=None, colocate_gradients_with_ops=False, name=None,
             grad_loss=None):
    """``Optimizer.minimize`` inside a traced model_fn."""
    api = f"{type(optimizer).__name__}.minimize"
    trace = current(api)
    if var_list is not None:
        raise UnsupportedError(f"{api} ({user_line()}): var_list is not supported: shoal trains "
                               "every variable of the model with one optimizer")
    if grad_loss is not None:
        raise UnsupportedError(f"{api} ({user_line()}): grad_loss is not supported")
    if not isinstance(loss, Tensor) or loss.trace is not trace:
        raise ValueError(f"{api} ({user_line()}): loss must be a tensor of this model_fn")
    if trace.optimizer is not None and trace.optimizer.config() != optimizer.config():
        raise UnsupportedError(f"{api} ({user_line()}): a second optimizer; shoal trains the "
                               "model with one")
    trace.optimizer = optimizer
    trace.train_op = TrainOp(optimizer, loss)
    return trace.train_op


class TracedModel:
    def __init__(self):
        self.graph = None
        self.dense_features = {}  # raw feature name -> width, read directly by the model
        self.dense_variables = set()  # variables the outputs read whole
        self.columns = []  # the feature columns of input_layer calls
        self.optimizer = None
        self.batch_norm = False
        self.single_output = False  # predictions was one tensor, not a dict
        self.prediction_ranks = {}  # output name -> rank as traced (1: a value per example)
        self.hooks = {"train": (), "eval": (), "infer": ()}


def call_with_named_args(fn, available, positional=()):
    """Calls ``fn`` with those of ``available`` (name -> value) its signature names, as TF calls
    model_fn and input_fn; with ``positional`` when it names none of them."""
    try:
        names = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        names = {}
    args = {k: v for k, v in available.items() if k in names}
    return fn(**args) if args else fn(*positional)


def _call(model_fn, features, labels, mode, params, config):
    return call_with_named_args(model_fn, {"features": features, "labels": labels, "mode": mode,
                                           "params": params, "config": config},
                                (features, labels, mode))


def trace_model_fn(model_fn, params, config, feature_specs, label_spec, modes=MODES):
    """Traces ``model_fn`` in ``modes`` (as TF, only those the call runs: a model_fn need not
    support every mode). ``feature_specs``: name -> (kind, shape with None for the batch);
    ``label_spec``: (kind, shape), used in TRAIN and EVAL."""
    builder = GraphBuilder()
    traced = TracedModel()
    wanted = modes
    modes = {}
    for mode in MODES:
        if mode not in wanted:
            continue
        trace = Trace(builder, mode)
        trace.columns = []
        with trace:
            features = {}
            for name, (kind, shape, *options) in feature_specs.items():
                if kind == "hashed":
                    features[name] = layers.HashedFeature(name, options[0], len(shape) == 2)
                    continue
                features[name] = trace.add("feature", [], shape, "int" if kind == "int64" else kind,
                                           api=f"features[{name!r}]", name=name,
                                           shape=[-1 if d is None else d for d in shape])
            labels = None
            if mode != "infer":
                kind, shape = label_spec
                labels = trace.add("labels", [], shape, "int" if kind == "int64" else kind,
                                   api="labels", shape=[-1 if d is None else d for d in shape])
            spec = _call(model_fn, features, labels, mode, params, config)
        modes[mode] = _record_mode(trace, spec, mode, traced)
        if trace.optimizer is not None and (mode == "train" or traced.optimizer is None):
            traced.optimizer = trace.optimizer
        traced.batch_norm = traced.batch_norm or trace.batch_norm
        for column in trace.columns:
            if all(column.name != c.name for c in traced.columns):
                traced.columns.append(column)
    for name in builder.tables:
        if name in traced.dense_variables:
            raise UnsupportedError(
                f"variable '{name}' is an embedding table (tf.nn.embedding_lookup by an id "
                "feature at " + builder.tables[name]["where"] + ") and is also read whole; "
                "shoal keeps a table's rows on the parameter servers only")
    traced.graph = {"version": GRAPH_VERSION,
                    "variables": [{k: v for k, v in var.items() if k != "where"}
                                  for var in builder.variables.values()
                                  if var["name"] not in builder.tables],
                    "tables": [{"name": t["name"], "initializer": t["initializer"]}
                               for t in builder.tables.values()],
                    "modes": modes}
    return traced


def _record_mode(trace, spec, mode, traced):
    where = f"model_fn in mode {mode!r}"
    if not isinstance(spec, EstimatorSpec):
        raise TypeError(f"{where} must return a tf.estimator.EstimatorSpec, got "
                        f"{type(spec).__name__}")
    out = {"nodes": trace.nodes}
    needed = []
    if spec.loss is not None:
        loss = _own(trace, spec.loss, "the loss")
        if loss._shape not in ([], [1]):
            raise ValueError(f"{where}: the loss must be a scalar, got shape {loss.shape}")
        out["loss"] = loss.id
        needed.append(loss.id)
        loss.name = "loss:0"  # what hooks fetch (SessionRunArgs / LoggingTensorHook)
    if mode == "train":
        if spec.loss is None:
            raise ValueError(f"{where}: TRAIN needs a loss")
        if not isinstance(spec.train_op, TrainOp):
            raise ValueError(f"{where}: TRAIN needs train_op=optimizer.minimize(loss, ...) "
                             f"(shoal applies the optimizer's update; got {spec.train_op!r})")
        if spec.train_op.loss is not _own(trace, spec.loss, "the loss"):
            raise UnsupportedError(f"{where}: train_op minimizes another tensor than the "
                                   "EstimatorSpec's loss")
    if mode == "eval" and spec.loss is None:
        raise ValueError(f"{where}: EVAL needs a loss")
    predictions = spec.predictions
    outputs = []
    if predictions is not None:
        if isinstance(predictions, dict):
            items = list(predictions.items())
        else:
            items = [("output", predictions)]
            if mode == "infer":
                traced.single_output = True
        for name, value in items:
            t = _own(trace, value, f"prediction {name!r}")
            if not t._shape or t._shape[0] is not None:
                raise ValueError(f"{where}: prediction {name!r} has shape {t.shape}; predictions "
                                 "have the batch as first dimension")
            if t.kind == "string":
                raise UnsupportedError(f"{where}: prediction {name!r} is a string tensor")
            outputs.append([str(name), t.id])
            if mode == "infer":
                traced.prediction_ranks[str(name)] = len(t._shape)
    elif mode == "infer":
        raise ValueError(f"{where}: PREDICT needs predictions")
    out["predictions"] = outputs
    metrics = []
    if mode == "eval":
        for name, op in spec.eval_metric_ops.items():
            metric = op[0] if isinstance(op, tuple) else op
            if not isinstance(metric, layers.Metric):
                raise UnsupportedError(f"{where}: eval_metric_ops[{name!r}] must come from "
                                       f"tf.metrics.*, got {type(metric).__name__}")
            entry = {"name": str(name), "kind": metric.kind, "predictions": metric.predictions.id}
            if metric.labels is not None:
                entry["labels"] = metric.labels.id
            if metric.weights is not None:
                entry["weights"] = metric.weights.id
            metrics.append(entry)
    out["metrics"] = metrics
    traced.hooks[mode] = spec.training_hooks if mode == "train" else (
        spec.evaluation_hooks if mode == "eval" else spec.prediction_hooks)
    _collect_features(trace, out, traced)
    return out


def _own(trace, value, what):
    if not isinstance(value, Tensor) or value.trace is not trace:
        raise ValueError(f"model_fn in mode {trace.mode!r}: {what} must be a tensor the model_fn "
                         f"computed, got {value!r}")
    return value


def _collect_features(trace, mode_out, traced):
    """The raw features the outputs need: numeric columns the engine builds."""
    roots = [mode_out.get("loss", -1)] + [i for _, i in mode_out["predictions"]]
    for m in mode_out["metrics"]:
        roots += [m["predictions"], m.get("labels", -1), m.get("weights", -1)]
    needed = [False] * len(trace.nodes)
    for r in roots:
        if r >= 0:
            needed[r] = True
    for i in range(len(trace.nodes) - 1, -1, -1):
        if needed[i]:
            for j in trace.nodes[i]["inputs"]:
                needed[j] = True
    column_names = {c.name for c in trace.columns}
    for i, node in enumerate(trace.nodes):
        if needed[i] and node["op"] == "variable":
            traced.dense_variables.add(node["name"])
        if not needed[i] or node["op"] != "feature" or node["name"] in column_names:
            continue
        width = 1
        for d in node["shape"]:
            if d != -1:
                width *= d
        known = traced.dense_features.get(node["name"])
        if known is not None and known != width:
            raise ValueError(f"feature {node['name']!r} is read with {width} values per example "
                             f"in mode {trace.mode!r} and {known} in another")
        traced.dense_features[node["name"]] = width
