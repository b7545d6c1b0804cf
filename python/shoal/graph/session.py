"""TF1's low-level programs: a default graph built at module level, run by ``sess.run(fetches,
feed_dict)`` in a ``tf.Session`` or ``tf.train.MonitoredTrainingSession``, on one machine or on a
``tf.train.ClusterSpec`` of ps and workers (docs/porting.md, "Sessions and servers").

The graph is traced as a model_fn is: ops called outside a model_fn record into the default
graph, ``tf.placeholder`` becomes an input of it and ``optimizer.minimize`` its training update.
A session runs it in the engine, not in Python:

- A run that fetches the train op is one training step of the engine on exactly the rows fed.
  The first such run starts the engine's training loop on a thread (the C++ Estimator, or this
  task's cluster member), fed through a ``_core.Feed``: each run pushes its ``feed_dict`` as one
  batch and waits for that step's ``after_run``. It can fetch the train op (``None``), the
  minimized loss and the global step (the value the step ran at).
- A run without the train op (``sess.run(accuracy, feed_dict=test)``) evaluates the fetches on
  the feed with the values of the latest checkpoint of the session's directory: exact once
  training has ended (the session saves when it closes) or after ``Saver.restore``; during
  training, the values of the last save.

In a cluster, ``tf.train.Server(cluster, job_name, task_index)`` stands for this task:
``server.join()`` on a ps serves shoal's parameter shard until the job ends (then returns, where
TF's never does), and ``MonitoredTrainingSession(master=server.target)`` on a worker makes it a
trainer of the job. As in TF, worker 0 is the chief (when the cluster has no "chief" job): it
initialises and checkpoints the model and ends the job once every worker's session has closed.
Every process needs the job's secret in ``SHOAL_JOB_SECRET``.

The default graph and placeholders are shoal.graph.default_graph; the cluster,
shoal.graph.servers.
"""

import json
import logging
import os
import queue
import tempfile
import threading

import numpy as np

from shoal.graph.core import Tensor, UnsupportedError, user_line
from shoal.graph.default_graph import Graph, get_default_graph
from shoal.graph.model import GRAPH_VERSION, TracedModel, TrainOp, _collect_features
from shoal.graph.servers import _SERVERS, _run_member

_log = logging.getLogger("shoal")

__all__ = ["Session", "InteractiveSession", "MonitoredTrainingSession",
           "global_variables_initializer", "local_variables_initializer", "Saver",
           "latest_checkpoint"]


def _core():
    from shoal import _core as core_module
    return core_module

# ---- initializers and savers ----

class _NoOp:
    name = "init"


def global_variables_initializer():
    """Variables are initialised by the engine (on the ps, or restored): running this is a no-op."""
    return _NoOp()


local_variables_initializer = global_variables_initializer


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    return _core().latest_checkpoint(checkpoint_dir) or None


class Saver:
    """``tf.train.Saver``: ``restore(sess, path)`` makes ``sess`` evaluate with that checkpoint's
    values. Saving is the session's own (MonitoredTrainingSession's checkpoint_dir, at its save
    interval and when it closes)."""

    def __init__(self, var_list=None, max_to_keep=5, **kwargs):
        self.max_to_keep = max_to_keep

    def restore(self, sess, save_path):
        if not isinstance(sess, _SessionBase):
            raise TypeError(f"Saver.restore takes a shoal session, got {sess!r}")
        sess._restore(save_path)

    def save(self, sess, save_path, global_step=None, **kwargs):
        raise UnsupportedError(
            f"Saver.save ({user_line()}): shoal's sessions save by themselves: give "
            "MonitoredTrainingSession a checkpoint_dir (and save_checkpoint_steps/secs); a "
            "checkpoint is also written when the session closes")


# ---- sessions ----

class _StepChannel:
    """The dispatcher the engine calls around each step: runs the user's hooks and hands the
    step's values to the waiting ``run``."""

    def __init__(self, hooks):
        from shoal.estimator.hooks import HookRunner
        self.hooks = HookRunner(hooks) if hooks else None
        self.results = queue.Queue()
        self.stop_requested = False

    def __call__(self, event, info):
        stop = self.hooks(event, info) if self.hooks is not None else None
        if event == "after_run":
            if stop is not None:
                self.stop_requested = True
            self.results.put(dict(info))
        return stop


class _SessionBase:
    def __init__(self, graph, model_dir, hooks, tf_config, max_steps, run_overrides):
        self._trace = (graph or get_default_graph())._trace
        self._model_dir = model_dir
        self._hooks = list(hooks or [])
        self._tf_config = tf_config
        self._max_steps = max_steps
        self._run = dict(run_overrides)
        self._engine = None  # the training thread, its feed and channel, once started
        self._failure = []
        self._closed = False
        self._restored = None
        self._columns = None
        self._warned_stale = False

    # -- the public API --
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        flat = _flatten(fetches)
        train_ops = [f for f in flat if isinstance(f, TrainOp)]
        if train_ops:
            values = self._train_step(flat, train_ops, feed_dict or {})
        elif all(f is None or isinstance(f, _NoOp) for f in flat):
            values = [None] * len(flat)
        else:
            values = self._forward(flat, feed_dict or {})
        return _unflatten(fetches, iter(values))

    def should_stop(self):
        if self._engine is None:
            return False
        thread, feed, channel = self._engine
        return channel.stop_requested or feed.detached or not thread.is_alive()

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._engine is not None:
            thread, feed, _ = self._engine
            feed.close()
            thread.join()
        if self._failure:
            raise self._failure[0]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
            return False
        try:
            self.close()
        except Exception:  # noqa: BLE001 (the body's exception is the one to see)
            _log.exception("closing the session after an error")
        return False

    @property
    def graph(self):
        return Graph(self._trace)

    # -- training --
    def _train_step(self, flat, train_ops, feed_dict):
        train_op = train_ops[0]
        if any(op is not train_op for op in train_ops) or train_op is not self._trace.train_op:
            raise UnsupportedError(f"Session.run ({user_line()}): the train op is not the "
                                   "default graph's optimizer.minimize()")
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        loss = train_op.loss
        from shoal.estimator.hooks import _Named
        for f in flat:
            if f is None or isinstance(f, (TrainOp, _NoOp)) or f is loss or \
                    (isinstance(f, _Named) and f.name == "global_step"):
                continue
            raise UnsupportedError(
                f"Session.run ({user_line()}): a training run fetches {_describe(f)}; shoal's "
                "training steps give the train op, its loss and the global step (evaluate other "
                "tensors in a run without the train op)")
        if self._engine is None:
            self._start()
        thread, feed, channel = self._engine
        table = self._table(feed_dict, self._columns)
        from shoal import errors
        try:
            feed.push(table)
        except errors.FailedPreconditionError:
            pass  # the loop ended meanwhile: below
        info = None
        while info is None:
            try:
                info = channel.results.get(timeout=0.1)
            except queue.Empty:
                if (feed.detached or not thread.is_alive()) and channel.results.empty():
                    break
        if info is None:
            # The engine's loop ended (the job reached its last step, another trainer's stop,
            # or a failure) before it took this batch: not trained.
            thread.join(timeout=0.5)
            if self._failure:
                raise self._failure[0]
            raise errors.OutOfRangeError(
                "the training loop has ended (the job reached its last step or was stopped) "
                "before this run's batch was trained; MonitoredTrainingSession ends its `with` "
                "block on this error, as TF's")
        step = max(0, info["global_step"] - 1)
        out = []
        for f in flat:
            if f is loss:
                out.append(np.float32(info["loss"]))
            elif isinstance(f, _Named):
                out.append(np.int64(step))
            else:
                out.append(None)
        return out

    def _start(self):
        trace = self._trace
        loss = trace.train_op.loss
        mode = {"nodes": trace.nodes, "loss": loss.id, "predictions": [], "metrics": []}
        job, columns = self._job(mode, trace.optimizer)
        self._columns = columns
        core_module = _core()
        feed = core_module.Feed()
        schema = core_module.Table([(name, kind, np.zeros((0,) + ((width,) if width > 1 else ()),
                                                          dtype=_NUMPY[kind]))
                                    for name, kind, width in columns])
        core_input = core_module.Input.of_feed(schema, feed, "feed_dict")
        channel = _StepChannel(self._hooks)

        def target():
            try:
                if self._tf_config is not None:
                    _run_member(job, self._tf_config, channel, core_input)
                else:
                    core_module.train(job, core_input, 0, self._max_steps or 0, channel, None)
            except BaseException as e:  # noqa: BLE001 (raised in the session's thread)
                self._failure.append(e)
        thread = threading.Thread(target=target, name="shoal-session", daemon=True)
        self._engine = (thread, feed, channel)
        thread.start()

    # -- the engine's job --
    def _job(self, mode, optimizer, infer=False):
        """The job config for the graph with ``mode`` (train, or infer for a forward run), and
        the fed columns [(placeholder, kind, width)]."""
        trace = self._trace
        traced = TracedModel()
        saved_columns = list(trace.columns)
        _collect_features(_View(mode["nodes"], trace.columns, trace.mode), mode, traced)
        from shoal import feature_column as fc
        columns = [c for c in saved_columns if _used(c, trace, mode)]
        fed = []
        for name, width in traced.dense_features.items():
            fed.append((name, "float", width))
        for c in columns:
            source = _source_of(c)
            if source in traced.dense_features:
                raise UnsupportedError(f"placeholder {source!r} is both looked up as ids "
                                       "(tf.nn.embedding_lookup) and read as values")
            if all(source != n for n, _, _ in fed):
                fed.append((source, "int64", 1))
        tables = trace.builder.tables
        for name in tables:
            if name in traced.dense_variables:
                raise UnsupportedError(
                    f"variable '{name}' is an embedding table (tf.nn.embedding_lookup by a "
                    f"placeholder at {tables[name]['where']}) and is also read whole")
        mode = dict(mode, nodes=_without_unread_id_placeholders(mode, traced))
        graph = {"version": GRAPH_VERSION,
                 "variables": [{k: v for k, v in var.items() if k != "where"}
                               for var in trace.builder.variables.values()
                               if var["name"] not in tables],
                 "tables": [{"name": t["name"], "initializer": t["initializer"]}
                            for t in tables.values()],
                 "modes": {"infer" if infer else "train": mode}}
        dnn = list(columns) + [fc.numeric_column(name, shape=(width,))
                               for name, width in traced.dense_features.items()]
        run = {"pipeline_pull": "off", "train_threads": 1, "log_step_count_steps": 100}
        run.update(self._run)
        if self._max_steps:
            run["max_steps"] = int(self._max_steps)
        job = {"model_dir": self._model_dir,
               "features": fc.features_config([], dnn, None, "graph"),
               "model": {"type": "graph", "graph": graph, "batch_norm": trace.batch_norm},
               "run": run}
        if optimizer is not None:
            job["optimizer"] = optimizer.config()
        if not infer:
            self._save_graph(graph)
        text = json.dumps(job)
        return _core().Job(text, os.path.join(os.getcwd(), "session.json"), []), fed

    def _save_graph(self, graph):
        if "://" in self._model_dir:
            return
        os.makedirs(self._model_dir, exist_ok=True)
        with open(os.path.join(self._model_dir, "graph.json"), "w", encoding="utf-8") as f:
            json.dump(graph, f)

    def _table(self, feed_dict, columns):
        """The fed values as the engine's table of ``columns``; TF's error for a missing feed."""
        by_name = {}
        for key, value in feed_dict.items():
            tensor = key
            if isinstance(key, str):
                tensor = Graph(self._trace).get_tensor_by_name(key)
            placeholder = getattr(tensor, "placeholder", None)
            if placeholder is None or tensor.trace is not self._trace:
                raise UnsupportedError(f"Session.run ({user_line()}): feed_dict key {key!r} is "
                                       "not a placeholder of this graph (shoal feeds "
                                       "placeholders only)")
            by_name[placeholder[2]] = (tensor, value)
        out = []
        rows = None
        for name, kind, width in columns:
            default = getattr(self._trace.placeholders[name], "default", None)
            if name not in by_name and default is not None:
                by_name[name] = (self._trace.placeholders[name], default)
            if name not in by_name:
                tensor = self._trace.placeholders[name]
                dims = ",".join("?" if d is None else str(d) for d in tensor._shape)
                dtype = getattr(tensor.placeholder[0], "name", tensor.placeholder[0])
                raise ValueError(f"You must feed a value for placeholder tensor '{name}' with "
                                 f"dtype {dtype} and shape [{dims}] "
                                 f"(Session.run at {user_line()})")
            tensor, value = by_name[name]
            array = _fed_array(name, tensor, value, kind)
            if rows is None:
                rows = array.shape[0]
            elif array.shape[0] != rows:
                raise ValueError(f"feed_dict: placeholder '{name}' has {array.shape[0]} rows and "
                                 f"another {rows}: every fed value has the batch as its first "
                                 "dimension")
            if kind == "float" and array.reshape(rows, -1).shape[1] != width:
                raise ValueError(f"feed_dict: placeholder '{name}' takes {width} values per "
                                 f"example, got shape {list(array.shape)}")
            out.append((name, kind, array.reshape(rows, -1) if array.ndim > 2 else array))
        if rows == 0:
            raise ValueError(f"Session.run ({user_line()}): the fed batch has no rows")
        return _core().Table(out)

    # -- evaluation --
    def _forward(self, flat, feed_dict):
        tensors = [f for f in flat if isinstance(f, Tensor)]
        for f in flat:
            if f is not None and not isinstance(f, (Tensor, _NoOp)):
                raise UnsupportedError(f"Session.run ({user_line()}): cannot fetch {_describe(f)}")
        for t in tensors:
            if t.trace is not self._trace:
                raise ValueError(f"Session.run ({user_line()}): {t.name} is not a tensor of this "
                                 "session's graph")
        checkpoint_dir = self._restored or self._model_dir
        if self._engine is not None and self._engine[0].is_alive() and not self._warned_stale:
            self._warned_stale = True
            _log.warning("Session.run without the train op while training: the values are those "
                         "of the latest checkpoint in %s", checkpoint_dir)
        if not _core().latest_checkpoint(checkpoint_dir):
            raise ValueError(f"Session.run ({user_line()}): no checkpoint in {checkpoint_dir} to "
                             "evaluate with yet: train first, or Saver.restore(sess, path)")
        trace = self._trace
        nodes = list(trace.nodes)
        predictions = []
        anchor = None
        for i, t in enumerate(tensors):
            node = t.id
            if not t._shape or t._shape[0] is not None:
                anchor = anchor if anchor is not None else _batch_zeros(nodes, trace, tensors,
                                                                        feed_dict)
                nodes.append({"op": "binary", "fn": "add", "inputs": [node, anchor],
                              "where": "Session.run"})
                node = len(nodes) - 1
            predictions.append([f"fetch_{i}", node])
        mode = {"nodes": nodes, "predictions": predictions, "metrics": []}
        saved_dir = self._model_dir
        self._model_dir = checkpoint_dir
        try:
            job, columns = self._job(mode, trace.optimizer, infer=True)
        finally:
            self._model_dir = saved_dir
        table = self._table(feed_dict, columns)
        rows = table.num_rows
        core_module = _core()
        core_input = core_module.Input(table, rows, 1, False, 0, False, False, "feed_dict")
        batches = []
        core_module.predict(job, core_input, lambda b: batches.append(b) or True, None)
        values = {}
        for batch in batches:
            for k, v in batch.items():
                values.setdefault(k, []).append(v)
        out = {}
        for i, t in enumerate(tensors):
            v = np.concatenate(values[f"fetch_{i}"])
            if not t._shape:
                v = v.reshape(-1)[0]
            elif t._shape[0] is not None:
                v = v[0].reshape(t._shape)
            else:
                v = v.reshape([len(v)] + [d for d in t._shape[1:]])
            out[id(t)] = v.astype(np.int64) if t.kind == "int" else \
                v.astype(bool) if t.kind == "bool" else v.astype(np.float32)
        return [out.get(id(f)) if isinstance(f, Tensor) else None for f in flat]

    def _restore(self, save_path):
        directory = os.path.dirname(os.path.normpath(save_path))
        latest = _core().latest_checkpoint(directory)
        if os.path.normpath(latest or "") != os.path.normpath(save_path):
            raise UnsupportedError(f"Saver.restore ({user_line()}): {save_path} is not the latest "
                                   f"checkpoint of {directory}; shoal restores the latest one")
        self._restored = directory


class _MonitoredSession(_SessionBase):
    """What MonitoredTrainingSession returns: as TF's, leaving its ``with`` block on
    OutOfRangeError or StopIteration is a normal end."""

    def __exit__(self, exc_type, exc, tb):
        from shoal import errors
        stopped = exc_type is not None and issubclass(exc_type, (errors.OutOfRangeError,
                                                                 StopIteration))
        super().__exit__(None if stopped else exc_type, exc, tb)
        return stopped


class Session(_SessionBase):
    """``tf.Session``: runs the default graph on this machine. Its checkpoints go to a temporary
    directory (TF's Session saves nothing by itself)."""

    def __init__(self, target="", graph=None, config=None):
        if target and target in _SERVERS:
            raise UnsupportedError("tf.Session(server.target): use tf.train."
                                   "MonitoredTrainingSession(master=server.target) to train in a "
                                   "cluster")
        super().__init__(graph, tempfile.mkdtemp(prefix="shoal-session-"), (), None, None, {})


InteractiveSession = Session

_USE_DEFAULT = object()


def MonitoredTrainingSession(  # noqa: N802 (TF's name)
        master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,
        chief_only_hooks=None, save_checkpoint_secs=_USE_DEFAULT,
        save_summaries_steps=_USE_DEFAULT, save_summaries_secs=_USE_DEFAULT, config=None,
        stop_grace_period_secs=120, log_step_count_steps=100, max_wait_secs=7200,
        save_checkpoint_steps=_USE_DEFAULT, summary_dir=None):
    """``tf.train.MonitoredTrainingSession``: training steps in the engine, restoring from and
    checkpointing to ``checkpoint_dir`` (600 s by default, as TF; and when it closes). With
    ``master=server.target`` this task trains in the server's cluster."""
    from shoal.estimator.hooks import StopAtStepHook
    if scaffold is not None and getattr(scaffold, "init_fn", None) is not None:
        raise UnsupportedError("MonitoredTrainingSession: scaffold.init_fn is not supported (the "
                               "engine initialises the variables, or restores checkpoint_dir)")
    hooks = list(hooks or [])
    server = _SERVERS.get(master) if master else None
    if master and server is None:
        raise ValueError(f"MonitoredTrainingSession: master {master!r} is not a tf.train.Server "
                         "of this process (pass server.target)")
    tf_config = server.tf_config if server is not None else None
    if server is not None:
        chief = tf_config["task"]["type"] == "chief"
        if bool(is_chief) != chief:
            _log.warning("MonitoredTrainingSession: is_chief=%s, but shoal's chief is %s (worker "
                         "0 when the cluster has no chief job)", is_chief,
                         "this task" if chief else "another task")
        if chief:
            hooks += list(chief_only_hooks or [])
    else:
        hooks += list(chief_only_hooks or [])
    max_steps = None
    for h in hooks:
        if isinstance(h, StopAtStepHook) and h._last_step is not None:
            max_steps = h._last_step if max_steps is None else min(max_steps, h._last_step)
    run = {"log_step_count_steps": int(log_step_count_steps or 0)}
    steps = None if save_checkpoint_steps is _USE_DEFAULT else save_checkpoint_steps
    secs = None if save_checkpoint_secs is _USE_DEFAULT else save_checkpoint_secs
    if steps:
        run["save_checkpoints_steps"], run["save_checkpoints_secs"] = int(steps), 0
    else:
        run["save_checkpoints_secs"] = int(600 if secs is None else secs)
    model_dir = checkpoint_dir or tempfile.mkdtemp(prefix="shoal-session-")
    if "://" not in model_dir:
        model_dir = os.path.abspath(model_dir)
    return _MonitoredSession(None, model_dir, hooks, tf_config, max_steps, run)


# ---- helpers ----

class _View:
    """A trace's nodes with a forward run's own nodes appended (for _collect_features)."""

    def __init__(self, nodes, columns, mode):
        self.nodes, self.columns, self.mode = nodes, columns, mode


_NUMPY = {"float": np.float32, "int64": np.int64}


def _flatten(fetches):
    if isinstance(fetches, dict):
        return [x for v in fetches.values() for x in _flatten(v)]
    if isinstance(fetches, (list, tuple)):
        return [x for v in fetches for x in _flatten(v)]
    return [fetches]


def _unflatten(fetches, values):
    if isinstance(fetches, dict):
        return {k: _unflatten(v, values) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_unflatten(v, values) for v in fetches)
    return next(values)


def _describe(fetch):
    name = getattr(fetch, "name", None)
    return repr(name) if name else repr(fetch)


def _source_of(column):
    categorical = getattr(column, "categorical_column", None)
    return getattr(categorical, "key", None) or getattr(categorical, "name", None)


def _used(column, trace, mode):
    """Whether the mode's outputs read ``column`` (an embedding lookup of a placeholder)."""
    wanted = {column.name}
    roots = [mode.get("loss", -1)] + [i for _, i in mode["predictions"]]
    needed = set()
    stack = [r for r in roots if r >= 0]
    nodes = mode["nodes"]
    while stack:
        i = stack.pop()
        if i in needed:
            continue
        needed.add(i)
        stack.extend(nodes[i]["inputs"])
    return any(nodes[i]["op"] == "embedding" and nodes[i].get("name") in wanted for i in needed)


def _without_unread_id_placeholders(mode, traced):
    """The mode's nodes with each placeholder the outputs do not read as values (ids only
    looked up, or not used) as a constant: a placeholder of ids may be [None, None], which a
    value input cannot be."""
    nodes = []
    for node in mode["nodes"]:
        if node["op"] == "feature" and node["name"] not in traced.dense_features:
            node = {"op": "const", "inputs": [], "shape": [], "values": [0.0],
                    "where": node.get("where", "")}
        elif node["op"] == "feature" and node["shape"].count(-1) > 1:
            raise UnsupportedError(f"{node.get('where', '')}: placeholder {node['name']!r} of "
                                   f"shape {node['shape']} is read as values, which needs every "
                                   "dimension but the batch's (ids of any length may only be "
                                   "looked up with tf.nn.embedding_lookup)")
        nodes.append(node)
    return nodes


def _batch_zeros(nodes, trace, tensors, feed_dict):
    """Nodes appended to ``nodes`` giving zeros of shape [batch] from a fed placeholder, to carry
    a fetched value without a batch dimension through a prediction."""
    fed = {getattr(k, "name", None) for k in feed_dict} | \
        {k if ":" in k else k + ":0" for k in feed_dict if isinstance(k, str)}
    for t in trace.placeholders.values():
        if t._shape.count(None) != 1 or (t.name not in fed and
                                          getattr(t, "default", None) is None):
            continue
        rank = len(t._shape)
        nodes.append({"op": "compare", "fn": "equal", "inputs": [t.id, t.id],
                      "where": "Session.run"})
        if rank > 1:
            nodes.append({"op": "reduce", "fn": "sum", "inputs": [len(nodes) - 1],
                          "axes": list(range(1, rank)), "where": "Session.run"})
        nodes.append({"op": "const", "inputs": [], "shape": [], "values": [0.0],
                      "where": "Session.run"})
        nodes.append({"op": "binary", "fn": "mul", "inputs": [len(nodes) - 2, len(nodes) - 1],
                      "where": "Session.run"})
        return len(nodes) - 1
    raise UnsupportedError(f"Session.run ({user_line()}): fetching "
                           f"{', '.join(t.name for t in tensors)} needs a float placeholder fed "
                           "with the batch")


def _fed_array(name, tensor, value, kind):
    array = np.asarray(value)
    if array.ndim == 0:
        raise ValueError(f"feed_dict: placeholder '{name}' takes a batch (shape "
                         f"{tensor.shape}), got a scalar")
    if array.dtype.kind not in "iufb":
        raise ValueError(f"feed_dict: placeholder '{name}' takes numbers, got dtype {array.dtype}")
    if kind == "int64":
        if array.dtype.kind == "f" and not np.all(np.mod(array, 1) == 0):
            raise ValueError(f"feed_dict: placeholder '{name}' takes integer ids, got fractions")
        return array.astype(np.int64)
    return array.astype(np.float32)
