"""The job's YAML config as the driver reads it, for what `run` and `predict` check or derive
before any stage starts (the columns a DataFrame must have, the staging directory's default).

The driver parses the file with PyYAML when it is installed, else with the YAML reader Spark's JVM
ships (Jackson's YAMLFactory, a dependency of Spark itself), so that the package needs nothing
beyond pyspark. The config is found as the members find it: a path on the driver's host, a URI
read through the JVM's Hadoop FileSystem (hdfs://, webhdfs://), or the name of a file shipped
with `spark-submit --files`. When it cannot be read, `load` returns None with the reason, and the
callers fall back to what they can do without it (shoal's own errors catch the rest).
"""

import json
import os
from typing import Any, Dict, List, Optional, Tuple


def _read_text(sc, config: str) -> str:
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as f:
            return f.read()
    if "://" in config:
        jvm = sc._jvm  # noqa: SLF001 - the Hadoop FileSystem has no Python API
        path = jvm.org.apache.hadoop.fs.Path(config)
        fs = path.getFileSystem(sc._jsc.hadoopConfiguration())  # noqa: SLF001
        stream = fs.open(path)
        try:
            return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
    from pyspark import SparkFiles
    shipped = os.path.join(SparkFiles.getRootDirectory(), os.path.basename(config))
    if os.path.isfile(shipped):
        with open(shipped, encoding="utf-8") as f:
            return f.read()
    raise OSError(f"{config} is neither a file on the driver, a URI nor a file shipped with "
                  f"--files")


def parse_yaml(text: str, sc=None) -> Any:
    """`text` parsed as YAML: by PyYAML if installed, else by the JVM's Jackson (needs `sc`)."""
    try:
        import yaml  # noqa: PLC0415 - optional
    except ImportError:
        yaml = None
    if yaml is not None:
        return yaml.safe_load(text)
    if sc is None:
        raise ValueError("no YAML parser: PyYAML is not installed and no SparkContext was given")
    jvm = sc._jvm  # noqa: SLF001
    databind = jvm.com.fasterxml.jackson.databind
    tree = databind.ObjectMapper(jvm.com.fasterxml.jackson.dataformat.yaml.YAMLFactory()) \
        .readTree(text)
    return json.loads(databind.ObjectMapper().writeValueAsString(tree))


def load(sc, config: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(the config as a dict, None), or (None, why it could not be read)."""
    try:
        parsed = parse_yaml(_read_text(sc, config), sc)
    except Exception as e:  # noqa: BLE001 - OSError, YAML errors, Py4JJavaError
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if not isinstance(parsed, dict):
        return None, "its top level is not a mapping"
    return parsed, None


def lookup(config: Optional[Dict[str, Any]], dotted: str) -> Any:
    """The value at `dotted` ("input.train.schema") in `config`, or None."""
    node: Any = config
    for key in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


# Feature columns that read a data column, and the key naming it (`source`, default `name`).
# docs/feature_columns.md; crossed, embedding, indicator and wide columns refer to other columns.
SOURCE_COLUMN_KINDS = ("numeric", "bucketized", "hashed", "vocabulary", "identity")


def needed_columns(config: Optional[Dict[str, Any]], label: bool) -> List[str]:
    """The data columns the config's feature columns read, and its label when `label`, in the
    config's order, without repeats. Entries of an unknown shape are left to shoal's own errors."""
    features = lookup(config, "features")
    if not isinstance(features, dict):
        return []
    names: List[str] = []
    for kind in SOURCE_COLUMN_KINDS:
        for entry in features.get(kind) or []:
            if isinstance(entry, dict):
                source = entry.get("source") or entry.get("name")
                if isinstance(source, str) and source not in names:
                    names.append(source)
    target = features.get("label")
    if label and isinstance(target, str) and target and target not in names:
        names.append(target)
    return names
