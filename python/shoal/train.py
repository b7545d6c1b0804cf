"""``tf.train`` (TF1): the optimizers the canned estimators take, the session-run hooks, and the
low-level program's cluster and sessions (``ClusterSpec``, ``Server``: shoal.graph.servers;
``MonitoredTrainingSession``, ``Saver``: shoal.graph.session).

An optimizer object here only carries its hyper-parameters to the engine's optimizer of the same
name (docs/config.md, "optimizer"); the update rules are TF's (docs/embedding.md has the
formulas). Arguments the engine cannot honour are refused, never ignored.
"""

from shoal.estimator.hooks import (CheckpointSaverListener, FinalOpsHook,  # noqa: F401
                                   LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook,
                                   SessionRunArgs, SessionRunContext, SessionRunHook,
                                   SessionRunValues, StepCounterHook, StopAtStepHook,
                                   get_global_step, get_or_create_global_step)

from shoal.graph.servers import ClusterSpec, Server, replica_device_setter  # noqa: F401
from shoal.graph.session import MonitoredTrainingSession, Saver, latest_checkpoint  # noqa: F401

__all__ = ["ClusterSpec", "Server", "replica_device_setter", "MonitoredTrainingSession", "Saver",
           "latest_checkpoint", "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdagradOptimizer",
           "AdamOptimizer", "FtrlOptimizer", "SessionRunHook", "SessionRunArgs",
           "SessionRunContext", "SessionRunValues", "LoggingTensorHook", "StopAtStepHook",
           "NanTensorHook", "StepCounterHook", "FinalOpsHook", "CheckpointSaverListener",
           "NanLossDuringTrainingError", "get_global_step", "get_or_create_global_step"]


def _positive(where, name, value):
    if not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{where}: {name} must be a positive number, got {value!r}")
    return float(value)


def _non_negative(where, name, value):
    if not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{where}: {name} must be >= 0, got {value!r}")
    return float(value)


class Optimizer:
    """Base of the optimizers: ``config()`` is the job config's optimizer section."""

    def __init__(self, use_locking, name):
        if use_locking:
            raise ValueError(f"{type(self).__name__}: use_locking is not supported (shoal's "
                             "parameter servers apply every update atomically)")
        self._name = name

    def config(self):
        raise NotImplementedError

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """Inside a traced model_fn: the train_op. The engine applies this optimizer's update
        to every variable of the model (and increments the global step) each step."""
        from shoal.graph.model import minimize
        return minimize(self, loss, global_step, var_list, gate_gradients, aggregation_method,
                        colocate_gradients_with_ops, name, grad_loss)


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self.learning_rate = _positive(type(self).__name__, "learning_rate", learning_rate)

    def config(self):
        return {"name": "sgd", "learning_rate": self.learning_rate}


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self.learning_rate = _positive(type(self).__name__, "learning_rate", learning_rate)
        self.momentum = _non_negative(type(self).__name__, "momentum", momentum)
        self.use_nesterov = bool(use_nesterov)

    def config(self):
        return {"name": "momentum", "learning_rate": self.learning_rate,
                "momentum": self.momentum, "use_nesterov": self.use_nesterov}


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        super().__init__(use_locking, name)
        self.learning_rate = _positive(type(self).__name__, "learning_rate", learning_rate)
        self.initial_accumulator_value = _positive(type(self).__name__,
                                                   "initial_accumulator_value",
                                                   initial_accumulator_value)

    def config(self):
        return {"name": "adagrad", "learning_rate": self.learning_rate,
                "initial_accumulator_value": self.initial_accumulator_value}


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        where = type(self).__name__
        self.learning_rate = _positive(where, "learning_rate", learning_rate)
        self.beta1 = _non_negative(where, "beta1", beta1)
        self.beta2 = _non_negative(where, "beta2", beta2)
        self.epsilon = _positive(where, "epsilon", epsilon)

    def config(self):
        return {"name": "adam", "learning_rate": self.learning_rate, "beta1": self.beta1,
                "beta2": self.beta2, "epsilon": self.epsilon}


class FtrlOptimizer(Optimizer):
    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        super().__init__(use_locking, name)
        where = type(self).__name__
        if beta:
            raise ValueError(f"{where}: beta is not supported")
        if not isinstance(learning_rate_power, (int, float)) or learning_rate_power > 0:
            raise ValueError(f"{where}: learning_rate_power must be <= 0, got "
                             f"{learning_rate_power!r}")
        self.learning_rate = _positive(where, "learning_rate", learning_rate)
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = _non_negative(where, "initial_accumulator_value",
                                                       initial_accumulator_value)
        self.l1 = _non_negative(where, "l1_regularization_strength", l1_regularization_strength)
        self.l2 = _non_negative(where, "l2_regularization_strength", l2_regularization_strength)
        self.l2_shrinkage = _non_negative(where, "l2_shrinkage_regularization_strength",
                                          l2_shrinkage_regularization_strength)

    def config(self):
        return {"name": "ftrl", "learning_rate": self.learning_rate,
                "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value, "l1": self.l1,
                "l2": self.l2, "l2_shrinkage": self.l2_shrinkage}
