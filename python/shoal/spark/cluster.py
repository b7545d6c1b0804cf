"""A shoal job's members, their order in the barrier stage, their TF_CONFIG and `shoal run` flags.

Pure functions of their arguments (no Spark, no I/O), shared by the driver and the executors.

Barrier partition i runs member i of `plan_members`: the parameter servers first, then the chief,
the workers and the evaluator -- the order `shoal launch` starts them in (shoal/launch/
local_launcher.cc). Any order would work, since every member retries its connections; this one
makes partition ids and roles easy to read side by side in the Spark UI.
"""

import json
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence


class Member(NamedTuple):
    """One process of the job: a role ("ps", "chief", "worker", "evaluator") and its index."""

    role: str
    index: int

    @property
    def name(self) -> str:
        """`worker:1`: how shoal's own logs and errors name a task."""
        return f"{self.role}:{self.index}"


def plan_members(num_ps: int, num_workers: int, evaluator: bool) -> List[Member]:
    """The job's members in partition order. `num_workers` counts the workers besides the chief,
    which trains too (as in `shoal launch --workers`)."""
    if isinstance(num_ps, bool) or not isinstance(num_ps, int) or num_ps < 0:
        raise ValueError(f"num_ps must be an integer >= 0 (0: no parameter servers, "
                         f"run.strategy all_reduce), got {num_ps!r}")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers must be an integer >= 0 (the workers besides the chief, "
                         f"which trains too), got {num_workers!r}")
    members = [Member("ps", i) for i in range(num_ps)]
    members.append(Member("chief", 0))
    members.extend(Member("worker", i) for i in range(num_workers))
    if evaluator:
        members.append(Member("evaluator", 0))
    return members


def describe(members: Sequence[Member]) -> str:
    """`1 ps, 1 chief, 2 workers, 1 evaluator`: for messages and the Spark job description."""
    counts: Dict[str, int] = {}
    for m in members:
        counts[m.role] = counts.get(m.role, 0) + 1
    parts = []
    for role in ("ps", "chief", "worker", "evaluator"):
        n = counts.get(role, 0)
        if n or role == "worker":
            plural = "s" if n != 1 and role in ("worker", "evaluator") else ""
            parts.append(f"{n} {role}{plural}")
    return ", ".join(parts)


def tf_config(members: Sequence[Member], addresses: Sequence[str], me: int) -> Dict[str, Any]:
    """The TF_CONFIG of member `me`, given every member's "host:port" in partition order. The
    evaluator is not part of `cluster`: it names itself in `task` only (TF's convention, which
    `shoal run` follows), and it serves nothing."""
    if len(addresses) != len(members):
        raise ValueError(f"{len(addresses)} addresses for {len(members)} members")
    cluster: Dict[str, List[str]] = {"chief": [], "worker": [], "ps": []}
    for member, address in zip(members, addresses):
        if member.role != "evaluator":
            cluster[member.role].append(address)
    return {"cluster": cluster,
            "task": {"type": members[me].role, "index": members[me].index}}


def set_flags(overrides: Optional[Mapping[str, Any]]) -> List[str]:
    """`--set key=value` flags for `shoal run`. Each value is written as JSON, which is YAML: lists,
    numbers and booleans keep their types, and a string is quoted, so that a glob such as
    `/data/part-*` or `[0-9]` is never read as YAML syntax (an alias, a flow list)."""
    flags: List[str] = []
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not key or "=" in key or key.strip() != key:
            raise ValueError(f"overrides: {key!r} is not a config key (a dotted path such as "
                             f"'run.max_steps')")
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"overrides: {key}: {value!r} cannot be written as YAML ({e})") from e
        flags += ["--set", f"{key}={text}"]
    return flags
