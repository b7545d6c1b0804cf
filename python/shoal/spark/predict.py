"""Distributed prediction over a DataFrame: `predict`.

The DataFrame is staged as CSV part files (staging.py, as for input_mode="spark"), then one
barrier stage runs the cluster-prediction mode of `shoal run` (docs/prediction.md) on every
member: the chief restores the latest checkpoint of model_dir onto the parameter servers, the
chief and the workers lease the part files as data tasks and write one JSON-lines file per task,
and the chief writes `_SUCCESS` last. The driver then reads the output back as a DataFrame.
"""

import json
import logging
import time
import uuid
from typing import Any, Dict, Mapping, Optional, Sequence

from shoal.spark import driver_config, staging
from shoal.spark import job as job_module  # its _new_job_secret, looked up at each call
from shoal.spark.cluster import describe, plan_members, set_flags
from shoal.spark.job import (Launch, check_config_arg, check_spark, load_and_check,
                             refuse_input_overrides, required_model_dir, resolve_model_dir,
                             run_stage, section_schema, staging_area)
from shoal.spark.member import MemberJob

log = logging.getLogger("shoal.spark")

# shoal's schema types as the JSON output holds them (a float column passes through as a number).
_JSON_TYPES = {"int64": "bigint", "float": "double", "string": "string"}


def eval_section(parsed: Optional[Dict[str, Any]], glob: str,
                 schema: Optional[Sequence[Any]]) -> Dict[str, Any]:
    """The whole `input.eval` section prediction reads: the staged part files as CSV, typed by
    `schema`, in batches of the config's eval (or train) batch_size. It replaces the config's
    section, so none of its other settings (a holdout, several epochs) narrows or repeats the
    rows: every row of the DataFrame is scored once."""
    section: Dict[str, Any] = {"files": [glob], "format": "csv", "header": True,
                               "schema": list(schema)}
    for source in ("eval", "train"):
        batch_size = driver_config.lookup(parsed, f"input.{source}.batch_size")
        if isinstance(batch_size, int) and batch_size > 0:
            section["batch_size"] = batch_size
            break
    return section


def prediction_flags(output_dir: str, passthrough: Sequence[str]) -> list:
    flags = ["--predict-output", output_dir]
    for column in passthrough:
        flags += ["--passthrough", column]
    return flags


def default_output_dir(model_dir: str, job_id: str) -> str:
    return f"{model_dir.rstrip('/')}/spark-predictions/{job_id}"


def read_output(spark, output_dir: str, passthrough: Sequence[str], input_schema,
                column_types: Mapping[str, str]):
    """The prediction's part files as a DataFrame: the passthrough columns with the input
    DataFrame's types, then the model's outputs (lists of doubles, named as in the first line)."""
    from pyspark.sql import functions, types  # noqa: PLC0415

    parts = f"{staging.spark_path(output_dir).rstrip('/')}/part-*.jsonl"
    first = spark.read.text(parts).limit(1).collect()
    outputs = [key for key in (json.loads(first[0][0]) if first else {}) if key not in passthrough]
    read_as = ", ".join([f"`{c}` {_JSON_TYPES.get(column_types.get(c, 'string'), 'string')}"
                         for c in passthrough] + [f"`{o}` array<double>" for o in outputs])
    scores = spark.read.schema(read_as).json(parts)
    original = {field.name: field.dataType for field in input_schema.fields}
    return scores.select(
        *[functions.col(f"`{c}`").cast(original[c]).alias(c) for c in passthrough],
        *[functions.col(f"`{o}`").cast(types.ArrayType(types.DoubleType())).alias(o)
          for o in outputs])


def predict(spark, config: str, dataframe, num_workers: int, num_ps: int, *,
            passthrough: Sequence[str] = (), evaluator: bool = False,
            output_dir: Optional[str] = None, staging_dir: Optional[str] = None,
            keep_staging: bool = False, overrides: Optional[Mapping[str, Any]] = None,
            model_dir: Optional[str] = None, shoal_binary: Optional[str] = None,
            log_dir: Optional[str] = None, timeout_secs: Optional[float] = None,
            slot_wait_secs: float = 120.0, slot_settle_secs: float = 10.0,
            kill_grace_secs: float = 10.0, log_tail_lines: int = 50):
    """Scores `dataframe` with the latest checkpoint of model_dir on a shoal cluster of `num_ps`
    parameter servers, a chief and `num_workers` workers inside one Spark barrier stage, and
    returns a DataFrame with one row per input row: the `passthrough` columns (with their input
    types) and the model's outputs, each an array<double> (a binary head: logits, logistic,
    class_ids; docs/prediction.md). The summary (rows, tasks, global_step, checkpoint) is logged
    and kept as the returned DataFrame's `shoal_summary` attribute.

    dataframe: a DataFrame holding every column the config's features read (the label is not
        needed), as scalars; it is staged as CSV first (staging_dir, keep_staging: as for `run`;
        default staging: MODEL_DIR/spark-staging/<job id>/input).
    passthrough: input columns copied into every output row (an id, to join the scores back).
    evaluator: an evaluator only waits for the end of a prediction; off by default.
    output_dir: where the part files and `_SUCCESS` are written, a directory every member can
        write and the driver read (hdfs:// over several hosts); it must not hold a finished
        prediction. Default: MODEL_DIR/spark-predictions/<job id>. It stays after the call: the
        returned DataFrame reads it lazily.
    The other arguments are `run`'s.

    Raises ValueError for bad arguments, SparkSettingsError as `run`; ShoalJobError when the job
    fails (with no checkpoint in model_dir: shoal's "no checkpoint in model_dir ...; train the
    model first").
    """
    what_call = "shoal.spark.predict"
    check_config_arg(config, what_call)
    if dataframe is None or not hasattr(dataframe, "schema"):
        raise ValueError(f"{what_call}: dataframe must be a DataFrame, got {dataframe!r}")
    if isinstance(passthrough, str):
        passthrough = [passthrough]
    passthrough = list(passthrough)
    staging.require_columns(dataframe.schema, passthrough, what_call, "passthrough names")
    if num_ps == 0:
        raise ValueError(f"{what_call}: num_ps must be >= 1: a cluster prediction serves the "
                         f"checkpoint from parameter servers (run.strategy all_reduce predicts "
                         f"with `shoal predict` instead)")
    members = plan_members(num_ps, num_workers, evaluator)
    overrides = dict(overrides or {})
    set_flags(overrides)
    refuse_input_overrides(overrides, ["eval"], what_call,
                           "prediction reads the DataFrame given instead")
    what = describe(members)
    launch = Launch(shoal_binary, log_dir, timeout_secs, slot_wait_secs, slot_settle_secs,
                    kill_grace_secs, log_tail_lines)
    sc = getattr(spark, "sparkContext", spark)
    parsed, problem = load_and_check(sc, config, {"dataframe": dataframe}, False, what_call)
    job_id = uuid.uuid4().hex[:12]
    resolved_model_dir = resolve_model_dir(model_dir, overrides, parsed)
    if output_dir is None:
        output_dir = default_output_dir(
            required_model_dir(resolved_model_dir, problem, what_call, "output_dir",
                               "the output goes under model_dir/spark-predictions"), job_id)
    area = staging_area(sc, what_call, staging_dir, resolved_model_dir, problem, job_id,
                        keep_staging)
    slots = check_spark(sc, members, what, launch)
    declared = section_schema(parsed, overrides, ["eval", "train"])
    schema = declared if declared is not None else staging.derived_schema(dataframe.schema)
    start = time.monotonic()
    try:
        staged = area.stage(dataframe, "input", "dataframe")
        overrides["input.eval"] = eval_section(parsed, staged.glob, schema)
        member_job = MemberJob(members, config, set_flags(overrides) +
                        prediction_flags(output_dir, passthrough), model_dir, launch.shoal_binary,
                        launch.log_dir, launch.kill_grace_secs, launch.log_tail_lines,
                        job_module._new_job_secret(), predict_output=output_dir)
        chief = run_stage(sc, member_job, what,
                          f"shoal predict: {config.rsplit('/', 1)[-1]} on {what}", slots,
                          launch.timeout_secs)
    finally:
        area.close()
    summary = chief["summary"]
    log.info("predicted %s rows into %s (%s files, checkpoint %s) in %.1f s", summary.get("rows"),
             output_dir, summary.get("files"), summary.get("checkpoint"),
             time.monotonic() - start)
    scores = read_output(dataframe.sparkSession, output_dir, passthrough, dataframe.schema,
                         staging.column_types(dataframe.schema, declared))
    scores.shoal_summary = summary
    return scores
