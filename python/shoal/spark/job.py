"""The driver's side of a shoal job on Spark: `run`.

One job is one barrier stage of N tasks, N the job's processes (`cluster.plan_members`), each
running one member (member.py). Before the stage, the driver checks the settings (checks.py) and
creates the job's secret. The stage's result is one row per member; the chief's carries the
job's summary, which `run` returns. A failed stage becomes a ShoalJobError carrying the failed
member's message (its name, exit code and log tail), taken out of Spark's failure text.
"""

import functools
import json
import logging
import re
import secrets
import threading
import uuid
from typing import Any, Dict, Mapping, Optional

from shoal.spark import checks
from shoal.spark.cluster import describe, plan_members, set_flags
from shoal.spark.errors import ShoalJobError
from shoal.spark.member import ERROR_BEGIN, ERROR_END, MemberJob, run_member

log = logging.getLogger("shoal.spark")

INPUT_MODES = ("files", "spark")

_MEMBER_ERROR = re.compile(re.escape(ERROR_BEGIN) + r"(.*?)" + re.escape(ERROR_END), re.DOTALL)


def _new_job_secret() -> str:
    """256 random bits as 64 hex characters, like `shoal launch`'s."""
    return secrets.token_hex(32)


def task_slots(sc) -> int:
    """How many tasks the application can run at once now: the count Spark itself compares a
    barrier stage with (SparkContext.maxNumConcurrentTasks, for the default resource profile)."""
    jsc = sc._jsc.sc()  # noqa: SLF001 - the JVM SparkContext; pyspark has no Python wrapper
    profile = jsc.resourceProfileManager().defaultResourceProfile()
    return int(jsc.maxNumConcurrentTasks(profile))


def member_error(text: str) -> Optional[str]:
    """The first member's message in Spark's failure text, if it holds one."""
    found = _MEMBER_ERROR.search(text)
    return found.group(1) if found else None


_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.*)$")


def _spark_failure(e: Exception) -> str:
    """What a Spark failure that holds no member's message says (a task's Python error, a lost
    executor): its "Job aborted ..." line and the last Python exception line, with a hint when the
    executors cannot import this package."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    aborted = next((line.split("Job aborted", 1)[1] for line in lines if "Job aborted" in line),
                   None)
    python = [line for line in lines if _PYTHON_ERROR.match(line)]
    parts = []
    if aborted is not None:
        parts.append("Job aborted" + aborted)
    if python:
        parts.append(python[-1])
    if not parts:
        parts = lines[:8]
    if any("No module named 'shoal'" in line for line in lines):
        parts.append("The executors cannot import the shoal package: install it there "
                     "(pip install ./python) or ship it with spark-submit --py-files "
                     "(docs/spark.md)")
    return "\n".join(parts)


def run(spark, config: str, num_workers: int, num_ps: int, evaluator: bool = True,
        input_mode: str = "files", *, overrides: Optional[Mapping[str, Any]] = None,
        model_dir: Optional[str] = None, shoal_binary: Optional[str] = None,
        log_dir: Optional[str] = None, timeout_secs: Optional[float] = None,
        slot_wait_secs: float = 120.0, slot_settle_secs: float = 10.0,
        kill_grace_secs: float = 10.0, log_tail_lines: int = 50) -> Dict[str, Any]:
    """Trains `config` on a cluster of `num_ps` parameter servers, a chief, `num_workers` workers
    (besides the chief, which trains too) and, with `evaluator`, an evaluator, each a `shoal run`
    inside one task of a Spark barrier stage. Returns the chief's summary (summary.json: metrics,
    export_path, global_step, checkpoint, ...). docs/spark.md is the full guide.

    spark: a SparkSession or SparkContext.
    config: the job's YAML, a path every executor can read, or the name of a file shipped with
        `spark-submit --files`.
    input_mode: "files", the workers read `input.train.files` (local or hdfs:// globs) through
        the chief's data-task queue. "spark" (streaming a DataFrame to the workers) is not
        available yet.
    overrides: {"run.max_steps": 500, ...}, passed as `--set key=value` (values written as YAML).
    model_dir: `--model-dir`; every member must see it at the same path (hdfs:// for a job over
        several hosts). Default: the config's.
    shoal_binary: the binary's path on the executors; by default $SHOAL_BINARY, a `shoal` shipped
        with --files/--archives, then PATH.
    log_dir: where each member's log goes on its executor (default: YARN's container log
        directory, else the task's working directory).
    timeout_secs: cancel the job after this long (default: no limit; shoal's own deadlines apply).
    slot_wait_secs, slot_settle_secs: how long to wait for executors to register before refusing
        a job larger than the application's task slots (checks.wait_for_slots).
    kill_grace_secs: SIGTERM to SIGKILL, when a member is stopped because its task ended.
    log_tail_lines: how many of a failed member's last log lines its error carries.

    Raises ValueError for bad arguments, SparkSettingsError (a ValueError) for Spark settings that
    cannot run a barrier stage, both before any stage starts; ShoalJobError when the job fails.
    """
    if input_mode == "spark":
        raise ValueError(
            "shoal.spark.run: input_mode='spark' (streaming a DataFrame or RDD to the workers) is "
            "not available yet: it needs a feed service in shoal's workers that is not built. Use "
            "input_mode='files' and point input.train.files at files the executors can read "
            "(hdfs:// or local globs), e.g. written first with DataFrame.write.csv")
    if input_mode not in INPUT_MODES:
        raise ValueError(f"shoal.spark.run: input_mode must be 'files' (or, later, 'spark'), "
                         f"got {input_mode!r}")
    if not isinstance(config, str) or not config:
        raise ValueError(f"shoal.spark.run: config must be the path of the job's YAML, "
                         f"got {config!r}")
    members = plan_members(num_ps, num_workers, evaluator)
    flags = set_flags(overrides)
    what = describe(members)

    sc = getattr(spark, "sparkContext", spark)
    conf = dict(sc.getConf().getAll())
    for warning in checks.check_conf(conf, sc.master):
        log.warning("%s", warning)
    try:
        task_slots(sc)
    except Exception as e:  # noqa: BLE001 - a Spark whose JVM API differs (Py4JError and kin)
        log.warning("cannot count the application's task slots (%s); not checking them: a job "
                    "larger than the application waits for slots", e)
        slots = None
    else:
        slots = checks.wait_for_slots(functools.partial(task_slots, sc), len(members), what,
                                      conf, slot_wait_secs, slot_settle_secs)

    job = MemberJob(members, config, flags, model_dir, shoal_binary, log_dir, kill_grace_secs,
                    log_tail_lines, _new_job_secret())
    group = f"shoal-{uuid.uuid4().hex[:12]}"
    description = f"shoal: {config.rsplit('/', 1)[-1]} on {what}"
    log.info("starting %s (%d processes, %s task slots) as job group %s", what, len(members),
             "?" if slots is None else slots, group)
    saved = {key: sc.getLocalProperty(key) for key in
             ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")}
    sc.setJobGroup(group, description, interruptOnCancel=True)
    timed_out = threading.Event()
    timer = None
    if timeout_secs is not None:
        def cancel() -> None:
            timed_out.set()
            sc.cancelJobGroup(group)
        timer = threading.Timer(timeout_secs, cancel)
        timer.daemon = True
        timer.start()
    try:
        rows = (sc.parallelize(range(len(members)), len(members)).barrier()
                .mapPartitions(functools.partial(run_member, job)).collect())
    except Exception as e:  # noqa: BLE001 - Py4JJavaError, or pyspark's own wrappers of it
        if timed_out.is_set():
            error = ShoalJobError(f"shoal.spark: the job ({what}) did not end within "
                                  f"timeout_secs={timeout_secs:g}; its tasks were cancelled")
        else:
            message = member_error(str(e))
            error = ShoalJobError(
                f"shoal.spark: the job failed: {message}" if message is not None else
                f"shoal.spark: the job's barrier stage failed:\n{_spark_failure(e)}")
        error.spark_error = e
        raise error from None
    finally:
        if timer is not None:
            timer.cancel()
        for key, value in saved.items():
            sc.setLocalProperty(key, value)

    results = [json.loads(row) for row in rows]
    for r in results:
        log.info("%s at %s exited 0 (log on its executor: %s)", r["member"], r["address"],
                 r["log"])
    chief = next(r for r in results if r["member"] == "chief:0")
    return chief["summary"]
