"""The driver's side of a shoal job on Spark: `run` (training), and the stage both it and
`predict` (predict.py) start.

One job is one barrier stage of N tasks, N the job's processes (`cluster.plan_members`), each
running one member (member.py). Before the stage, the driver checks the settings (checks.py),
stages the DataFrames of input_mode="spark" (staging.py) and creates the job's secret. The stage's
result is one row per member; the chief's carries the job's summary, which `run` returns. A failed
stage becomes a ShoalJobError carrying the failed member's message (its name, exit code and log
tail), taken out of Spark's failure text.
"""

import dataclasses
import functools
import json
import logging
import re
import secrets
import threading
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from shoal.spark import checks, driver_config, staging
from shoal.spark.cluster import Member, describe, plan_members, set_flags
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
_FAILED_TASK = re.compile(r"barrier task ResultTask\(\d+, (\d+)\) finished unsuccessfully")


def _spark_failure(e: Exception, members: Optional[Sequence[Member]] = None) -> str:
    """What a Spark failure that holds no member's message says (a task's Python error, a lost
    executor): its "Job aborted ..." line and the last Python exception line, with a hint when the
    executors cannot import this package. With the stage's `members`, a task lost with its
    executor (YARN killed or lost the container, a node died) is named, with Spark's reason."""
    text = str(e)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lost = next((line for line in lines if line.startswith("ExecutorLostFailure")), None)
    failed = _FAILED_TASK.search(text)
    lead = []
    if lost is not None:
        who = "a task"
        if members is not None and failed and int(failed.group(1)) < len(members):
            who = f"{members[int(failed.group(1))].name} (partition {failed.group(1)})"
        lead.append(f"{who} lost its executor: {lost}")
    aborted = next((line.split("Job aborted", 1)[1] for line in lines if "Job aborted" in line),
                   None)
    python = [line for line in lines if _PYTHON_ERROR.match(line)]
    parts = []
    if aborted is not None:
        parts.append("Job aborted" + aborted)
    if python:
        parts.append(python[-1])
    if lead:
        parts = lead + parts
        if members is not None:
            parts.append("A shoal job is not retried inside Spark: run it again, and it resumes "
                         "from the last checkpoint in model_dir")
    if not parts:
        parts = lines[:8]
    if any("No module named 'shoal'" in line for line in lines):
        parts.append("The executors cannot import the shoal package: install it there "
                     "(pip install ./python) or ship it with spark-submit --py-files "
                     "(docs/spark.md)")
    return "\n".join(parts)


@dataclasses.dataclass
class Launch:
    """How the members are started and watched: the arguments `run` and `predict` share."""
    shoal_binary: Optional[str] = None
    log_dir: Optional[str] = None
    timeout_secs: Optional[float] = None
    slot_wait_secs: float = 120.0
    slot_settle_secs: float = 10.0
    kill_grace_secs: float = 10.0
    log_tail_lines: int = 50


def check_spark(sc, members: Sequence[Member], what: str, launch: Launch) -> Optional[int]:
    """The Spark settings checked before anything is written or started: warnings logged,
    SparkSettingsError raised. Returns the application's task slots (None: not counted)."""
    conf = dict(sc.getConf().getAll())
    for warning in checks.check_conf(conf, sc.master):
        log.warning("%s", warning)
    try:
        task_slots(sc)
    except Exception as e:  # noqa: BLE001 - a Spark whose JVM API differs (Py4JError and kin)
        log.warning("cannot count the application's task slots (%s); not checking them: a job "
                    "larger than the application waits for slots", e)
        return None
    return checks.wait_for_slots(functools.partial(task_slots, sc), len(members), what, conf,
                                 launch.slot_wait_secs, launch.slot_settle_secs)


def run_stage(sc, job: MemberJob, what: str, description: str, slots: Optional[int],
              timeout_secs: Optional[float]) -> Dict[str, Any]:
    """Runs the job's barrier stage and returns the chief's row (its "summary"); ShoalJobError
    when the stage fails or outlives `timeout_secs`."""
    group = f"shoal-{uuid.uuid4().hex[:12]}"
    log.info("starting %s (%d processes, %s task slots) as job group %s", what, len(job.members),
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
        rows = (sc.parallelize(range(len(job.members)), len(job.members)).barrier()
                .mapPartitions(functools.partial(run_member, job)).collect())
    except Exception as e:  # noqa: BLE001 - Py4JJavaError, or pyspark's own wrappers of it
        if timed_out.is_set():
            error = ShoalJobError(f"shoal.spark: the job ({what}) did not end within "
                                  f"timeout_secs={timeout_secs:g}; its tasks were cancelled")
        else:
            message = member_error(str(e))
            error = ShoalJobError(
                f"shoal.spark: the job failed: {message}" if message is not None else
                f"shoal.spark: the job's barrier stage failed:\n"
                f"{_spark_failure(e, job.members)}")
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
    return next(r for r in results if r["member"] == "chief:0")


def check_config_arg(config: Any, what: str) -> None:
    if not isinstance(config, str) or not config:
        raise ValueError(f"{what}: config must be the path of the job's YAML, got {config!r}")


def resolve_model_dir(model_dir: Optional[str], overrides: Optional[Mapping[str, Any]],
                      parsed: Optional[Dict[str, Any]]) -> Optional[str]:
    """The model_dir the members use: the argument, else an override, else the config's."""
    for candidate in (model_dir, (overrides or {}).get("model_dir"),
                      driver_config.lookup(parsed, "model_dir")):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def staging_area(sc, what: str, staging_dir: Optional[str], model_dir: Optional[str],
                 config_problem: Optional[str], job_id: str,
                 keep: bool) -> staging.StagingArea:
    """Where this job stages its DataFrames: `staging_dir`, else model_dir/spark-staging/JOB."""
    if staging_dir:
        return staging.StagingArea(sc, staging_dir, keep, own_root=False)
    model_dir = required_model_dir(model_dir, config_problem, what, "staging_dir",
                                   "the DataFrame is staged under model_dir/spark-staging")
    return staging.StagingArea(sc, staging.default_root(model_dir, job_id), keep, own_root=True)


def required_model_dir(model_dir: Optional[str], config_problem: Optional[str], what: str,
                       argument: str, default: str) -> str:
    """`model_dir`, which a default place needs; without one a ValueError asks for `argument`."""
    if model_dir:
        return model_dir
    reason = (f"the config cannot be read on the driver ({config_problem})" if config_problem
              else "the config has no model_dir")
    raise ValueError(f"{what}: give {argument}= or model_dir= ({default} by default, and "
                     f"{reason})")


def section_schema(parsed: Optional[Dict[str, Any]], overrides: Optional[Mapping[str, Any]],
                   sections: Sequence[str]) -> Optional[List[Any]]:
    """The schema the config (or an override) declares for the first of `sections` that has
    one; None when none does."""
    for section in sections:
        key = f"input.{section}.schema"
        declared = (overrides or {}).get(key, driver_config.lookup(parsed, key))
        if isinstance(declared, list):
            return declared
    return None


def refuse_input_overrides(overrides: Optional[Mapping[str, Any]], sections: Sequence[str],
                           what: str, source: str) -> None:
    for key in overrides or {}:
        for section in sections:
            if key in (f"input.{section}", f"input.{section}.files",
                       f"input.{section}.format"):
                raise ValueError(f"{what}: overrides sets {key}, but {source}")


def load_and_check(sc, config: str, frames: Mapping[str, Any], label: bool,
                   what: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The config as the driver reads it (driver_config.load), after checking that each of
    `frames` ({"train_data": DataFrame}) holds the columns it reads (and its label when `label`),
    all of types that can be staged."""
    parsed, problem = driver_config.load(sc, config)
    if parsed is None:
        log.warning("%s: cannot read %s on the driver (%s): the DataFrames' columns are not "
                    "checked here (shoal checks them when the job starts)", what, config, problem)
    for name, frame in frames.items():
        staging.check_columns(frame.schema, driver_config.needed_columns(parsed, label),
                              f"{what}: {name}")
    return parsed, problem


def run(spark, config: str, num_workers: int, num_ps: int, evaluator: bool = True,
        input_mode: str = "files", *, train_data=None, eval_data=None,
        staging_dir: Optional[str] = None, keep_staging: bool = False,
        overrides: Optional[Mapping[str, Any]] = None,
        model_dir: Optional[str] = None, shoal_binary: Optional[str] = None,
        log_dir: Optional[str] = None, timeout_secs: Optional[float] = None,
        slot_wait_secs: float = 120.0, slot_settle_secs: float = 10.0,
        kill_grace_secs: float = 10.0, log_tail_lines: int = 50) -> Dict[str, Any]:
    """Trains `config` on a cluster of `num_ps` parameter servers, a chief, `num_workers` workers
    (besides the chief, which trains too) and, with `evaluator`, an evaluator, each a `shoal run`
    inside one task of a Spark barrier stage. Returns the chief's summary (summary.json: metrics,
    export_path, global_step, checkpoint, ...). docs/spark.md is the full guide.

    spark: a SparkSession or SparkContext (a SparkSession for input_mode="spark").
    config: the job's YAML, a path every executor can read, or the name of a file shipped with
        `spark-submit --files`.
    input_mode: "files", the workers read `input.train.files` (local or hdfs:// globs) through
        the chief's data-task queue. "spark": `train_data` (and `eval_data`), DataFrames, are
        first written as CSV part files into a staging directory (staging.py), which the job
        then reads as in files mode: each Spark partition becomes one or more data tasks.
    train_data, eval_data: the DataFrames of input_mode="spark" (train_data required; eval_data
        replaces input.eval's files). Their columns must hold every column the config's features
        and label read, as scalars.
    staging_dir: where they are staged (train/ and eval/ inside), a directory every executor
        can read: hdfs:// when the members run on several hosts. Default:
        MODEL_DIR/spark-staging/<job id>.
    keep_staging: keep the staged files after the job (they are removed by default, also when
        the job fails).
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
    what_call = "shoal.spark.run"
    if input_mode not in INPUT_MODES:
        raise ValueError(f"{what_call}: input_mode must be 'files' or 'spark', got {input_mode!r}")
    if input_mode == "files" and (train_data is not None or eval_data is not None):
        raise ValueError(f"{what_call}: train_data and eval_data are for input_mode='spark'; with "
                         f"input_mode='files' the workers read input.train.files (pass "
                         f"input_mode='spark' to train on a DataFrame)")
    if input_mode == "spark" and train_data is None:
        raise ValueError(f"{what_call}: input_mode='spark' needs train_data, the DataFrame to "
                         f"train on")
    check_config_arg(config, what_call)
    members = plan_members(num_ps, num_workers, evaluator)
    if num_ps == 0:
        # As TensorFlowOnSpark's num_ps=0 with MultiWorkerMirroredStrategy: the trainers hold the
        # model and all-reduce each step's gradients (docs/spark.md).
        overrides = dict(overrides or {})
        overrides.setdefault("run.strategy", "all_reduce")
    set_flags(overrides)  # bad keys fail before anything starts
    what = describe(members)
    launch = Launch(shoal_binary, log_dir, timeout_secs, slot_wait_secs, slot_settle_secs,
                    kill_grace_secs, log_tail_lines)
    sc = getattr(spark, "sparkContext", spark)
    area = None
    overrides = dict(overrides or {})
    if input_mode == "spark":
        sections = ["train"] + (["eval"] if eval_data is not None else [])
        refuse_input_overrides(overrides, sections, what_call,
                               "input_mode='spark' reads the DataFrames given instead")
        parsed, problem = load_and_check(
            sc, config, {f"{s}_data": f for s, f in zip(sections, (train_data, eval_data))},
            True, what_call)
        area = staging_area(sc, what_call, staging_dir,
                            resolve_model_dir(model_dir, overrides, parsed), problem,
                            uuid.uuid4().hex[:12], keep_staging)
    slots = check_spark(sc, members, what, launch)
    try:
        if area is not None:
            for section, frame in zip(sections, (train_data, eval_data)):
                staged = area.stage(frame, section, f"{section}_data")
                declared = section_schema(parsed, overrides, [section])
                overrides.update(staging.input_overrides(
                    section, staged.glob,
                    None if declared is not None else staging.derived_schema(frame.schema)))
        job = MemberJob(members, config, set_flags(overrides), model_dir, launch.shoal_binary,
                        launch.log_dir, launch.kill_grace_secs, launch.log_tail_lines,
                        _new_job_secret())
        chief = run_stage(sc, job, what, f"shoal: {config.rsplit('/', 1)[-1]} on {what}", slots,
                          launch.timeout_secs)
    finally:
        if area is not None:
            area.close()
    return chief["summary"]
