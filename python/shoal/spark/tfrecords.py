"""A DataFrame written as TFRecord files of tf.train.Example from the executors:
`write_tfrecords`, the launcher's answer to the users' `dataframe_to_tfrecords` helper.

    written = shoal.spark.write_tfrecords(df, "hdfs://nn:8020/ctr/train", mode="overwrite")
    # hdfs://nn:8020/ctr/train/part-00000.tfrecord ... one per non-empty partition, then _SUCCESS

Each task encodes its partition with example_encoder.py (shoal's encoder in pure Python: the
executors have the package's Python files, not its C++ extension) into one file,
`_temporary/<task attempt>/part-NNNNN.tfrecord`. Once every task has succeeded, the driver moves
the reported files into the destination (a commit like Hadoop's file committer), writes
`_SUCCESS` and removes `_temporary`. So a retried or speculative attempt never leaves a half file
under a part name, and a failed write leaves no part file at all.

Two kinds of destination, one protocol:
- a local path, or file://: a file system every executor and the driver see at the same path
  (local mode, NFS), written and committed with os calls;
- a URI of shoal's FileSystems (hdfs://, webhdfs://), which Python cannot write: the tasks encode
  into a local temporary file and upload it with `shoal fs cp` (which writes a temporary name
  beside the target and renames it), and the driver prepares, commits and cleans up with
  `shoal fs ls / rm / mkdir / mv / cp` -- the `shoal` binary found as shoal.spark.run finds it
  (member.find_binary), on the executors and on the driver. The tasks act with the driver's HDFS
  settings (its HADOOP_USER_NAME, else its OS user, and its SHOAL_HDFS_* variables), so that
  every file of the write belongs to one user, as with Spark's own writers.
docs/spark.md, "Writing TFRecord files", is the guide.
"""

import functools
import json
import logging
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from typing import (Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence,
                    Tuple)

from shoal.spark.example_encoder import (CRC32C_IMPLEMENTATION, Column, ExampleEncoder,
                                         NullElement, tfrecord)
from shoal.spark.member import ERROR_BEGIN, ERROR_END, MemberFailed, find_binary

log = logging.getLogger("shoal.spark")

WHAT = "shoal.spark.write_tfrecords"
MODES = ("error", "errorifexists", "overwrite")
TEMPORARY = "_temporary"
SUCCESS = "_SUCCESS"
# The variables shoal reads for HDFS (docs/hdfs.md), passed from the driver to the tasks.
HDFS_VARIABLES = ("SHOAL_HDFS_HTTP_PORTS", "SHOAL_WEBHDFS_PORT", "SHOAL_HDFS_RETRY_SECONDS")
# Sources per `shoal fs mv` call when committing: command lines stay far below ARG_MAX.
MOVES_PER_CALL = 200


class TFRecordWriteError(RuntimeError):
    """A task failed while writing (a null inside an array, a full disk, a lost executor); the
    message names the partition and the column when the data is the cause. No part file is
    left in the destination."""


class TFRecordsWritten(NamedTuple):
    path: str           # the destination directory: an absolute local path, or the URI given
    files: List[str]    # the part files (paths or URIs), in partition order
    rows: int
    bytes: int          # the part files' sizes, summed
    partitions: int     # the DataFrame's partitions (an empty one writes no file)


def part_name(partition: int) -> str:
    """Spark's part file name for a partition, with the .tfrecord suffix."""
    return f"part-{partition:05d}.tfrecord"


def _types():
    from pyspark.sql import types  # noqa: PLC0415 - pyspark only where a DataFrame is handled
    return types


def _scalar_kind(data_type) -> Optional[str]:
    t = _types()
    if isinstance(data_type, (t.StringType, t.BinaryType)) or \
            type(data_type).__name__ in ("CharType", "VarcharType"):
        return "bytes"
    if isinstance(data_type, (t.ByteType, t.ShortType, t.IntegerType, t.LongType, t.BooleanType)):
        return "int64"
    if isinstance(data_type, (t.FloatType, t.DoubleType, t.DecimalType)):
        return "float"
    return None


def example_columns(schema) -> List[Column]:
    """The Example feature each column of a DataFrame schema becomes: strings and binary as
    bytes_list, integral and boolean as int64_list, floating and decimal as float_list, arrays of
    these as lists. ValueError naming the column and its type for any other type, and for a name
    that repeats."""
    columns = []
    for field in schema.fields:
        data_type = field.dataType
        is_list = isinstance(data_type, _types().ArrayType)
        kind = _scalar_kind(data_type.elementType if is_list else data_type)
        if kind is None:
            raise ValueError(
                f"{WHAT}: column {field.name!r} has type {data_type.simpleString()}, which a "
                f"tf.train.Example cannot hold (strings and binary become bytes_list, integers "
                f"and booleans int64_list, floats and decimals float_list, and arrays of these "
                f"lists): convert it first (a date or timestamp to a string or to seconds, a map "
                f"or struct to columns of its own, an ML vector with "
                f"pyspark.ml.functions.vector_to_array) or drop it")
        columns.append(Column(field.name, kind, is_list))
    names = [c.name for c in columns]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{WHAT}: the DataFrame has more than one column named "
                         f"{', '.join(repr(n) for n in repeated)}; an Example's features need "
                         f"unique names: rename or drop them")
    return columns


def _is_uri(path: str) -> bool:
    return "://" in path


def destination_path(path: Any) -> str:
    """`path` as the write names it: an absolute local path (for a plain path or file://), or
    the URI without trailing slashes. ValueError for anything else, a file system's root and
    mem:// (one process's memory, which the executors do not share)."""
    if not isinstance(path, str) or not path or path == "file://":
        raise ValueError(f"{WHAT}: path must be a directory's path, got {path!r}")
    if path.startswith("file://"):
        path = path[len("file://"):]
    if not _is_uri(path):
        directory = os.path.abspath(path)
        if directory == "/":
            raise ValueError(f"{WHAT}: path must be a directory below the root, got {path!r}")
        return directory
    scheme, rest = path.split("://", 1)
    if scheme == "mem":
        raise ValueError(f"{WHAT}: cannot write {path}: mem:// is one process's memory, which "
                         f"the executors and the driver do not share")
    if "/" not in rest.strip("/"):
        raise ValueError(f"{WHAT}: path must be a directory below the root, got {path!r}")
    return path.rstrip("/")


def _ours(name: str) -> bool:
    return (name.startswith("part-") and name.endswith(".tfrecord")) or \
        name in (SUCCESS, TEMPORARY)


class _ShoalFsFailed(Exception):
    """`shoal fs` exited non-zero; the message is what it printed ("error: ..." lines)."""


def _shoal_fs(binary: str, environment: Dict[str, str], *args: str) -> str:
    """Runs `shoal fs ARGS...` with `environment` over this process's; returns its stdout."""
    try:
        done = subprocess.run([binary, "fs", *args], capture_output=True, text=True,
                              env={**os.environ, **environment}, check=False)
    except OSError as e:
        raise _ShoalFsFailed(f"cannot run {binary}: {e}") from None
    if done.returncode != 0:
        said = "; ".join(line[len("error: "):] if line.startswith("error: ") else line
                         for line in done.stderr.strip().splitlines())
        raise _ShoalFsFailed(said or f"shoal fs {args[0]} exited with code {done.returncode}")
    return done.stdout


def hdfs_environment(environ: Dict[str, str]) -> Dict[str, str]:
    """The HDFS settings every `shoal fs` of a write runs with, the driver's: its SHOAL_HDFS_*
    variables that are set, and HADOOP_USER_NAME (its own, else the OS user shoal would send)."""
    settings = {name: environ[name] for name in HDFS_VARIABLES if environ.get(name, "").strip()}
    user = environ.get("HADOOP_USER_NAME", "").strip()
    if not user:
        try:
            user = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:  # a uid without a name (some containers): each side's own default
            return settings
    settings["HADOOP_USER_NAME"] = user
    return settings


def _files_root() -> Optional[str]:
    try:
        from pyspark import SparkFiles  # noqa: PLC0415
        return SparkFiles.getRootDirectory()
    except Exception:  # noqa: BLE001 - no SparkFiles here: no shipped files
        return None


class _Task(NamedTuple):
    """What each task needs, pickled into the stage's closure."""
    directory: str                  # the destination (local path or URI)
    remote: bool                    # a URI: written through `shoal fs`
    columns: Sequence[Column]
    shoal_binary: Optional[str]     # the shoal_binary argument
    environment: Dict[str, str]     # hdfs_environment() of the driver


class LocalDestination:
    """A directory on a file system the driver and every executor share, handled with os
    calls."""

    def __init__(self, directory: str):
        self.directory = directory

    def join(self, *names: str) -> str:
        return os.path.join(self.directory, *names)

    def entries(self) -> List[str]:
        """The directory's entry names, after creating it if missing."""
        if os.path.exists(self.directory) and not os.path.isdir(self.directory):
            raise ValueError(f"{WHAT}: {self.directory} exists and is not a directory")
        os.makedirs(self.directory, exist_ok=True)
        return sorted(os.listdir(self.directory))

    def remove(self, names: Sequence[str]) -> None:
        for name in names:
            target = self.join(name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.remove(target)

    def make_temporary(self) -> None:
        os.makedirs(self.join(TEMPORARY), exist_ok=True)

    def commit(self, files: Sequence[str]) -> List[str]:
        """Moves each reported file into the directory under its own name."""
        final = []
        for reported in files:
            target = self.join(os.path.basename(reported))
            try:
                os.replace(reported, target)
            except FileNotFoundError:
                raise TFRecordWriteError(
                    f"{WHAT}: the executors wrote {reported}, which the driver cannot see: "
                    f"{self.directory} must be on a file system every executor and the driver "
                    f"share (local mode, NFS)") from None
            final.append(target)
        return final

    def finish(self) -> None:
        shutil.rmtree(self.join(TEMPORARY), ignore_errors=True)
        with open(self.join(SUCCESS), "wb"):
            pass
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def discard(self) -> None:
        """After a failure: removes every entry of the write (prepare() left only ours); a
        failure to is a warning, never hiding the write's own error."""
        shutil.rmtree(self.join(TEMPORARY), ignore_errors=True)
        try:
            for name in os.listdir(self.directory):
                if _ours(name):
                    os.remove(self.join(name))
        except OSError as e:
            log.warning("write_tfrecords: cannot clean up %s after the failed write (remove its "
                        "part files by hand): %s", self.directory, e)


class ShoalFsDestination:
    """A directory at a URI of shoal's FileSystems (hdfs://, webhdfs://), handled with the
    `shoal fs` command. Its failures are TFRecordWriteErrors carrying shoal's message."""

    def __init__(self, uri: str, binary: str, environment: Dict[str, str]):
        self.directory = uri
        self.binary = binary
        self.environment = environment

    def join(self, *names: str) -> str:
        return "/".join((self.directory, *names))

    def fs(self, *args: str) -> str:
        try:
            return _shoal_fs(self.binary, self.environment, *args)
        except _ShoalFsFailed as e:
            raise TFRecordWriteError(f"{WHAT}: shoal fs {args[0]} failed: {e}") from None

    def entries(self) -> List[str]:
        try:
            _shoal_fs(self.binary, self.environment, "mkdir", "-p", self.directory)
        except _ShoalFsFailed as e:  # a file there, a NameNode not reached, an unknown scheme
            raise ValueError(f"{WHAT}: cannot write {self.directory}: {e}") from None
        return sorted(line for line in self.fs("ls", self.directory).splitlines() if line)

    def remove(self, names: Sequence[str]) -> None:
        if names:
            self.fs("rm", "-r", *[self.join(name) for name in names])

    def make_temporary(self) -> None:
        self.fs("mkdir", self.join(TEMPORARY))

    def commit(self, files: Sequence[str]) -> List[str]:
        """`shoal fs mv FILE... DIRECTORY`, MOVES_PER_CALL files at a time (each a RENAME)."""
        for first in range(0, len(files), MOVES_PER_CALL):
            self.fs("mv", *files[first:first + MOVES_PER_CALL], self.directory)
        return [self.join(f.rsplit("/", 1)[1]) for f in files]

    def finish(self) -> None:
        try:
            self.fs("rm", "-r", "-f", self.join(TEMPORARY))
        except TFRecordWriteError as e:
            log.warning("write_tfrecords: cannot remove %s (remove it by hand): %s",
                        self.join(TEMPORARY), e)
        with tempfile.NamedTemporaryFile(prefix="shoal-success-") as empty:
            self.fs("cp", empty.name, self.join(SUCCESS))

    def discard(self) -> None:
        """After a failure, best effort (a warning, never hiding the write's own error)."""
        try:
            ours = [name for name in self.fs("ls", self.directory).splitlines() if _ours(name)]
            if ours:
                self.fs("rm", "-r", "-f", *[self.join(name) for name in ours])
        except TFRecordWriteError as e:
            log.warning("write_tfrecords: cannot clean up %s after the failed write (remove its "
                        "part files and _temporary by hand): %s", self.directory, e)


def prepare(destination, mode: str) -> None:
    """Makes the destination ready for a write: created if missing; one that holds anything is
    refused unless mode="overwrite", which removes an earlier write's files (part files,
    _SUCCESS, _temporary) and refuses a directory holding anything else."""
    entries = destination.entries()
    if entries and mode != "overwrite":
        raise ValueError(f"{WHAT}: {destination.directory} is not empty ({len(entries)} entries, "
                         f"e.g. {', '.join(entries[:3])}): pass mode='overwrite' to replace an "
                         f"earlier write, or choose another path")
    others = [name for name in entries if not _ours(name)]
    if others:
        raise ValueError(f"{WHAT}: mode='overwrite' replaces an earlier write's part files, but "
                         f"{destination.directory} also holds {', '.join(others[:5])}"
                         f"{' ...' if len(others) > 5 else ''}: remove them or choose another "
                         f"path")
    destination.remove(entries)
    if entries:
        log.info("removed %d entries of an earlier write in %s (mode='overwrite')", len(entries),
                 destination.directory)
    destination.make_temporary()


class _Failed(Exception):
    """A task's failure, its message marked so that the driver finds it in Spark's text."""

    def __init__(self, message: str):
        super().__init__(f"{ERROR_BEGIN}{message}{ERROR_END}")


def _local_scratch_directory(environ: Dict[str, str]) -> Optional[str]:
    """Where a task encodes a file before uploading it: Spark's local directories (YARN's
    container directories) when set, else the temporary directory (TMPDIR)."""
    for variable in ("SPARK_LOCAL_DIRS", "LOCAL_DIRS"):
        first = environ.get(variable, "").split(",")[0]
        if first and os.path.isdir(first):
            return first
    return None


def _upload(task: _Task, local: str, attempt_directory: str, target: str) -> None:
    """`shoal fs mkdir` of the attempt's directory (inside _temporary, which must still exist:
    a task outliving a failed write finds it gone), then `shoal fs cp` of the file."""
    try:
        binary = find_binary(task.shoal_binary, dict(os.environ), _files_root(), os.getcwd())
    except MemberFailed as e:
        raise _ShoalFsFailed(e.message) from None
    _shoal_fs(binary, task.environment, "mkdir", attempt_directory)
    _shoal_fs(binary, task.environment, "cp", local, target)


def write_partition(task: _Task, partition: int, rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The executor's task: encodes `rows` into _temporary/<attempt>/part-NNNNN.tfrecord (for a
    URI, into a local file first, then uploaded) and yields one JSON line ({partition, file, rows,
    bytes}); nothing for an empty partition. A failure removes the file and raises _Failed naming
    the partition (and the column)."""
    from pyspark import TaskContext  # noqa: PLC0415 - on the executor

    context = TaskContext.get()
    attempt = context.taskAttemptId() if context is not None else os.getpid()
    join = (lambda *names: "/".join((task.directory, *names))) if task.remote else \
        functools.partial(os.path.join, task.directory)
    attempt_directory = join(TEMPORARY, str(attempt))
    target = join(TEMPORARY, str(attempt), part_name(partition))
    encoder = ExampleEncoder(task.columns)
    count = 0
    size = 0
    out = None
    local = None
    try:
        for row in rows:
            record = tfrecord(encoder.encode(row))
            if out is None:
                if task.remote:
                    fd, local = tempfile.mkstemp(
                        prefix=f"shoal-{part_name(partition)}-{attempt}-",
                        dir=_local_scratch_directory(dict(os.environ)))
                    out = os.fdopen(fd, "wb")
                else:
                    local = target
                    os.mkdir(attempt_directory)
                    out = open(local, "wb")  # noqa: SIM115 - closed below, also on failure
            out.write(record)
            size += len(record)
            count += 1
        if out is not None:
            out.flush()
            if not task.remote:
                os.fsync(out.fileno())
            out.close()
            if task.remote:
                _upload(task, local, attempt_directory, target)
    except Exception as e:
        if out is not None:
            out.close()
            try:
                os.remove(local)
            except OSError:
                pass
        where = f"partition {partition}, row {count}"
        if isinstance(e, NullElement):
            raise _Failed(f"{where}: {e}: a tf.train.Example list has no place for a null; drop "
                          f"or replace the nulls first (e.g. functions.filter(col, lambda x: "
                          f"x.isNotNull()))") from None
        if isinstance(e, _ShoalFsFailed):
            raise _Failed(f"partition {partition}: writing {target} with shoal fs failed: "
                          f"{e}") from None
        if isinstance(e, FileNotFoundError) and out is None and not task.remote:
            raise _Failed(f"{where}: cannot create {target} on this executor: is "
                          f"{task.directory} on a file system every executor shares? "
                          f"({e})") from None
        raise _Failed(f"{where}: {type(e).__name__}: {e}") from None
    finally:
        if task.remote and local is not None and os.path.exists(local):
            os.remove(local)  # the local copy of an upload
    if count:
        yield json.dumps({"partition": partition, "file": target, "rows": count,
                          "bytes": size, "crc32c": CRC32C_IMPLEMENTATION})


def _task_error(e: Exception) -> str:
    from shoal.spark.job import _spark_failure, member_error  # noqa: PLC0415

    message = member_error(str(e))
    return message if message is not None else _spark_failure(e)


def _destination(directory: str, shoal_binary: Optional[str]) -> Tuple[Any, _Task]:
    """The driver's handle on the destination, and the task's half (without the columns)."""
    if not _is_uri(directory):
        return LocalDestination(directory), _Task(directory, False, (), shoal_binary, {})
    environment = hdfs_environment(dict(os.environ))
    try:
        binary = find_binary(shoal_binary, dict(os.environ), _files_root(), os.getcwd())
    except MemberFailed as e:
        raise ValueError(
            f"{WHAT}: {directory} is written with the shoal binary (shoal fs), on the executors "
            f"and on the driver, but the driver cannot find it: "
            f"{e.message.replace('on this executor', 'on the driver')}") from None
    return (ShoalFsDestination(directory, binary, environment),
            _Task(directory, True, (), shoal_binary, environment))


def write_tfrecords(dataframe, path: str, *, mode: str = "error",
                    shoal_binary: Optional[str] = None) -> TFRecordsWritten:
    """Writes `dataframe` as TFRecord files of tf.train.Example, one `part-NNNNN.tfrecord` per
    non-empty Spark partition (NNNNN the partition's index), encoded on the executors with shoal's
    encoder, then `_SUCCESS`. Returns what was written (and logs it). docs/spark.md, "Writing
    TFRecord files", is the guide.

    Each row is one Example with a feature per column, named as the column: strings and binary as
    bytes_list (UTF-8), integral and boolean columns as int64_list, float, double and decimal
    columns as float_list (float32), arrays of these as lists of any length. A null, or an empty
    array, is a missing feature; a null inside an array fails the write.

    path: the destination directory: a local path or file:// on a file system the driver and every
        executor see at the same path (local mode, NFS), or a URI shoal's FileSystems write
        (hdfs://nn:8020/..., webhdfs://), written with the shoal binary. It must be empty or
        absent.
    mode: "error" (the default) refuses a path that holds anything; "overwrite" removes an
        earlier write's files first (and refuses a directory holding other files).
    shoal_binary: for a URI, the shoal binary's path on the executors and the driver; by
        default $SHOAL_BINARY, a `shoal` shipped with --files or --archives, or PATH, as for
        shoal.spark.run.

    Raises ValueError for a bad argument, a column type an Example cannot hold (naming the column
    and the type), a path that is not empty or cannot be written, or a shoal binary the driver
    cannot find, before anything is written; TFRecordWriteError when a task (or the commit) fails
    (then no part file is left).
    """
    if dataframe is None or not hasattr(dataframe, "schema") or not hasattr(dataframe, "rdd"):
        raise ValueError(f"{WHAT}: dataframe must be a DataFrame, got {dataframe!r}")
    if mode not in MODES:
        raise ValueError(f"{WHAT}: mode must be 'error' (the default) or 'overwrite', got "
                         f"{mode!r}")
    columns = example_columns(dataframe.schema)
    directory = destination_path(path)
    destination, task = _destination(directory, shoal_binary)
    task = task._replace(columns=columns)
    prepare(destination, mode)
    start = time.monotonic()
    try:
        parts = _run_tasks(dataframe, task)
        files = destination.commit([part["file"] for part in parts])
        destination.finish()
    except BaseException:
        destination.discard()
        raise
    written = TFRecordsWritten(directory, files, sum(p["rows"] for p in parts),
                               sum(p["bytes"] for p in parts), dataframe.rdd.getNumPartitions())
    log.info("wrote %d rows of %d partitions into %d TFRecord files (%d bytes) in %s in %.1f s",
             written.rows, written.partitions, len(files), written.bytes, directory,
             time.monotonic() - start)
    slow = sum(1 for p in parts if p["crc32c"] == "pure Python")
    if slow:
        log.warning("write_tfrecords: %d of %d tasks computed CRC32C in pure Python (about 13 "
                    "MB/s): install google-crc32c on the executors to write several times faster",
                    slow, len(parts))
    return written


def _run_tasks(dataframe, task: _Task) -> List[dict]:
    """Runs write_partition over every partition; its reports in partition order."""
    sc = dataframe.sparkSession.sparkContext
    saved = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(f"shoal: write_tfrecords to {task.directory}")
    try:
        lines = dataframe.rdd.mapPartitionsWithIndex(
            functools.partial(write_partition, task)).collect()
    except Exception as e:  # noqa: BLE001 - Py4JJavaError, or pyspark's own wrappers of it
        error = TFRecordWriteError(f"{WHAT}: writing {task.directory} failed: {_task_error(e)}")
        error.spark_error = e
        raise error from None
    finally:
        sc.setLocalProperty("spark.job.description", saved)
    return sorted((json.loads(line) for line in lines), key=lambda p: p["partition"])
