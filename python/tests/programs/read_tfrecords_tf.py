"""Reads TFRecord files of tf.train.Example with TensorFlow and prints what it found as one JSON
line: {"files": {file: [{name: [kind, values]}, ...]}, "parse_example_agrees": bool}. Run by
spark_tfrecords_test.py with the TensorFlow virtualenv (bench/compare/tf-env.sh).

    python read_tfrecords_tf.py FILE...

Records come from tf.data.TFRecordDataset (which checks every CRC) and are parsed twice: by
tf.train.Example.FromString (values listed; bytes as hex) and by tf.io.parse_example with a
VarLenFeature per feature, whose values must agree with the first parse ("parse_example_agrees").
"""
import json
import sys

import tensorflow as tf

DTYPES = {"bytes_list": tf.string, "int64_list": tf.int64, "float_list": tf.float32}


def listed(feature):
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value)
    return kind, [v.hex() for v in values] if kind == "bytes_list" else values


def main(paths):
    out = {}
    agrees = True
    for path in paths:
        records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
        parsed = [tf.train.Example.FromString(r) for r in records]
        rows = [{name: listed(f) for name, f in e.features.feature.items()} for e in parsed]
        kinds = {name: kind for row in rows for name, (kind, _) in row.items()}
        spec = {name: tf.io.VarLenFeature(DTYPES[kind]) for name, kind in kinds.items()}
        if records:
            sparse = tf.io.parse_example(tf.constant(records), spec)
            for name, tensor in sparse.items():
                values = tensor.values.numpy().tolist()
                rows_of = tensor.indices.numpy()[:, 0].tolist()
                for i, row in enumerate(rows):
                    got = [v for v, r in zip(values, rows_of) if r == i]
                    if kinds[name] == "bytes_list":
                        got = [v.hex() for v in got]
                    want = row.get(name, (None, []))[1]
                    agrees &= got == want
        out[path] = rows
    print(json.dumps({"files": out, "parse_example_agrees": agrees}))


if __name__ == "__main__":
    main(sys.argv[1:])
