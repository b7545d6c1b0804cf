"""`shoal fs` against a real HDFS (the Hadoop minicluster of ctest's hdfs_minicluster fixture,
shoal/io/CMakeLists.txt): the binary as scripts run it, its output, messages and exit codes.
fs_command_test.cc covers the same verbs in-process on local paths and mem://.

    scripts/hdfs-minicluster.sh start /tmp/hdfs
    SHOAL_BIN=build/shoal SHOAL_TEST_HDFS_READY_FILE=/tmp/hdfs/ready \\
        $(scripts/python-env.sh) -m pytest -q shoal/tools/fs_hdfs_test.py
    scripts/hdfs-minicluster.sh stop /tmp/hdfs
"""
import os
import subprocess
from collections import namedtuple

import pytest

from hdfs_job_test import minicluster

USER = "mover"  # not the HDFS superuser: permissions apply

Cluster = namedtuple("Cluster", "uri env")


@pytest.fixture(scope="module")
def cluster():
    hdfs = minicluster(USER)
    return Cluster(f"hdfs://127.0.0.1:{hdfs.rpc_port}/shoal-fs-{os.getpid()}", hdfs.env)


@pytest.fixture(scope="module")
def fs(cluster):
    binary = os.environ.get("SHOAL_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")

    def run(*args, user=USER):
        return subprocess.run([binary, "fs", *map(str, args)], capture_output=True, text=True,
                              timeout=120, env={**cluster.env, "HADOOP_USER_NAME": user})
    return run


def ok(result):
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def test_copy_both_ways_move_list_remove(fs, cluster, tmp_path):
    root = cluster.uri
    data = os.urandom((9 << 20) + 7)  # two of cp's 8 MiB chunks, three of WebHDFS's appends
    (tmp_path / "big").write_bytes(data)
    ok(fs("mkdir", "-p", f"{root}/a/_temporary/7"))
    ok(fs("cp", tmp_path / "big", f"{root}/a/_temporary/7/part-00000.tfrecord"))
    ok(fs("cp", tmp_path / "big", f"{root}/a/_temporary/7"))  # into a directory: its name
    assert ok(fs("ls", f"{root}/a/_temporary/7")) == "big\npart-00000.tfrecord\n"  # no .tmp
    ok(fs("mv", f"{root}/a/_temporary/7/part-00000.tfrecord", f"{root}/a/_temporary/7/big",
          f"{root}/a"))
    assert ok(fs("ls", f"{root}/a")) == "_temporary\nbig\npart-00000.tfrecord\n"
    assert ok(fs("ls", f"{root}/a/big")) == f"{root}/a/big\n"
    ok(fs("cp", f"{root}/a/part-00000.tfrecord", tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == data
    ok(fs("rm", "-r", f"{root}/a/_temporary", f"{root}/a/big"))
    assert ok(fs("ls", f"{root}/a")) == "part-00000.tfrecord\n"
    ok(fs("rm", "-r", root))
    assert fs("ls", root).returncode == 1


def test_errors_name_the_path_and_exit_1(fs, cluster, tmp_path):
    root = f"{cluster.uri}-errors"
    (tmp_path / "f").write_bytes(b"x")
    ok(fs("mkdir", root))
    for args, said in [
        (("cp", tmp_path / "f", f"{root}/no/such/dir/f"), f"{root}/no/such/dir/f"),
        (("cp", tmp_path / "missing", f"{root}/f"), str(tmp_path / "missing")),
        (("cp", f"{root}/missing", tmp_path / "g"), f"{root}/missing"),
        (("ls", f"{root}/missing"), f"{root}/missing"),
        (("rm", root), f"rm {root}: is a directory (rm -r deletes it"),
        (("mkdir", root), root),
        (("mv", f"{root}/missing", f"{root}/x"), f"{root}/missing"),
        (("mv", tmp_path / "f", f"{root}/x"), "different file systems"),
    ]:
        result = fs(*args)
        assert result.returncode == 1, (args, result.stdout)
        assert result.stderr.startswith("error: ") and said in result.stderr, (args, result.stderr)
    ok(fs("rm", "-f", f"{root}/missing"))
    # Another user may read but not write the directory (rwxr-xr-x).
    denied = fs("cp", tmp_path / "f", f"{root}/f", user="intruder")
    assert denied.returncode == 1
    assert "Permission denied: user=intruder" in denied.stderr, denied.stderr
    assert ok(fs("ls", root)) == ""  # no temporary file either
    ok(fs("rm", "-r", root))


def test_usage_errors_exit_2_and_help_exits_0(fs):
    assert fs("cp", "only-one").returncode == 2
    assert fs("frobnicate").returncode == 2
    help_text = fs("--help")
    assert help_text.returncode == 0
    for verb in ("cp", "mv", "ls", "rm", "mkdir"):
        assert verb in help_text.stdout
