"""shoal.spark on a real Spark: a standalone master and two workers on loopback
(scripts/spark-cluster.sh; executors are JVMs of their own, with their own Python workers, as on a
real cluster -- not local mode). Each test application is a `spark-submit` of spark_driver.py with
the package shipped as --py-files (installed with pip from python/ first), and the `shoal` binary
and the config shipped with --files, as docs/spark.md tells users to.

One cluster and three applications serve every test (module fixtures): `training` trains wide &
deep on generated CTR data in files mode (1 ps, the chief, 1 worker, an evaluator), then asks for
more processes than the cluster has slots; `failing` runs a job whose input matches no file, one
that trains past its timeout_secs, and one whose binary does not exist; `spark_mode` trains on
DataFrames (input_mode="spark"), scores a DataFrame with that model (predict) and asks for a
prediction without a checkpoint. About 3 to 4 minutes on 2 cores.

    SHOAL_BIN=build/shoal $(SHOAL_VENV=~/.cache/shoal/venv-spark \\
      SHOAL_REQUIREMENTS=scripts/requirements-spark.txt scripts/python-env.sh) \\
      -m pytest -q python/tests/spark_test.py
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import namedtuple

import pytest

from shoal.spark.summary import summary_from_log

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOAL = os.path.abspath(os.environ.get("SHOAL_BIN", os.path.join(REPO, "build", "shoal")))
SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")
CLUSTER_SCRIPT = os.path.join(REPO, "scripts", "spark-cluster.sh")
DRIVER = os.path.join(REPO, "python", "tests", "spark_driver.py")

Cluster = namedtuple("Cluster", "master dir")
Submission = namedtuple("Submission", "results secrets stdout stderr event_log ui seen elapsed")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="module")
def cluster(workdir):
    directory = workdir / "cluster"
    env = dict(os.environ, SHOAL_SPARK_PYTHON=sys.executable)
    try:
        start = subprocess.run([CLUSTER_SCRIPT, "start", str(directory)], env=env,
                               capture_output=True, text=True, timeout=300)
        assert start.returncode == 0, start.stderr[-3000:]
        yield Cluster((directory / "ready").read_text().split()[0], directory)
    finally:
        subprocess.run([CLUSTER_SCRIPT, "stop", str(directory)], env=env, capture_output=True,
                       timeout=120)
        # The logs stay for a look after a failure; the executors' copies of the binary go.
        for copy in directory.glob("worker-*/app-*/*/shoal"):
            copy.unlink()


@pytest.fixture(scope="module")
def package(workdir):
    """The package's sources zipped for --py-files, as docs/spark.md ships them: shoal.spark is
    pure Python (`pip install ./python` also builds the Estimator API's C++ extension, which the
    Spark launcher does not use)."""
    site = workdir / "site"
    shutil.copytree(os.path.join(REPO, "python", "shoal"), site / "shoal",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    assert (site / "shoal" / "spark" / "job.py").exists()
    return shutil.make_archive(str(workdir / "shoal-python"), "zip", root_dir=site,
                               base_dir="shoal")


@pytest.fixture(scope="module")
def data(workdir):
    out = workdir / "data"
    subprocess.run([SHOAL, "gen-data", "ctr", "--rows", "20000", "--files", "4",
                    "--max-vocabulary", "100", "--seed", "1", "--out", str(out)], check=True,
                   capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def config(workdir):
    """examples/ctr's wide & deep config, shipped with --files under this name."""
    shipped = workdir / "ship" / "wide_deep.yaml"
    shipped.parent.mkdir()
    shutil.copy(os.path.join(REPO, "examples", "ctr", "config.yaml"), shipped)
    return shipped


def ctr_overrides(data, train_glob="part-0000[0-2].txt"):
    # 3 files of 5000 rows to train on, 3 epochs at batch 256: about 180 steps.
    return {"input.train.files": [str(data / train_glob)],
            "input.eval.files": [str(data / "part-00003.txt")],
            "run.log_step_count_steps": 50}


def sample_processes(seen, marker):
    """Adds every process's command line to seen["cmdlines"], and the environment of those whose
    command line holds `marker` (the job's model_dir) to seen["environ"]."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ")
            seen["cmdlines"].add(cmdline)
            if marker in cmdline:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    seen["environ"][cmdline] = f.read()
        except OSError:
            continue


def submit(cluster, workdir, package, config, name, calls, marker):
    """spark-submit of spark_driver.py with `calls`, sampling the processes while it runs."""
    run_dir = workdir / name
    events = run_dir / "events"
    events.mkdir(parents=True)
    spec = {"calls": calls, "secret_file": str(run_dir / "secrets.json"),
            "ui_file": str(run_dir / "ui.json")}
    (run_dir / "spec.json").write_text(json.dumps(spec))
    command = [SPARK_SUBMIT, "--master", cluster.master, "--deploy-mode", "client",
               "--driver-memory", "512m", "--conf", "spark.executor.memory=512m",
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.ui.port=0", "--conf", "spark.eventLog.enabled=true",
               "--conf", f"spark.eventLog.dir=file://{events}",
               "--py-files", package, "--files", f"{SHOAL},{config}",
               DRIVER, str(run_dir / "spec.json"), str(run_dir / "results.json")]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "SPARK_CONF_DIR")}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    seen = {"cmdlines": set(), "environ": {}}
    start = time.monotonic()
    with open(run_dir / "stdout", "wb") as out, open(run_dir / "stderr", "wb") as err:
        driver = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=run_dir)
        try:
            while driver.poll() is None:
                sample_processes(seen, marker.encode())
                time.sleep(0.2)
                if time.monotonic() - start > 420:
                    pytest.fail(f"spark-submit of {name} still running after 420 s")
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    elapsed = time.monotonic() - start
    stdout, stderr = (run_dir / "stdout").read_text(), (run_dir / "stderr").read_text()
    assert driver.returncode == 0, stdout[-3000:] + stderr[-5000:]
    results = json.loads((run_dir / "results.json").read_text())
    secrets_file = run_dir / "secrets.json"
    secrets = json.loads(secrets_file.read_text()) if secrets_file.exists() else []
    event_log = (events / results["application_id"]).read_text()
    return Submission(results, secrets, stdout, stderr, event_log, (run_dir / "ui.json").read_text(),
                      seen, elapsed)


@pytest.fixture(scope="module")
def training(cluster, workdir, package, config, data):
    calls = [
        {"name": "train", "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1,
                                     "evaluator": True, "overrides": ctr_overrides(data),
                                     "model_dir": str(workdir / "model"), "timeout_secs": 300}},
        {"name": "too_many", "kwargs": {"config": config.name, "num_workers": 5, "num_ps": 1,
                                        "model_dir": str(workdir / "model-too-many")}},
    ]
    return submit(cluster, workdir, package, config, "training", calls, str(workdir / "model"))


@pytest.fixture(scope="module")
def failing(cluster, workdir, package, config, data):
    calls = [
        {"name": "bad_input", "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1,
                                         "overrides": ctr_overrides(data, "nope-*.txt"),
                                         "model_dir": str(workdir / "model-bad"),
                                         "timeout_secs": 240}},
        {"name": "timeout", "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1,
                                       "evaluator": False,
                                       "overrides": dict(ctr_overrides(data),
                                                         **{"input.train.num_epochs": 0,
                                                            "run.max_steps": 10**9}),
                                       "model_dir": str(workdir / "model-endless"),
                                       "timeout_secs": 15}},
        {"name": "no_binary", "kwargs": {"config": config.name, "num_workers": 0, "num_ps": 1,
                                         "evaluator": False, "shoal_binary": "/nonexistent/shoal",
                                         "model_dir": str(workdir / "model-no-binary")}},
    ]
    return submit(cluster, workdir, package, config, "failing", calls, str(workdir / "model-"))


CRITEO_COLUMNS = (["label"] + [f"I{i}" for i in range(1, 14)] +
                  [f"C{i}" for i in range(1, 27)])
# The generated text read by Spark: counts as doubles, the hex ids as strings (which the hashed
# columns hash as text; the model trained on them is scored on the same).
CRITEO_DDL = ", ".join(f"{c} {'INT' if c == 'label' else 'DOUBLE' if c[0] == 'I' else 'STRING'}"
                       for c in CRITEO_COLUMNS)
# What shoal.spark derives from those types, for the single-process reference of the prediction.
PREDICT_SCHEMA = [{"name": "id", "type": "int64"}] + [
    {"name": c, "type": "int64" if c == "label" else "float" if c[0] == "I" else "string"}
    for c in CRITEO_COLUMNS]
PREDICT_ROWS = 2000


@pytest.fixture(scope="module")
def predict_input(workdir, data):
    """The first rows of the evaluation file as CSV with a header and an `id` column."""
    path = workdir / "predict.csv"
    with open(data / "part-00003.txt") as source, open(path, "w") as out:
        out.write(",".join(["id"] + CRITEO_COLUMNS) + "\n")
        for i, line in zip(range(PREDICT_ROWS), source):
            out.write(f"{i},{line.rstrip(chr(10)).replace(chr(9), ',')}\n")
    return path


@pytest.fixture(scope="module")
def spark_mode(cluster, workdir, package, config, data, predict_input):
    """input_mode="spark" and predict: one application trains on DataFrames (2 files of the
    generated data, 4 partitions; the chief evaluates), scores 2000 rows with that model, and asks
    for a prediction from a model_dir without a checkpoint."""
    def criteo(glob, partitions):
        return {"path": str(data / glob), "schema": CRITEO_DDL, "sep": "\t",
                "partitions": partitions}

    predict_frame = {"path": str(predict_input), "schema": "id BIGINT, " + CRITEO_DDL,
                     "header": True, "partitions": 3}
    calls = [
        {"name": "train", "dataframes": {"train_data": criteo("part-0000[0-1].txt", 4),
                                         "eval_data": criteo("part-00003.txt", 2)},
         "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1, "evaluator": False,
                    "input_mode": "spark", "overrides": {"run.log_step_count_steps": 50},
                    "model_dir": str(workdir / "model-spark"), "timeout_secs": 300}},
        {"name": "predict", "function": "predict", "dataframes": {"dataframe": predict_frame},
         "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1, "passthrough": ["id"],
                    "model_dir": str(workdir / "model-spark"), "timeout_secs": 240}},
        # num_ps=0, as TensorFlowOnSpark's MultiWorkerMirroredStrategy jobs: run.strategy
        # all_reduce, the chief and the worker one ring.
        {"name": "all_reduce", "dataframes": {"train_data": criteo("part-0000[0-1].txt", 4),
                                              "eval_data": criteo("part-00003.txt", 2)},
         "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 0, "evaluator": False,
                    "input_mode": "spark", "model_dir": str(workdir / "model-all-reduce"),
                    "timeout_secs": 300}},
        {"name": "untrained", "function": "predict", "dataframes": {"dataframe": predict_frame},
         "kwargs": {"config": config.name, "num_workers": 1, "num_ps": 1,
                    "model_dir": str(workdir / "model-untrained"), "timeout_secs": 120}},
    ]
    return submit(cluster, workdir, package, config, "spark-mode", calls,
                  str(workdir / "model-"))


def test_trains_on_dataframes_in_spark_mode_and_removes_the_staged_files(spark_mode, workdir,
                                                                          data):
    # Every staged row trained once per epoch: 2 files of 5000 rows, 3 epochs.
    trained_summary(spark_mode.results["train"], data, 30000)
    # The driver staged 4 partitions of train_data and 2 of eval_data, then removed them. (Its
    # log comes out on spark-submit's stdout.)
    driver_log = spark_mode.stdout + spark_mode.stderr
    assert re.search(r"staged train_data: 10000 rows of 4 Spark partitions into 4 part files in "
                     r"\S+/model-spark/spark-staging/\w+/train \(", driver_log), driver_log[-3000:]
    assert re.search(r"staged eval_data: 5000 rows of 2 Spark partitions into 2 part files",
                     driver_log)
    assert os.listdir(workdir / "model-spark" / "spark-staging") == []


def test_trains_without_parameter_servers_when_num_ps_is_0(spark_mode, workdir, data):
    summary = trained_summary(spark_mode.results["all_reduce"], data, 30000)
    assert (workdir / "model-all-reduce" / summary["checkpoint"].rsplit("/", 1)[-1] /
            "shard-00000-of-00001.data").is_file(), summary


def single_process_scores(config, model_dir, path):
    section = {"files": [str(path)], "format": "csv", "header": True, "schema": PREDICT_SCHEMA,
               "batch_size": 4096}
    out = subprocess.run([SHOAL, "predict", str(config), "--model-dir", str(model_dir),
                          "--set", f"input.eval={json.dumps(section)}", "--passthrough", "id"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {line["id"]: line["logistic"][0] for line in lines}


def test_predicts_a_dataframe_with_the_single_process_scores(spark_mode, workdir, config,
                                                             predict_input):
    result = spark_mode.results["predict"]
    assert "rows" in result, result
    summary = result["summary"]
    # 3 part files, each cut into byte ranges (prediction's default split_bytes): a task each.
    assert summary["rows"] == PREDICT_ROWS and summary["files"] == summary["tasks"] >= 3, summary
    assert os.path.isfile(os.path.join(summary["output_dir"], "_SUCCESS")), summary
    assert summary["output_dir"].startswith(str(workdir / "model-spark" / "spark-predictions"))
    ids = [row["id"] for row in result["rows"]]
    assert sorted(ids) == list(range(PREDICT_ROWS))  # every id once
    assert set(result["rows"][0]) == {"id", "logits", "logistic", "class_ids"}, result["rows"][0]
    reference = single_process_scores(config, workdir / "model-spark", predict_input)
    assert len(reference) == PREDICT_ROWS
    for row in result["rows"]:
        assert row["logistic"][0] == pytest.approx(reference[row["id"]], abs=1e-5), row
    assert os.listdir(workdir / "model-spark" / "spark-staging") == []


def test_predicting_without_a_checkpoint_fails_saying_to_train_first(spark_mode, workdir):
    result = spark_mode.results["untrained"]
    assert result.get("error") == "ShoalJobError", result
    assert "no checkpoint in model_dir" in result["message"], result
    assert "train the model first" in result["message"], result
    assert result["seconds"] < 90, result
    model_dir = workdir / "model-untrained"
    deadline = time.monotonic() + 30
    while running_members(model_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running_members(model_dir) == []
    assert os.listdir(model_dir / "spark-staging") == []


def member_logs(cluster, application_id):
    """{member name: [log paths]} of one application, from the workers' directories."""
    logs = {}
    for path in cluster.dir.glob(f"worker-*/{application_id}/*/shoal-stage*-*.log"):
        role, index = re.match(r"shoal-stage\d+-(\w+)-(\d+)\.log", path.name).groups()
        logs.setdefault(f"{role}:{index}", []).append(path)
    return logs


def executor_stderr(cluster, application_id):
    return "".join(p.read_text(errors="replace")
                   for p in cluster.dir.glob(f"worker-*/{application_id}/*/stderr"))


def trained_summary(result, data, examples):
    """The summary of a job that trained on every row (`examples` over its 3 epochs), evaluated
    and exported, as cluster_test.py's jobs. The AUC bound is the one docs/examples.md's CTR runs
    clear with room (these jobs are 3 small epochs)."""
    assert "summary" in result, result
    summary = result["summary"]
    best_auc = json.loads((data / "generator.json").read_text())["best_auc"]
    assert summary["stop_reason"] == "input exhausted", summary
    assert summary["epochs_completed"] == 3 and summary["examples"] == examples, summary
    assert 0.6 < summary["metrics"]["auc"] <= best_auc + 0.01, (summary, best_auc)
    assert 0 < summary["metrics"]["loss"] < 0.6, summary
    assert os.path.isfile(os.path.join(summary["export_path"], "export.json")), summary
    return summary


def test_trains_wide_and_deep_in_files_mode(training, workdir, data):
    summary = trained_summary(training.results["train"], data, 45000)
    model = workdir / "model"
    assert re.fullmatch(re.escape(str(model)) + r"/export/final/\d+", summary["export_path"])
    # The final checkpoint is at the summary's global step, and the pointer names it.
    step = summary["global_step"]
    assert 170 <= step <= 185, summary
    assert summary["checkpoint"] == str(model / f"ckpt-{step}")
    assert (model / f"ckpt-{step}").is_dir()
    assert f"ckpt-{step}" in (model / "checkpoint").read_text()
    inspected = subprocess.run([SHOAL, "inspect", str(model)], capture_output=True, text=True,
                               timeout=60)
    assert inspected.returncode == 0 and f"ckpt-{step}" in inspected.stdout, inspected.stdout


def test_every_member_ran_in_its_own_task_on_an_executor(training, cluster):
    app = training.results["application_id"]
    logs = member_logs(cluster, app)
    assert sorted(logs) == ["chief:0", "evaluator:0", "ps:0", "worker:0"], logs
    assert all(len(paths) == 1 for paths in logs.values()), logs
    texts = {name: paths[0].read_text() for name, paths in logs.items()}
    step = training.results["train"]["summary"]["global_step"]
    assert re.search(r"worker:0 trained \d+ steps", texts["worker:0"]), texts["worker:0"][-2000:]
    assert f"final evaluation at global step {step} reported" in texts["evaluator:0"]
    assert "summary: " in texts["chief:0"]
    stderr = executor_stderr(cluster, app)
    for name in logs:
        assert re.search(rf"shoal\.spark: {name} at 127\.0\.0\.1:\d+: shoal run", stderr), name
    # Each member's TF_CONFIG (read from its environment while it ran) names the executors'
    # address and every member but the evaluator.
    configs = []
    for environ in training.seen["environ"].values():
        for entry in environ.split(b"\0"):
            if entry.startswith(b"TF_CONFIG="):
                configs.append(json.loads(entry[len(b"TF_CONFIG="):]))
    assert configs, "no member was seen running"
    tasks = {(c["task"]["type"], c["task"]["index"]) for c in configs}
    assert tasks <= {("ps", 0), ("chief", 0), ("worker", 0), ("evaluator", 0)}, tasks
    for c in configs:
        assert sorted(c["cluster"]) == ["chief", "ps", "worker"], c
        addresses = c["cluster"]["chief"] + c["cluster"]["ps"] + c["cluster"]["worker"]
        assert len(addresses) == 3 and all(a.startswith("127.0.0.1:") for a in addresses), c


def test_the_chief_s_report_gives_the_same_summary_as_its_file(training, cluster):
    """The summary of a job whose model_dir is on hdfs:// is read from the chief's report in its
    log (summary.py); on this job both exist, and agree."""
    summary = training.results["train"]["summary"]
    chief_log = member_logs(cluster, training.results["application_id"])["chief:0"][0]
    with open(chief_log) as f:
        report = summary_from_log(f)
    assert report["global_step"] == summary["global_step"]
    assert report["stop_reason"] == summary["stop_reason"]
    assert report["export_path"] == summary["export_path"]
    assert report["metrics"].keys() == summary["metrics"].keys()
    for name, value in summary["metrics"].items():
        assert report["metrics"][name] == pytest.approx(value, abs=6e-5), name


def test_too_many_processes_are_refused_before_any_stage(training):
    result = training.results["too_many"]
    assert result.get("error") == "SparkSettingsError", result
    message = result["message"]
    assert "needs 8 task slots at once (1 ps, 1 chief, 5 workers, 1 evaluator)" in message, message
    assert "has 4" in message, message
    for setting in ("spark.executor.instances", "spark.executor.cores", "spark.task.cpus"):
        assert setting in message, message
    assert result["seconds"] < 30, result
    # The application ran one job (the training), one stage: the refused job started none.
    events = [json.loads(line)["Event"] for line in training.event_log.splitlines()]
    assert events.count("SparkListenerJobStart") == 1, events
    assert events.count("SparkListenerStageSubmitted") == 1, events


def test_a_failing_member_fails_the_job_with_its_name_exit_code_and_log_tail(failing):
    result = failing.results["bad_input"]
    assert result.get("error") == "ShoalJobError", result
    message = result["message"]
    assert re.search(r"(ps|chief|worker|evaluator):0 \(shoal run at 127\.0\.0\.1:\d+\) exited "
                     r"with code 1; the last \d+ lines of its log \(/\S+\.log\):", message), message
    assert "input pattern" in message and "matches no file" in message, message
    assert result["seconds"] < 120, result


def running_members(model_dir):
    """Pids of the processes whose command line holds `model_dir`."""
    marker = str(model_dir).encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker in f.read():
                        found.append(entry)
            except OSError:
                pass
    return found


def test_a_failed_job_runs_once_and_leaves_no_member_running(failing, cluster, workdir):
    model_dir = workdir / "model-bad"

    def running():
        return running_members(model_dir)

    # Members were running during the job; none is once it has failed (a member still running
    # when the stage fails is stopped by its supervisor within kill_grace_secs, 10 s).
    assert any(str(model_dir).encode() in c for c in failing.seen["environ"])
    deadline = time.monotonic() + 30
    while running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running() == [], running()
    app = failing.results["application_id"]
    logs = member_logs(cluster, app)
    # Spark did not retry the failed barrier stage: the application's three jobs (bad input,
    # timeout, no binary) each ran one stage, once, and each member of the first started once.
    events = [json.loads(line) for line in failing.event_log.splitlines()]
    submitted = [e["Stage Info"]["Stage ID"] for e in events
                 if e["Event"] == "SparkListenerStageSubmitted"]
    assert sorted(submitted) == [0, 1, 2], submitted
    logs = {name: [p for p in paths if p.name.startswith("shoal-stage0-")]
            for name, paths in logs.items()}
    assert sorted(name for name, paths in logs.items() if paths) == [
        "chief:0", "evaluator:0", "ps:0", "worker:0"], logs
    for paths in logs.values():
        assert len(paths) == 1 and paths[0].read_text().count(" starting ") == 1, paths


def test_a_job_past_its_timeout_is_cancelled_and_its_members_stopped(failing, cluster, workdir):
    """timeout_secs cancels the job's stage: Spark kills the tasks' Python workers (SIGKILL), and
    each supervisor, seeing its task's end, stops its member."""
    result = failing.results["timeout"]
    assert result.get("error") == "ShoalJobError", result
    assert "did not end within timeout_secs=15" in result["message"], result
    assert 15 <= result["seconds"] < 50, result
    assert running_members(workdir / "model-endless") == []
    logs = member_logs(cluster, failing.results["application_id"])
    logs = {name: [p for p in paths if p.name.startswith("shoal-stage1-")]
            for name, paths in logs.items()}
    assert sorted(name for name, paths in logs.items() if paths) == ["chief:0", "ps:0",
                                                                     "worker:0"], logs
    assert re.search(r"step \d+ \|", logs["chief:0"][0].read_text())  # it was training
    # Every member was running when the stage was cancelled, and its supervisor stopped it when
    # its task ended (or at the SIGHUP of Spark's Python daemon, when the executor stopped).
    for name in ("chief:0", "ps:0", "worker:0"):
        text = logs[name][0].read_text()
        assert re.search(r"shoal\.spark: stopping shoal \(pid \d+\): (its Spark task ended|"
                         r"signal \d+); SIGTERM now", text), (name, text[-2000:])


def test_a_missing_binary_says_where_it_looked(failing):
    result = failing.results["no_binary"]
    assert result.get("error") == "ShoalJobError", result
    assert "/nonexistent/shoal (absent)" in result["message"], result
    assert "shoal_binary" in result["message"], result


def test_the_spark_example_trains_wide_and_deep(cluster, workdir, data):
    """examples/spark/submit.sh as a user runs it on a standalone cluster (here on loopback)."""
    model_dir = workdir / "example-model"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "SPARK_CONF_DIR")}
    env.update(SPARK_SUBMIT=SPARK_SUBMIT, PYSPARK_PYTHON=sys.executable, SHOAL=SHOAL,
               SPARK_LOCAL_IP="127.0.0.1", DATA=str(data), MODEL_DIR=str(model_dir), WORKERS="1",
               EXECUTOR_MEMORY="512m")
    out = subprocess.run([os.path.join(REPO, "examples", "spark", "submit.sh"), "standalone",
                          cluster.master, "--set", "run.log_step_count_steps=50",
                          "--score-eval"], env=env,
                         capture_output=True, text=True, timeout=420)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    # The driver's stderr (the log) comes out on spark-submit's stdout too; the summary is the
    # JSON object printed at the start of a line.
    summary, _ = json.JSONDecoder().raw_decode(out.stdout[out.stdout.index("\n{") + 1:])
    assert summary["stop_reason"] == "input exhausted", summary
    assert summary["metrics"]["auc"] > 0.6, summary
    assert summary["export_path"].startswith(str(model_dir / "export" / "final")), summary
    assert os.path.isfile(os.path.join(summary["export_path"], "export.json"))
    # --score-eval: the evaluation file (5000 rows) scored as a DataFrame typed as the criteo
    # parser reads it gets the final evaluation's scores of the same rows (the same checkpoint).
    scored = json.loads(next(line for line in out.stdout.splitlines()
                             if line.startswith('{"mean_label"')))
    assert scored["scored_rows"] == 5000, scored
    assert scored["mean_label"] == pytest.approx(summary["metrics"]["label/mean"], abs=1e-4)
    assert scored["mean_logistic"] == pytest.approx(summary["metrics"]["prediction/mean"],
                                                    abs=1e-4), (scored, summary["metrics"])


def all_files(directory):
    for root, _, files in os.walk(directory):
        for name in files:
            yield os.path.join(root, name)


def test_the_job_secret_appears_in_no_log_ui_or_command_line(training, failing, spark_mode,
                                                             cluster):
    secrets = training.secrets + failing.secrets + spark_mode.secrets
    assert len(training.secrets) == 1 and len(failing.secrets) == 3, secrets
    assert len(spark_mode.secrets) == 4, secrets  # predict's jobs and num_ps=0's have theirs
    # It did reach the members: their environment held it while they ran.
    held = [env for env in training.seen["environ"].values()
            if f"SHOAL_JOB_SECRET={training.secrets[0]}".encode() in env.split(b"\0")]
    assert held, "no member was seen with the job's secret"
    for secret in secrets:
        token = secret.encode()
        for submission in (training, failing, spark_mode):
            assert not [c for c in submission.seen["cmdlines"] if token in c]
            assert secret not in submission.stdout and secret not in submission.stderr
            assert secret not in submission.event_log
            assert secret not in submission.ui
            # Only a member's own environment holds it, not its supervisor's.
            for cmdline, environ in submission.seen["environ"].items():
                if b"shoal.spark.supervisor" in cmdline:
                    assert token not in environ, cmdline
        # Every file the cluster wrote: daemon logs, executors' stdout and stderr, members' logs.
        for path in all_files(cluster.dir):
            with open(path, "rb") as f:
                assert token not in f.read(), path
