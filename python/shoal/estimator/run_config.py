"""``tf.estimator.RunConfig``: checkpoint and logging settings, and the cluster from TF_CONFIG."""

import json
import os

__all__ = ["RunConfig", "TaskType"]


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"




class RunConfig:
    """``tf.estimator.RunConfig``. TF's defaults: a checkpoint every 600 s unless
    ``save_checkpoints_steps`` is set, 5 kept, a progress line every 100 steps. ``session_config``
    is accepted and unused (shoal has no TF session). The cluster comes from ``TF_CONFIG``."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=None, session_config=None,
                 keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None, session_creation_timeout_secs=7200,
                 checkpoint_save_graph_def=True):
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_secs = 600
        for name, value in (("save_checkpoints_steps", save_checkpoints_steps),
                            ("save_checkpoints_secs", save_checkpoints_secs),
                            ("keep_checkpoint_max", keep_checkpoint_max),
                            ("log_step_count_steps", log_step_count_steps)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"RunConfig: {name} must be an integer >= 0, got {value!r}")
        if log_step_count_steps is not None and log_step_count_steps < 1:
            raise ValueError("RunConfig: log_step_count_steps must be >= 1")
        for name, value in (("device_fn", device_fn),
                            ("experimental_distribute", experimental_distribute)):
            if value is not None:
                raise NotImplementedError(f"RunConfig: {name} is not supported (shoal's cluster "
                                          "comes from TF_CONFIG: docs/python.md)")
        from shoal import distribute
        for name, value in (("train_distribute", train_distribute),
                            ("eval_distribute", eval_distribute)):
            if value is not None and not isinstance(value, distribute._Strategy):
                raise NotImplementedError(
                    f"RunConfig: {name}={value!r} is not supported: pass "
                    "tf.distribute.MultiWorkerMirroredStrategy() (all-reduce, no parameter "
                    "servers) or tf.distribute.experimental.ParameterServerStrategy() (docs/python.md)")
        # eval_distribute changes nothing: evaluation runs in the evaluator (or the chief).
        self.train_distribute = train_distribute
        self.eval_distribute = eval_distribute
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.session_config = session_config
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.log_step_count_steps = log_step_count_steps
        self.protocol = protocol
        self.session_creation_timeout_secs = session_creation_timeout_secs
        self._read_tf_config()

    def _read_tf_config(self):
        text = os.environ.get("TF_CONFIG", "")
        self.tf_config = text
        config = json.loads(text) if text.strip() else {}
        if not isinstance(config, dict):
            raise ValueError(f"TF_CONFIG must be a JSON object, got {text!r}")
        self.cluster_spec = config.get("cluster") or {}
        task = config.get("task") or {}
        self.task_type = task.get("type")
        self.task_id = int(task.get("index", 0))
        if self.cluster_spec and self.task_type is None:
            raise ValueError("TF_CONFIG has a cluster but no task: set task.type and task.index")
        self.num_ps_replicas = len(self.cluster_spec.get("ps", []))
        self.num_worker_replicas = len(self.cluster_spec.get("chief", [])) + \
            len(self.cluster_spec.get("worker", []))
        self.is_chief = not self.cluster_spec or self.task_type in ("chief", "master")
        self.global_id_in_cluster = 0
        if self.cluster_spec and self.task_type:
            self.master = ""
        self.evaluation_master = ""

    def run_section(self):
        """The job config's ``run`` section."""
        run = {"save_checkpoints_steps": self.save_checkpoints_steps or 0,
               "save_checkpoints_secs": self.save_checkpoints_secs or 0,
               "keep_checkpoint_max": self.keep_checkpoint_max,
               "log_step_count_steps": self.log_step_count_steps}
        if self.tf_random_seed is not None:
            run["seed"] = int(self.tf_random_seed)
        if self.train_distribute is not None:
            run.update(self.train_distribute.run_settings())
        return run

    def replace(self, **kwargs):
        """A copy with some settings changed (TF's RunConfig.replace)."""
        new = RunConfig.__new__(RunConfig)
        new.__dict__.update(self.__dict__)
        for k, v in kwargs.items():
            if k not in new.__dict__:
                raise ValueError(f"RunConfig.replace: unknown setting {k!r}")
            setattr(new, k, v)
        return new
