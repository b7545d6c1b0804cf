"""``train_and_evaluate`` under a ``TF_CONFIG`` cluster: this process becomes its task's member.

Every process of the job runs the same script (TF's run-dist.sh way); ``TF_CONFIG`` names its
task, and ``SHOAL_JOB_SECRET`` (the same in every process, >= 16 bytes) authenticates it. The
member is the C++ runtime of ``shoal run`` (docs/cluster.md): the parameter servers serve until
the job ends, the chief and workers lease data tasks of the train input (exact epochs, files handed
to whoever asks), the chief completes the job (final pushes, final checkpoint, final evaluation,
exporters), the evaluator evaluates each checkpoint and the final one, and every member exits
when the job ends. A killed member restarted with the same TF_CONFIG rejoins.

Inputs must be files (tf.data datasets): an in-memory numpy/pandas input lives in one process
and cannot be handed out as data tasks. A ``from_generator`` of text lines is written under
MODEL_DIR/inputs/ (which every member sees: the model_dir is shared), and the chief hands the
chief's file out as data tasks: the generator's lines are the data set, read exactly
``num_epochs`` times across the cluster (not once per worker, as in TF).
"""

import json
import logging
import os

from shoal import errors
from shoal.estimator.inputs import TableInput

_log = logging.getLogger("shoal")

_ROLES = {"ps": "ps", "chief": "chief", "master": "chief", "worker": "worker",
          "evaluator": "evaluator"}


def _tf_config_for_shoal(text):
    """TF_CONFIG with TF's "master" spelled "chief" (shoal's name for it)."""
    config = json.loads(text)
    cluster = config.get("cluster", {})
    if "master" in cluster:
        if "chief" in cluster:
            raise ValueError("TF_CONFIG has both a master and a chief")
        cluster["chief"] = cluster.pop("master")
    task = config.get("task", {})
    if task.get("type") == "master":
        task["type"] = "chief"
    return json.dumps(config)


def run_member(estimator, train_spec, eval_spec):
    from shoal.estimator import ModeKeys, _core, _metrics_dict  # noqa: F401
    config = estimator.config
    role = _ROLES.get(config.task_type)
    if role is None:
        raise ValueError(f"TF_CONFIG: unknown task type {config.task_type!r}: shoal's are ps, "
                         "chief (or master), worker and evaluator")
    secret = os.environ.get("SHOAL_JOB_SECRET", "")
    sections = {}
    label = None
    if "://" not in estimator.model_dir:
        estimator._generator_dir = os.path.join(estimator.model_dir, "inputs",
                                                f"{role}-{config.task_id}")
        os.makedirs(estimator._generator_dir, exist_ok=True)
    for spec, mode, which in ((train_spec, ModeKeys.TRAIN, "train"),
                              (eval_spec, ModeKeys.EVAL, "eval")):
        core_input, label_name, section, raw = estimator._call_input(spec.input_fn, mode, which)
        shared = getattr(raw, "generated_in", None) is not None and \
            raw.generated_in == getattr(estimator, "_generator_dir", None)
        if isinstance(raw, TableInput) or (getattr(raw, "generated_here", False) and not shared):
            raise ValueError(
                f"{getattr(raw, 'name', 'from_generator')} in a cluster: an in-memory input "
                "cannot be split into data tasks; "
                "read files with tf.data (make_csv_dataset, TFRecordDataset) in a cluster")
        sections.update(section)
        if which == "train":
            label = label_name
    if eval_spec.hooks and role == "evaluator":
        _log.warning("EvalSpec hooks are not run by a cluster's evaluator yet (they run in a "
                     "local train_and_evaluate)")
    job = estimator._job(label, sections, eval_spec.eval_section(), train_spec.max_steps)
    if len(secret) < 16:
        raise errors.InvalidArgumentError(
            "no job secret (or shorter than 16 bytes): set SHOAL_JOB_SECRET to the same value in "
            "every process of the job (`shoal launch --python` creates one)")
    _log.info("TF_CONFIG: running as %s:%d of the cluster", role, config.task_id)
    from shoal.estimator.hooks import HookRunner, ListenerRunner
    hooks = HookRunner(train_spec.hooks) if train_spec.hooks and role in ("chief", "worker") \
        else None
    listeners = ListenerRunner(train_spec.saving_listeners) \
        if train_spec.saving_listeners and role == "chief" else None
    if listeners is not None:
        listeners.begin()
    _core().run_member(job, _tf_config_for_shoal(config.tf_config), secret,
                       os.environ.get("SHOAL_JOB_ID", ""), hooks, listeners)
    if role != "chief":
        return None, None
    if listeners is not None:
        listeners.end(_step_of_summary(estimator.model_dir))
    summary_path = os.path.join(estimator.model_dir, "summary.json")
    if not os.path.exists(summary_path):
        return None, None
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    metrics = summary.get("metrics") or None
    if metrics is not None:
        metrics = _metrics_dict({"metrics": metrics, "global_step": summary["global_step"]})
    return metrics, summary.get("exports", [])


def _step_of_summary(model_dir):
    try:
        with open(os.path.join(model_dir, "summary.json"), encoding="utf-8") as f:
            return json.load(f).get("global_step", 0)
    except (OSError, ValueError):
        return 0
