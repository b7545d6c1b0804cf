"""The errors shoal.spark raises on the driver."""


class ShoalJobError(RuntimeError):
    """The job ran and failed: a member exited non-zero (the message names it, e.g. `chief:0`,
    with its exit code and the last lines of its log), a task could not start its member (no
    binary, no config), or Spark lost a task. Raised by `shoal.spark.run` on the driver."""


class SparkSettingsError(ValueError):
    """The Spark application cannot run a shoal job as it is set up (dynamic allocation, fewer task
    slots than processes, ...). Raised on the driver before any stage starts; the message says
    which setting to change."""
