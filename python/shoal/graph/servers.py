"""TF1's cluster of a low-level program: ``tf.train.ClusterSpec``, ``tf.train.Server`` (a ps
serves on ``join()`` until the job ends; a worker's ``target`` makes its MonitoredTrainingSession a
trainer of the job), and ``tf.device`` / ``replica_device_setter``, which shoal accepts and ignores
(it places variables on the ps itself). As in TF, worker 0 is the chief when the cluster names
none (docs/porting.md, "Sessions and servers").
"""

import json
import logging
import os
import tempfile

from shoal.graph.model import GRAPH_VERSION

_log = logging.getLogger("shoal")

__all__ = ["ClusterSpec", "Server", "replica_device_setter", "device"]


def _core():
    from shoal import _core as core_module
    return core_module


class device:  # noqa: N801 (TF's name)
    """``tf.device``: placement is shoal's (variables on the parameter servers, ops on the
    trainer): accepted and ignored."""

    def __init__(self, device_name_or_function):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """Returns a device function that shoal ignores: it places variables on the ps itself."""
    return lambda op: worker_device


class ClusterSpec:
    """``tf.train.ClusterSpec({"ps": [...], "worker": [...]})``."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError(f"ClusterSpec takes a dict of job name -> addresses, got {cluster!r}")
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, dict):
                tasks = [tasks[i] for i in sorted(tasks)]
            self._jobs[str(job)] = [str(t) for t in tasks]

    def as_dict(self):
        return {k: list(v) for k, v in self._jobs.items()}

    @property
    def jobs(self):
        return list(self._jobs)

    def num_tasks(self, job_name):
        return len(self._jobs[job_name])

    def job_tasks(self, job_name):
        return list(self._jobs[job_name])

    def task_address(self, job_name, task_index):
        return self._jobs[job_name][task_index]


_SERVERS = {}


class Server:
    """``tf.train.Server``: this task of the cluster. A ps serves on ``join()``; a worker's
    ``target`` goes to ``MonitoredTrainingSession(master=...)``."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True):
        cluster = server_or_cluster_def
        if isinstance(cluster, dict):
            cluster = ClusterSpec(cluster)
        if not isinstance(cluster, ClusterSpec):
            raise TypeError(f"Server takes a tf.train.ClusterSpec, got {cluster!r}")
        jobs = cluster.as_dict()
        if job_name is None:
            raise ValueError("Server: job_name is required (ps or worker)")
        if job_name not in jobs:
            raise ValueError(f"Server: job_name {job_name!r} is not in the cluster's jobs "
                             f"{sorted(jobs)}")
        task_index = int(task_index or 0)
        if not 0 <= task_index < len(jobs[job_name]):
            raise ValueError(f"Server: task_index {task_index} is out of range for job "
                             f"{job_name!r} ({len(jobs[job_name])} tasks)")
        self.cluster, self.job_name, self.task_index = cluster, job_name, task_index
        self.tf_config = _shoal_tf_config(jobs, job_name, task_index)
        self.target = f"grpc://{jobs[job_name][task_index]}"
        _SERVERS[self.target] = self

    @property
    def server_def(self):
        return self.tf_config

    def start(self):
        pass

    def join(self):
        """A ps serves its parameter shard until the job ends, then returns (shoal's lifecycle:
        the ps exits with the job). A worker's join waits for nothing."""
        role = self.tf_config["task"]["type"]
        if role != "ps":
            _log.warning("Server.join() on %s: shoal's trainers run in their session; nothing "
                         "to join", role)
            return
        job = {"model_dir": tempfile.mkdtemp(prefix="shoal-ps-"),
               "model": {"type": "graph", "graph": _EMPTY_GRAPH},
               "features": {"numeric": [{"name": "x"}]}}
        _run_member(_core().Job(json.dumps(job), os.path.join(os.getcwd(), "ps.json"), []),
                    self.tf_config, None, None)


_EMPTY_GRAPH = {"version": GRAPH_VERSION, "variables": [],
                "modes": {"infer": {"nodes": [{"op": "feature", "inputs": [], "name": "x",
                                               "shape": [-1]}],
                                    "predictions": [["x", 0]]}}}


def _shoal_tf_config(jobs, job_name, task_index):
    """TF_CONFIG as shoal reads it: TF1's worker 0 is the chief when the cluster names none."""
    cluster = {k: list(v) for k, v in jobs.items()}
    if "master" in cluster:
        cluster["chief"] = cluster.pop("master")
        job_name = "chief" if job_name == "master" else job_name
    if "ps" not in cluster or not cluster["ps"]:
        raise ValueError("ClusterSpec: shoal's parameter-server training needs a 'ps' job")
    unknown = set(cluster) - {"ps", "worker", "chief", "evaluator"}
    if unknown:
        raise ValueError(f"ClusterSpec: unknown jobs {sorted(unknown)}: shoal's are ps, worker, "
                         "chief (or master) and evaluator")
    if "chief" not in cluster:
        workers = cluster.get("worker", [])
        if not workers:
            raise ValueError("ClusterSpec: no worker to train")
        cluster["chief"] = workers[:1]
        cluster["worker"] = workers[1:]
        if job_name == "worker":
            job_name, task_index = ("chief", 0) if task_index == 0 else ("worker", task_index - 1)
    if not cluster.get("worker"):
        cluster.pop("worker", None)
    return {"cluster": cluster, "task": {"type": job_name, "index": task_index}}


def _run_member(job, tf_config, dispatch, core_input):
    secret = os.environ.get("SHOAL_JOB_SECRET", "")
    if len(secret) < 16:
        from shoal import errors
        raise errors.InvalidArgumentError(
            "tf.train.Server: no job secret (or shorter than 16 bytes): set SHOAL_JOB_SECRET to "
            "the same value in every process of the job; shoal authenticates every connection")
    return _core().run_member(job, json.dumps(tf_config), secret,
                              os.environ.get("SHOAL_JOB_ID", ""), dispatch, None, core_input)
