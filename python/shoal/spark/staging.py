"""A DataFrame staged as CSV part files for a shoal job (input_mode="spark", and `predict`).

The driver writes the DataFrame with `DataFrame.write.csv` -- one part file per non-empty Spark
partition, with a header line -- into a directory every executor can read, and the job then reads
those files as in files mode: the chief's data-task queue hands each part file (or each byte
range of `split_bytes`) to a trainer that asks for work. Nothing is pushed into a worker, so the
queue's lease, backpressure and re-leasing rules apply unchanged, and no feeding deadlock exists.

The CSV is written the way shoal's CSV reader parses it (docs/input_formats.md, "CSV/TSV"): a
header naming the columns, `,` between fields, RFC 4180 quoting (a `"` inside a quoted field is
written `""`, not Spark's default `\\"`), strings kept byte for byte (no trimming), a null as an
empty field (shoal's missing value: the schema's default, or an empty row), an empty string as
`""`. Booleans are written as 0/1. A string holding a line break cannot be read back (shoal's
records are lines). Columns of nested types (array, map, struct), binary and user-defined types
(ML vectors) are refused before anything is written.

The CSV's columns are typed by `input.<section>.schema`: the config's own when it declares one
(it types the header's columns by name), else one derived from the DataFrame's types: integral
types as int64, floating and decimal types as float, the rest as string.
"""

import logging
import os
import shutil
import time
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

log = logging.getLogger("shoal.spark")

PART_GLOB = "part-*.csv"


def _types():
    from pyspark.sql import types  # noqa: PLC0415 - pyspark only where a DataFrame is handled
    return types


def shoal_type(field) -> str:
    """shoal's schema type ("int64", "float" or "string") for a DataFrame column; ValueError
    naming the column for the types CSV staging cannot write."""
    t = _types()
    data_type = field.dataType
    if isinstance(data_type, (t.ByteType, t.ShortType, t.IntegerType, t.LongType, t.BooleanType)):
        return "int64"
    if isinstance(data_type, (t.FloatType, t.DoubleType, t.DecimalType)):
        return "float"
    if isinstance(data_type, (t.StringType, t.DateType, t.TimestampType, t.NullType)) or \
            type(data_type).__name__ in ("TimestampNTZType", "CharType", "VarcharType"):
        return "string"
    raise ValueError(
        f"column {field.name!r} has type {data_type.simpleString()}, which shoal cannot read from "
        f"the staged CSV (one scalar per field): select or convert it first (e.g. one column per "
        f"array slot, pyspark.ml.functions.vector_to_array for ML vectors, or drop it)")


def check_column_names(schema) -> None:
    for field in schema.fields:
        name = field.name
        if not name or name.strip() != name or any(c in name for c in ',"\r\n'):
            raise ValueError(f"column {name!r}: a staged CSV header cannot name it (empty, "
                             f"surrounding spaces, or a comma, quote or line break): rename it")


def derived_schema(schema) -> List[Dict[str, str]]:
    """shoal's `schema` entries for every column of a DataFrame schema (StructType)."""
    check_column_names(schema)
    return [{"name": field.name, "type": shoal_type(field)} for field in schema.fields]


def require_columns(schema, needed: Sequence[str], what: str, who: str) -> None:
    """ValueError naming the columns of `needed` the DataFrame lacks, and those it has."""
    names = [field.name for field in schema.fields]
    missing = [name for name in needed if name not in names]
    if missing:
        raise ValueError(f"{what}: {who} the column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(repr(m) for m in missing)}, which the DataFrame does not "
                         f"have (its columns: {', '.join(names)})")


def check_columns(schema, needed: Sequence[str], what: str) -> None:
    """ValueError when a column the config needs is not in the DataFrame, or when a column
    cannot be staged (shoal_type)."""
    require_columns(schema, needed, what, "the config needs")
    derived_schema(schema)


def column_types(schema, declared: Optional[Sequence[Mapping[str, Any]]]) -> Dict[str, str]:
    """The shoal type each staged column is read as: the declared schema's (type defaults to
    float; an undeclared column of a header is a string) when there is one, else derived."""
    if declared is None:
        return {entry["name"]: entry["type"] for entry in derived_schema(schema)}
    types = {str(entry.get("name")): str(entry.get("type") or "float") for entry in declared
             if isinstance(entry, Mapping)}
    return {field.name: types.get(field.name, "string") for field in schema.fields}


def input_overrides(section: str, glob: str, schema: Optional[List[Dict[str, str]]]) -> \
        Dict[str, Any]:
    """The `--set` overrides that make `input.<section>` read the staged part files: files,
    format csv, header, and the derived schema unless the config declares its own (None)."""
    prefix = f"input.{section}."
    overrides: Dict[str, Any] = {prefix + "files": [glob], prefix + "format": "csv",
                                 prefix + "header": True}
    if schema is not None:
        overrides[prefix + "schema"] = schema
    return overrides


def default_root(model_dir: str, job_id: str) -> str:
    """Where a job stages its DataFrames when no staging_dir is given."""
    return f"{model_dir.rstrip('/')}/spark-staging/{job_id}"


def is_uri(path: str) -> bool:
    return "://" in path


def spark_path(path: str) -> str:
    """`path` as Spark's writers and readers must see it: a local path with file:// (on YARN the
    default file system is HDFS), a URI as it is."""
    return path if is_uri(path) else "file://" + os.path.abspath(path)


class Staged(NamedTuple):
    directory: str    # as the members read it (a local path, or a URI)
    glob: str         # the part files, for input.<section>.files
    rows: int         # -1 when Spark could not count them while writing
    partitions: int
    files: int        # -1 when they could not be listed


def _hadoop_fs(sc, path: str):
    jvm = sc._jvm  # noqa: SLF001 - the Hadoop FileSystem has no Python API
    hadoop_path = jvm.org.apache.hadoop.fs.Path(spark_path(path))
    return hadoop_path, hadoop_path.getFileSystem(sc._jsc.hadoopConfiguration())  # noqa: SLF001


def _count_files(sc, directory: str) -> int:
    try:
        if not is_uri(directory):
            return len([n for n in os.listdir(directory)
                        if n.startswith("part-") and n.endswith(".csv")])
        path, fs = _hadoop_fs(sc, f"{directory}/{PART_GLOB}")
        found = fs.globStatus(path)
        return len(found) if found is not None else 0
    except Exception:  # noqa: BLE001 - a count for the log only
        return -1


def stage(dataframe, directory: str, what: str) -> Staged:
    """Writes `dataframe` into `directory` (which must not exist) as CSV part files; ValueError
    when it has no rows (the directory is removed again)."""
    from pyspark.sql import Observation, functions  # noqa: PLC0415

    t = _types()
    columns = [functions.col(f"`{field.name}`").cast("int").alias(field.name)
               if isinstance(field.dataType, t.BooleanType) else functions.col(f"`{field.name}`")
               for field in dataframe.schema.fields]
    partitions = dataframe.rdd.getNumPartitions()
    observation = Observation(f"shoal staging {what}")
    start = time.monotonic()
    (dataframe.select(*columns)
     .observe(observation, functions.count(functions.lit(1)).alias("rows"))
     .write.mode("error")
     .option("header", True).option("sep", ",").option("quote", '"').option("escape", '"')
     .option("nullValue", "").option("emptyValue", '""')
     .option("ignoreLeadingWhiteSpace", False).option("ignoreTrailingWhiteSpace", False)
     .csv(spark_path(directory)))
    try:
        rows = int(observation.get["rows"])
    except Exception:  # noqa: BLE001 - an observation Spark did not fill: counted by shoal later
        rows = -1
    sc = dataframe.sparkSession.sparkContext
    files = _count_files(sc, directory)
    log.info("staged %s: %s rows of %d Spark partitions into %s part files in %s (%.1f s)", what,
             "?" if rows < 0 else rows, partitions, "?" if files < 0 else files, directory,
             time.monotonic() - start)
    if rows == 0 or files == 0:
        remove(sc, directory)
        raise ValueError(f"{what}: the DataFrame has no rows: nothing to stage")
    return Staged(directory, f"{directory.rstrip('/')}/{PART_GLOB}", rows, partitions, files)


def remove(sc, directory: str) -> None:
    """Deletes a staging directory and everything in it; a failure is a warning, never an
    exception (it must not hide the job's own outcome)."""
    try:
        if is_uri(directory):
            path, fs = _hadoop_fs(sc, directory)
            fs.delete(path, True)
        elif os.path.isdir(directory):
            shutil.rmtree(directory)
        else:
            return
        log.info("removed the staging directory %s", directory)
    except Exception as e:  # noqa: BLE001 - OSError, Py4JJavaError
        log.warning("cannot remove the staging directory %s (remove it by hand): %s", directory, e)


class StagingArea:
    """The staging directories of one job: `root/<name>` per staged DataFrame. `close` removes
    them (and `root` when the job made it up, the default under model_dir) unless `keep`."""

    def __init__(self, sc, root: str, keep: bool, own_root: bool):
        self.sc = sc
        self.root = root.rstrip("/")
        self.keep = keep
        self.own_root = own_root
        self.written: List[str] = []

    def stage(self, dataframe, name: str, what: str) -> Staged:
        directory = f"{self.root}/{name}"
        self.written.append(directory)
        return stage(dataframe, directory, what)

    def close(self) -> None:
        if self.keep:
            if self.written:
                log.info("keeping the staged data in %s (keep_staging)", ", ".join(self.written))
            return
        for directory in ([self.root] if self.own_root else self.written):
            remove(self.sc, directory)
