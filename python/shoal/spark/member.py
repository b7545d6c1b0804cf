"""The executor's side of a shoal job: one barrier task runs one member (`shoal run`).

Each task, in partition order of `cluster.plan_members`:
  1. finds the `shoal` binary and the config on its executor (`find_binary`, `find_config`);
  2. reserves a free port on its executor's host, the host Spark knows the executor by
     (`BarrierTaskInfo.address`), by binding port 0;
  3. spreads "host:port" to every task with `BarrierTaskContext.allGather` and builds its
     TF_CONFIG from the list;
  4. releases the port and starts `shoal run CONFIG [--set ...] [--model-dir ...]` under the
     supervisor (supervisor.py), with TF_CONFIG and SHOAL_JOB_SECRET in the child's environment
     only; the supervisor appends the member's stdout and stderr to its log file, and the task
     keeps the last lines in memory;
  5. waits for it: exit 0 returns one JSON row to the driver (the chief's carries the job's
     summary); anything else raises `MemberFailed`, naming the member, its address, its exit code
     and the tail of its log, which fails the barrier stage and with it the job.

Between 2 and 4 another process may take the port (the same small race as `shoal launch`'s): the
member then fails at start with "gRPC server cannot listen on HOST:PORT", and the job fails with
that message; run it again.
"""

import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from shoal.spark import summary
from shoal.spark.cluster import Member, tf_config

# The driver finds a member's error between these in Spark's failure text (which wraps it in a
# Python traceback and Java stack frames).
ERROR_BEGIN = "[shoal.spark] "
ERROR_END = " [/shoal.spark]"

BINARY_NAME = "shoal"


class MemberFailed(RuntimeError):
    """A member could not start or exited non-zero; fails the barrier stage."""

    def __init__(self, message: str):
        super().__init__(f"{ERROR_BEGIN}{message}{ERROR_END}")
        self.message = message


class MemberJob:
    """What every task needs, sent to the executors in the stage's closure (pickled). The job's
    secret travels here, and only here: never in the Spark conf, a job description or a command
    line. `repr` leaves it out, so no traceback or log line can show it. `predict_output` is set
    for a prediction job (its flags hold `--predict-output` with it): the chief's row then carries
    the prediction's summary instead of training's."""

    def __init__(self, members: Sequence[Member], config: str, flags: Sequence[str],
                 model_dir: Optional[str], shoal_binary: Optional[str], log_dir: Optional[str],
                 kill_grace_secs: float, log_tail_lines: int, secret: str,
                 predict_output: Optional[str] = None):
        self.members = list(members)
        self.config = config
        self.flags = list(flags)
        self.model_dir = model_dir
        self.shoal_binary = shoal_binary
        self.log_dir = log_dir
        self.kill_grace_secs = kill_grace_secs
        self.log_tail_lines = log_tail_lines
        self.secret = secret
        self.predict_output = predict_output

    def __repr__(self) -> str:
        return (f"MemberJob(members={[m.name for m in self.members]}, config={self.config!r}, "
                f"flags={self.flags!r}, model_dir={self.model_dir!r}, secret=<hidden>)")


def _is_uri(path: str) -> bool:
    return "://" in path


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary(explicit: Optional[str], environ: Dict[str, str], files_root: Optional[str],
                cwd: str) -> str:
    """The `shoal` binary on this executor, from (first match wins): the `shoal_binary` argument
    of `run`; $SHOAL_BINARY (e.g. spark.executorEnv.SHOAL_BINARY); a file shipped with
    `spark-submit --files .../shoal` or an archive shipped with `--archives shoal.tgz#shoal`
    (a `shoal` or `bin/shoal` inside), in the SparkFiles directory or the working directory; PATH.
    Raises MemberFailed listing every place it looked."""
    looked: List[str] = []

    def usable(path: str, what: str) -> Optional[str]:
        if _executable(path):
            return os.path.abspath(path)
        state = "not executable" if os.path.isfile(path) else "absent"
        looked.append(f"{what}: {path} ({state})")
        return None

    if explicit:
        found = usable(explicit, "the shoal_binary argument")
        if found:
            return found
        raise MemberFailed(f"the shoal binary given as shoal_binary is not usable here: "
                           f"{looked[-1]}")
    looked.append("the shoal_binary argument: not given")
    from_env = environ.get("SHOAL_BINARY")
    if from_env:
        found = usable(from_env, "$SHOAL_BINARY")
        if found:
            return found
    else:
        looked.append("$SHOAL_BINARY: not set")
    for root, what in ((files_root, "shipped with --files/--archives"), (cwd, "working directory")):
        if not root:
            continue
        shipped = os.path.join(root, BINARY_NAME)
        if os.path.isdir(shipped):  # an archive unpacked under its alias
            for inner in (os.path.join(shipped, BINARY_NAME),
                          os.path.join(shipped, "bin", BINARY_NAME)):
                found = usable(inner, what)
                if found:
                    return found
        else:
            found = usable(shipped, what)
            if found:
                return found
    on_path = shutil.which(BINARY_NAME, path=environ.get("PATH", ""))
    if on_path:
        return os.path.abspath(on_path)
    looked.append(f"PATH: {environ.get('PATH', '')} (no {BINARY_NAME})")
    raise MemberFailed(
        "cannot find the shoal binary on this executor; looked at:\n  " + "\n  ".join(looked) +
        "\nShip it with spark-submit --files /path/to/shoal (or --archives), set "
        "spark.executorEnv.SHOAL_BINARY, or pass shoal_binary= to shoal.spark.run")


def find_config(config: str, files_root: Optional[str]) -> str:
    """The job's YAML config on this executor: the path as given when it exists here (or is a URI,
    which `shoal run` reads itself), else a file of that name shipped with `--files`."""
    if _is_uri(config) or os.path.isfile(config):
        return config if _is_uri(config) else os.path.abspath(config)
    looked = [f"{config} (absent)"]
    if files_root:
        shipped = os.path.join(files_root, os.path.basename(config))
        if os.path.isfile(shipped):
            return shipped
        looked.append(f"{shipped}, shipped with --files (absent)")
    raise MemberFailed("cannot find the config on this executor; looked at:\n  " +
                       "\n  ".join(looked) + "\nGive a path every executor can read, or ship the "
                       "file with spark-submit --files and pass its name")


def reserve_port(host: str) -> Tuple[socket.socket, int]:
    """A socket bound to a free port on `host` (kept open until the member starts, so that no
    other member of this executor picks it too)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except OSError as e:
        sock.close()
        raise MemberFailed(f"cannot bind a port on {host}, this executor's address: {e}") from e
    return sock, sock.getsockname()[1]


def default_log_dir(environ: Dict[str, str], cwd: str) -> str:
    """YARN's container log directory when there is one (so that `yarn logs` collects the members'
    logs with the executors'), else the task's working directory (a standalone worker's
    work/app-*/N/, beside the executor's stdout and stderr)."""
    yarn = environ.get("LOG_DIRS", "").split(",")[0]
    return yarn if yarn and os.path.isdir(yarn) else cwd


def child_environment(environ: Dict[str, str], config: dict, secret: str) -> Dict[str, str]:
    """The member's environment: the executor's, with TF_CONFIG and SHOAL_JOB_SECRET replaced."""
    env = {k: v for k, v in environ.items() if k not in ("TF_CONFIG", "SHOAL_JOB_SECRET")}
    env["TF_CONFIG"] = json.dumps(config)
    env["SHOAL_JOB_SECRET"] = secret
    return env


class MemberProcess:
    """`shoal run` under the supervisor, which writes its log to `log_path`; the last lines of
    its output stay here, for the error a failure raises."""

    def __init__(self, command: List[str], env: Dict[str, str], log_path: str,
                 kill_grace_secs: float, tail_lines: int):
        self.log_path = log_path
        self.tail: Deque[str] = collections.deque(maxlen=tail_lines)
        self.summary_path: Optional[str] = None
        # The supervisor imports shoal.spark from wherever this task did (an installed package, or
        # a zip shipped with --py-files, which Spark puts on sys.path, not on PYTHONPATH).
        own_env = dict(os.environ)
        own_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "shoal.spark.supervisor", "--grace", f"{kill_grace_secs:g}",
             "--log", log_path, "--", *command],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=own_env,
            close_fds=True)
        self.pid = self._proc.pid
        self._proc.stdin.write(json.dumps({"env": env}).encode() + b"\n")
        self._proc.stdin.flush()
        self._reader = threading.Thread(target=self._read_output, name="member-output",
                                        daemon=True)
        self._reader.start()

    def _read_output(self) -> None:
        for line in self._proc.stdout:
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.tail.append(text)
            if text.startswith("summary: "):
                self.summary_path = text[len("summary: "):].strip()

    def wait(self) -> int:
        """The member's exit code. If this thread is interrupted, the member is stopped first."""
        try:
            code = self._proc.wait()
            if code < 0:  # the supervisor itself was killed by a signal
                code = 128 - code
        finally:
            self._proc.stdin.close()  # EOF: the supervisor stops the member if it still runs
            if self._proc.poll() is None:
                try:
                    self._proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
            self._reader.join(timeout=30)
        return code


# `shoal run`'s exit code when the chief failed the job (launch/cluster_member.h): not this
# member's own error. Its task waits this long before failing, so that the member whose error
# failed the job fails its task first and Spark's error names the cause; Spark stops the waiting
# tasks as soon as one fails.
JOB_FAILED_EXIT_CODE = 3
CAUSE_GRACE_SECS = 10.0


def describe_exit(code: int) -> str:
    if code > 128 and code - 128 < signal.NSIG:
        try:
            return f"code {code} ({signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return f"code {code}"


def failure_message(member: Member, address: str, code: int, tail: Iterable[str],
                    log_path: str) -> str:
    lines = list(tail)
    return (f"{member.name} (shoal run at {address}) exited with {describe_exit(code)}; "
            f"the last {len(lines)} lines of its log ({log_path}):\n" + "\n".join(lines))


def run_member(job: MemberJob, _partition: Iterator) -> Iterator[str]:
    """The barrier stage's task function (a partial of it, with the job, is what Spark ships)."""
    from pyspark import BarrierTaskContext, SparkFiles  # only on an executor

    context = BarrierTaskContext.get()
    index = context.partitionId()
    member = job.members[index]
    if context.attemptNumber() > 0:
        # Spark aborts a failed barrier result stage without retrying it; should a task be tried
        # again anyway, it must not start a second member of the same role.
        raise MemberFailed(f"{member.name}: this is attempt {context.attemptNumber()} of its "
                           f"task; a shoal job is not retried inside Spark (the first attempt's "
                           f"error is in the driver's log); run the job again")
    host = context.getTaskInfos()[index].address.rsplit(":", 1)[0].strip("[]")
    try:
        files_root = SparkFiles.getRootDirectory()
    except Exception:  # noqa: BLE001 - no SparkFiles here (an old Spark): no shipped files
        files_root = None
    cwd = os.getcwd()
    environ = dict(os.environ)
    log_dir = job.log_dir or default_log_dir(environ, cwd)
    log_path = os.path.join(log_dir, f"shoal-stage{context.stageId()}-{member.role}-"
                                     f"{member.index}.log")
    try:
        binary = find_binary(job.shoal_binary, environ, files_root, cwd)
        config = find_config(job.config, files_root)
        try:
            os.makedirs(log_dir, exist_ok=True)
        except OSError as e:
            raise MemberFailed(f"cannot create the log directory {log_dir}: {e}") from e
        sock, port = reserve_port(host)
    except MemberFailed as e:
        raise MemberFailed(f"{member.name} on {host}: {e.message}") from None
    try:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        addresses = [json.loads(m)["address"]
                     for m in context.allGather(json.dumps({"address": address}))]
    finally:
        sock.close()
    hosts = {a.rsplit(":", 1)[0] for a in addresses}
    if job.model_dir and not _is_uri(job.model_dir) and len(hosts) > 1:
        raise MemberFailed(
            f"model_dir {job.model_dir} is a local path, but the job's members run on "
            f"{len(hosts)} hosts ({', '.join(sorted(hosts))}), which must all see the same "
            f"model_dir: use a shared file system (hdfs://...)")

    command = [binary, "run", config, *job.flags]
    if job.model_dir:
        command += ["--model-dir", job.model_dir]
    env = child_environment(environ, tf_config(job.members, addresses, index), job.secret)
    process = MemberProcess(command, env, log_path, job.kill_grace_secs, job.log_tail_lines)
    print(f"shoal.spark: {member.name} at {address}: shoal run (supervisor pid {process.pid}), "
          f"log {log_path}", file=sys.stderr, flush=True)
    code = process.wait()
    if code == JOB_FAILED_EXIT_CODE:
        time.sleep(CAUSE_GRACE_SECS)
    if code != 0:
        raise MemberFailed(failure_message(member, address, code, process.tail, log_path))
    row = {"member": member.name, "address": address, "log": log_path}
    if member.role == "chief":
        try:
            row["summary"] = (
                summary.prediction_summary(job.predict_output, log_path) if job.predict_output
                else summary.chief_summary(process.summary_path, log_path))
        except (OSError, ValueError) as e:
            raise MemberFailed(f"{member.name} at {address} exited 0, but its summary cannot be "
                               f"read: {e}") from e
    yield json.dumps(row)
