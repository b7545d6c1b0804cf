"""TF1's session-run hooks (``tf.estimator.SessionRunHook``, ``tf.train.*Hook``), called from
shoal's C++ training loop.

The engine calls ``begin``, ``after_create_session``, ``before_run``, ``after_run`` and ``end``
around every step, with the GIL taken only for those calls. There is no TF session: ``session``
and ``coord`` arguments are ``None``. What a hook can fetch through ``SessionRunArgs`` are the
step's named values: ``"loss"``, ``"global_step"`` (as TF, the value the step ran at),
``"examples"`` (this run's so far) and ``"batch_size"``; ``tf.train.get_global_step()`` and the
``loss`` of a canned model are those names too.
"""

import logging
import time

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "LoggingTensorHook", "StopAtStepHook", "NanTensorHook", "NanLossDuringTrainingError",
           "StepCounterHook", "FinalOpsHook", "CheckpointSaverListener", "get_global_step",
           "get_or_create_global_step"]

_log = logging.getLogger("shoal")

FETCHABLE = ("loss", "global_step", "examples", "batch_size")


class SessionRunHook:
    """Base class of hooks, as ``tf.estimator.SessionRunHook``."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):  # noqa: ARG002 (TF's signature)
        pass

    def before_run(self, run_context):  # noqa: ARG002
        return None

    def after_run(self, run_context, run_values):  # noqa: ARG002
        pass

    def end(self, session):  # noqa: ARG002
        pass


class SessionRunArgs:
    """What ``before_run`` asks for: ``fetches`` is a name, a list/tuple or a dict of names."""

    def __init__(self, fetches, feed_dict=None, options=None):
        if feed_dict:
            raise ValueError("SessionRunArgs: feed_dict is not supported: shoal's steps take "
                             "their inputs from the input_fn only")
        self.fetches = fetches
        self.feed_dict = feed_dict
        self.options = options


class SessionRunValues:
    def __init__(self, results, options=None, run_metadata=None):
        self.results = results
        self.options = options
        self.run_metadata = run_metadata


class SessionRunContext:
    """The context of one step: ``request_stop()`` ends training after it."""

    def __init__(self, original_args=None, session=None):
        self.original_args = original_args
        self.session = session
        self._stop_requested = False

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class _Named:
    """A value a hook can fetch by name (``tf.train.get_global_step()``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<shoal value {self.name!r}>"


def get_global_step(graph=None):  # noqa: ARG001
    """The global step, as a value hooks can fetch."""
    return _Named("global_step")


get_or_create_global_step = get_global_step


def _name_of(fetch):
    # A traced model_fn's tensors (shoal.graph) carry names too: its loss is "loss:0".
    name = fetch.name if isinstance(fetch, _Named) or hasattr(fetch, "trace") else fetch
    if isinstance(name, str):
        base = name.split(":")[0]
        if base in FETCHABLE:
            return base
    raise ValueError(f"a hook fetched {fetch!r}: shoal's steps give {', '.join(FETCHABLE)} "
                     "(a traced model_fn's loss is its 'loss'; other tensors of a model's graph "
                     "are not fetchable)")


def _check_fetches(fetches):
    if fetches is None or hasattr(fetches, "trace"):
        return  # a traced tensor: named once the model_fn returns, checked when fetched
    if isinstance(fetches, dict):
        for v in fetches.values():
            _check_fetches(v)
    elif isinstance(fetches, (list, tuple)):
        for v in fetches:
            _check_fetches(v)
    else:
        _name_of(fetches)


def _resolve(fetches, values):
    if fetches is None:
        return None
    if isinstance(fetches, dict):
        return {k: _resolve(v, values) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_resolve(v, values) for v in fetches)
    return values[_name_of(fetches)]


class HookRunner:
    """The dispatcher the engine calls: ``runner(event, info)`` runs the hooks and returns a stop
    reason (or None)."""

    def __init__(self, hooks):
        self.hooks = list(hooks)
        for h in self.hooks:
            if not isinstance(h, SessionRunHook) and not all(
                    hasattr(h, m) for m in ("begin", "before_run", "after_run", "end")):
                raise TypeError(f"hooks must be SessionRunHook instances, got {h!r}")
        self._fetches = []
        self._context = None

    def __call__(self, event, info):
        if event == "begin":
            for h in self.hooks:
                h.begin()
        elif event == "after_create_session":
            for h in self.hooks:
                h.after_create_session(None, None)
        elif event == "before_run":
            self._context = SessionRunContext()
            self._fetches = []
            for h in self.hooks:
                args = h.before_run(self._context)
                if args is not None:
                    _check_fetches(args.fetches)
                self._fetches.append(None if args is None else args.fetches)
        elif event == "after_run":
            context = self._context or SessionRunContext()
            # TF's global_step fetch is the step's own value, before its increment.
            values = dict(info)
            values["global_step"] = max(0, info["global_step"] - 1) \
                if info.get("mode") == "train" else info["global_step"]
            stoppers = []
            for h, fetches in zip(self.hooks, self._fetches or [None] * len(self.hooks)):
                already = context.stop_requested
                h.after_run(context, SessionRunValues(_resolve(fetches, values)))
                if context.stop_requested and not already:
                    stoppers.append(type(h).__name__)
            if context.stop_requested:
                return f"stop requested by a hook ({', '.join(stoppers) or 'before_run'})"
        elif event == "end":
            for h in self.hooks:
                h.end(None)
        return None


class ListenerRunner:
    """The engine's saving listener: ``runner(event, global_step)`` calls every listener's
    ``before_save`` / ``after_save`` (``session`` is None); ``begin()`` and ``end(step)`` are
    called by the estimator around the run."""

    def __init__(self, listeners):
        self.listeners = list(listeners)
        for listener in self.listeners:
            if not all(hasattr(listener, m) for m in ("before_save", "after_save")):
                raise TypeError(f"saving_listeners must be CheckpointSaverListener instances, "
                                f"got {listener!r}")

    def __call__(self, event, global_step):
        for listener in self.listeners:
            getattr(listener, event)(None, global_step)

    def begin(self):
        for listener in self.listeners:
            listener.begin()

    def end(self, global_step):
        for listener in self.listeners:
            listener.end(None, global_step)


# ---- ready hooks ----

class LoggingTensorHook(SessionRunHook):
    """``tf.train.LoggingTensorHook``: logs the named values every N steps or seconds."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        if (every_n_iter is None) == (every_n_secs is None) and not at_end:
            raise ValueError("LoggingTensorHook: exactly one of every_n_iter and every_n_secs "
                             "should be provided")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"LoggingTensorHook: invalid every_n_iter={every_n_iter}")
        if not isinstance(tensors, dict):
            tensors = {(t.name if isinstance(t, _Named) else t): t for t in tensors}
        _check_fetches(tensors)
        self._tensors = tensors
        self._every_n_iter = every_n_iter
        self._every_n_secs = every_n_secs
        self._at_end = at_end
        self._formatter = formatter
        self._iter = 0
        self._last_time = None
        self._last = None

    def _due(self):
        if self._every_n_iter is not None:
            return self._iter % self._every_n_iter == 0
        if self._every_n_secs is not None:
            return self._last_time is None or time.time() - self._last_time >= self._every_n_secs
        return False

    def before_run(self, run_context):
        return SessionRunArgs(self._tensors)

    def after_run(self, run_context, run_values):
        self._last = run_values.results
        if self._due():
            self._log(run_values.results)
            self._last_time = time.time()
        self._iter += 1

    def end(self, session):
        if self._at_end and self._last is not None:
            self._log(self._last)

    def _log(self, values):
        if self._formatter is not None:
            _log.info(self._formatter(values))
        else:
            _log.info(", ".join(f"{k} = {v}" for k, v in values.items()))


class StopAtStepHook(SessionRunHook):
    """``tf.train.StopAtStepHook``: stops after ``num_steps`` more steps, or at ``last_step``."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("StopAtStepHook: exactly one of num_steps and last_step must be "
                             "provided")
        if num_steps is not None and num_steps < 0:
            raise ValueError("StopAtStepHook: num_steps must be >= 0")
        self._num_steps = num_steps
        self._last_step = last_step

    def before_run(self, run_context):
        return SessionRunArgs("global_step")

    def after_run(self, run_context, run_values):
        step = run_values.results + 1  # after this step
        if self._last_step is None:
            self._last_step = step - 1 + self._num_steps
        if step >= self._last_step:
            run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """``tf.train.NanTensorHook`` on the loss: raises (or stops) when it is NaN."""

    def __init__(self, loss_tensor="loss", fail_on_nan_loss=True):
        self._fail = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs("loss")

    def after_run(self, run_context, run_values):
        if run_values.results != run_values.results:  # NaN
            if self._fail:
                raise NanLossDuringTrainingError
            _log.warning("NaN loss: stopping training")
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """``tf.train.StepCounterHook``: logs global steps per second."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        self._every = every_n_steps or 100
        self._start = None
        self._start_step = None

    def before_run(self, run_context):
        return SessionRunArgs("global_step")

    def after_run(self, run_context, run_values):
        step = run_values.results
        now = time.time()
        if self._start is None:
            self._start, self._start_step = now, step
        elif step - self._start_step >= self._every:
            _log.info("global_step/sec: %.4g", (step - self._start_step) / (now - self._start))
            self._start, self._start_step = now, step


class FinalOpsHook(SessionRunHook):
    """``tf.train.FinalOpsHook``: ``final_ops_values`` holds the named values of the last step."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        _check_fetches(final_ops)
        self._ops = final_ops
        self.final_ops_values = None

    def before_run(self, run_context):
        return SessionRunArgs(self._ops)

    def after_run(self, run_context, run_values):
        self.final_ops_values = run_values.results


class CheckpointSaverListener:
    """``tf.train.CheckpointSaverListener``: ``before_save`` and ``after_save`` around every
    checkpoint training saves (by RunConfig's steps or seconds, and the final one), ``begin`` and
    ``end`` around the run. ``session`` is None."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass
