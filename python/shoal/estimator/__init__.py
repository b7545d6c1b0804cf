"""TF1's Estimator API (``tf.estimator``) on shoal's C++ engine.

    import shoal.compat.v1 as tf
    est = tf.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=wide, dnn_feature_columns=deep, dnn_hidden_units=[100, 50],
        model_dir="/tmp/census")
    est.train(tf.estimator.inputs.pandas_input_fn(df, labels, shuffle=True, num_epochs=5))
    print(est.evaluate(tf.estimator.inputs.pandas_input_fn(test, test_labels, shuffle=False)))

Each call (train, evaluate, predict, export) builds the job config of the estimator (the YAML
schema of docs/config.md) and runs it in C++, restoring the latest checkpoint of ``model_dir`` as
TF does per call. ``train_and_evaluate`` with a ``TF_CONFIG`` naming a cluster makes this process
the ps, chief, worker or evaluator of that cluster (docs/python.md, "Every role in Python").
"""

import json
import logging
import math
import os
import queue
import tempfile
import threading

import numpy as np

from shoal import feature_column as fc
from shoal.estimator import export  # noqa: F401 (tf.estimator.export)
from shoal.estimator import inputs  # noqa: F401 (tf.estimator.inputs)
from shoal.estimator import traced as _trace_files
from shoal.estimator.export import ServingInputReceiver  # noqa: F401
from shoal.estimator.hooks import (CheckpointSaverListener, HookRunner, ListenerRunner,
                                   LoggingTensorHook,
                                   NanTensorHook, SessionRunArgs, SessionRunContext,
                                   SessionRunHook, SessionRunValues, StopAtStepHook)
from shoal.estimator.inputs import TableInput
from shoal.estimator.run_config import RunConfig
from shoal.graph.model import EstimatorSpec  # noqa: F401 (tf.estimator.EstimatorSpec)

__all__ = ["Estimator", "LinearClassifier", "LinearRegressor", "DNNClassifier", "DNNRegressor",
           "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor", "DeepFM", "RunConfig",
           "TrainSpec", "EvalSpec", "train_and_evaluate", "ModeKeys", "FinalExporter",
           "LatestExporter", "BestExporter", "SessionRunHook", "SessionRunArgs",
           "SessionRunContext", "SessionRunValues", "LoggingTensorHook", "StopAtStepHook",
           "NanTensorHook", "CheckpointSaverListener", "EstimatorSpec", "WarmStartSettings",
           "inputs", "export"]

_log = logging.getLogger("shoal")
_LABEL = "__label__"


def _core():
    try:
        from shoal import _core
    except ImportError as e:
        raise ImportError(
            "shoal's C++ extension (shoal._core) is missing: install the package with "
            "`pip install ./python` from the repository (docs/python.md)") from e
    return _core


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


# ---- optimizers ----

def _optimizer_config(optimizer, default_learning_rate, where):
    """An optimizer given by name or object -> the job config's optimizer section."""
    from shoal import train
    if isinstance(optimizer, str):
        names = {"adagrad": "adagrad", "adam": "adam", "ftrl": "ftrl", "sgd": "sgd",
                 "momentum": "momentum"}
        name = names.get(optimizer.lower())
        if name is None:
            raise ValueError(f"{where}: unsupported optimizer name {optimizer!r}: shoal has "
                             "'Adagrad', 'Adam', 'Ftrl', 'SGD' and 'Momentum' (an object of "
                             "tf.train.*Optimizer sets the hyper-parameters)")
        return {"name": name, "learning_rate": default_learning_rate}
    if callable(optimizer) and not isinstance(optimizer, train.Optimizer):
        optimizer = optimizer()
    if isinstance(optimizer, train.Optimizer):
        return optimizer.config()
    raise ValueError(f"{where}: optimizer must be a name or a tf.train optimizer, got "
                     f"{optimizer!r}")


_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid"}


def _activation_name(activation_fn, where):
    if activation_fn is None:
        return "relu"
    name = activation_fn if isinstance(activation_fn, str) else \
        getattr(activation_fn, "shoal_name", getattr(activation_fn, "__name__", None))
    if name in _ACTIVATIONS:
        return _ACTIVATIONS[name]
    raise ValueError(f"{where}: activation_fn {activation_fn!r} is not one shoal runs: "
                     "tf.nn.relu, tf.nn.tanh or tf.nn.sigmoid")


# ---- the estimator ----

class Estimator:
    """``tf.estimator.Estimator``. A Python ``model_fn`` is traced once per mode into a graph the
    engine runs each step (docs/python.md, "Porting a TF1 program"); the canned estimators below
    derive from this class and describe their model to the engine directly."""

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if model_fn is None and type(self) is Estimator:
            raise ValueError("model_fn must be provided to Estimator.")
        if model_fn is not None and not callable(model_fn):
            raise ValueError(f"model_fn must be callable, got {model_fn!r}")
        self._model_fn = model_fn
        self._traced = None
        self._label_spec = None
        self._config = config if config is not None else RunConfig()
        if not isinstance(self._config, RunConfig):
            raise ValueError(f"config must be a tf.estimator.RunConfig, got {config!r}")
        model_dir = model_dir or self._config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="shoal-estimator-")
            _log.warning("Using temporary folder as model directory: %s", model_dir)
        if self._config.model_dir is not None and model_dir != self._config.model_dir:
            raise ValueError("model_dir are set both in constructor and RunConfig, but with "
                             f"different values. In constructor: '{model_dir}', in RunConfig: "
                             f"'{self._config.model_dir}'.")
        self._model_dir = model_dir if "://" in model_dir else os.path.abspath(model_dir)
        self._config = self._config.replace(model_dir=self._model_dir)
        self.params = dict(params or {})
        self._warm_start_from = warm_start_from

    # -- what a subclass describes (a model_fn's trace, for Estimator itself) --
    def _model_section(self):
        traced = self._require_trace()
        return {"type": "graph", "graph": traced.graph, "batch_norm": traced.batch_norm}

    def _feature_columns(self):
        """(linear columns, dnn columns)."""
        traced = self._require_trace()
        columns = list(traced.columns)
        names = {c.name for c in columns}
        for name, width in traced.dense_features.items():
            if name not in names:
                columns.append(fc.numeric_column(name, shape=(width,)))
        return [], columns

    def _spec_hooks(self, mode):
        """The EstimatorSpec's training_hooks / evaluation_hooks / prediction_hooks."""
        if self._traced is None:
            return []
        return list(self._traced.hooks.get(mode, ()))

    def _require_trace(self):
        if self._traced is None:
            raise RuntimeError("the model_fn has not been traced yet (an input_fn gives the "
                               "features it is traced on)")
        return self._traced

    def _trace(self, result, mode):
        """Traces the model_fn on the features of ``result`` (an input as _input normalises it):
        each call, as TF builds the graph each call."""
        if self._model_fn is None:
            return
        from shoal.graph import trace_model_fn
        features, label = _trace_files.graph_specs(result)
        if label is not None:
            self._label_spec = label
        elif self._label_spec is None:
            self._label_spec = _trace_files.saved_label_spec(self._model_dir) or ("float", [None])
        if not features:
            raise ValueError("the input gives no features to trace the model_fn on")
        modes = ("train", "eval", "infer") if getattr(self, "_trace_all_modes", False) else \
            ({ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval"}.get(mode, "infer"),)
        self._traced = trace_model_fn(self._model_fn, self.params, self._config, features,
                                      self._label_spec, modes)
        self._feature_specs = features
        if mode == ModeKeys.TRAIN:
            _trace_files.save_graph(self._model_dir, self._traced, features, self._label_spec)

    _label_vocabulary = None
    _n_classes = 2
    _regression = False

    # -- properties --
    @property
    def model_dir(self):
        return self._model_dir

    @property
    def config(self):
        return self._config

    # -- the job config --
    def _job_dict(self, label, inputs_section=None, eval_section=None):
        linear, dnn = self._feature_columns()
        job = {
            "model_dir": self._model_dir,
            "features": fc.features_config(linear, dnn, label, self._model_section()["type"]),
            "model": self._model_section(),
            "run": self._config.run_section(),
        }
        job.update(self._optimizer_sections())
        weight = getattr(self, "_weight_column", None)
        if weight is not None:
            job["features"]["weight"] = weight
        if self._warm_start_from is not None:
            warm = self._warm_start_from
            if isinstance(warm, str):
                job["run"]["warm_start"] = {"from": warm}
            else:  # tf.estimator.WarmStartSettings
                job["run"]["warm_start"] = {
                    "from": warm.ckpt_to_initialize_from,
                    "patterns": _warm_patterns(warm.vars_to_warm_start)}
        if inputs_section:
            job["input"] = inputs_section
            # File inputs carry the labels as read: the engine maps the classes' strings (an
            # in-memory input's labels are mapped to ids in Python already).
            if self._label_vocabulary and label is not None:
                job["features"]["label_vocabulary"] = list(self._label_vocabulary)
        if eval_section:
            job["eval"] = eval_section
        return job

    def _job(self, label, inputs_section=None, eval_section=None, max_steps=None):
        job = self._job_dict(label, inputs_section, eval_section)
        if max_steps:
            job["run"]["max_steps"] = int(max_steps)
        text = json.dumps(job, indent=1)
        return _core().Job(text, os.path.join(os.getcwd(), "estimator.json"), [])

    def _expected_types(self):
        linear, dnn = self._feature_columns()
        types = fc.source_types(list(linear) + list(dnn))
        weight = getattr(self, "_weight_column", None)
        if weight is not None:
            types.setdefault(weight, "float")
        return types

    def _input(self, input_fn, mode):
        """Calls input_fn; returns (core Input or None for a file input, label name, the job's
        input section for a file input, what input_fn gave as the engine reads it)."""
        result = _call_input_fn(input_fn, mode, self._config, self.params)
        core = _core()
        from shoal import data
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], dict) and \
                not isinstance(result[0], TableInput):
            # TF's (features, labels) tensors: the same whole batch at every step.
            features, labels = result
            rows = len(np.asarray(next(iter(features.values()))))
            result = TableInput(features, labels, rows, None, False, name="input_fn")
        if isinstance(result, data.GeneratorDataset):
            directory = getattr(self, "_generator_dir", None) or _generator_dir()
            result = result.materialize(directory)
            result.generated_in = directory
        if isinstance(result, data.TensorSliceDataset):
            result = result.table_input()
        self._trace(result, mode)
        if isinstance(result, TableInput):
            if result.labels is None and mode != ModeKeys.PREDICT:
                raise ValueError(f"{result.name}: no labels (y) to {mode} on")
            label = _LABEL if result.labels is not None else None
            if label is not None and label in result.features:
                raise ValueError(f"{result.name}: a feature is named {label!r}, which shoal "
                                 "uses for the labels")
            columns = inputs.table_columns(result, _LABEL, self._expected_types(),
                                           self._label_vocabulary)
            table = core.Table(columns)
            seed = self._config.tf_random_seed or 0
            epochs = result.num_epochs if result.num_epochs is not None else 0
            if mode == ModeKeys.PREDICT:
                epochs = 1 if result.num_epochs is None else result.num_epochs
            # Evaluating a repeating input (0 epochs) ends by evaluate's steps, which the callers
            # check are given.
            core_input = core.Input(table, result.batch_size, epochs,
                                    result.shuffle and mode == ModeKeys.TRAIN, seed,
                                    result.drop_remainder, result.batches_span_epochs,
                                    result.name)
            return core_input, label or _LABEL, {}, result
        if isinstance(result, data.Dataset):
            section, label = result.input_section(self._label_vocabulary)
            return None, label, section, result
        raise TypeError(
            "input_fn must return a tf.estimator.inputs numpy/pandas input, a dict of "
            "features and the labels, or a shoal.data dataset (tf.data.experimental."
            f"make_csv_dataset, tf.data.TFRecordDataset(...).map(parse)); got {type(result)!r}")

    def _call_input(self, input_fn, mode, which="train"):
        core_input, label, section, raw = self._input(input_fn, mode)
        if core_input is None:
            core_input = _core().Input.of_job(which)
            section = {which: section}
        return core_input, label, section, raw

    # -- train / evaluate / predict / export --
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains; returns self. ``steps``: at most this many more steps; ``max_steps``: stop at
        this global step (counted across calls and restarts)."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            latest = self.latest_checkpoint()
            if latest and _step_of(latest) >= max_steps:
                _log.info("Skipping training since max_steps has already saved.")
                return self
        core_input, label, section, raw = self._call_input(input_fn, ModeKeys.TRAIN, "train")
        if isinstance(raw, TableInput) and raw.num_epochs is None and not (steps or max_steps):
            _log.warning("%s repeats forever (num_epochs=None) and train has no steps or "
                         "max_steps: it runs until stopped", raw.name)
        job = self._job(label, section)
        hooks = list(hooks or []) + self._spec_hooks("train")
        runner = HookRunner(hooks) if hooks else None
        listeners = ListenerRunner(saving_listeners) if saving_listeners else None
        if listeners is not None:
            listeners.begin()
        result = _core().train(job, core_input, steps or 0, max_steps or 0, runner, listeners)
        if listeners is not None:
            listeners.end(result["global_step"])
        _log.info("Loss for final step: %s.", result["last_loss"])
        self._last_train = result
        return self

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the latest checkpoint; returns its metrics and ``global_step``."""
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if checkpoint_path is not None:
            latest = self.latest_checkpoint()
            if os.path.normpath(checkpoint_path) != os.path.normpath(latest or ""):
                raise NotImplementedError("evaluate(checkpoint_path=...) other than the latest "
                                          "checkpoint is not supported yet")
        core_input, label, section, raw = self._call_input(input_fn, ModeKeys.EVAL, "eval")
        if isinstance(raw, TableInput) and raw.num_epochs is None and not steps:
            raise ValueError(f"{raw.name} repeats forever (num_epochs=None): give evaluate "
                             "steps=N or num_epochs=1")
        job = self._job(label, section)
        hooks = list(hooks or []) + self._spec_hooks("eval")
        runner = HookRunner(hooks) if hooks else None
        result = _core().evaluate(job, core_input, steps or 0, runner)
        return _metrics_dict(result)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions of the latest checkpoint: a dict per example (numpy values), or
        per batch with ``yield_single_examples=False``."""
        if checkpoint_path is not None:
            raise NotImplementedError("predict(checkpoint_path=...) is not supported yet")
        if isinstance(predict_keys, str):
            predict_keys = [predict_keys]
        core_input, label, section, raw = self._call_input(input_fn, ModeKeys.PREDICT, "eval")
        if self.latest_checkpoint() is None:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        job = self._job(label, section)
        hooks = list(hooks or []) + self._spec_hooks("infer")
        runner = HookRunner(hooks) if hooks else None
        for batch in _run_in_thread(lambda put: _core().predict(job, core_input, put, runner)):
            batch = self._complete_predictions(batch)
            if predict_keys is not None:
                missing = [k for k in predict_keys if k not in batch]
                if missing:
                    raise ValueError(f"predict_keys {missing} are not in the predictions: "
                                     f"{sorted(batch)}")
                batch = {k: batch[k] for k in predict_keys}
            if not yield_single_examples:
                yield batch
                continue
            rows = len(next(iter(batch.values())))
            single = self._traced is not None and self._traced.single_output and \
                predict_keys is None
            for i in range(rows):
                yield batch["output"][i] if single else {k: v[i] for k, v in batch.items()}

    def _complete_predictions(self, batch):
        """Adds TF's canned keys the engine does not compute (probabilities, classes, ...); a
        traced model's outputs get their traced shapes back."""
        if self._model_fn is not None:
            ranks = self._traced.prediction_ranks
            for name, values in batch.items():
                if ranks.get(name) == 1 and values.ndim == 2 and values.shape[1] == 1:
                    batch[name] = values[:, 0]
            return batch
        if self._regression:
            return batch
        vocabulary = self._label_vocabulary or [str(i) for i in range(self._n_classes)]
        classes = np.asarray([v.encode() for v in vocabulary], dtype=object)
        if "logistic" in batch and "probabilities" not in batch:
            p = batch["logistic"].reshape(-1, 1)
            batch["probabilities"] = np.concatenate([1 - p, p], axis=1)
        if "class_ids" in batch:
            ids = batch["class_ids"].astype(np.int64).reshape(-1, 1)
            batch["class_ids"] = ids
            batch["classes"] = classes[ids]
            rows = len(ids)
            batch["all_class_ids"] = np.tile(np.arange(len(vocabulary)), (rows, 1))
            batch["all_classes"] = np.tile(classes, (rows, 1))
        return batch

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn=None,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Exports the latest checkpoint as a shoal export (docs/formats.md) that
        ``shoal serve`` serves; returns its path (bytes, as TF)."""
        if assets_extra:
            raise NotImplementedError("assets_extra is not supported yet")
        if self.latest_checkpoint() is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        if self._model_fn is not None and (self._traced is None or
                                           "infer" not in self._traced.graph["modes"]):
            self._trace_for_export(serving_input_receiver_fn)
        layout = self._serving_layout(serving_input_receiver_fn)
        job = self._job(None)
        path = _core().export(job, layout, os.fspath(export_dir_base))
        return path.encode()

    export_savedmodel = export_saved_model

    def _serving_layout(self, serving_input_receiver_fn):
        """The input layout of an export: the receiver's feature spec, else the feature
        columns' (make_parse_example_spec)."""
        core = _core()
        spec = None
        if serving_input_receiver_fn is not None:
            receiver = serving_input_receiver_fn()
            spec = getattr(receiver, "feature_spec", None)
        linear, dnn = self._feature_columns()
        types = fc.source_types(list(linear) + list(dnn))  # no label, no weight column
        if spec:
            for key, feature in spec.items():
                kind = "string" if fc.dtypes.is_string(feature.dtype) else \
                    "int64" if fc.dtypes.is_integer(feature.dtype) else "float"
                types[key] = kind
        columns = []
        for key, kind in types.items():
            dtype = {"float": np.float32, "int64": np.int64, "string": object}[kind]
            columns.append((key, kind, np.zeros((0,), dtype=dtype)))
        table = core.Table(columns)
        return core.Input(table, 1, 1, False, 0, False, False, "serving_input_receiver_fn")

    def _trace_for_export(self, serving_input_receiver_fn):
        """A model_fn not traced in this process: traced on the features it was trained on
        (MODEL_DIR/graph.json), else on the serving receiver's."""
        from shoal.graph import trace_model_fn
        saved = _trace_files.load_saved_inputs(self._model_dir)
        if getattr(self, "_feature_specs", None):
            features = self._feature_specs
        elif saved is not None:
            features = {k: tuple(v) for k, v in saved["features"].items()}
        elif serving_input_receiver_fn is not None:
            receiver = serving_input_receiver_fn()
            features = {}
            for key, feature in (getattr(receiver, "feature_spec", None) or {}).items():
                kind = "string" if fc.dtypes.is_string(feature.dtype) else \
                    "int" if fc.dtypes.is_integer(feature.dtype) else "float"
                shape = [None] + [int(d) for d in (feature.shape or ())]
                features[key] = (kind, shape if len(shape) > 1 else [None])
        else:
            raise ValueError("export: the model_fn was not traced in this process and "
                             f"{self._model_dir}/graph.json is missing: train first, or give a "
                             "serving_input_receiver_fn")
        label = self._label_spec or _trace_files.saved_label_spec(self._model_dir) or \
            ("float", [None])
        self._traced = trace_model_fn(self._model_fn, self.params, self._config, features, label,
                                      ("infer",))

    # -- checkpoints --
    def latest_checkpoint(self):
        path = _core().latest_checkpoint(self._model_dir)
        return path or None

    def get_variable_names(self):
        latest = self.latest_checkpoint()
        if latest is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        return _core().variable_names(latest)

    def get_variable_value(self, name):
        latest = self.latest_checkpoint()
        if latest is None:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        return _core().variable_value(latest, name)

    def get_params(self):
        return dict(self.params)

    # -- for train_and_evaluate --
    def _optimizer_sections(self):
        if self._model_fn is None:
            return {}
        optimizer = self._require_trace().optimizer
        if optimizer is not None:
            return {"optimizer": optimizer.config()}
        # Evaluation or prediction of a model_fn that calls minimize only in TRAIN: the
        # optimizer it trained with (its slots are in the checkpoint).
        saved = _trace_files.load_saved_inputs(self._model_dir)
        if saved is not None and saved.get("optimizer"):
            return {"optimizer": saved["optimizer"]}
        return {}


def _warm_patterns(vars_to_warm_start):
    if vars_to_warm_start is None or vars_to_warm_start == ".*":
        return ["*"]
    if isinstance(vars_to_warm_start, str):
        return [vars_to_warm_start.replace(".*", "*")]
    return [v.replace(".*", "*") for v in vars_to_warm_start]


class WarmStartSettings:
    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*",
                 var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if var_name_to_vocab_info or var_name_to_prev_var_name:
            raise NotImplementedError("WarmStartSettings: vocabulary remapping and renaming are "
                                      "not supported yet")
        self.ckpt_to_initialize_from = ckpt_to_initialize_from
        self.vars_to_warm_start = vars_to_warm_start


_GENERATOR_DIR = []


def _generator_dir():
    """Where from_generator's lines go for the engine to read: one temporary directory per
    process, removed at exit."""
    if not _GENERATOR_DIR:
        import atexit
        import shutil
        path = tempfile.mkdtemp(prefix="shoal-generator-")
        atexit.register(shutil.rmtree, path, True)
        _GENERATOR_DIR.append(path)
    return _GENERATOR_DIR[0]


def _step_of(checkpoint):
    base = os.path.basename(os.path.normpath(checkpoint))
    try:
        return int(base.split("-")[-1])
    except ValueError:
        return -1


def _metrics_dict(result):
    metrics = {k: np.float32(v) for k, v in result["metrics"].items()}
    if "loss" in metrics and "average_loss" not in metrics:
        metrics["average_loss"] = metrics["loss"]
    metrics["global_step"] = np.int64(result["global_step"])
    return metrics


def _call_input_fn(input_fn, mode, config, params):
    """Calls input_fn with the arguments it names (TF: mode, params, config, input_context)."""
    if not callable(input_fn):
        raise TypeError(f"input_fn must be callable, got {input_fn!r}")
    from shoal.graph.model import call_with_named_args
    return call_with_named_args(input_fn, {"mode": mode, "params": params, "config": config,
                                           "input_context": None})


def _run_in_thread(run):
    """Runs ``run(put)`` on a thread (the engine releases the GIL) and yields what it puts, at
    most 4 batches ahead. Closing the generator stops the run."""
    q = queue.Queue(maxsize=4)
    stop = threading.Event()
    done = object()
    failure = []

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def target():
        try:
            run(put)
        except BaseException as e:  # noqa: BLE001 (re-raised in the consumer)
            failure.append(e)
        finally:
            while True:
                try:
                    q.put(done, timeout=0.1)
                    break
                except queue.Full:
                    if stop.is_set():
                        break

    thread = threading.Thread(target=target, name="shoal-predict", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                break
            yield item
        if failure:
            raise failure[0]
    finally:
        stop.set()
        thread.join()


# ---- canned estimators ----

def _columns(value, where):
    if value is None:
        return []
    if isinstance(value, fc.FeatureColumn):
        return [value]
    columns = list(value)
    for c in columns:
        if not isinstance(c, fc.FeatureColumn):
            raise ValueError(f"{where}: items must be feature columns, got {c!r}")
    return columns


def _check_head(n_classes, label_vocabulary, weight_column, loss_reduction, where):
    if not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"{where}: n_classes must be > 1, got {n_classes!r}")
    if label_vocabulary is not None:
        vocabulary = list(label_vocabulary)
        if len(vocabulary) != n_classes:
            raise ValueError(f"{where}: label_vocabulary has {len(vocabulary)} entries, "
                             f"n_classes is {n_classes}")
        if len(set(vocabulary)) != len(vocabulary):
            raise ValueError(f"{where}: label_vocabulary has duplicates: {vocabulary}")
        if not all(isinstance(v, str) for v in vocabulary):
            raise ValueError(f"{where}: label_vocabulary must be strings, got {vocabulary}")
    if weight_column is not None and not isinstance(weight_column, (str, fc.NumericColumn)):
        raise ValueError(f"{where}: weight_column must be a feature name or a numeric_column, "
                         f"got {weight_column!r}")
    if loss_reduction not in (None, "weighted_sum_over_batch_size", "sum_over_batch_size",
                              "SUM_OVER_BATCH_SIZE"):
        raise NotImplementedError(f"{where}: loss_reduction {loss_reduction!r} is not supported "
                                  "(shoal averages the loss over the batch)")


class _Canned(Estimator):
    _type = None

    def __init__(self, linear_columns, dnn_columns, model_dir, config, n_classes,
                 label_vocabulary, weight_column, loss_reduction, regression, hidden_units=(),
                 activation_fn=None, dropout=None, batch_norm=False, linear_optimizer=None,
                 dnn_optimizer=None, warm_start_from=None, name=None, label_dimension=1):
        where = name or type(self).__name__
        self._linear = _columns(linear_columns, where)
        self._dnn = _columns(dnn_columns, where)
        if not self._linear and not self._dnn:
            raise ValueError(f"{where}: no feature columns")
        self._regression = regression
        if regression:
            if label_dimension != 1:
                raise NotImplementedError(f"{where}: label_dimension {label_dimension}: shoal's "
                                          "regression head predicts one value")
            _check_head(2, None, weight_column, loss_reduction, where)
        else:
            _check_head(n_classes, label_vocabulary, weight_column, loss_reduction, where)
        self._n_classes = n_classes
        self._label_vocabulary = list(label_vocabulary) if label_vocabulary else None
        self._weight_column = weight_column if isinstance(weight_column, str) or \
            weight_column is None else weight_column.key
        hidden = [int(u) for u in (hidden_units or [])]
        if self._type in ("dnn", "wide_deep", "deepfm") and (not hidden or min(hidden) < 1):
            raise ValueError(f"{where}: hidden_units must be a non-empty list of positive "
                             f"sizes, got {hidden_units!r}")
        if dropout is not None and not 0 <= dropout < 1:
            raise ValueError(f"{where}: dropout must be in [0, 1), got {dropout!r}")
        self._model = {
            "type": self._type,
            "head": "regression" if regression else ("binary" if n_classes == 2
                                                     else "multiclass"),
            "num_classes": 2 if regression else n_classes,
            "activation": _activation_name(activation_fn, where),
            "dropout": float(dropout or 0.0),
            "batch_norm": bool(batch_norm),
        }
        if hidden:
            self._model["hidden_units"] = hidden
        self._linear_optimizer = linear_optimizer
        self._dnn_optimizer = dnn_optimizer
        self._where = where
        # Refuse bad columns here, where the user builds the estimator.
        fc.features_config(self._linear, self._dnn, None, self._type)
        super().__init__(model_dir=model_dir, config=config, warm_start_from=warm_start_from)

    def _model_section(self):
        return dict(self._model)

    def _feature_columns(self):
        return self._linear, self._dnn

    def _optimizer_sections(self):
        sections = {}
        if self._type in ("linear", "wide_deep", "deepfm"):
            # TF's linear default: FTRL at min(0.2, 1/sqrt(#linear columns)); by name: 0.2.
            n = max(1, len(self._linear))
            default = min(0.2, 1.0 / math.sqrt(n))
            opt = self._linear_optimizer if self._linear_optimizer is not None else "Ftrl"
            sections["wide_optimizer"] = _optimizer_config(
                opt, default if self._linear_optimizer is None else 0.2, self._where)
        if self._type in ("dnn", "wide_deep", "deepfm"):
            opt = self._dnn_optimizer if self._dnn_optimizer is not None else "Adagrad"
            sections["optimizer"] = _optimizer_config(opt, 0.05, self._where)
        return sections


class LinearClassifier(_Canned):
    """``tf.estimator.LinearClassifier``."""
    _type = "linear"

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        if sparse_combiner != "sum":
            raise NotImplementedError("LinearClassifier: sparse_combiner must be 'sum' in shoal")
        super().__init__(feature_columns, [], model_dir, config, n_classes, label_vocabulary,
                         weight_column, loss_reduction, False,
                         linear_optimizer=None if optimizer == "Ftrl" else optimizer,
                         warm_start_from=warm_start_from)


class LinearRegressor(_Canned):
    """``tf.estimator.LinearRegressor``."""
    _type = "linear"

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=None, sparse_combiner="sum"):
        if sparse_combiner != "sum":
            raise NotImplementedError("LinearRegressor: sparse_combiner must be 'sum' in shoal")
        super().__init__(feature_columns, [], model_dir, config, 2, None, weight_column,
                         loss_reduction, True,
                         linear_optimizer=None if optimizer == "Ftrl" else optimizer,
                         warm_start_from=warm_start_from, label_dimension=label_dimension)


class DNNClassifier(_Canned):
    """``tf.estimator.DNNClassifier``."""
    _type = "dnn"

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False):
        super().__init__([], feature_columns, model_dir, config, n_classes, label_vocabulary,
                         weight_column, loss_reduction, False, hidden_units=hidden_units,
                         activation_fn=activation_fn, dropout=dropout, batch_norm=batch_norm,
                         dnn_optimizer=optimizer, warm_start_from=warm_start_from)


class DNNRegressor(_Canned):
    """``tf.estimator.DNNRegressor``."""
    _type = "dnn"

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False):
        super().__init__([], feature_columns, model_dir, config, 2, None, weight_column,
                         loss_reduction, True, hidden_units=hidden_units,
                         activation_fn=activation_fn, dropout=dropout, batch_norm=batch_norm,
                         dnn_optimizer=optimizer, warm_start_from=warm_start_from,
                         label_dimension=label_dimension)


class DNNLinearCombinedClassifier(_Canned):
    """``tf.estimator.DNNLinearCombinedClassifier`` (wide & deep)."""
    _type = "wide_deep"

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        _check_combined(linear_feature_columns, dnn_feature_columns, "DNNLinearCombinedClassifier")
        super().__init__(linear_feature_columns, dnn_feature_columns, model_dir, config,
                         n_classes, label_vocabulary, weight_column, loss_reduction, False,
                         hidden_units=dnn_hidden_units, activation_fn=dnn_activation_fn,
                         dropout=dnn_dropout, batch_norm=batch_norm,
                         linear_optimizer=None if linear_optimizer == "Ftrl" else linear_optimizer,
                         dnn_optimizer=dnn_optimizer, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(_Canned):
    """``tf.estimator.DNNLinearCombinedRegressor`` (wide & deep)."""
    _type = "wide_deep"

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, label_dimension=1, weight_column=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False, linear_sparse_combiner="sum"):
        _check_combined(linear_feature_columns, dnn_feature_columns, "DNNLinearCombinedRegressor")
        super().__init__(linear_feature_columns, dnn_feature_columns, model_dir, config, 2, None,
                         weight_column, loss_reduction, True, hidden_units=dnn_hidden_units,
                         activation_fn=dnn_activation_fn, dropout=dnn_dropout,
                         batch_norm=batch_norm,
                         linear_optimizer=None if linear_optimizer == "Ftrl" else linear_optimizer,
                         dnn_optimizer=dnn_optimizer, warm_start_from=warm_start_from,
                         label_dimension=label_dimension)


def _check_combined(linear, dnn, where):
    if not linear and not dnn:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    if not linear or not dnn:
        raise ValueError(f"{where}: shoal's wide & deep needs both linear_feature_columns and "
                         "dnn_feature_columns (use LinearClassifier or DNNClassifier for one)")


class DeepFM(_Canned):
    """shoal's DeepFM (no TF counterpart): ``embedding_columns`` feed both the factorisation
    machine and the deep tower; ``linear_feature_columns`` the first-order part."""
    _type = "deepfm"

    def __init__(self, linear_feature_columns, embedding_columns, hidden_units, model_dir=None,
                 n_classes=2, label_vocabulary=None, linear_optimizer="Ftrl",
                 dnn_optimizer="Adagrad", activation_fn=None, dropout=None, config=None,
                 warm_start_from=None, batch_norm=False):
        super().__init__(linear_feature_columns, embedding_columns, model_dir, config, n_classes,
                         label_vocabulary, None, None, False, hidden_units=hidden_units,
                         activation_fn=activation_fn, dropout=dropout, batch_norm=batch_norm,
                         linear_optimizer=None if linear_optimizer == "Ftrl" else linear_optimizer,
                         dnn_optimizer=dnn_optimizer, warm_start_from=warm_start_from)


# ---- train_and_evaluate ----

class TrainSpec:
    """``tf.estimator.TrainSpec``."""

    def __init__(self, input_fn, max_steps=None, hooks=None, saving_listeners=None):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        self.input_fn = input_fn
        self.max_steps = max_steps
        self.hooks = tuple(hooks or ())
        self.saving_listeners = tuple(saving_listeners or ())


class EvalSpec:
    """``tf.estimator.EvalSpec``."""

    def __init__(self, input_fn, steps=100, name=None, hooks=None, exporters=None,
                 start_delay_secs=120, throttle_secs=600):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        if exporters is None:
            exporters = ()
        elif not isinstance(exporters, (list, tuple)):
            exporters = (exporters,)
        names = [e.name for e in exporters]
        if len(set(names)) != len(names):
            raise ValueError(f"`exporters` must have unique names, given: {names}")
        for e in exporters:
            if not isinstance(e, _Exporter):
                raise TypeError(f"`exporters` must be Exporter instances, given: {e!r}")
        self.input_fn = input_fn
        self.steps = steps
        self.name = name
        self.hooks = tuple(hooks or ())
        self.exporters = tuple(exporters)
        self.start_delay_secs = start_delay_secs
        self.throttle_secs = throttle_secs

    def eval_section(self):
        return {"steps": self.steps or 0, "start_delay_secs": int(self.start_delay_secs),
                "throttle_secs": int(self.throttle_secs),
                "exporters": [e.config() for e in self.exporters]}


class _Exporter:
    type = None

    def __init__(self, name, serving_input_receiver_fn=None, exports_to_keep=5):
        if not name or not isinstance(name, str):
            raise ValueError(f"exporter name must be a non-empty string, got {name!r}")
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self.name = name
        self.serving_input_receiver_fn = serving_input_receiver_fn
        self.exports_to_keep = exports_to_keep

    def config(self):
        return {"name": self.name, "type": self.type, "keep": self.exports_to_keep or 0}


class FinalExporter(_Exporter):
    """``tf.estimator.FinalExporter``: exports once, after the final evaluation."""
    type = "final"

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        super().__init__(name, serving_input_receiver_fn, None)


class LatestExporter(_Exporter):
    """``tf.estimator.LatestExporter``: exports after every evaluation, keeping the newest."""
    type = "latest"

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        super().__init__(name, serving_input_receiver_fn, exports_to_keep)


class BestExporter(_Exporter):
    """``tf.estimator.BestExporter``: exports when the eval loss is the lowest so far."""
    type = "best"

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=None, assets_extra=None,
                 as_text=False, exports_to_keep=5):
        if compare_fn is not None:
            raise NotImplementedError("BestExporter: compare_fn is not supported: shoal keeps "
                                      "the export with the lowest eval loss (TF's default)")
        super().__init__(name, serving_input_receiver_fn, exports_to_keep)

    def config(self):
        c = super().config()
        c["metric"] = "loss"
        return c


def train_and_evaluate(estimator, train_spec, eval_spec):
    """``tf.estimator.train_and_evaluate``: trains and evaluates on this machine, or with a
    ``TF_CONFIG`` cluster, runs this process's role of it. Returns (eval metrics, export paths)
    as TF 2.x does (None, None for members other than the chief and a local run)."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`, given "
                        f"{type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`, given "
                        f"{type(train_spec)}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`, given "
                        f"{type(eval_spec)}")
    from shoal.estimator import cluster
    # The job trains, evaluates and exports: a model_fn is traced in every mode.
    estimator._trace_all_modes = True
    if estimator.config.cluster_spec:
        return cluster.run_member(estimator, train_spec, eval_spec)
    core = _core()
    train_input, label, train_section, train_raw = estimator._call_input(
        train_spec.input_fn, ModeKeys.TRAIN, "train")
    eval_input, _, eval_section, eval_raw = estimator._call_input(
        eval_spec.input_fn, ModeKeys.EVAL, "eval")
    if isinstance(eval_raw, TableInput) and eval_raw.num_epochs is None and not eval_spec.steps:
        raise ValueError(f"{eval_raw.name} repeats forever (num_epochs=None): give EvalSpec "
                         "steps=N or num_epochs=1")
    sections = dict(train_section)
    sections.update(eval_section)
    job = estimator._job(label, sections, eval_spec.eval_section())
    train_hooks = list(train_spec.hooks) + estimator._spec_hooks("train")
    eval_hooks = list(eval_spec.hooks) + estimator._spec_hooks("eval")
    train_runner = HookRunner(train_hooks) if train_hooks else None
    eval_runner = HookRunner(eval_hooks) if eval_hooks else None
    listeners = ListenerRunner(train_spec.saving_listeners) if train_spec.saving_listeners \
        else None
    if listeners is not None:
        listeners.begin()
    result = core.train_and_evaluate(job, train_input, train_spec.max_steps or 0, eval_input,
                                     train_runner, eval_runner, listeners)
    if listeners is not None:
        listeners.end(result["train"]["global_step"])
    final = result["final_eval"]
    return (_metrics_dict(final) if final is not None else None), result["exports"]

