"""`shoal inspect` on TFRecord files that TensorFlow itself wrote, compressed or not: it must read
them as training does (compression from the name, or GZIP from the gzip magic), check every CRC
and show the first Example. Regression: a GZIP file was read as plain TFRecord and reported
"length crc mismatch". $SHOAL_BIN is the binary (ctest sets it)."""
import os
import subprocess

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

SHOAL = os.environ.get("SHOAL_BIN", "build/shoal")
RECORDS = 3000


def write_examples(path, compression_type):
    options = tf.io.TFRecordOptions(compression_type=compression_type)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for i in range(RECORDS):
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[i % 2])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, i + 1])),
            }))
            writer.write(example.SerializeToString())


@pytest.mark.parametrize("name,compression_type,shown", [
    ("a.tfrecord", "", None),
    ("a.tfrecord.gz", "GZIP", "GZIP"),
    ("a_gzip_without_suffix.tfrecord", "GZIP", "GZIP"),
    ("a.tfrecord.zlib", "ZLIB", "ZLIB"),
])
def test_inspect_reads_what_tensorflow_wrote(tmp_path, name, compression_type, shown):
    path = tmp_path / name
    write_examples(path, compression_type)
    out = subprocess.run([SHOAL, "inspect", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"records: {RECORDS} (CRCs OK)" in out.stdout, out.stdout
    assert "first record: tf.train.Example with 2 features" in out.stdout, out.stdout
    if shown is None:
        assert "compression:" not in out.stdout, out.stdout
    else:
        assert f"compression: {shown}" in out.stdout, out.stdout
