"""The chief's summary of a finished job, for the driver (a prediction's: `prediction_summary`).

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


_PREDICTED = re.compile(r"^predicted (\d+) examples into (.*) \((\d+) files?, checkpoint (.*)\)$")


def prediction_from_log(lines: Iterable[str]) -> Dict[str, Any]:
    """A prediction's summary from the chief's report line (`predicted N examples into DIR (M
    files, checkpoint CKPT)`, shoal/launch/cluster_predict.cc); {} when there is none."""
    for line in lines:
        found = _PREDICTED.match(line.rstrip("\n"))
        if found:
            return {"rows": int(found.group(1)), "output_dir": found.group(2),
                    "files": int(found.group(3)), "checkpoint": found.group(4),
                    "source": "chief log"}
    return {}


def prediction_summary(output_dir: str, log_path: str) -> Dict[str, Any]:
    """The summary of a prediction whose chief exited 0: `output_dir/_SUCCESS` (docs/
    prediction.md: rows, tasks, global_step, checkpoint, files), with `files` as a count and
    `output_dir` added, when output_dir is local; else the chief's report in its log. Raises
    OSError/ValueError when neither gives one."""
    if "://" not in output_dir or output_dir.startswith("file://"):
        local = output_dir[len("file://"):] if output_dir.startswith("file://") else output_dir
        success = os.path.join(local, "_SUCCESS")
        if os.path.isfile(success):
            with open(success, encoding="utf-8") as f:
                found = json.load(f)
            found["files"] = len(found.get("files") or [])
            found["output_dir"] = output_dir
            return found
    with open(log_path, encoding="utf-8", errors="replace") as f:
        found = prediction_from_log(f)
    if not found:
        raise ValueError(f"the chief exited 0 but reported no prediction in its log ({log_path})")
    return found
