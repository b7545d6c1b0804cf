"""shoal.spark on a real YARN: Hadoop's MiniDFSCluster and MiniYARNCluster on loopback
(`scripts/hdfs-minicluster.sh start DIR --yarn`: a NameNode, a DataNode, a ResourceManager and a
NodeManager that launches real containers), and applications submitted as users submit them:
`spark-submit --master yarn` with HADOOP_CONF_DIR naming the cluster, Spark's jars from pyspark's
own (`spark.yarn.jars=local:...`), and the system's python3 on the driver and in the containers,
which get pyspark from Spark itself (pyspark.zip) and shoal from --py-files.

One cluster serves the whole file (a module fixture, started in the test's temporary directory
and stopped at its end, even on failure; it stops by itself after an hour).

    SHOAL_BIN=build/shoal $(SHOAL_VENV=~/.cache/shoal/venv-spark \\
      SHOAL_REQUIREMENTS=scripts/requirements-spark.txt scripts/python-env.sh) \\
      -m pytest -q python/tests/spark_yarn_test.py
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections import namedtuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOAL = os.path.abspath(os.environ.get("SHOAL_BIN", os.path.join(REPO, "build", "shoal")))
SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")
MINICLUSTER = os.path.join(REPO, "scripts", "hdfs-minicluster.sh")
# The containers' and the drivers' Python: the system's, with nothing installed for Spark.
SYSTEM_PYTHON = "/usr/bin/python3"

Hadoop = namedtuple("Hadoop", "dir conf rpc_port http_port rm_web")
Submitted = namedtuple("Submitted", "returncode stdout stderr app_id elapsed seen")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("yarn")


@pytest.fixture(scope="module")
def hadoop(workdir):
    directory = workdir / "hadoop"
    try:
        start = subprocess.run([MINICLUSTER, "start", str(directory), "--yarn"],
                               capture_output=True, text=True, timeout=600)
        assert start.returncode == 0, start.stderr[-3000:]
        address, http = (directory / "ready").read_text().split()
        _, web = (directory / "ready.yarn").read_text().split()
        yield Hadoop(directory, directory / "conf", int(address.rsplit(":", 1)[1]), int(http),
                     f"http://{web}")
    finally:
        subprocess.run([MINICLUSTER, "stop", str(directory)], capture_output=True, timeout=120)


def spark_home():
    import pyspark  # noqa: PLC0415 - only the test's own interpreter has it
    return os.path.dirname(pyspark.__file__)


def rest(hadoop, path):
    with urllib.request.urlopen(f"{hadoop.rm_web}{path}", timeout=30) as answer:
        return json.load(answer)


def sample_processes(seen, marker):
    """Adds every process's command line to seen["cmdlines"], and the environment of those whose
    command line holds `marker` to seen["environ"]."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ")
            seen["cmdlines"].add(cmdline)
            if marker and marker in cmdline:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    seen["environ"][cmdline] = f.read()
        except OSError:
            continue


def spark_submit(hadoop, run_dir, deploy_mode, args, marker=None, timeout=420):
    """`spark-submit --master yarn --deploy-mode MODE ARGS...` as a user runs it, with the Hadoop
    client configuration of the minicluster; samples the processes while it runs."""
    run_dir.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    command = [SPARK_SUBMIT, "--master", "yarn", "--deploy-mode", deploy_mode,
               # Spark's jars are on every node already (here: pyspark's); without this, each
               # submission uploads all 250 of them to HDFS.
               "--conf", f"spark.yarn.jars=local:{home}/jars/*",
               "--conf", f"spark.pyspark.python={SYSTEM_PYTHON}",
               "--conf", "spark.yarn.maxAppAttempts=1",
               "--conf", "spark.ui.port=0", *args]
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env.update(SPARK_HOME=home, HADOOP_CONF_DIR=str(hadoop.conf), YARN_CONF_DIR=str(hadoop.conf),
               PYSPARK_PYTHON=SYSTEM_PYTHON, SPARK_LOCAL_IP="127.0.0.1")
    seen = {"cmdlines": set(), "environ": {}}
    start = time.monotonic()
    with open(run_dir / "stdout", "wb") as out, open(run_dir / "stderr", "wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=run_dir)
        try:
            while process.poll() is None:
                sample_processes(seen, marker.encode() if marker else None)
                time.sleep(0.2)
                if time.monotonic() - start > timeout:
                    pytest.fail(f"spark-submit in {run_dir} still running after {timeout} s")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    stdout = (run_dir / "stdout").read_text(errors="replace")
    stderr = (run_dir / "stderr").read_text(errors="replace")
    found = re.search(r"application_\d+_\d+", stdout + stderr)
    return Submitted(process.returncode, stdout, stderr, found.group(0) if found else None,
                     time.monotonic() - start, seen)


def app_containers(hadoop, app_id):
    """The container log directories of an application on the NodeManager."""
    return sorted(hadoop.dir.glob(f"yarn/shoal-yarn/*/shoal-yarn-logDir-nm-0_0/{app_id}/"
                                  "container_*"))


SQUARES = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
total = sc.parallelize(range(1000), 2).map(lambda x: x * x).sum()
pythons = sorted(set(sc.parallelize(range(2), 2).map(lambda _: __import__("sys").executable).collect()))
print("RESULT", total, pythons, flush=True)
spark.stop()
"""


def test_the_minicluster_runs_a_pyspark_application_on_yarn(hadoop, workdir):
    """The cluster as scripts/hdfs-minicluster.sh --yarn makes it: one NodeManager with the
    memory it was given, the two queues; and a PySpark application in client mode whose two
    executors are YARN containers running the system's python3."""
    nodes = rest(hadoop, "/ws/v1/cluster/nodes")["nodes"]["node"]
    assert [(n["state"], n["availMemoryMB"] + n["usedMemoryMB"]) for n in nodes] == [
        ("RUNNING", 8192)], nodes
    scheduler = rest(hadoop, "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    queues = {q["queueName"]: q["capacity"] for q in scheduler["queues"]["queue"]}
    assert queues == {"default": 75.0, "small": 25.0}, queues

    run_dir = workdir / "squares"
    run_dir.mkdir()
    (run_dir / "squares.py").write_text(SQUARES)
    result = spark_submit(hadoop, run_dir, "client",
                          ["--num-executors", "2", "--executor-cores", "1",
                           "--executor-memory", "512m", "--conf", "spark.yarn.am.memory=256m",
                           str(run_dir / "squares.py")])
    assert result.returncode == 0, result.stderr[-5000:]
    assert f"RESULT 332833500 ['{SYSTEM_PYTHON}']" in result.stdout, result.stdout[-2000:]
    app = rest(hadoop, f"/ws/v1/cluster/apps/{result.app_id}")["app"]
    assert (app["state"], app["finalStatus"], app["queue"]) == ("FINISHED", "SUCCEEDED",
                                                                "root.default"), app
    # The application master and two executors, each a container of its own.
    assert len(app_containers(hadoop, result.app_id)) == 3, app_containers(hadoop, result.app_id)

