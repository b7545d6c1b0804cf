"""`shoal train` and `shoal evaluate` with everything on a real HDFS: the Titanic CSV and the job
config uploaded to HDFS (the config's data path is relative to it), model_dir on hdfs://
(checkpoints, TensorBoard events, the export); then the files are checked through WebHDFS directly,
not through shoal. Also `shoal doctor` against the cluster, and a permission error.

The cluster is the Hadoop minicluster of the hdfs_minicluster ctest fixture
(shoal/io/CMakeLists.txt); its ready file comes from $SHOAL_TEST_HDFS_READY_FILE, the binary from
$SHOAL_BIN. By hand:

    scripts/hdfs-minicluster.sh start /tmp/hdfs
    SHOAL_BIN=build/shoal SHOAL_TEST_HDFS_READY_FILE=/tmp/hdfs/ready \\
        $(scripts/python-env.sh) -m pytest -q shoal/tools/hdfs_job_test.py
    scripts/hdfs-minicluster.sh stop /tmp/hdfs

Reads the Titanic CSV in ../shared/data/titanic/ beside the checkout; skips without it.
"""
import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections import namedtuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TITANIC = os.path.join(REPO, "..", "shared", "data", "titanic", "train.csv")
USER = "trainer"  # not the HDFS superuser (the OS user that started the cluster)
EPOCHS, SAVE_STEPS = 10, 50


class WebHdfs:
    """The few WebHDFS calls the test needs, with urllib: an independent check of what shoal
    wrote."""

    def __init__(self, http_port, user):
        self.base = f"http://127.0.0.1:{http_port}/webhdfs/v1"
        self.user = user

    def url(self, path, op, **params):
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        return f"{self.base}{urllib.parse.quote(path)}?{query}"

    def call(self, method, path, op, data=None, **params):
        request = urllib.request.Request(self.url(path, op, **params), data=data, method=method)
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def mkdirs(self, path):
        assert self.call("PUT", path, "MKDIRS")["boolean"]

    def create(self, path, data):
        location = self.call("PUT", path, "CREATE", overwrite="true", noredirect="true")["Location"]
        request = urllib.request.Request(location, data=data, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 201

    def status(self, path):
        try:
            return self.call("GET", path, "GETFILESTATUS")["FileStatus"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def list(self, path):
        return sorted(s["pathSuffix"] for s in
                      self.call("GET", path, "LISTSTATUS")["FileStatuses"]["FileStatus"])

    def read(self, path):
        with urllib.request.urlopen(self.url(path, "OPEN"), timeout=60) as answer:  # follows 307
            return answer.read()

    def read_json(self, path):
        return json.loads(self.read(path))


Cluster = namedtuple("Cluster", "rpc_port http_port env")


def minicluster(user):
    """The hdfs_minicluster fixture's cluster, with the environment that makes shoal reach it as
    `user` (fs_hdfs_test.py uses it too)."""
    ready = os.environ.get("SHOAL_TEST_HDFS_READY_FILE")
    if not ready or not os.path.exists(ready):
        pytest.fail("set SHOAL_TEST_HDFS_READY_FILE to the ready file of "
                    "scripts/hdfs-minicluster.sh (ctest's hdfs_minicluster fixture does)")
    with open(ready) as f:
        address, http = f.read().split()
    rpc = int(address.split(":")[1])
    env = {**os.environ, "SHOAL_HDFS_HTTP_PORTS": f"{rpc}:{http}", "HADOOP_USER_NAME": user}
    env.pop("SHOAL_WEBHDFS_PORT", None)
    return Cluster(rpc, int(http), env)


@pytest.fixture(scope="module")
def cluster():
    return minicluster(USER)


@pytest.fixture(scope="module")
def shoal(cluster):
    path = os.environ.get("SHOAL_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")

    def run(*args, env=None):
        return subprocess.run([path, *map(str, args)], capture_output=True, text=True,
                              timeout=600, env=env or cluster.env)
    return run


def printed_metrics(stdout):
    """The `  name   0.1234` lines of train's and evaluate's output."""
    return dict(re.findall(r"^  (\S+) +(-?\d+\.\d{4})$", stdout, re.MULTILINE))


Trained = namedtuple("Trained", "hdfs root uri model_dir config train evaluate summary")


@pytest.fixture(scope="module")
def trained(cluster, shoal):
    if not os.path.exists(TITANIC):
        pytest.skip(f"needs the Titanic CSV at {os.path.normpath(TITANIC)}")
    hdfs = WebHdfs(cluster.http_port, USER)
    root = f"/shoal-hdfs-job-{os.getpid()}"
    uri = f"hdfs://127.0.0.1:{cluster.rpc_port}{root}"
    hdfs.mkdirs(f"{root}/data")
    with open(TITANIC, "rb") as f:
        hdfs.create(f"{root}/data/train.csv", f.read())
    with open(os.path.join(REPO, "examples", "titanic", "config.yaml")) as f:
        config = f.read()
    assert config.count("../../../shared/data/titanic/train.csv") == 2
    config = config.replace("../../../shared/data/titanic/train.csv", "data/train.csv")
    hdfs.create(f"{root}/config.yaml", config.encode())

    model_dir = f"{uri}/model"
    overrides = ["--model-dir", model_dir,
                 "--set", f"input.train.num_epochs={EPOCHS}",
                 "--set", f"run.save_checkpoints_steps={SAVE_STEPS}"]
    train = shoal("train", f"{uri}/config.yaml", *overrides)
    assert train.returncode == 0, train.stdout + train.stderr
    summary = hdfs.read_json(f"{root}/model/summary.json")
    hdfs.call("DELETE", f"{root}/model/eval/metrics.json", "DELETE")
    evaluate = shoal("evaluate", f"{uri}/config.yaml", *overrides)
    assert evaluate.returncode == 0, evaluate.stdout + evaluate.stderr
    yield Trained(hdfs, root, uri, model_dir, f"{uri}/config.yaml", train, evaluate, summary)
    hdfs.call("DELETE", root, "DELETE", recursive="true")


def test_train_on_hdfs_reaches_the_target_and_reports_hdfs_paths(trained):
    summary = trained.summary
    rows = sum(1 for _ in open(TITANIC)) - 1
    final_step = summary["global_step"]
    assert final_step > 2 * SAVE_STEPS
    assert summary["stop_reason"] == "input exhausted"
    assert summary["epochs_completed"] == EPOCHS
    assert summary["checkpoint"] == f"{trained.model_dir}/ckpt-{final_step}"
    assert summary["metrics"]["accuracy"] > 0.75, summary["metrics"]
    # export/final/<version>: unix seconds of the export.
    assert re.fullmatch(rf"{re.escape(trained.model_dir)}/export/final/\d+",
                        summary["export_path"]), summary["export_path"]
    assert printed_metrics(trained.train.stdout) == {
        name: f"{value:.4f}" for name, value in summary["metrics"].items()}
    assert 0 < summary["examples"] <= rows * EPOCHS


def test_predict_writes_its_output_to_hdfs(trained, shoal):
    output = f"{trained.uri}/predictions.jsonl"
    result = shoal("predict", trained.config, "--model-dir", trained.model_dir,
                   "--output", output)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = int(re.search(r"predicted (\d+) examples into ", result.stdout).group(1))
    lines = trained.hdfs.read(f"{trained.root}/predictions.jsonl").decode().splitlines()
    assert len(lines) == rows > 0
    assert "logistic" in json.loads(lines[0])
    # Written beside the output and renamed: no partial file is left.
    names = trained.hdfs.list(trained.root)
    assert "predictions.jsonl.partial" not in names, names


def test_a_cluster_predicts_into_one_file_per_task_on_hdfs(trained, shoal):
    """`shoal launch --predict-output hdfs://...`: the trainers rename each task's file into place
    on HDFS (RENAME with OVERWRITE) and the chief writes _SUCCESS; every passenger once."""
    output = f"{trained.uri}/scores"
    result = shoal("launch", trained.config, "--ps", "1", "--workers", "1",
                   "--model-dir", trained.model_dir, "--predict-output", output,
                   "--passthrough", "PassengerId", "--set", "input.eval.split_bytes=8192")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    success = json.loads(trained.hdfs.read(f"{trained.root}/scores/_SUCCESS"))
    names = sorted(trained.hdfs.list(f"{trained.root}/scores"))
    parts = [f"part-{i:05d}.jsonl" for i in range(success["tasks"])]
    assert success["tasks"] >= 2 and names == sorted(parts + ["_SUCCESS"]), (success, names)
    ids = []
    for name in parts:
        text = trained.hdfs.read(f"{trained.root}/scores/{name}").decode()
        ids += [json.loads(line)["PassengerId"] for line in text.splitlines()]
    assert len(ids) == len(set(ids)) == success["rows"] > 0, success


def test_evaluate_restores_from_hdfs(trained):
    written = trained.hdfs.read_json(f"{trained.root}/model/eval/metrics.json")
    assert written["checkpoint"] == trained.summary["checkpoint"]
    assert written["global_step"] == trained.summary["global_step"]
    assert written["metrics"] == pytest.approx(trained.summary["metrics"], rel=1e-9)
    assert trained.evaluate.stdout.startswith(
        f"evaluation of {trained.summary['checkpoint']} at global step "
        f"{trained.summary['global_step']}")
    assert f"metrics: {trained.model_dir}/eval/metrics.json\n" in trained.evaluate.stdout


def test_model_dir_files_are_on_hdfs(trained):
    hdfs, model = trained.hdfs, f"{trained.root}/model"
    final_step = trained.summary["global_step"]
    names = hdfs.list(model)
    assert "checkpoint" in names and "summary.json" in names and "export" in names, names
    # keep_checkpoint_max: 3 of examples/titanic: older checkpoints were deleted on HDFS.
    steps = sorted(int(n[5:]) for n in names if n.startswith("ckpt-"))
    assert steps[-1] == final_step and len(steps) == 3, names
    pointer = hdfs.read(f"{model}/checkpoint").decode()
    assert f"ckpt-{final_step}" in pointer
    checkpoint = hdfs.list(f"{model}/ckpt-{final_step}")
    assert "MANIFEST.json" in checkpoint, checkpoint
    assert any(n.startswith("shard-") and n.endswith(".data") for n in checkpoint), checkpoint
    assert not [n for n in checkpoint if ".tmp" in n], checkpoint
    events = [n for n in names if n.startswith("events.out.tfevents.")]
    assert events and all(hdfs.status(f"{model}/{n}")["length"] > 0 for n in events), names
    assert [n for n in hdfs.list(f"{model}/eval") if n.startswith("events.out.tfevents.")]
    versions = [n for n in hdfs.list(f"{model}/export/final") if n.isdigit()]
    assert len(versions) == 1, versions
    export = f"{model}/export/final/{versions[0]}"
    assert hdfs.read_json(f"{export}/export.json")["global_step"] == final_step
    assert hdfs.status(f"{export}/config.yaml")["type"] == "FILE"
    assert hdfs.status(f"{export}/variables")["type"] == "DIRECTORY"
    # Written as the user shoal was told to be.
    assert hdfs.status(model)["owner"] == USER


def test_doctor_checks_an_hdfs_model_dir(trained, shoal):
    out = shoal("doctor", trained.model_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "  ok    TCP connect: connected to 127.0.0.1:" in out.stdout
    assert f"  ok    user: {USER} (from HADOOP_USER_NAME)\n" in out.stdout
    assert f"  ok    GETFILESTATUS: directory, owner {USER}, group supergroup, mode 0755\n" \
        in out.stdout
    assert "  ok    write probe: writable: created, read back and deleted a probe file in " \
        f"{trained.model_dir} (the DataNodes are reachable)\n" in out.stdout
    assert out.stdout.endswith("all checks passed\n"), out.stdout
    assert not [n for n in trained.hdfs.list(f"{trained.root}/model") if "doctor" in n]


def test_doctor_and_train_as_another_user_get_permission_denied(cluster, trained, shoal):
    private = f"{trained.root}/private"
    trained.hdfs.mkdirs(private)
    trained.hdfs.call("PUT", private, "SETPERMISSION", permission="700")
    env = {**cluster.env, "HADOOP_USER_NAME": "bob"}
    out = shoal("doctor", f"{trained.uri}/private/model", env=env)
    assert out.returncode == 1, out.stdout
    assert "FAIL  GETFILESTATUS" in out.stdout or "FAIL  parent" in out.stdout, out.stdout
    assert "AccessControlException: Permission denied: user=bob" in out.stdout
    assert "you are 'bob' (HADOOP_USER_NAME=bob)" in out.stdout
    result = shoal("train", trained.config, "--model-dir", f"{trained.uri}/private/model",
                   env=env)
    assert result.returncode == 1
    assert "Permission denied: user=bob" in result.stderr, result.stderr
    assert f"{trained.uri}/private/model" in result.stderr, result.stderr


def test_doctor_names_the_http_port_to_set(cluster, shoal):
    # The RPC port mapped to itself: the NameNode's RPC server answers, but not as WebHDFS.
    env = {**cluster.env, "SHOAL_HDFS_HTTP_PORTS": f"{cluster.rpc_port}:{cluster.rpc_port}"}
    out = shoal("doctor", f"hdfs://127.0.0.1:{cluster.rpc_port}/", env=env)
    assert out.returncode == 1, out.stdout
    assert "  ok    TCP connect" in out.stdout
    assert f"SHOAL_HDFS_HTTP_PORTS={cluster.rpc_port}:<http port>" in out.stdout, out.stdout
