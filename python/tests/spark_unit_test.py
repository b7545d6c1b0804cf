"""shoal.spark's parts that need no Spark cluster: roles and TF_CONFIG, `--set` flags, the settings
checks, finding the binary and the config, the supervisor (a member never outlives its task), the
driver's reading of failures and summaries. python/tests/spark_test.py runs the whole launcher on a
real Spark cluster.

    $(SHOAL_VENV=~/.cache/shoal/venv-spark SHOAL_REQUIREMENTS=scripts/requirements-spark.txt \\
      scripts/python-env.sh) -m pytest -q python/tests/spark_unit_test.py
"""
import importlib
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from pyspark.sql import types as T

from shoal.spark import ShoalJobError, SparkSettingsError, predict, run
from shoal.spark import checks, driver_config, job, member, staging, summary
from shoal.spark.cluster import Member, describe, plan_members, set_flags, tf_config

# The module, which shoal.spark's own `predict` (the function) hides as an attribute.
spark_predict = importlib.import_module("shoal.spark.predict")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")


def test_members_are_ps_then_chief_then_workers_then_evaluator():
    members = plan_members(num_ps=2, num_workers=3, evaluator=True)
    assert [m.name for m in members] == ["ps:0", "ps:1", "chief:0", "worker:0", "worker:1",
                                         "worker:2", "evaluator:0"]
    assert [m.name for m in plan_members(1, 0, False)] == ["ps:0", "chief:0"]
    assert describe(members) == "2 ps, 1 chief, 3 workers, 1 evaluator"
    assert describe(plan_members(1, 1, False)) == "1 ps, 1 chief, 1 worker"
    # num_ps=0: no parameter servers (run.strategy all_reduce), as TensorFlowOnSpark's.
    assert [m.name for m in plan_members(0, 1, False)] == ["chief:0", "worker:0"]
    assert describe(plan_members(0, 1, False)) == "1 chief, 1 worker"


@pytest.mark.parametrize("num_ps, num_workers",
                         [(-1, 1), (1, -1), (1.5, 1), (True, 1), (1, "2")])
def test_bad_member_counts_are_refused(num_ps, num_workers):
    with pytest.raises(ValueError, match="num_ps|num_workers"):
        plan_members(num_ps, num_workers, True)


def test_tf_config_lists_every_server_and_leaves_the_evaluator_out():
    members = plan_members(num_ps=2, num_workers=1, evaluator=True)
    addresses = ["h0:1", "h1:2", "h2:3", "h3:4", "h4:5"]
    config = tf_config(members, addresses, 3)
    assert config == {"cluster": {"ps": ["h0:1", "h1:2"], "chief": ["h2:3"], "worker": ["h3:4"]},
                      "task": {"type": "worker", "index": 0}}
    assert tf_config(members, addresses, 4)["task"] == {"type": "evaluator", "index": 0}
    assert tf_config(members, addresses, 4)["cluster"] == config["cluster"]
    with pytest.raises(ValueError):
        tf_config(members, addresses[:-1], 0)


def test_overrides_become_set_flags_with_yaml_values():
    flags = set_flags({"run.max_steps": 500, "input.train.files": ["/d/part-0000[0-2].txt"],
                       "model_dir": "*odd", "run.sync_replicas": 0, "input.train.shuffle": True})
    assert flags == ["--set", "run.max_steps=500",
                     "--set", 'input.train.files=["/d/part-0000[0-2].txt"]',
                     "--set", 'model_dir="*odd"',
                     "--set", "run.sync_replicas=0",
                     "--set", "input.train.shuffle=true"]
    assert set_flags(None) == []
    for bad in ("", "a=b", " run.max_steps"):
        with pytest.raises(ValueError, match="not a config key"):
            set_flags({bad: 1})
    with pytest.raises(ValueError, match="cannot be written"):
        set_flags({"run.max_steps": object()})


def test_dynamic_allocation_is_refused_with_the_setting_to_change():
    with pytest.raises(SparkSettingsError) as e:
        checks.check_conf({"spark.dynamicAllocation.enabled": "true"}, "yarn")
    assert "spark.dynamicAllocation.enabled=false" in str(e.value)
    assert checks.check_conf({"spark.dynamicAllocation.enabled": "false"}, "yarn") == []


def test_local_mode_is_accepted_with_a_warning():
    warnings = checks.check_conf({}, "local[4]")
    assert len(warnings) == 1 and "local[4]" in warnings[0], warnings
    assert checks.check_conf({}, "spark://127.0.0.1:7077") == []


def test_expected_slots_come_from_the_conf_when_it_says():
    assert checks.expected_slots({}) is None
    assert checks.expected_slots({"spark.executor.instances": "3",
                                  "spark.executor.cores": "4", "spark.task.cpus": "2"}) == 6
    assert checks.expected_slots({"spark.cores.max": "8", "spark.task.cpus": "2"}) == 4


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_waiting_for_slots_returns_once_executors_register():
    clock = FakeClock()
    counts = iter([0, 0, 2, 2, 4])
    slots = checks.wait_for_slots(lambda: next(counts), 4, "1 ps, 1 chief", {}, 60, 10,
                                  clock=clock, sleep=clock.sleep)
    assert slots == 4
    assert clock.now == pytest.approx(1.0)


def test_too_few_slots_fail_once_the_count_settles_naming_both_numbers_and_the_settings():
    clock = FakeClock()
    with pytest.raises(SparkSettingsError) as e:
        checks.wait_for_slots(lambda: 4, 8, "1 ps, 1 chief, 5 workers, 1 evaluator",
                              {"spark.task.cpus": "1"}, 120, 10, clock=clock, sleep=clock.sleep)
    message = str(e.value)
    assert "needs 8 task slots" in message and "has 4" in message, message
    assert "1 ps, 1 chief, 5 workers, 1 evaluator" in message
    for setting in ("spark.executor.instances", "spark.executor.cores", "spark.task.cpus"):
        assert setting in message
    assert clock.now == pytest.approx(10.0)


def test_too_few_slots_fail_at_once_when_the_conf_expects_no_more():
    clock = FakeClock()
    conf = {"spark.executor.instances": "2", "spark.executor.cores": "2"}
    with pytest.raises(SparkSettingsError, match="needs 5 task slots"):
        checks.wait_for_slots(lambda: 4, 5, "x", conf, 120, 10, clock=clock, sleep=clock.sleep)
    assert clock.now == 0


def test_on_yarn_executors_not_granted_are_blamed_on_the_queue_with_its_settings():
    clock = FakeClock()
    conf = {"spark.master": "yarn", "spark.executor.instances": "4", "spark.executor.cores": "1",
            "spark.yarn.queue": "small"}
    with pytest.raises(SparkSettingsError) as e:
        checks.wait_for_slots(lambda: 1, 4, "1 ps, 1 chief, 1 worker, 1 evaluator", conf, 120,
                              10, clock=clock, sleep=clock.sleep)
    message = str(e.value)
    assert "needs 4 task slots" in message and "has 1" in message, message
    assert "asked for 4 slots (spark.executor.instances=4 x spark.executor.cores=1)" in message
    assert "the queue 'small' (spark.yarn.queue) has no room for the others" in message, message
    for setting in (".maximum-capacity", "spark.executor.memoryOverhead"):
        assert setting in message, message
    # An application that got what it asked for, but asked for too little, is told only that.
    with pytest.raises(SparkSettingsError) as e:
        checks.wait_for_slots(lambda: 4, 8, "x", conf, 120, 10, clock=clock, sleep=clock.sleep)
    assert "queue" not in str(e.value), str(e.value)


def test_no_executor_at_all_fails_at_the_timeout():
    clock = FakeClock()
    with pytest.raises(SparkSettingsError, match="has 0"):
        checks.wait_for_slots(lambda: 0, 2, "x", {}, 30, 10, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(30.0)


class FakeFrame:
    """What the checks before any Spark call read of a DataFrame: its schema."""

    def __init__(self, schema):
        self.schema = schema


SIMPLE_TYPES = {"int": T.IntegerType(), "long": T.LongType(), "boolean": T.BooleanType(),
                "double": T.DoubleType(), "float": T.FloatType(), "decimal": T.DecimalType(10, 2),
                "string": T.StringType(), "date": T.DateType(), "timestamp": T.TimestampType()}


def frame(ddl, *extra):
    """A FakeFrame of "name type, ..." (simple types: parsing DDL needs a JVM) and `extra`
    StructFields."""
    fields = [T.StructField(name, SIMPLE_TYPES[kind])
              for name, kind in (column.split() for column in ddl.split(","))]
    return FakeFrame(T.StructType(fields + list(extra)))


CTR_LIKE = {"model_dir": "/models/ctr",
            "features": {"numeric": [{"name": "I1"}, {"name": "age_n", "source": "age"}],
                         "bucketized": [{"name": "age_b", "source": "age", "boundaries": [1]}],
                         "hashed": [{"name": "C1"}],
                         "vocabulary": [{"name": "city", "vocabulary": ["a"]}],
                         "identity": [{"name": "slot", "num_buckets": 4}],
                         "crossed": [{"name": "x", "keys": ["C1", "city"]}],
                         "embedding": [{"categorical": "C1", "dimension": 4}],
                         "label": "clicked"},
            "input": {"train": {"files": ["a.txt"], "format": "criteo", "batch_size": 64},
                      "eval": {"files": ["e.csv"], "format": "csv",
                               "schema": [{"name": "I1"}, {"name": "slot", "type": "int64"}]}}}


def test_input_modes_and_their_dataframes_are_checked_before_spark_is_touched():
    with pytest.raises(ValueError, match="input_mode must be 'files' or 'spark'"):
        run(None, "config.yaml", num_workers=1, num_ps=1, input_mode="rdd")
    with pytest.raises(ValueError, match="train_data and eval_data are for input_mode='spark'"):
        run(None, "config.yaml", num_workers=1, num_ps=1, train_data=frame("a int"))
    with pytest.raises(ValueError, match="train_data and eval_data are for input_mode='spark'"):
        run(None, "config.yaml", 1, 1, True, "files", eval_data=frame("a int"))
    with pytest.raises(ValueError, match="input_mode='spark' needs train_data"):
        run(None, "config.yaml", num_workers=1, num_ps=1, input_mode="spark")
    with pytest.raises(ValueError, match="overrides sets input.train.files, but input_mode"):
        run(None, "config.yaml", 1, 1, input_mode="spark", train_data=frame("a int"),
            overrides={"input.train.files": ["x"]})


def test_the_columns_the_config_reads_are_its_sources_and_label():
    assert driver_config.needed_columns(CTR_LIKE, label=True) == [
        "I1", "age", "C1", "city", "slot", "clicked"]
    assert driver_config.needed_columns(CTR_LIKE, label=False)[-1] == "slot"
    assert driver_config.needed_columns(None, label=True) == []
    assert driver_config.needed_columns({"features": {"numeric": ["odd"]}}, label=True) == []


def test_a_dataframe_without_a_needed_column_is_refused_naming_it():
    schema = frame("I1 double, age int, C1 string, city string, slot long").schema
    staging.check_columns(schema, driver_config.needed_columns(CTR_LIKE, label=False), "x")
    with pytest.raises(ValueError, match=r"train_data: the config needs the column 'clicked', "
                                         r"which the DataFrame does not have \(its columns: I1, "
                                         r"age, C1, city, slot\)"):
        staging.check_columns(schema, driver_config.needed_columns(CTR_LIKE, label=True),
                              "train_data")


@pytest.mark.parametrize("data_type, kind", [
    (T.ArrayType(T.IntegerType()), "array<int>"),
    (T.MapType(T.StringType(), T.IntegerType()), "map<string,int>"),
    (T.StructType([T.StructField("x", T.IntegerType())]), "struct<x:int>"),
    (T.BinaryType(), "binary")])
def test_columns_of_nested_or_binary_types_are_refused_naming_the_column_and_type(data_type,
                                                                                kind):
    with pytest.raises(ValueError, match=f"column 'a' has type {re.escape(kind)}, which shoal "
                                         f"cannot read"):
        staging.check_columns(frame("ok int", T.StructField("a", data_type)).schema, ["ok"],
                              "train_data")


def test_the_derived_schema_types_columns_as_shoal_reads_them():
    schema = frame("id long, n int, b boolean, x double, f float, d decimal, s string, day date, "
                   "t timestamp").schema
    assert staging.derived_schema(schema) == [
        {"name": "id", "type": "int64"}, {"name": "n", "type": "int64"},
        {"name": "b", "type": "int64"}, {"name": "x", "type": "float"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "float"},
        {"name": "s", "type": "string"}, {"name": "day", "type": "string"},
        {"name": "t", "type": "string"}]
    declared = [{"name": "x"}, {"name": "id", "type": "int64"}]
    assert staging.column_types(schema, declared)["x"] == "float"
    assert staging.column_types(schema, declared)["n"] == "string"  # a header's undeclared column
    with pytest.raises(ValueError, match="a staged CSV header cannot name it"):
        staging.derived_schema(frame("ok int", T.StructField("a,b", T.IntegerType())).schema)


def test_staged_input_overrides_point_the_section_at_the_part_files():
    schema = [{"name": "a", "type": "int64"}]
    overrides = staging.input_overrides("train", "/m/spark-staging/j/train/part-*.csv", schema)
    assert overrides == {"input.train.files": ["/m/spark-staging/j/train/part-*.csv"],
                         "input.train.format": "csv", "input.train.header": True,
                         "input.train.schema": schema}
    assert "input.eval.schema" not in staging.input_overrides("eval", "g", None)
    assert set_flags(overrides)[-1] == 'input.train.schema=[{"name": "a", "type": "int64"}]'
    # Prediction replaces input.eval whole: no holdout or epochs of the config's narrows it.
    section = spark_predict.eval_section(CTR_LIKE, "/s/input/part-*.csv", schema)
    assert section == {"files": ["/s/input/part-*.csv"], "format": "csv", "header": True,
                       "schema": schema, "batch_size": 64}
    assert spark_predict.prediction_flags("/out", ["id", "t"]) == [
        "--predict-output", "/out", "--passthrough", "id", "--passthrough", "t"]
    assert job.section_schema(CTR_LIKE, None, ["train"]) is None
    assert job.section_schema(CTR_LIKE, None, ["eval", "train"])[1]["type"] == "int64"
    assert job.section_schema(CTR_LIKE, {"input.train.schema": schema}, ["train"]) == schema


def test_staging_and_output_default_under_model_dir(tmp_path):
    assert job.resolve_model_dir("/given", {"model_dir": "/o"}, CTR_LIKE) == "/given"
    assert job.resolve_model_dir(None, {"model_dir": "/o"}, CTR_LIKE) == "/o"
    assert job.resolve_model_dir(None, None, CTR_LIKE) == "/models/ctr"
    assert job.resolve_model_dir(None, None, None) is None
    area = job.staging_area(None, "run", None, "hdfs://nn:8020/m/", None, "j1", keep=False)
    assert area.root == "hdfs://nn:8020/m/spark-staging/j1" and area.own_root
    area = job.staging_area(None, "run", str(tmp_path / "s"), "/m", None, "j1", keep=False)
    assert area.root == str(tmp_path / "s") and not area.own_root
    with pytest.raises(ValueError, match=r"give staging_dir= or model_dir= .* and the config "
                                         r"cannot be read on the driver \(OSError: gone\)\)"):
        job.staging_area(None, "run", None, None, "OSError: gone", "j1", keep=False)
    assert spark_predict.default_output_dir("/m/", "j1") == "/m/spark-predictions/j1"
    assert staging.spark_path("rel/dir").startswith("file:///")
    assert staging.spark_path("hdfs://nn/x") == "hdfs://nn/x"


def test_a_staging_area_removes_what_it_wrote_unless_kept(tmp_path):
    root = tmp_path / "model" / "spark-staging" / "j1"
    (root / "train").mkdir(parents=True)
    staging.StagingArea(None, str(root), keep=True, own_root=True).close()
    assert root.is_dir()
    staging.StagingArea(None, str(root), keep=False, own_root=True).close()
    assert not root.exists() and (tmp_path / "model" / "spark-staging").is_dir()
    mine = tmp_path / "mine"
    (mine / "train").mkdir(parents=True)
    (mine / "other").mkdir()
    area = staging.StagingArea(None, str(mine), keep=False, own_root=False)
    area.written.append(str(mine / "train"))
    area.close()
    assert sorted(os.listdir(mine)) == ["other"]


def test_predict_checks_its_dataframe_and_passthrough_columns_first():
    with pytest.raises(ValueError, match="dataframe must be a DataFrame"):
        predict(None, "config.yaml", None, num_workers=1, num_ps=1)
    with pytest.raises(ValueError, match=r"predict: passthrough names the column 'uid', which "
                                         r"the DataFrame does not have \(its columns: id, x\)"):
        predict(None, "config.yaml", frame("id long, x double"), 1, 1, passthrough=["uid"])


def test_a_prediction_s_summary_is_its_success_file_or_the_chief_s_report(tmp_path):
    log = tmp_path / "chief.log"
    log.write_text("step 0 | ...\npredicted 2000 examples into hdfs://nn/out (3 files, "
                   "checkpoint hdfs://nn/m/ckpt-117)\n")
    assert summary.prediction_summary("hdfs://nn/out", str(log)) == {
        "rows": 2000, "output_dir": "hdfs://nn/out", "files": 3,
        "checkpoint": "hdfs://nn/m/ckpt-117", "source": "chief log"}
    out = tmp_path / "out"
    out.mkdir()
    (out / "_SUCCESS").write_text(json.dumps({"rows": 5, "tasks": 2, "global_step": 9,
                                              "checkpoint": "c", "files": ["a", "b"]}))
    assert summary.prediction_summary(str(out), str(log)) == {
        "rows": 5, "tasks": 2, "global_step": 9, "checkpoint": "c", "files": 2,
        "output_dir": str(out)}
    log.write_text("nothing\n")
    with pytest.raises(ValueError, match="reported no prediction"):
        summary.prediction_summary("hdfs://nn/out", str(log))


def test_the_driver_parses_yaml_without_pyyaml_through_spark_s_jvm_or_with_it():
    try:
        import yaml  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="no YAML parser"):
            driver_config.parse_yaml("a: 1")
    else:
        assert driver_config.parse_yaml("a: [1, {b: c}]") == {"a": [1, {"b": "c"}]}
    assert driver_config.lookup(CTR_LIKE, "input.train.batch_size") == 64
    assert driver_config.lookup(CTR_LIKE, "input.nope.batch_size") is None


def make_executable(path, text="#!/bin/sh\nexit 0\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


def test_the_binary_is_found_in_order(tmp_path):
    explicit = make_executable(tmp_path / "a" / "shoal")
    from_env = make_executable(tmp_path / "b" / "shoal")
    files = tmp_path / "files"
    shipped = make_executable(files / "shoal")
    on_path = make_executable(tmp_path / "bin" / "shoal")
    env = {"SHOAL_BINARY": from_env, "PATH": str(tmp_path / "bin")}
    cwd = str(tmp_path / "cwd")
    assert member.find_binary(explicit, env, str(files), cwd) == explicit
    assert member.find_binary(None, env, str(files), cwd) == from_env
    assert member.find_binary(None, {"PATH": env["PATH"]}, str(files), cwd) == shipped
    assert member.find_binary(None, {"PATH": env["PATH"]}, None, cwd) == on_path


def test_an_archive_shipped_under_the_alias_shoal_is_searched(tmp_path):
    inside = make_executable(tmp_path / "files" / "shoal" / "bin" / "shoal")
    assert member.find_binary(None, {"PATH": ""}, str(tmp_path / "files"), "/nonexistent") == inside
    in_cwd = make_executable(tmp_path / "cwd" / "shoal" / "shoal")
    assert member.find_binary(None, {"PATH": ""}, None, str(tmp_path / "cwd")) == in_cwd


def test_a_missing_binary_lists_every_place_looked_at(tmp_path):
    not_executable = tmp_path / "files" / "shoal"
    not_executable.parent.mkdir()
    not_executable.write_text("")
    with pytest.raises(member.MemberFailed) as e:
        member.find_binary(None, {"PATH": "/nowhere"}, str(tmp_path / "files"), str(tmp_path))
    message = str(e.value)
    assert "cannot find the shoal binary" in message
    for looked in ("shoal_binary argument: not given", "$SHOAL_BINARY: not set",
                   f"{not_executable} (not executable)", "PATH: /nowhere", "--files"):
        assert looked in message, message
    with pytest.raises(member.MemberFailed, match="given as shoal_binary.*absent"):
        member.find_binary("/nonexistent/shoal", {}, None, str(tmp_path))


def test_the_config_is_the_path_given_or_a_shipped_file(tmp_path):
    config = tmp_path / "job.yaml"
    config.write_text("model_dir: m\n")
    assert member.find_config(str(config), None) == str(config)
    assert member.find_config("hdfs://nn/job.yaml", None) == "hdfs://nn/job.yaml"
    files = tmp_path / "files"
    files.mkdir()
    (files / "wide.yaml").write_text("")
    assert member.find_config("/driver/only/wide.yaml", str(files)) == str(files / "wide.yaml")
    with pytest.raises(member.MemberFailed, match="(?s)cannot find the config.*absent"):
        member.find_config("/nonexistent.yaml", str(files))


def test_the_child_environment_carries_the_cluster_and_the_secret():
    env = member.child_environment({"PATH": "/bin", "TF_CONFIG": "old", "SHOAL_JOB_SECRET": "x"},
                                   {"cluster": {}}, "s" * 64)
    assert env == {"PATH": "/bin", "TF_CONFIG": '{"cluster": {}}', "SHOAL_JOB_SECRET": "s" * 64}


def test_the_job_s_repr_hides_the_secret_and_pickling_keeps_it():
    secret = job._new_job_secret()
    assert len(secret) == 64 and int(secret, 16) >= 0
    spec = member.MemberJob(plan_members(1, 1, True), "c.yaml", [], None, None, None, 10, 50,
                            secret)
    assert secret not in repr(spec) and "<hidden>" in repr(spec)
    assert pickle.loads(pickle.dumps(spec)).secret == secret


def test_ports_are_reserved_on_the_executor_s_address():
    sock, port = member.reserve_port("127.0.0.1")
    try:
        assert sock.getsockname() == ("127.0.0.1", port) and port > 0
    finally:
        sock.close()
    with pytest.raises(member.MemberFailed, match="cannot bind a port on 192.0.2.1"):
        member.reserve_port("192.0.2.1")  # TEST-NET-1: not an address of this machine


def test_a_member_s_failure_names_it_with_its_exit_code_and_log_tail():
    text = member.failure_message(Member("chief", 0), "10.0.0.1:4000", 1,
                                  ["line 1", "error: bad value"], "/logs/shoal-chief-0.log")
    assert text.startswith("chief:0 (shoal run at 10.0.0.1:4000) exited with code 1; the last 2 "
                           "lines of its log (/logs/shoal-chief-0.log):\nline 1\nerror: bad")
    assert member.describe_exit(137) == "code 137 (SIGKILL)"


def test_the_driver_finds_the_member_s_error_in_spark_s_failure_text():
    raised = member.MemberFailed("worker:0 (shoal run at h:1) exited with code 1; ...\nerror: x")
    spark_text = ("An error occurred while calling o57.collectAndServe.\n: org.apache.spark."
                  "SparkException: Job aborted due to stage failure: Could not recover from a "
                  "failed barrier ResultStage. ...\norg.apache.spark.api.python.PythonException: "
                  "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
                  f"shoal.spark.member.MemberFailed: {raised}\n\n\tat org.apache.spark...\n"
                  f"Driver stacktrace: ... MemberFailed: {raised}\n")
    assert job.member_error(spark_text) == ("worker:0 (shoal run at h:1) exited with code 1; ..."
                                            "\nerror: x")
    assert job.member_error("Job aborted: ExecutorLostFailure") is None


def test_a_failure_without_a_member_s_message_keeps_spark_s_reason_and_hints():
    text = ("An error occurred while calling o57.collectAndServe.\n: org.apache.spark."
            "SparkException: Job aborted due to stage failure: Could not recover from a failed "
            "barrier ResultStage.\norg.apache.spark.api.python.PythonException: Traceback (most "
            "recent call last):\n  File \"w.py\", line 9, in loads\nModuleNotFoundError: No "
            "module named 'shoal'\n\tat org.apache.spark.X\n")
    message = job._spark_failure(Exception(text))
    assert message.startswith("Job aborted due to stage failure: Could not recover")
    assert "ModuleNotFoundError: No module named 'shoal'" in message
    assert "--py-files" in message


def test_a_task_lost_with_its_executor_is_named_with_spark_s_reason_and_what_to_do():
    """What Spark on YARN says when a member's executor is killed (python_spark_yarn kills one)."""
    text = ("An error occurred while calling o81.collectAndServe.\n: org.apache.spark."
            "SparkException: Job aborted due to stage failure: Could not recover from a failed "
            "barrier ResultStage. Most recent failure reason: Stage failed because barrier task "
            "ResultTask(0, 2) finished unsuccessfully.\nExecutorLostFailure (executor 3 exited "
            "caused by one of the running tasks) Reason: Container from a bad node: "
            "container_1_0001_01_000004 on host: nm7. Exit status: 137. Diagnostics: Container "
            "killed on request. Exit code is 137\n\tat org.apache.spark.X\n")
    members = plan_members(1, 1, True)
    message = job._spark_failure(Exception(text), members)
    lines = message.splitlines()
    assert lines[0].startswith("worker:0 (partition 2) lost its executor: ExecutorLostFailure "
                               "(executor 3 exited"), message
    assert "Exit status: 137" in lines[0], message
    assert lines[1].startswith("Job aborted due to stage failure: Could not recover"), message
    assert "run it again, and it resumes from the last checkpoint" in lines[-1], message
    # Without the members (write_tfrecords, whose tasks Spark retries), the reason still comes
    # first, without the advice.
    plain = job._spark_failure(Exception(text))
    assert plain.startswith("a task lost its executor: ") and "checkpoint" not in plain, plain


CHIEF_REPORT = """\
I1122 00:12:37.841309 32565 coordinator.cc:223] completion: final evaluation (120ms after the stop)
trained: global_step 176, 26875 examples on the chief, 1.2 s (input exhausted)
final evaluation (5000 examples):
  accuracy         0.7716
  auc              0.7046
  loss             0.5011
exported: hdfs://nn:8020/m/export/final/1795306357
data tasks: {"epochs_completed":3}
summary: hdfs://nn:8020/m/summary.json
I1122 00:12:38.042868 32565 coordinator.cc:223] completion: shutdown (320ms after the stop)
"""


def test_a_summary_on_hdfs_is_rebuilt_from_the_chief_s_report(tmp_path):
    log = tmp_path / "chief.log"
    log.write_text(CHIEF_REPORT)
    found = summary.chief_summary("hdfs://nn:8020/m/summary.json", str(log))
    assert found == {"global_step": 176, "stop_reason": "input exhausted",
                     "metrics": {"accuracy": 0.7716, "auc": 0.7046, "loss": 0.5011},
                     "exports": ["hdfs://nn:8020/m/export/final/1795306357"],
                     "export_path": "hdfs://nn:8020/m/export/final/1795306357",
                     "summary_path": "hdfs://nn:8020/m/summary.json", "source": "chief log"}
    local = tmp_path / "summary.json"
    local.write_text(json.dumps({"global_step": 7}))
    assert summary.chief_summary(str(local), str(log)) == {"global_step": 7}
    log.write_text("nothing\n")
    with pytest.raises(ValueError, match="no summary"):
        summary.chief_summary(None, str(log))


def test_import_shoal_spark_from_the_repository_top_is_this_package():
    """The repository's top has shoal/ (C++, no __init__.py): a namespace package that must lose
    to the regular package python/shoal when both are on sys.path, even when cwd comes first."""
    out = subprocess.run([sys.executable, "-c", "import shoal.spark, shoal; print(shoal.__file__)"],
                         cwd=REPO, env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == os.path.join(PYTHON_DIR, "shoal", "__init__.py")


# A stand-in for a Spark task: starts a member under the supervisor the way run_member does, prints
# the supervisor's pid, and blocks until killed.
FAKE_TASK = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from shoal.spark.member import MemberProcess
    process = MemberProcess(sys.argv[4:], {"PATH": "/usr/bin:/bin", "SHOAL_JOB_SECRET": sys.argv[3]},
                            sys.argv[2], kill_grace_secs=2, tail_lines=5)
    print(process.pid, flush=True)
    time.sleep(3600)
""")


def pid_alive(pid):
    """Whether `pid` runs and is not a zombie. The process may vanish at any point in between
    (between the signal and the read of its stat file, or while reading it): that is not alive."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (ProcessLookupError, FileNotFoundError):
        return False
    # The state follows the last ')' (a command name may hold ') ' itself); empty if torn.
    state = stat.rpartition(")")[2].split()
    return bool(state) and state[0] != "Z"


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("ignores_sigterm", [False, True])
def test_a_member_dies_with_its_task_even_when_the_task_is_sigkilled(tmp_path, ignores_sigterm):
    """Spark kills a task's Python worker with SIGKILL: the supervisor sees its stdin close and
    stops the member (SIGTERM, then SIGKILL after the grace for one that ignores SIGTERM). The
    secret is in the member's environment only, not in the supervisor's."""
    pid_file = tmp_path / "member.pid"
    body = f"echo $$ > {pid_file}; echo started; exec sleep 3600"
    if ignores_sigterm:
        body = f"trap '' TERM; echo $$ > {pid_file}; echo started; sleep 3600; sleep 1"
    log = tmp_path / "member.log"
    secret = "f" * 64
    task = subprocess.Popen([sys.executable, "-c", FAKE_TASK, PYTHON_DIR, str(log), secret,
                             "/bin/bash", "-c", body], stdout=subprocess.PIPE, text=True)
    try:
        supervisor = int(task.stdout.readline())
        assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 10)
        member_pid = int(pid_file.read_text())
        with open(f"/proc/{member_pid}/environ", "rb") as f:
            assert f"SHOAL_JOB_SECRET={secret}".encode() in f.read().split(b"\0")
        with open(f"/proc/{supervisor}/environ", "rb") as f:
            assert secret.encode() not in f.read()
        task.kill()
        task.wait()
        assert wait_until(lambda: not pid_alive(member_pid), 10), "the member outlived its task"
        assert wait_until(lambda: not pid_alive(supervisor), 10)
    finally:
        if task.poll() is None:
            task.kill()
    text = log.read_text()
    assert "started" in text
    assert "stopping bash" in text and "its Spark task ended" in text, text
    assert ("exit code 137" if ignores_sigterm else "exit code 143") in text, text


def test_a_member_dies_with_its_supervisor_when_that_is_killed_outright(tmp_path):
    """PR_SET_PDEATHSIG: a supervisor killed by SIGKILL cannot stop its member; the kernel does."""
    pid_file = tmp_path / "member.pid"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "shoal.spark.supervisor", "--grace", "1", "--log",
         str(tmp_path / "m.log"), "--", "/bin/sh", "-c", f"echo $$ > {pid_file}; exec sleep 3600"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=PYTHON_DIR)
    try:
        supervisor.stdin.write(b'{"env": {"PATH": "/bin:/usr/bin"}}\n')
        supervisor.stdin.flush()
        assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 10)
        member_pid = int(pid_file.read_text())
        supervisor.kill()
        supervisor.wait()
        assert wait_until(lambda: not pid_alive(member_pid), 10), "the member outlived it"
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        supervisor.stdin.close()


def test_the_supervisor_passes_the_exit_code_and_output_on(tmp_path):
    log = tmp_path / "m.log"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "shoal.spark.supervisor", "--grace", "1", "--log", str(log), "--",
         "/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 3"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=PYTHON_DIR)
    supervisor.stdin.write(b'{"env": {"PATH": "/bin"}}\n')
    supervisor.stdin.flush()  # and kept open: closing it would mean "the task ended, stop"
    out = supervisor.stdout.read().decode()
    assert supervisor.wait(timeout=30) == 3
    supervisor.stdin.close()
    assert out.splitlines() == ["to-out", "to-err"]
    assert log.read_text().splitlines() == ["to-out", "to-err"]


def test_shoal_job_error_and_settings_error_are_what_run_raises():
    assert issubclass(ShoalJobError, RuntimeError)
    assert issubclass(SparkSettingsError, ValueError)
