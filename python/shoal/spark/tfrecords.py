"""A DataFrame written as TFRecord files of tf.train.Example from the executors:
`write_tfrecords`, the launcher's answer to the users' `dataframe_to_tfrecords` helper.

    written = shoal.spark.write_tfrecords(df, "/shared/ctr/train", mode="overwrite")
    # /shared/ctr/train/part-00000.tfrecord ... one per non-empty partition, then _SUCCESS

Each task encodes its partition with example_encoder.py (shoal's encoder in pure Python: the
executors have the package's Python files, not its C++ extension) and writes one file,
`_temporary/part-NNNNN-<attempt>.tfrecord`, named after the partition and the task attempt, synced
before the task reports it. Once every task has succeeded, the driver renames the reported files
to `part-NNNNN.tfrecord` (a commit like Hadoop's file committer), writes `_SUCCESS` and removes
`_temporary`. So a retried or speculative attempt never leaves a half file under a part name, and
a failed write leaves no part file at all.

The destination is a local path, or file://: a file system every executor and the driver see at
the same path (local mode, NFS). hdfs:// is refused for now: the executors' Python cannot write
it without a WebHDFS client of its own (docs/spark.md, "Writing TFRecord files").
"""

import functools
import json
import logging
import os
import shutil
import time
from typing import Any, Iterable, Iterator, List, NamedTuple, Optional, Sequence

from shoal.spark.example_encoder import (CRC32C_IMPLEMENTATION, Column, ExampleEncoder,
                                         NullElement, tfrecord)
from shoal.spark.member import ERROR_BEGIN, ERROR_END

log = logging.getLogger("shoal.spark")

WHAT = "shoal.spark.write_tfrecords"
MODES = ("error", "errorifexists", "overwrite")
TEMPORARY = "_temporary"
SUCCESS = "_SUCCESS"


class TFRecordWriteError(RuntimeError):
    """A task failed while writing (a null inside an array, a full disk, a lost executor); the
    message names the partition and the column when the data is the cause. No part file is
    left in the destination."""


class TFRecordsWritten(NamedTuple):
    path: str           # the destination directory (an absolute local path)
    files: List[str]    # the part files, in partition order
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


def local_directory(path: Any) -> str:
    """`path` as an absolute local path; ValueError for anything else."""
    if not isinstance(path, str) or not path or path == "file://":
        raise ValueError(f"{WHAT}: path must be a directory's path, got {path!r}")
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif "://" in path:
        raise ValueError(
            f"{WHAT}: cannot write {path}: only local paths (or file://) are written for now, on "
            f"a file system every executor and the driver share (local mode, NFS). Write to such "
            f"a path and copy the files (hdfs dfs -put), or stage CSV with shoal.spark.run's "
            f"input_mode='spark' (docs/spark.md)")
    return os.path.abspath(path)


def _ours(name: str) -> bool:
    return (name.startswith("part-") and name.endswith(".tfrecord")) or \
        name in (SUCCESS, TEMPORARY)


def prepare(directory: str, mode: str) -> None:
    """Makes `directory` ready for a write: created if missing; one that holds anything is
    refused unless mode="overwrite", which removes an earlier write's files (part files,
    _SUCCESS, _temporary) and refuses a directory holding anything else."""
    if mode not in MODES:
        raise ValueError(f"{WHAT}: mode must be 'error' (the default) or 'overwrite', got "
                         f"{mode!r}")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ValueError(f"{WHAT}: {directory} exists and is not a directory")
    entries = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    if entries and mode != "overwrite":
        raise ValueError(f"{WHAT}: {directory} is not empty ({len(entries)} entries, e.g. "
                         f"{', '.join(entries[:3])}): pass mode='overwrite' to replace an earlier "
                         f"write, or choose another path")
    others = [name for name in entries if not _ours(name)]
    if others:
        raise ValueError(f"{WHAT}: mode='overwrite' replaces an earlier write's part files, but "
                         f"{directory} also holds {', '.join(others[:5])}"
                         f"{' ...' if len(others) > 5 else ''}: remove them or choose another "
                         f"path")
    for name in entries:
        target = os.path.join(directory, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.remove(target)
    if entries:
        log.info("removed %d entries of an earlier write in %s (mode='overwrite')", len(entries),
                 directory)
    os.makedirs(os.path.join(directory, TEMPORARY), exist_ok=True)


class _Failed(Exception):
    """A task's failure, its message marked so that the driver finds it in Spark's text."""

    def __init__(self, message: str):
        super().__init__(f"{ERROR_BEGIN}{message}{ERROR_END}")


def write_partition(directory: str, columns: Sequence[Column], partition: int,
                    rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The executor's task: encodes `rows` into _temporary/part-NNNNN-<attempt>.tfrecord and
    yields one JSON line ({partition, file, rows, bytes}); nothing for an empty partition. A
    failure removes the file and raises _Failed naming the partition (and the column)."""
    from pyspark import TaskContext  # noqa: PLC0415 - on the executor

    context = TaskContext.get()
    attempt = context.taskAttemptId() if context is not None else os.getpid()
    temporary = os.path.join(directory, TEMPORARY,
                             f"{part_name(partition)[:-len('.tfrecord')]}-{attempt}.tfrecord")
    encoder = ExampleEncoder(columns)
    count = 0
    size = 0
    out = None
    try:
        for row in rows:
            record = tfrecord(encoder.encode(row))
            if out is None:
                out = open(temporary, "wb")  # noqa: SIM115 - closed below, also on failure
            out.write(record)
            size += len(record)
            count += 1
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
            out.close()
    except Exception as e:
        if out is not None:
            out.close()
            try:
                os.remove(temporary)
            except OSError:
                pass
        where = f"partition {partition}, row {count}"
        if isinstance(e, NullElement):
            raise _Failed(f"{where}: {e}: a tf.train.Example list has no place for a null; drop "
                          f"or replace the nulls first (e.g. functions.filter(col, lambda x: "
                          f"x.isNotNull()))") from None
        if isinstance(e, FileNotFoundError) and out is None:
            raise _Failed(f"{where}: cannot create {temporary} on this executor: is {directory} "
                          f"on a file system every executor shares? ({e})") from None
        raise _Failed(f"{where}: {type(e).__name__}: {e}") from None
    if count:
        yield json.dumps({"partition": partition, "file": temporary, "rows": count,
                          "bytes": size, "crc32c": CRC32C_IMPLEMENTATION})


def _task_error(e: Exception) -> str:
    from shoal.spark.job import _spark_failure, member_error  # noqa: PLC0415

    message = member_error(str(e))
    return message if message is not None else _spark_failure(e)


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_tfrecords(dataframe, path: str, *, mode: str = "error") -> TFRecordsWritten:
    """Writes `dataframe` as TFRecord files of tf.train.Example, one `part-NNNNN.tfrecord` per
    non-empty Spark partition (NNNNN the partition's index), encoded on the executors with shoal's
    encoder, then `_SUCCESS`. Returns what was written (and logs it). docs/spark.md, "Writing
    TFRecord files", is the guide.

    Each row is one Example with a feature per column, named as the column: strings and binary as
    bytes_list (UTF-8), integral and boolean columns as int64_list, float, double and decimal
    columns as float_list (float32), arrays of these as lists of any length. A null, or an empty
    array, is a missing feature; a null inside an array fails the write.

    path: a directory on a file system the driver and every executor see at the same path
        (a local path or file://; local mode, NFS). It must be empty or absent.
    mode: "error" (the default) refuses a path that holds anything; "overwrite" removes an
        earlier write's files first (and refuses a directory holding other files).

    Raises ValueError for a bad argument, a column type an Example cannot hold (naming the column
    and the type) or a path that is not empty, before anything is written; TFRecordWriteError
    when a task fails (then no part file is left).
    """
    if dataframe is None or not hasattr(dataframe, "schema") or not hasattr(dataframe, "rdd"):
        raise ValueError(f"{WHAT}: dataframe must be a DataFrame, got {dataframe!r}")
    columns = example_columns(dataframe.schema)
    directory = local_directory(path)
    prepare(directory, mode)
    start = time.monotonic()
    try:
        parts = _run_tasks(dataframe, directory, columns)
        files = [_commit(directory, part) for part in parts]
    except BaseException:
        for name in os.listdir(directory):  # all ours: prepare() left the directory empty
            if _ours(name) and name != TEMPORARY:
                os.remove(os.path.join(directory, name))
        raise
    finally:
        shutil.rmtree(os.path.join(directory, TEMPORARY), ignore_errors=True)
    with open(os.path.join(directory, SUCCESS), "wb"):
        pass
    _sync_directory(directory)
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


def _run_tasks(dataframe, directory: str, columns: Sequence[Column]) -> List[dict]:
    """Runs write_partition over every partition; its reports in partition order."""
    sc = dataframe.sparkSession.sparkContext
    saved = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(f"shoal: write_tfrecords to {directory}")
    try:
        lines = dataframe.rdd.mapPartitionsWithIndex(
            functools.partial(write_partition, directory, columns)).collect()
    except Exception as e:  # noqa: BLE001 - Py4JJavaError, or pyspark's own wrappers of it
        error = TFRecordWriteError(f"{WHAT}: writing {directory} failed: {_task_error(e)}")
        error.spark_error = e
        raise error from None
    finally:
        sc.setLocalProperty("spark.job.description", saved)
    return sorted((json.loads(line) for line in lines), key=lambda p: p["partition"])


def _commit(directory: str, part: dict) -> str:
    """Renames a task's reported file to its part name; returns that path."""
    final = os.path.join(directory, part_name(part["partition"]))
    try:
        os.replace(part["file"], final)
    except FileNotFoundError:
        raise TFRecordWriteError(
            f"{WHAT}: the executors wrote {part['file']}, which the driver cannot see: "
            f"{directory} must be on a file system every executor and the driver share (local "
            f"mode, NFS)") from None
    return final
