"""shoal.spark.write_tfrecords on a local Spark (local[2,2]: two task threads, a failed task tried
twice): a DataFrame of strings, integers, booleans, floats, decimals, binary, arrays and nulls in
four partitions (one empty) read back by the real TensorFlow (bench/compare/tf-env.sh's 2.15,
in a subprocess), every value compared; the bytes against `shoal convert`'s; `shoal train` on
the files; refused column types and destinations; failed and crashed tasks that are tried again.
Local mode suffices here: the executors' side is a plain Python task (no barrier stage).

    SHOAL_BIN=build/shoal $(SHOAL_VENV=~/.cache/shoal/venv-spark \\
      SHOAL_REQUIREMENTS=scripts/requirements-spark.txt scripts/python-env.sh) \\
      -m pytest -q python/tests/spark_tfrecords_test.py
"""
import csv
import decimal
import json
import math
import os
import random
import struct
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from shoal.spark import TFRecordWriteError, write_tfrecords
from shoal.spark import example_encoder, tfrecords

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHOAL = os.path.abspath(os.environ.get("SHOAL_BIN", os.path.join(REPO, "build", "shoal")))


@pytest.fixture(scope="module")
def spark():
    # The executors' Python workers import the checkout's package, as the driver does.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    session = (SparkSession.builder.master("local[2,2]").appName("spark_tfrecords_test")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def frame(spark, schema, partitions):
    """A DataFrame whose partition i holds exactly partitions[i] (a list of tuples)."""
    rdd = spark.sparkContext.parallelize(range(len(partitions)), len(partitions)) \
        .flatMap(lambda i: partitions[i])
    return spark.createDataFrame(rdd, schema)


def f32(x):
    """x as float32, as TensorFlow returns it (beyond float32's range: +-inf)."""
    if abs(x) > 3.5e38:
        return math.copysign(math.inf, x)
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def tensorflow_reads(paths):
    tf_python = subprocess.run([os.path.join(REPO, "bench", "compare", "tf-env.sh")],
                               capture_output=True, text=True, check=True).stdout.strip()
    out = subprocess.run([tf_python, os.path.join(HERE, "programs", "read_tfrecords_tf.py"),
                          *paths], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


ALL_TYPES = T.StructType([
    T.StructField("name", T.StringType()), T.StructField("small", T.ShortType()),
    T.StructField("id", T.LongType()), T.StructField("flag", T.BooleanType()),
    T.StructField("ratio", T.FloatType()), T.StructField("score", T.DoubleType()),
    T.StructField("price", T.DecimalType(10, 2)), T.StructField("raw", T.BinaryType()),
    T.StructField("tags", T.ArrayType(T.StringType())),
    T.StructField("ids", T.ArrayType(T.LongType())),
    T.StructField("weights", T.ArrayType(T.DoubleType())),
])
D = decimal.Decimal
ALL_ROWS = [
    [("alice", 1, 7, True, 0.5, 0.1, D("12.34"), b"\x00\xff", ["a", "b"], [1, -2], [0.25, 1e-3]),
     ("", -3, -(1 << 63), False, None, 1e39, None, b"", [], [], []),
     (None, None, None, None, None, None, None, None, None, None, None)],
    [("bob, \"the\" builder\n", 32767, (1 << 63) - 1, None, -2.5, -1e39, D("-0.01"), None,
      ["x" * 300], [0, 1 << 40], [3.0])],
    [],  # an empty partition writes no file
    [("日本語", 0, 300, True, 1e-7, 2.0 / 3, D("99999999.99"), b"z" * 200, ["", "é"], [16384],
      [-0.0, 1e39])],
]


def expected_features(row):
    """What TensorFlow must find for a row of ALL_ROWS: {name: [kind, values]}, bytes as hex."""
    out = {}
    for field, value in zip(ALL_TYPES.fields, row):
        if value is None or value == []:
            continue  # a null or an empty array: a missing feature
        values = value if isinstance(value, list) else [value]
        element = field.dataType.elementType if isinstance(field.dataType, T.ArrayType) \
            else field.dataType
        if isinstance(element, (T.StringType, T.BinaryType)):
            out[field.name] = ["bytes_list", [(v.encode() if isinstance(v, str) else v).hex()
                                              for v in values]]
        elif isinstance(element, (T.FloatType, T.DoubleType, T.DecimalType)):
            out[field.name] = ["float_list", [f32(v) for v in values]]
        else:
            out[field.name] = ["int64_list", [int(v) for v in values]]
    return out


def test_every_value_reads_back_in_tensorflow(spark, tmp_path):
    path = tmp_path / "all"
    written = write_tfrecords(frame(spark, ALL_TYPES, ALL_ROWS), str(path))
    parts = [str(path / f"part-0000{i}.tfrecord") for i in (0, 1, 3)]
    assert written.files == parts and written.rows == 5 and written.partitions == 4, written
    assert written.bytes == sum(os.path.getsize(p) for p in parts)
    assert sorted(os.listdir(path)) == ["_SUCCESS"] + [os.path.basename(p) for p in parts]

    read = tensorflow_reads(parts)
    assert read["parse_example_agrees"], read
    for part, rows in zip(parts, [ALL_ROWS[0], ALL_ROWS[1], ALL_ROWS[3]]):
        records = read["files"][part]
        assert len(records) == len(rows), (part, records)
        for record, row in zip(records, rows):
            assert record == expected_features(row), (row, record)


def test_the_bytes_are_those_of_shoal_convert(spark, tmp_path):
    """Byte for byte, so also the order of features whose names prefix one another (count before
    count_mean, as in C++ protobuf; Python's protobuf serializes them the other way round)."""
    rng = random.Random(3)
    rows = [(rng.choice(["red", "a,b", "say \"hi\"", "ü"]),
             None if i % 7 == 0 else rng.randint(-10 ** 12, 10 ** 12),
             None if i % 5 == 0 else rng.randint(-4000, 4000) / 8) for i in range(300)]
    schema = T.StructType([T.StructField("colour", T.StringType()),
                           T.StructField("count", T.LongType()),
                           T.StructField("count_mean", T.DoubleType())])
    ours = write_tfrecords(frame(spark, schema, [rows]), str(tmp_path / "ours"))
    source = tmp_path / "rows.csv"
    with open(source, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["colour", "count", "count_mean"])
        writer.writerows([["" if v is None else v for v in row] for row in rows])
    subprocess.run([SHOAL, "convert", "--format", "csv", "--out", str(tmp_path / "convert"),
                    str(source)], check=True, capture_output=True)
    with open(ours.files[0], "rb") as a, open(tmp_path / "convert" / "part-00000.tfrecord",
                                              "rb") as b:
        assert a.read() == b.read()


def test_shoal_trains_on_the_files(spark, tmp_path):
    rng = random.Random(5)
    rows = []
    for _ in range(600):
        tags = rng.sample(["good", "bad", "new", "old", "big"], rng.randint(0, 3))
        rows.append((1 if "good" in tags else 0, rng.random(), tags,
                     rng.choice(["red", "blue", None])))
    schema = T.StructType([T.StructField("clicked", T.IntegerType()),
                           T.StructField("x", T.DoubleType()),
                           T.StructField("tags", T.ArrayType(T.StringType())),
                           T.StructField("colour", T.StringType())])
    written = write_tfrecords(frame(spark, schema, [rows[:200], rows[200:450], rows[450:]]),
                              str(tmp_path / "data"))
    assert len(written.files) == 3 and written.rows == 600
    section = (f"{{files: ['{tmp_path}/data/part-*.tfrecord'], format: tfrecord, batch_size: 32, "
               f"schema: [{{name: clicked, type: int64}}, {{name: x}}, {{name: tags, type: "
               f"string}}, {{name: colour, type: string}}]")
    config = tmp_path / "linear.yaml"
    config.write_text(f"""
model_dir: {tmp_path}/model
features:
  label: clicked
  numeric: [{{name: x}}]
  hashed: [{{name: tags, hash_bucket_size: 1000}}, {{name: colour, hash_bucket_size: 100}}]
  wide: [{{categorical: tags}}, {{categorical: colour}}]
model: {{type: linear}}
input:
  train: {section}, num_epochs: 5}}
  eval: {section}}}
""")
    out = subprocess.run([SHOAL, "train", str(config)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    with open(tmp_path / "model" / "summary.json") as f:
        summary = json.load(f)
    assert summary["examples"] == 5 * 600, summary
    assert summary["metrics"]["auc"] > 0.95, summary  # the label is "good" in tags


@pytest.mark.parametrize("column, type_name", [
    (T.StructField("day", T.DateType()), "date"),
    (T.StructField("at", T.TimestampType()), "timestamp"),
    (T.StructField("m", T.MapType(T.StringType(), T.LongType())), "map<string,bigint>"),
    (T.StructField("s", T.StructType([T.StructField("a", T.LongType())])), "struct<a:bigint>"),
    (T.StructField("nested", T.ArrayType(T.ArrayType(T.LongType()))), "array<array<bigint>>"),
])
def test_a_column_an_example_cannot_hold_is_refused_before_writing(spark, tmp_path, column,
                                                                   type_name):
    schema = T.StructType([T.StructField("ok", T.LongType()), column])
    with pytest.raises(ValueError) as e:
        write_tfrecords(spark.createDataFrame([], schema), str(tmp_path / "out"))
    assert f"column '{column.name}' has type {type_name}" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_repeated_column_names_are_refused(spark, tmp_path):
    df = spark.createDataFrame([(1, 2)], "a long, b long").toDF("a", "a")
    with pytest.raises(ValueError, match="more than one column named 'a'"):
        write_tfrecords(df, str(tmp_path / "out"))


def test_a_destination_that_holds_anything_needs_overwrite(spark, tmp_path):
    schema = "id long"
    path = tmp_path / "out"
    first = write_tfrecords(frame(spark, schema, [[(1,)], [(2,)], [(3,)]]), str(path))
    assert len(first.files) == 3
    with pytest.raises(ValueError, match="is not empty .*mode='overwrite'"):
        write_tfrecords(frame(spark, schema, [[(4,)]]), str(path))
    assert sorted(os.listdir(path)) == ["_SUCCESS", "part-00000.tfrecord", "part-00001.tfrecord",
                                        "part-00002.tfrecord"]
    second = write_tfrecords(frame(spark, schema, [[(4,), (5,)]]), "file://" + str(path),
                             mode="overwrite")
    assert second.files == [str(path / "part-00000.tfrecord")] and second.rows == 2
    assert sorted(os.listdir(path)) == ["_SUCCESS", "part-00000.tfrecord"]  # the old 2 parts gone

    (path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="also holds notes.txt"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), str(path), mode="overwrite")
    assert (path / "part-00000.tfrecord").exists()  # nothing removed
    with pytest.raises(ValueError, match="mode must be"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), str(tmp_path / "new"), mode="append")
    with pytest.raises(ValueError, match="mem:// is one process's memory"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), "mem://x")
    with pytest.raises(ValueError, match="below the root"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), "file:///")
    with pytest.raises(ValueError, match="the driver cannot find it: the shoal binary given as "
                                         "shoal_binary is not usable"):
        write_tfrecords(frame(spark, schema, [[(6,)]]), "hdfs://nn:8020/x",
                        shoal_binary=str(tmp_path / "nope"))


def test_destination_paths_and_the_hdfs_settings_the_tasks_get(tmp_path):
    assert tfrecords.destination_path(str(tmp_path / "a")) == str(tmp_path / "a")
    assert tfrecords.destination_path(f"file://{tmp_path}/a") == str(tmp_path / "a")
    assert tfrecords.destination_path("hdfs://nn:8020/a/b//") == "hdfs://nn:8020/a/b"
    for bad in ("", None, "file://", "/", "hdfs://nn:8020", "hdfs://nn:8020/", "webhdfs://nn/"):
        with pytest.raises(ValueError):
            tfrecords.destination_path(bad)
    user = tfrecords.hdfs_environment({})["HADOOP_USER_NAME"]
    assert user and user == subprocess.run(["id", "-un"], capture_output=True, text=True,
                                           check=True).stdout.strip()
    assert tfrecords.hdfs_environment(
        {"HADOOP_USER_NAME": "alice", "SHOAL_HDFS_HTTP_PORTS": "8020:50070", "PATH": "/bin",
         "SHOAL_WEBHDFS_PORT": ""}) == {"HADOOP_USER_NAME": "alice",
                                         "SHOAL_HDFS_HTTP_PORTS": "8020:50070"}


def test_a_null_inside_an_array_fails_the_write_and_leaves_no_part(spark, tmp_path):
    rows = [[(1, ["a"])], [(2, ["b"]), (3, ["c", None])]]
    path = tmp_path / "out"
    with pytest.raises(TFRecordWriteError) as e:
        write_tfrecords(frame(spark, "id long, tags array<string>", rows), str(path))
    assert "partition 1, row 1: column 'tags': holds a null element" in str(e.value)
    assert os.listdir(path) == []  # not part-00000 either, although its task succeeded


@pytest.mark.parametrize("failure", ["error", "crash"])
def test_a_task_tried_again_leaves_whole_parts_only(spark, tmp_path, failure):
    """Partition 1 fails at its row 150 on the first attempt, after 150 rows went into its file:
    with a Python error (the writer removes its file) or by its Python worker dying (the file
    stays behind in _temporary until the driver removes it). Spark tries the task again."""
    marker = str(tmp_path / "failed-once")

    def rows(partition):
        for i in range(300):
            if partition == 1 and i == 150 and not os.path.exists(marker):
                open(marker, "w").close()
                if failure == "crash":
                    os._exit(1)
                yield (i, ["x", None])  # a null in an array: the writer fails
                continue
            yield (i, ["x"] * (i % 3))

    df = spark.createDataFrame(
        spark.sparkContext.parallelize(range(2), 2).flatMap(rows), "i long, tags array<string>")
    path = tmp_path / "out"
    written = write_tfrecords(df, str(path))
    assert os.path.exists(marker)
    assert written.rows == 600 and len(written.files) == 2, written
    assert sorted(os.listdir(path)) == ["_SUCCESS", "part-00000.tfrecord", "part-00001.tfrecord"]
    for part in written.files:  # every record whole: 300 in each part
        with open(part, "rb") as f:
            data = f.read()
        count, at = 0, 0
        while at < len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            record = data[at + 12:at + 12 + length]
            assert struct.unpack_from("<I", data, at + 12 + length)[0] == \
                example_encoder.masked_crc32c(record)
            at += 16 + length
            count += 1
        assert count == 300 and at == len(data)


def test_crc32c_in_pure_python_matches_google_crc32c():
    assert example_encoder.CRC32C_IMPLEMENTATION == "google-crc32c"  # the test venv has it
    assert example_encoder.crc32c_python(b"123456789") == 0xE3069283
    assert example_encoder.crc32c_python(bytes(32)) == 0x8A9136AA  # RFC 3720's vector
    rng = random.Random(7)
    for n in list(range(0, 20)) + [63, 64, 65, 1000, 4099]:
        data = bytes(rng.getrandbits(8) for _ in range(n))
        assert example_encoder.crc32c_python(data) == example_encoder.crc32c(data), n
