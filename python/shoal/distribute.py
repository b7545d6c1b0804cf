"""``tf.distribute`` for Estimator programs: the strategy given to ``RunConfig(train_distribute=)``
says how the cluster of TF_CONFIG shares the model (docs/cluster.md, "Strategies").

- ``MultiWorkerMirroredStrategy`` (also under ``experimental``): ``run.strategy all_reduce``. No
  parameter servers (TF_CONFIG lists none); every trainer holds a replica and each step's gradients
  are summed over a ring of the trainers.
- ``ParameterServerStrategy``: ``run.strategy parameter_server``, shoal's default (TF_CONFIG lists
  the ``ps``).
- ``experimental.HybridStrategy`` (shoal's own; TF has none): ``run.strategy hybrid``. The
  embedding tables on the ``ps`` of TF_CONFIG, the dense variables on every trainer, their
  gradients summed over a ring of the trainers as with ``MultiWorkerMirroredStrategy``.

``strategy.scope()`` is accepted (an Estimator program builds its model in ``model_fn``, where
the strategy already applies). Strategies for devices of one machine (``MirroredStrategy``,
``OneDeviceStrategy``, TPUs) are refused: shoal trains on CPU threads (``run.train_threads``).
"""

import contextlib
import json
import os
import types

__all__ = ["MultiWorkerMirroredStrategy", "ParameterServerStrategy", "HybridStrategy",
           "MirroredStrategy",
           "CollectiveCommunication", "CommunicationImplementation", "CommunicationOptions",
           "experimental"]


class CommunicationImplementation:
    """TF's collective implementations: shoal's ring is Gloo over TCP whatever is asked."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if timeout_seconds is not None and (not isinstance(timeout_seconds, (int, float))
                                            or timeout_seconds <= 0):
            raise ValueError(f"CommunicationOptions: timeout_seconds must be > 0, got "
                             f"{timeout_seconds!r}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


def _trainers():
    """Chief + workers of TF_CONFIG's cluster (1 without TF_CONFIG)."""
    text = os.environ.get("TF_CONFIG", "")
    cluster = (json.loads(text) if text.strip() else {}).get("cluster") or {}
    n = len(cluster.get("chief", [])) + len(cluster.get("master", [])) + \
        len(cluster.get("worker", []))
    return max(n, 1)


class _Strategy:
    run_strategy = None  # the job config's run.strategy

    @contextlib.contextmanager
    def scope(self):
        yield self

    def run_settings(self):
        """What the strategy sets in the job config's ``run`` section."""
        return {"strategy": self.run_strategy}


class MultiWorkerMirroredStrategy(_Strategy):
    """``tf.distribute.MultiWorkerMirroredStrategy``: ``run.strategy all_reduce``.
    ``communication_options.timeout_seconds`` becomes ``run.collective_timeout_secs``."""
    run_strategy = "all_reduce"

    def __init__(self, communication=None, cluster_resolver=None, communication_options=None):
        if cluster_resolver is not None:
            raise NotImplementedError("MultiWorkerMirroredStrategy: cluster_resolver is not "
                                      "supported; shoal's cluster comes from TF_CONFIG")
        self.communication_options = communication_options

    @property
    def num_replicas_in_sync(self):
        return _trainers()

    def run_settings(self):
        settings = super().run_settings()
        options = self.communication_options
        if options is not None and options.timeout_seconds is not None:
            settings["collective_timeout_secs"] = max(1, int(options.timeout_seconds))
        return settings


class ParameterServerStrategy(_Strategy):
    """``tf.distribute.experimental.ParameterServerStrategy``: ``run.strategy parameter_server``
    (shoal's default)."""
    run_strategy = "parameter_server"

    def __init__(self, cluster_resolver=None, variable_partitioner=None):
        self.variable_partitioner = variable_partitioner

    @property
    def num_replicas_in_sync(self):
        return _trainers()


class HybridStrategy(MultiWorkerMirroredStrategy):
    """shoal's ``run.strategy hybrid`` (no TF counterpart: HugeCTR's and Persia's layout): the
    embedding tables live on the parameter servers TF_CONFIG lists, the dense variables on every
    trainer, and each step's gradients are summed over a ring of the trainers (in lockstep, as
    ``MultiWorkerMirroredStrategy``; ``communication_options.timeout_seconds`` likewise)."""
    run_strategy = "hybrid"


class MirroredStrategy(_Strategy):
    """Refused: one machine's devices. shoal trains on CPU threads: ``run.train_threads``."""

    def __init__(self, devices=None, cross_device_ops=None):
        raise NotImplementedError(
            "MirroredStrategy (one machine's GPUs) is not supported: shoal trains on CPU threads "
            "(RunConfig has no setting for it; use run.train_threads in a YAML job) or on a "
            "cluster with MultiWorkerMirroredStrategy")


experimental = types.ModuleType("shoal.distribute.experimental", "tf.distribute.experimental")
experimental.MultiWorkerMirroredStrategy = MultiWorkerMirroredStrategy
experimental.ParameterServerStrategy = ParameterServerStrategy
experimental.HybridStrategy = HybridStrategy
experimental.CollectiveCommunication = CollectiveCommunication
experimental.CommunicationImplementation = CommunicationImplementation
experimental.CommunicationOptions = CommunicationOptions
