"""tf.train.Example / TFRecord compatibility between shoal and TensorFlow itself.

TensorFlow (the PyPI package, from scripts/requirements-test.txt) writes Examples and TFRecords
that shoal's C++ decodes, and reads back what shoal writes, both with its Python classes and with
its own parse ops. The C++ side is the test-only helper build/layers/data/example_tool
(shoal/data/example_tool.cc), found through $SHOAL_EXAMPLE_TOOL; ctest sets it
(shoal/data/example.cmake):

    SHOAL_EXAMPLE_TOOL=build/layers/data/example_tool \
        $(scripts/python-env.sh) -m pytest -q shoal/data/example_compat_test.py
"""
import json
import math
import os
import struct
import subprocess

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def tool():
    path = os.environ.get("SHOAL_EXAMPLE_TOOL")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set SHOAL_EXAMPLE_TOOL to the built example_tool (ctest does)")
    return path


def run_tool(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


def f32(x):
    """The float32 bit pattern of x, with every NaN alike."""
    return "nan" if math.isnan(x) else struct.pack("<f", x)


def feature(kind, values):
    if kind == "float_list":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    if kind == "int64_list":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


SCHEMA = {"label": "float_list", "dense": "float_list", "ids": "int64_list", "tags": "bytes_list"}
TOOL_TYPES = {"float_list": "float", "int64_list": "int64", "bytes_list": "bytes"}

# Rows as {name: values}; a name left out is a missing feature, [] an empty list.
ROWS = [
    {"label": [1.0], "dense": [0.5, -0.0, 1e-45, 3.4028234663852886e38],
     "ids": [0, -1, INT64_MIN, INT64_MAX, 127, 128, 300], "tags": [b"caf\xc3\xa9", b"\x00\xff", b""]},
    {"label": [0.0], "dense": [float("inf"), float("-inf"), float("nan"), 1 / 3]},
    {},
    {"label": [], "ids": [], "tags": []},
    {"ids": list(range(-50, 50)), "tags": [bytes(range(256))]},
    {"label": [1.0], "other": [1.5]},  # a feature outside the schema
]


def write_tf_examples(path, rows, compression_type=None):
    options = tf.io.TFRecordOptions(compression_type=compression_type) if compression_type else None
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for row in rows:
            features = {}
            for name, values in row.items():
                kind = SCHEMA.get(name, "float_list")
                features[name] = feature(kind, values)
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())


def assert_values_equal(kind, got, want, where):
    assert len(got) == len(want), where
    for g, w in zip(got, want):
        if kind == "float_list":
            assert f32(g) == f32(w), f"{where}: {g} != {w}"
        elif kind == "int64_list":
            assert g == w, where
        else:
            assert g == w, where


# (file name, TFRecordOptions compression_type): shoal picks the compression from the name, or for
# GZIP from the gzip magic when the name says nothing.
TF_FILES = [
    ("tf.tfrecord", None),
    ("tf.tfrecord.gz", "GZIP"),
    ("tf_gzip_no_suffix.tfrecord", "GZIP"),
    ("tf.tfrecord.zlib", "ZLIB"),
]


@pytest.mark.parametrize("name,compression_type", TF_FILES)
def test_tensorflow_writes_shoal_reads(tool, tmp_path, name, compression_type):
    path = tmp_path / name
    # Compressed: thousands of records, so records straddle zlib's output and shoal's buffers.
    rows = ROWS if compression_type is None else ROWS * 2000
    write_tf_examples(path, rows, compression_type)
    magic = {None: None, "GZIP": b"\x1f\x8b", "ZLIB": b"\x78"}[compression_type]
    if magic is not None:
        assert path.read_bytes().startswith(magic)  # TensorFlow really compressed it
    schema = ",".join(f"{name}:{TOOL_TYPES[kind]}" for name, kind in SCHEMA.items())
    result = run_tool(tool, "decode", str(path), schema)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(rows)
    for index, (line, row) in enumerate(zip(lines, rows)):
        decoded = json.loads(line)
        assert set(decoded) == set(SCHEMA)
        for name, kind in SCHEMA.items():
            where = f"record {index} feature {name}"
            assert decoded[name]["kind"] == kind, where
            got = decoded[name]["value"]
            if kind == "bytes_list":
                got = [bytes.fromhex(v) for v in got]
            assert_values_equal(kind, got, row.get(name, []), where)


@pytest.mark.parametrize("compression_type", ["NONE", "GZIP", "ZLIB"])
def test_shoal_writes_tensorflow_reads(tool, tmp_path, compression_type):
    path = tmp_path / "shoal.tfrecord"
    result = run_tool(tool, "write", str(path), "40", compression_type)
    assert result.returncode == 0, result.stderr
    expected = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(expected) == 40

    # TFRecordDataset checks both CRCs of every record (and, compressed, the gzip/zlib checksums).
    tf_compression = "" if compression_type == "NONE" else compression_type
    if tf_compression:
        assert path.read_bytes()[:1] in (b"\x1f", b"\x78")  # compressed on disk
    dataset = tf.data.TFRecordDataset(str(path), compression_type=tf_compression)
    records = [r.numpy() for r in dataset]
    assert len(records) == 40
    for index, (record, want) in enumerate(zip(records, expected)):
        example = tf.train.Example.FromString(record)
        features = example.features.feature
        assert set(features.keys()) == set(want), f"record {index}"
        for name, spec in want.items():
            where = f"record {index} feature {name}"
            kind = spec["kind"]
            assert features[name].WhichOneof("kind") == kind, where
            got = list(getattr(features[name], kind).value)
            values = spec["value"]
            if kind == "bytes_list":
                values = [bytes.fromhex(v) for v in values]
            assert_values_equal(kind, got, values, where)

    # TensorFlow's own parse op (its fast C++ Example parser) accepts the bytes too.
    spec = {
        "label": tf.io.VarLenFeature(tf.float32),
        "dense": tf.io.VarLenFeature(tf.float32),
        "ids": tf.io.VarLenFeature(tf.int64),
        "tags": tf.io.VarLenFeature(tf.string),
    }
    parsed = tf.io.parse_example(tf.constant(records), spec)
    for name in spec:
        dense_rows = tf.sparse.to_dense(parsed[name]).numpy().tolist() if name != "tags" else None
        counts = tf.math.bincount(
            tf.cast(parsed[name].indices[:, 0], tf.int32), minlength=40).numpy().tolist()
        for index, want in enumerate(expected):
            n = len(want.get(name, {"value": []})["value"])
            assert counts[index] == n, f"record {index} feature {name}"
            if name == "ids" and n:
                assert dense_rows[index][:n] == want[name]["value"]


def test_corrupt_tensorflow_file_is_data_loss(tool, tmp_path):
    path = tmp_path / "corrupt.tfrecord"
    write_tf_examples(path, ROWS[:3])
    data = bytearray(path.read_bytes())
    first_length = struct.unpack("<Q", data[:8])[0]
    second = 8 + 4 + first_length + 4
    data[second + 12 + 2] ^= 0x40  # a data byte of the second record
    path.write_bytes(bytes(data))
    result = run_tool(tool, "decode", str(path), "label:float")
    assert result.returncode == 1
    assert "DATA_LOSS" in result.stderr
    assert f"corrupt record at offset {second}" in result.stderr
    assert "data crc mismatch" in result.stderr


def test_truncated_tensorflow_gzip_file_is_data_loss(tool, tmp_path):
    path = tmp_path / "cut.tfrecord.gz"
    write_tf_examples(path, ROWS * 100, "GZIP")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])
    result = run_tool(tool, "decode", str(path), "label:float")
    assert result.returncode == 1
    assert "DATA_LOSS" in result.stderr
    assert "compressed offset" in result.stderr


def test_wrong_kind_names_feature_and_record(tool, tmp_path):
    path = tmp_path / "kinds.tfrecord"
    write_tf_examples(path, [{"label": [1.0]}, {"label": [0.0], "other": [2.0]}])
    result = run_tool(tool, "decode", str(path), "label:float,other:int64")
    assert result.returncode == 1
    assert "INVALID_ARGUMENT" in result.stderr
    assert f"{path}:2" in result.stderr
    assert "feature 'other': expected int64_list for int64 column, found float_list" in result.stderr
