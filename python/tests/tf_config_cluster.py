"""Runs one command per role of a TF_CONFIG cluster (a ps, the chief, a worker and the evaluator
on loopback), as TF users' run-dist.sh does, and collects each role's exit code and log."""

import json
import os
import secrets
import socket
import subprocess
import time


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def run_cluster(command, log_dir, cwd=None, deadline_secs=240, with_ps=True):
    """Starts `command` (a list) once per role with its TF_CONFIG and one SHOAL_JOB_SECRET;
    returns ({role: exit code}, {role: log text}) once all exit or the deadline passes (then the
    survivors are killed). Without `with_ps`, TF_CONFIG lists no ps (MultiWorkerMirroredStrategy)
    and no ps process starts."""
    ps, chief, worker = (f"127.0.0.1:{p}" for p in free_ports(3))
    # As in TF, the evaluator is not in "cluster": it only names itself in "task".
    cluster = {"ps": [ps], "chief": [chief], "worker": [worker]}
    if not with_ps:
        del cluster["ps"]
    env = dict(os.environ, SHOAL_JOB_SECRET=secrets.token_hex(16))
    procs, logs = {}, {}
    for task in ("ps", "chief", "worker", "evaluator") if with_ps else \
            ("chief", "worker", "evaluator"):
        tf_config = {"cluster": cluster, "task": {"type": task, "index": 0}}
        logs[task] = open(os.path.join(log_dir, f"{task}.log"), "w+")
        procs[task] = subprocess.Popen(
            command, cwd=cwd, env=dict(env, TF_CONFIG=json.dumps(tf_config)), stdout=logs[task],
            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + deadline_secs
    codes = {}
    try:
        for task, proc in procs.items():
            codes[task] = proc.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    texts = {}
    for task, log in logs.items():
        log.seek(0)
        texts[task] = log.read()
        log.close()
    return codes, texts
