"""The chief's summary of a finished job, for the driver.

The chief prints `summary: MODEL_DIR/summary.json` at its end (shoal/launch/cluster_member.cc) and
writes that file (docs/estimator.md lists its keys: global_step, metrics, export_path, exports,
checkpoint, stop_reason, examples, epochs_completed, wall_time_secs). When MODEL_DIR is a local
path -- it is on the chief's executor, where this runs -- the file is read as it is. When it is a
URI (hdfs://...), which Python cannot read without a client of its own, the summary is rebuilt
from the chief's own report in its log (`trained: global_step N, ...`, `final evaluation`, its
metrics to 4 decimals, `exported: PATH`) and says so with `"source": "chief log"`.
"""

import json
import os
import re
from typing import Any, Dict, Iterable, Optional

_TRAINED = re.compile(r"^trained: global_step (\d+), (\d+) examples on the chief, [\d.]+ s "
                      r"\((.*)\)$")
_METRIC = re.compile(r"^  (\S+)\s+(-?[\d.]+(?:e[-+]?\d+)?|nan|-?inf)$")


def summary_from_log(lines: Iterable[str]) -> Dict[str, Any]:
    """The summary's main keys from the chief's report lines (see the module's comment)."""
    found: Dict[str, Any] = {"metrics": {}, "exports": [], "source": "chief log"}
    in_metrics = False
    for line in lines:
        line = line.rstrip("\n")
        trained = _TRAINED.match(line)
        if trained:
            found["global_step"] = int(trained.group(1))
            found["stop_reason"] = trained.group(3)
            in_metrics = False
            continue
        if line.startswith("final evaluation (") and line.endswith("):"):
            in_metrics = True
            continue
        metric = _METRIC.match(line) if in_metrics else None
        if metric:
            found["metrics"][metric.group(1)] = float(metric.group(2))
            continue
        in_metrics = False
        if line.startswith("exported: "):
            found["exports"].append(line[len("exported: "):].strip())
        elif line.startswith("summary: "):
            found["summary_path"] = line[len("summary: "):].strip()
    if found["exports"]:
        found["export_path"] = found["exports"][-1]
    return found


def chief_summary(summary_path: Optional[str], log_path: str) -> Dict[str, Any]:
    """The summary of a chief that exited 0; `summary_path` is what it printed (None if nothing).
    Raises OSError/ValueError when neither the file nor the log gives one."""
    if summary_path and not summary_path.startswith("file://") and "://" not in summary_path:
        with open(summary_path, encoding="utf-8") as f:
            return json.load(f)
    if summary_path and summary_path.startswith("file://"):
        local = summary_path[len("file://"):]
        if os.path.isfile(local):
            with open(local, encoding="utf-8") as f:
                return json.load(f)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        found = summary_from_log(f)
    if "global_step" not in found:
        raise ValueError(f"the chief exited 0 but reported no summary in its log ({log_path})")
    return found
