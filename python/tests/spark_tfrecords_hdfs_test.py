"""shoal.spark.write_tfrecords to a real HDFS (the Hadoop minicluster of ctest's hdfs_minicluster
fixture, shoal/io/CMakeLists.txt) from a local Spark (local[2,2]: a failed task is tried twice).
The executors upload with `shoal fs cp`, the driver commits with `shoal fs`; what landed is
checked through WebHDFS directly (urllib), not through shoal: the bytes equal a local write's,
TensorFlow 2.15 reads every value from copies made with `shoal fs cp`, `shoal train` learns from
the hdfs:// files; the mode rules; a failed write and a retried upload leave no part file.

    scripts/hdfs-minicluster.sh start /tmp/hdfs
    SHOAL_BIN=build/shoal SHOAL_TEST_HDFS_READY_FILE=/tmp/hdfs/ready \\
      $(SHOAL_VENV=~/.cache/shoal/venv-spark SHOAL_REQUIREMENTS=scripts/requirements-spark.txt \\
        scripts/python-env.sh) -m pytest -q python/tests/spark_tfrecords_hdfs_test.py
    scripts/hdfs-minicluster.sh stop /tmp/hdfs
"""
import collections
import json
import re
import os
import random
import stat
import struct
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from shoal.spark import TFRecordWriteError, write_tfrecords
from shoal.spark import example_encoder
from spark_tfrecords_test import ALL_ROWS, ALL_TYPES, expected_features, frame, tensorflow_reads

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOAL = os.path.abspath(os.environ.get("SHOAL_BIN", os.path.join(REPO, "build", "shoal")))
USER = "writer"  # not the HDFS superuser: permissions apply


class WebHdfs:
    """The few WebHDFS calls the checks need, with urllib."""

    def __init__(self, http_port):
        self.base = f"http://127.0.0.1:{http_port}/webhdfs/v1"

    def call(self, method, path, op, data=None, **params):
        query = urllib.parse.urlencode({"op": op, "user.name": USER, **params})
        request = urllib.request.Request(f"{self.base}{urllib.parse.quote(path)}?{query}",
                                         data=data, method=method)
        with urllib.request.urlopen(request, timeout=60) as answer:  # follows OPEN's redirect
            return answer.read()

    def list(self, path):
        statuses = json.loads(self.call("GET", path, "LISTSTATUS"))["FileStatuses"]["FileStatus"]
        return {s["pathSuffix"]: s for s in statuses}

    def names(self, path):
        return sorted(self.list(path))

    def read(self, path):
        return self.call("GET", path, "OPEN")

    def create(self, path, data):
        location = json.loads(self.call("PUT", path, "CREATE", overwrite="true",
                                        noredirect="true"))["Location"]
        request = urllib.request.Request(location, data=data, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(request, timeout=60).close()


Cluster = collections.namedtuple("Cluster", "rpc_port http_port hdfs")


@pytest.fixture(scope="module")
def cluster():
    ready = os.environ.get("SHOAL_TEST_HDFS_READY_FILE")
    if not ready or not os.path.exists(ready):
        pytest.fail("set SHOAL_TEST_HDFS_READY_FILE to the ready file of "
                    "scripts/hdfs-minicluster.sh (ctest's hdfs_minicluster fixture does)")
    with open(ready) as f:
        address, http = f.read().split()
    return Cluster(int(address.split(":")[1]), int(http), WebHdfs(int(http)))


@pytest.fixture(scope="module")
def spark(cluster):
    # Set before Spark starts, so that the executors' Python workers inherit them too: the
    # package, the binary ($SHOAL_BINARY) and the driver's HDFS settings.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ["SHOAL_BINARY"] = SHOAL
    os.environ["SHOAL_HDFS_HTTP_PORTS"] = f"{cluster.rpc_port}:{cluster.http_port}"
    os.environ["HADOOP_USER_NAME"] = USER
    os.environ.pop("SHOAL_WEBHDFS_PORT", None)
    session = (SparkSession.builder.master("local[2,2]").appName("spark_tfrecords_hdfs_test")
               .config("spark.ui.enabled", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def root(cluster, request):
    """A fresh directory for the test: (its HDFS path, its hdfs:// URI)."""
    path = f"/tfrecords-{os.getpid()}/{request.node.name}"
    return path, f"hdfs://127.0.0.1:{cluster.rpc_port}{path}"


def shoal_fs(*args):
    return subprocess.run([SHOAL, "fs", *args], capture_output=True, text=True, timeout=120)


def records(data):
    """The records of a TFRecord file's bytes, every CRC checked."""
    out, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        record = data[at + 12:at + 12 + length]
        assert struct.unpack_from("<I", data, at + 12 + length)[0] == \
            example_encoder.masked_crc32c(record)
        out.append(record)
        at += 16 + length
    assert at == len(data)
    return out


def test_written_to_hdfs_as_to_a_local_path_and_read_back_by_tensorflow(spark, cluster, root,
                                                                        tmp_path):
    hdfs = cluster.hdfs
    path, uri = root
    df = frame(spark, ALL_TYPES, ALL_ROWS)
    written = write_tfrecords(df, uri + "/")
    names = ["part-00000.tfrecord", "part-00001.tfrecord", "part-00003.tfrecord"]
    assert written.path == uri and written.files == [f"{uri}/{n}" for n in names], written
    assert written.rows == 5 and written.partitions == 4, written
    listed = hdfs.list(path)
    assert sorted(listed) == ["_SUCCESS"] + names  # no _temporary, no temporary file
    assert all(s["owner"] == USER for s in listed.values())  # the tasks' files too
    assert written.bytes == sum(listed[n]["length"] for n in names)

    local = write_tfrecords(df, str(tmp_path / "local"))
    for name, local_file in zip(names, local.files):
        with open(local_file, "rb") as f:
            assert hdfs.read(f"{path}/{name}") == f.read(), name

    copies = []
    for name in names:  # TensorFlow reads no hdfs:// without libhdfs: copy them back
        out = shoal_fs("cp", f"{uri}/{name}", str(tmp_path))
        assert out.returncode == 0, out.stderr
        copies.append(str(tmp_path / name))
    read = tensorflow_reads(copies)
    assert read["parse_example_agrees"], read
    for copy, rows in zip(copies, [ALL_ROWS[0], ALL_ROWS[1], ALL_ROWS[3]]):
        assert read["files"][copy] == [expected_features(row) for row in rows], copy


def test_shoal_trains_on_the_hdfs_files(spark, root, tmp_path):
    _, uri = root
    rng = random.Random(5)
    rows = []
    for _ in range(400):
        tags = rng.sample(["good", "bad", "new", "old", "big"], rng.randint(0, 3))
        rows.append((1 if "good" in tags else 0, rng.random(), tags))
    schema = T.StructType([T.StructField("clicked", T.IntegerType()),
                           T.StructField("x", T.DoubleType()),
                           T.StructField("tags", T.ArrayType(T.StringType()))])
    written = write_tfrecords(frame(spark, schema, [rows[:150], rows[150:]]), f"{uri}/data")
    assert len(written.files) == 2 and written.rows == 400
    section = (f"{{files: ['{uri}/data/part-*.tfrecord'], format: tfrecord, batch_size: 32, "
               f"schema: [{{name: clicked, type: int64}}, {{name: x}}, "
               f"{{name: tags, type: string}}]")
    config = tmp_path / "linear.yaml"
    config.write_text(f"""
model_dir: {uri}/model
features:
  label: clicked
  numeric: [{{name: x}}]
  hashed: [{{name: tags, hash_bucket_size: 1000}}]
  wide: [{{categorical: tags}}]
model: {{type: linear}}
input:
  train: {section}, num_epochs: 5}}
  eval: {section}}}
""")
    out = subprocess.run([SHOAL, "train", str(config)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    summary = shoal_fs("cp", f"{uri}/model/summary.json", str(tmp_path))
    assert summary.returncode == 0, summary.stderr
    with open(tmp_path / "summary.json") as f:
        summary = json.load(f)
    assert summary["examples"] == 5 * 400, summary
    assert summary["metrics"]["auc"] > 0.95, summary  # the label is "good" in tags


def test_the_mode_rules_hold_on_hdfs(spark, cluster, root):
    hdfs = cluster.hdfs
    path, uri = root
    schema = "id long"
    assert len(write_tfrecords(frame(spark, schema, [[(1,)], [(2,)], [(3,)]]), uri).files) == 3
    before = hdfs.names(path)
    with pytest.raises(ValueError, match="is not empty .*mode='overwrite'"):
        write_tfrecords(frame(spark, schema, [[(4,)]]), uri)
    assert hdfs.names(path) == before == ["_SUCCESS", "part-00000.tfrecord",
                                          "part-00001.tfrecord", "part-00002.tfrecord"]
    second = write_tfrecords(frame(spark, schema, [[(4,), (5,)]]), uri, mode="overwrite")
    assert second.files == [f"{uri}/part-00000.tfrecord"] and second.rows == 2
    assert hdfs.names(path) == ["_SUCCESS", "part-00000.tfrecord"]  # the old 2 parts gone
    assert len(records(hdfs.read(f"{path}/part-00000.tfrecord"))) == 2

    hdfs.create(f"{path}/notes.txt", b"mine")
    with pytest.raises(ValueError, match="also holds notes.txt"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), uri, mode="overwrite")
    assert hdfs.names(path) == ["_SUCCESS", "notes.txt", "part-00000.tfrecord"]  # none removed
    with pytest.raises(ValueError, match=re.escape(f"cannot write {uri}/notes.txt: ")):
        write_tfrecords(frame(spark, schema, [[(6,)]]), f"{uri}/notes.txt", mode="overwrite")
    with pytest.raises(ValueError, match="SHOAL_HDFS_HTTP_PORTS=1:"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), "hdfs://127.0.0.1:1/x")
    with pytest.raises(ValueError, match="mem:// is one process's memory"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), "mem://x")
    with pytest.raises(ValueError, match="below the root"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), uri.rsplit("/", 2)[0] + "/")


def test_a_failed_write_leaves_nothing_on_hdfs(spark, cluster, root):
    hdfs = cluster.hdfs
    path, uri = root
    rows = [[(1, ["a"])], [(2, ["b"]), (3, ["c", None])]]
    with pytest.raises(TFRecordWriteError, match="partition 1, row 1: column 'tags': holds a null"):
        write_tfrecords(frame(spark, "id long, tags array<string>", rows), uri)
    assert hdfs.names(path) == []  # not part-00000, although its task succeeded; no _temporary


def wrapper(tmp_path, body):
    """A shoal_binary that runs the real shoal, except for an upload of partition 1 (`fs cp` to
    .../part-00001.tfrecord), which runs `body` instead (a shell snippet; $@ the arguments)."""
    script = tmp_path / "shoal-wrapper"
    script.write_text(f"""#!/bin/sh
case "$1 $2 $4" in
  "fs cp "*/part-00001.tfrecord) {body} ;;
esac
exec "{SHOAL}" "$@"
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_an_upload_tried_again_leaves_whole_parts_only(spark, cluster, root, tmp_path):
    """The first upload of partition 1 completes, leaves a torn temporary file beside it (a copy
    killed half-way) and fails its task, which Spark tries again: the commit takes the second
    attempt's file, and _temporary, with the first's, goes."""
    hdfs = cluster.hdfs
    path, uri = root
    marker = tmp_path / "failed-once"
    binary = wrapper(tmp_path, f"""if [ ! -e "{marker}" ]; then touch "{marker}"
      "{SHOAL}" "$@" || exit 1
      head -c 100 "$3" > "{tmp_path}/torn" && "{SHOAL}" fs cp "{tmp_path}/torn" "$4.tmp.1.torn"
      echo "error: the task dies after its upload" >&2; exit 1; fi""")
    df = spark.createDataFrame(spark.sparkContext.parallelize(range(2), 2).flatMap(
        lambda p: [(i, ["x"] * (i % 3)) for i in range(300)]), "i long, tags array<string>")
    written = write_tfrecords(df, uri, shoal_binary=binary)
    assert marker.exists()
    assert written.rows == 600 and len(written.files) == 2, written
    assert hdfs.names(path) == ["_SUCCESS", "part-00000.tfrecord", "part-00001.tfrecord"]
    for name in ("part-00000.tfrecord", "part-00001.tfrecord"):
        assert len(records(hdfs.read(f"{path}/{name}"))) == 300


def test_an_upload_failing_every_time_fails_the_write_with_hdfs_reason(spark, cluster, root,
                                                                       tmp_path):
    """Partition 1 uploads as another HDFS user, whom the write's _temporary (the driver's user's)
    refuses: the write fails with the NameNode's reason, and nothing is left."""
    hdfs = cluster.hdfs
    path, uri = root
    binary = wrapper(tmp_path, f'HADOOP_USER_NAME=intruder exec "{SHOAL}" "$@"')
    df = frame(spark, "id long", [[(1,)], [(2,)], [(3,)]])
    with pytest.raises(TFRecordWriteError) as e:
        write_tfrecords(df, uri, shoal_binary=binary)
    message = str(e.value)
    assert f"partition 1: writing {uri}/_temporary/" in message, message
    assert "Permission denied: user=intruder" in message, message
    assert hdfs.names(path) == []
