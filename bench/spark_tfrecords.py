#!/usr/bin/env python3
"""Speed of shoal.spark.write_tfrecords on Criteo-like rows (label, I1..I13 integers with 10%
nulls, C1..C26 8-hex-digit strings: the columns `shoal convert` was measured on).

    py=$(SHOAL_VENV=~/.cache/shoal/venv-spark SHOAL_REQUIREMENTS=scripts/requirements-spark.txt \\
         scripts/python-env.sh) && "$py" bench/spark_tfrecords.py [--rows 200000]

1. The encoder alone, in this process, one core: rows (Python tuples, made beforehand) encoded as
   tf.train.Example and framed as TFRecords into a file, with CRC32C from google-crc32c and in
   pure Python.
2. write_tfrecords end to end on Spark local[2]: a DataFrame of the same shape made by Spark
   (cached and counted first, so its making is not timed) in 2 partitions, written by 2 tasks;
   and, for the floor, the same DataFrame's rows only handed to Python tasks that count them
   (DataFrame.rdd: the JVM pickles the rows, the Python workers make Row objects).
Prints one JSON line and a table.
"""

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from shoal.spark import example_encoder  # noqa: E402
from shoal.spark.example_encoder import Column, ExampleEncoder, tfrecord  # noqa: E402

COLUMNS = ([Column("label", "int64")] + [Column(f"I{i}", "int64") for i in range(1, 14)] +
           [Column(f"C{i}", "bytes") for i in range(1, 27)])


def python_rows(n):
    rng = random.Random(1)
    return [tuple([rng.randint(0, 1)] +
                  [None if rng.random() < 0.1 else rng.randint(0, 1000) for _ in range(13)] +
                  [f"{rng.randrange(1 << 32):08x}" for _ in range(26)]) for _ in range(n)]


def encode_file(rows, path, crc):
    saved = example_encoder.crc32c
    example_encoder.crc32c = crc
    try:
        encoder = ExampleEncoder(COLUMNS)
        start = time.perf_counter()
        with open(path, "wb") as f:
            for row in rows:
                f.write(tfrecord(encoder.encode(row)))
        return time.perf_counter() - start, os.path.getsize(path)
    finally:
        example_encoder.crc32c = saved


def spark_write(n, directory):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    from pyspark.sql import SparkSession, functions as F  # noqa: PLC0415

    from shoal.spark import write_tfrecords  # noqa: PLC0415

    spark = (SparkSession.builder.master("local[2]").appName("bench write_tfrecords")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        h = lambda k: F.pmod(F.xxhash64("id", F.lit(k)), F.lit(1 << 40))  # noqa: E731
        frame = spark.range(n, numPartitions=2).select(
            *([(h(0) % 2).cast("long").alias("label")] +
              [F.when(h(100 + i) % 10 == 0, None).otherwise(h(i) % 1001).cast("long")
               .alias(f"I{i}") for i in range(1, 14)] +
              [F.lpad(F.hex(h(200 + i) % (1 << 32)), 8, "0").alias(f"C{i}")
               for i in range(1, 27)])).cache()
        frame.count()
        start = time.perf_counter()
        counted = sum(frame.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect())
        floor = time.perf_counter() - start
        assert counted == n, counted
        start = time.perf_counter()
        written = write_tfrecords(frame, directory)
        return time.perf_counter() - start, written, floor
    finally:
        spark.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = tempfile.mkdtemp(prefix="shoal-bench-tfrecords-")
    try:
        rows = python_rows(args.rows)
        fast = example_encoder._fast_crc32c()  # noqa: SLF001
        results = {"rows": args.rows}
        for name, crc in (("google-crc32c", fast), ("pure Python", example_encoder.crc32c_python)):
            if crc is None:
                continue
            seconds, size = encode_file(rows, os.path.join(work, "one.tfrecord"), crc)
            results[f"encoder, CRC32C {name}"] = {"seconds": round(seconds, 2),
                                                  "rows_per_s": round(args.rows / seconds),
                                                  "mb_per_s": round(size / seconds / 1e6, 1),
                                                  "bytes": size}
        seconds, written, floor = spark_write(args.rows, os.path.join(work, "spark"))
        assert written.rows == args.rows, written
        results["Spark rows into Python only (DataFrame.rdd), local[2]"] = {
            "seconds": round(floor, 2), "rows_per_s": round(args.rows / floor), "mb_per_s": 0.0}
        results[f"write_tfrecords, local[2], CRC32C {example_encoder.CRC32C_IMPLEMENTATION}"] = {
            "seconds": round(seconds, 2), "rows_per_s": round(args.rows / seconds),
            "mb_per_s": round(written.bytes / seconds / 1e6, 1), "bytes": written.bytes,
            "files": len(written.files)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results))
    print(f"{'what':58} {'seconds':>8} {'rows/s':>9} {'MB/s':>6}")
    for what, r in results.items():
        if isinstance(r, dict):
            print(f"{what:58} {r['seconds']:8.2f} {r['rows_per_s']:9,d} {r['mb_per_s']:6.1f}")


if __name__ == "__main__":
    main()
