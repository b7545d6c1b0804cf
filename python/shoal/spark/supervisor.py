"""`python -m shoal.spark.supervisor --grace SECS --log FILE -- PROGRAM ARGS...`: runs one shoal
member for a Spark task, writes its log, and makes sure it never outlives the task.

Why a process of its own: when Spark kills a task (another task of the barrier stage failed, the
job was cancelled), it ends the task's Python worker with SIGKILL, so the task's own code gets no
chance to stop its child. The supervisor notices instead, because the task holds the write end of
its stdin: the read end sees EOF as soon as the task process is gone, however it died.

Protocol on stdin: the first line is JSON `{"env": {...}}`, the program's whole environment (so
that the job's secret reaches the member's environment only: never a command line, nor the
supervisor's own environment); after it, nothing but EOF, which means "stop".

Output: the program's stdout and stderr, merged, are appended to FILE and copied to our stdout
(the task reads it for the tail it reports); the supervisor's own notes go to both too. When the
task is gone, FILE still gets everything.

Stopping: SIGTERM to the program's process group (the program runs in a session of its own), and
SIGKILL to the group `--grace` seconds later if it is still there. The same happens on SIGTERM,
SIGINT or SIGHUP to the supervisor (Spark's Python daemon sends its process group SIGHUP when it
shuts down). On Linux the program also gets SIGKILL if the supervisor itself is killed outright
(PR_SET_PDEATHSIG). The exit code is the program's (128 + N when signal N ended it).
"""

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
from typing import BinaryIO, List

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the supervisor dies (Linux only; best effort)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _read_line(fd: int) -> bytes:
    """One line from `fd`, read unbuffered: the watcher thread goes on reading the same fd, and a
    buffered reader's lock held by a daemon thread would abort the interpreter at exit."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    return line


class Output:
    """The log file and our stdout, written line by line from two threads. Our stdout may break
    (the task died): from then on only the file gets the lines."""

    def __init__(self, log: BinaryIO):
        self._log = log
        self._stdout_ok = True
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self._log.write(data)
            self._log.flush()
            if self._stdout_ok:
                try:
                    sys.stdout.buffer.write(data)
                    sys.stdout.buffer.flush()
                except OSError:
                    self._stdout_ok = False

    def say(self, text: str) -> None:
        self.write(f"shoal.spark: {text}\n".encode())


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m shoal.spark.supervisor")
    parser.add_argument("--grace", type=float, required=True, help="SIGTERM to SIGKILL, seconds")
    parser.add_argument("--log", required=True, help="the member's log file (appended)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv[1:])
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program given after --")
    try:
        env = json.loads(_read_line(0))["env"]
    except (ValueError, KeyError, TypeError):
        print("shoal.spark.supervisor: expected a JSON line {\"env\": {...}} on stdin",
              file=sys.stderr)
        return 2

    with open(args.log, "ab") as log:
        out = Output(log)
        child = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True,
                                 preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        stopping = threading.Lock()

        def stop(reason: str) -> None:
            if child.poll() is not None or not stopping.acquire(blocking=False):
                return
            try:
                out.say(f"stopping {os.path.basename(command[0])} (pid {child.pid}): {reason}; "
                        f"SIGTERM now, SIGKILL in {args.grace:g} s if it is still running")
            except OSError:
                pass  # the log cannot be written: stop the member all the same
            _signal_group(child.pid, signal.SIGTERM)
            timer = threading.Timer(args.grace, _signal_group, (child.pid, signal.SIGKILL))
            timer.daemon = True
            timer.start()

        def watch_task() -> None:
            while os.read(0, 4096):
                pass
            stop("its Spark task ended")

        def copy_output() -> None:
            for line in child.stdout:
                out.write(line)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda number, _frame: stop(f"signal {number}"))
        threading.Thread(target=watch_task, name="watch-task", daemon=True).start()
        copier = threading.Thread(target=copy_output, name="copy-output", daemon=True)
        copier.start()
        code = child.wait()
        # Whatever the member started and left behind goes with it.
        _signal_group(child.pid, signal.SIGKILL)
        copier.join(timeout=10)
        code = code if code >= 0 else 128 - code
        if stopping.locked():
            out.say(f"{os.path.basename(command[0])} ended with exit code {code}")
    return code


if __name__ == "__main__":
    exit_code = main(sys.argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(exit_code)  # not sys.exit: the watcher thread may still be blocked in read()
