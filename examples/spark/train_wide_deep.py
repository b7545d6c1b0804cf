"""Trains wide & deep (examples/ctr/config.yaml) on Criteo-like text files with shoal inside Spark
executors: the driver program of examples/spark/submit.sh, which shows its spark-submit line for a
standalone cluster and for YARN. docs/spark.md explains every part.

    spark-submit [cluster options] --py-files shoal-python.zip --files build/shoal,config.yaml \\
        examples/spark/train_wide_deep.py --train 'hdfs://nn/ctr/part-0000[0-2].txt' \\
        --eval hdfs://nn/ctr/part-00003.txt --model-dir hdfs://nn/models/wide_deep

Prints the chief's summary (final metrics, export path, global step) as JSON; exits 1 with the
failed member's error when the job fails. With --score-eval it then scores the evaluation file as
a DataFrame with shoal.spark.predict on the same cluster shape and prints the mean predicted
click rate beside the actual one (a second JSON object).
"""
import argparse
import json
import logging
import sys

from pyspark.sql import SparkSession, functions

CRITEO_COLUMNS = (["label"] + [f"I{i}" for i in range(1, 14)] +
                  [f"C{i}" for i in range(1, 27)])

import shoal.spark


def yaml_value(text):
    """`--set` values as YAML scalars would read: numbers and booleans typed, the rest strings."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def criteo_frame(spark, path):
    """Criteo-layout text as a DataFrame typed the way shoal's criteo parser reads the files the
    model trained on: counts as doubles, the hex ids as int64 (a hashed column hashes an int64
    and its text differently), plus a row_id. Ids of up to 15 hex digits (Criteo's have 8)."""
    text = spark.read.csv(path, sep="\t", schema=", ".join(f"{c} STRING" for c in CRITEO_COLUMNS))
    return text.select(
        functions.monotonically_increasing_id().alias("row_id"),
        functions.col("label").cast("int").alias("label"),
        *[functions.col(c).cast("double").alias(c) for c in CRITEO_COLUMNS if c[0] == "I"],
        *[functions.conv(c, 16, 10).cast("long").alias(c) for c in CRITEO_COLUMNS
          if c[0] == "C"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="config.yaml",
                        help="the job's YAML: a path on the executors, or the name of a file "
                             "shipped with --files (default: config.yaml)")
    parser.add_argument("--train", required=True, help="training files (a glob; hdfs:// or local)")
    parser.add_argument("--eval", required=True, help="evaluation files (a glob)")
    parser.add_argument("--model-dir", required=True,
                        help="checkpoints, exports and summary.json (hdfs:// on a real cluster)")
    parser.add_argument("--workers", type=int, default=2, help="workers besides the chief")
    parser.add_argument("--ps", type=int, default=1, help="parameter servers")
    parser.add_argument("--no-evaluator", action="store_true", help="let the chief evaluate")
    parser.add_argument("--score-eval", action="store_true",
                        help="then score the evaluation file as a DataFrame (shoal.spark.predict)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config overrides, e.g. --set run.max_steps=500")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    overrides = {"input.train.files": [args.train], "input.eval.files": [args.eval]}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = yaml_value(value)
    spark = SparkSession.builder.appName("shoal wide & deep").getOrCreate()
    try:
        summary = shoal.spark.run(spark, args.config, num_workers=args.workers, num_ps=args.ps,
                                  evaluator=not args.no_evaluator, overrides=overrides,
                                  model_dir=args.model_dir)
        print(json.dumps(summary, indent=2, sort_keys=True), flush=True)
        if args.score_eval:
            scores = shoal.spark.predict(spark, args.config, criteo_frame(spark, args.eval),
                                         num_workers=args.workers, num_ps=args.ps,
                                         passthrough=["row_id", "label"],
                                         model_dir=args.model_dir)
            means = scores.agg(functions.count("*").alias("scored_rows"),
                               functions.avg(scores.logistic[0]).alias("mean_logistic"),
                               functions.avg("label").alias("mean_label")).first()
            print(json.dumps(means.asDict(), sort_keys=True))
    except shoal.spark.ShoalJobError as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
