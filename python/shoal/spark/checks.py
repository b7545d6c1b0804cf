"""Checks the driver makes before it starts a job's barrier stage, so that a setting that breaks
barrier mode fails at once with a message saying what to set, instead of Spark's own failure
(dynamic allocation) or its silent retries (too few slots: Spark retries the stage's submission
for up to 10 minutes, spark.scheduler.barrier.maxConcurrentTasksCheck.*).

`check_conf` is a pure function of the Spark conf; `wait_for_slots` takes the slot count as a
function, so both are tested without Spark (python/tests/spark_unit_test.py).
"""

import time
from typing import Callable, List, Mapping, Optional

from shoal.spark.errors import SparkSettingsError

SLOT_SETTINGS = ("spark.executor.instances, spark.executor.cores and spark.task.cpus "
                 "(on a standalone cluster: spark.cores.max and the workers' cores)")


def _true(conf: Mapping[str, str], key: str) -> bool:
    return conf.get(key, "false").strip().lower() == "true"


def _int(conf: Mapping[str, str], key: str) -> Optional[int]:
    try:
        return int(conf[key])
    except (KeyError, ValueError):
        return None


def check_conf(conf: Mapping[str, str], master: str) -> List[str]:
    """Refuses (SparkSettingsError) what no barrier stage can run with; returns warnings for what
    works but may surprise. `conf` is the SparkConf as a dict, `master` spark.master."""
    if _true(conf, "spark.dynamicAllocation.enabled"):
        raise SparkSettingsError(
            "shoal.spark: spark.dynamicAllocation.enabled is true, but a shoal job runs as one "
            "barrier stage, which needs all its tasks running at once and which Spark refuses "
            "with dynamic allocation: set spark.dynamicAllocation.enabled=false and size the "
            f"application for the job's processes ({SLOT_SETTINGS})")
    warnings = []
    if master.startswith("local"):
        warnings.append(
            f"spark.master is {master}: every member runs on this machine, inside "
            "one executor; barrier mode works, but nothing that differs between executors (hosts, "
            "files shipped with --files/--archives, executor environment) is exercised. Start a "
            "local-mode driver with `python driver.py`, not spark-submit: Spark's barrier task "
            "timer keeps a spark-submit driver's JVM running after spark.stop() in local mode")
    return warnings


def expected_slots(conf: Mapping[str, str]) -> Optional[int]:
    """The task slots the application will have once its executors are up, when the conf says so
    (spark.executor.instances x spark.executor.cores, or spark.cores.max, over spark.task.cpus);
    None when only the cluster knows (a standalone cluster's default gives each application every
    worker's cores)."""
    task_cpus = _int(conf, "spark.task.cpus") or 1
    instances = _int(conf, "spark.executor.instances")
    cores = _int(conf, "spark.executor.cores")
    if instances is not None and cores is not None:
        return instances * (cores // task_cpus)
    cores_max = _int(conf, "spark.cores.max")
    if cores_max is not None:
        return cores_max // task_cpus
    return None


def too_few_slots(needed: int, slots: int, what: str, conf: Mapping[str, str]) -> str:
    """The message for a job of `needed` processes (described by `what`) on `slots` slots. On
    YARN, when the application has fewer slots than it asked for, the missing executors are
    containers YARN has not granted (a full or too small queue): the message says so, naming the
    queue and YARN's settings too."""
    task_cpus = _int(conf, "spark.task.cpus") or 1
    message = (f"shoal.spark: the job needs {needed} task slots at once ({what}), but the Spark "
               f"application has {slots} (with spark.task.cpus={task_cpus}). A barrier stage "
               f"starts all its tasks together: give the application at least {needed} slots "
               f"({SLOT_SETTINGS}), or ask for fewer workers or parameter servers")
    expected = expected_slots(conf)
    if conf.get("spark.master") == "yarn" and expected is not None and slots < expected:
        queue = conf.get("spark.yarn.queue", "default")
        message += (
            f". On YARN: the application asked for {expected} slots (spark.executor.instances="
            f"{conf.get('spark.executor.instances')} x spark.executor.cores="
            f"{conf.get('spark.executor.cores')}), but YARN has granted containers for only "
            f"{slots}: the queue '{queue}' (spark.yarn.queue) has no room for the others. Submit "
            f"to a queue that can hold every executor at once (its capacity and maximum-capacity: "
            f"yarn.scheduler.capacity.<queue path>.capacity, .maximum-capacity, "
            f".user-limit-factor), wait until it is free, or make the executors' containers "
            f"smaller (spark.executor.memory + spark.executor.memoryOverhead)")
    return message


def wait_for_slots(slots: Callable[[], int], needed: int, what: str, conf: Mapping[str, str],
                   timeout_secs: float, settle_secs: float,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> int:
    """Waits until the application has `needed` task slots (executors register a few seconds after
    the SparkContext starts) and returns the count. Raises SparkSettingsError as soon as more
    cannot come: the conf's expected slots are all there, or the count has been unchanged (and
    non-zero) for `settle_secs`; or after `timeout_secs` in any case."""
    expected = expected_slots(conf)
    start = clock()
    last, last_change = slots(), start
    while True:
        now = clock()
        if last >= needed:
            return last
        settled = last > 0 and now - last_change >= settle_secs
        if (expected is not None and last >= expected) or settled or now - start >= timeout_secs:
            raise SparkSettingsError(too_few_slots(needed, last, what, conf))
        sleep(0.25)
        current = slots()
        if current != last:
            last, last_change = current, clock()
