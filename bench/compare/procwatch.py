"""Runs a group of processes and measures them from outside: their output lines stamped on
arrival, the CPU time and peak RSS of every process of their trees (polled from /proc), and the
training window given by their progress lines.

- CPU: utime + stime of every process in the trees (all threads), polled every POLL_S; a process
  that exits keeps its last reading, so the sum never goes down. The CPU used in a time window is
  the difference of the interpolated sums at its ends.
- Peak RSS: the kernel's high-water mark of each process (VmHWM in /proc/PID/status), the largest
  reading before it exits (it only grows, so only growth in its last POLL_S can be missed), and
  for each root process also ru_maxrss from wait4.
- Roles: a process whose environment has TF_CONFIG is named by its task ("ps:0", "chief:0", what
  shoal launch starts and what the TF cluster runs); others by the name given to their root.
Linux only (/proc).
"""

import json
import os
import re
import subprocess
import threading
import time

POLL_S = 0.2
ROLE_PREFIX = re.compile(r"^\[(\w+:\d+)\] ")
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024

# "step 1200 | loss 0.43 | 48,089 ex/s" (shoal's LoggingHook) or "progress global_step=1200"
# (the Python peers, ctr_model.progress).
PROGRESS = re.compile(r"(?:\bstep (\d+) \| loss [^|]+\| [0-9,]+ ex/s)|(?:progress global_step=(\d+))")


def _read_stat(pid):
    """(ppid, cpu seconds) or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS


def _read_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _task_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"TF_CONFIG="):
            try:
                task = json.loads(item[len(b"TF_CONFIG="):]).get("task", {})
                return f"{task.get('type')}:{task.get('index', 0)}"
            except ValueError:
                return None
    return None


class Group:
    """Processes started with `start`, watched until `wait` returns for each."""

    def __init__(self, log_path):
        self._log = open(log_path, "w", buffering=1)
        self._lock = threading.Lock()
        self._procs = {}  # name -> Popen
        self._rusage = {}  # name -> (returncode, ru_maxrss KiB, cpu s) once reaped
        self._roots = {}  # pid -> name
        self._pids = {}  # pid -> {"role", "cpu", "hwm"}
        self.cpu_samples = []  # (monotonic t, total cpu s)
        self.progress = []  # (monotonic t, step, name)
        self.lines = {}  # name -> [str]
        self.phases = {}  # "phase NAME" line -> its arrival (monotonic t)
        self._stop = threading.Event()
        self._readers = []
        self._poller = threading.Thread(target=self._poll_loop, daemon=True)
        self._poller.start()

    def start(self, name, argv, env=None, cwd=None):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, start_new_session=False)
        with self._lock:
            self._procs[name] = proc
            self._roots[proc.pid] = name
            self.lines[name] = []
        reader = threading.Thread(target=self._read_loop, args=(name, proc), daemon=True)
        reader.start()
        self._readers.append(reader)
        return proc

    def _read_loop(self, name, proc):
        for raw in proc.stdout:
            now = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._log.write(f"[{name}] {line}\n")
            with self._lock:
                self.lines[name].append(line)
                if line.startswith("phase "):
                    self.phases[line[len("phase "):].strip()] = now
                m = PROGRESS.search(line)
                if m:
                    # shoal launch prefixes each member's lines with its task: "[worker:0] ...".
                    source = ROLE_PREFIX.match(line)
                    self.progress.append((now, int(m.group(1) or m.group(2)),
                                          source.group(1) if source else name))

    def _poll_loop(self):
        while not self._stop.is_set():
            self._poll_once()
            self._stop.wait(POLL_S)

    def _poll_once(self):
        now = time.monotonic()
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _read_stat(int(entry))
                if stat:
                    parents[int(entry)] = stat
        with self._lock:
            frontier = [(pid, name, pid) for pid, name in self._roots.items() if pid in parents]
        children = {}
        for pid, (ppid, _) in parents.items():
            children.setdefault(ppid, []).append(pid)
        seen = {}
        while frontier:
            pid, role, root = frontier.pop()
            if pid in seen:
                continue
            known = self._pids.get(pid)
            if known is None:
                role = _task_of(pid) or role
            else:
                role = known["role"]
            seen[pid] = (role, root)
            frontier.extend((child, role, root) for child in children.get(pid, []))
        with self._lock:
            for pid, (role, root) in seen.items():
                entry = self._pids.setdefault(pid, {"role": role, "root": root, "cpu": 0.0,
                                                    "hwm": 0})
                entry["cpu"] = max(entry["cpu"], parents[pid][1])
                entry["hwm"] = max(entry["hwm"], _read_hwm_kib(pid))
            self.cpu_samples.append((now, sum(e["cpu"] for e in self._pids.values())))

    def wait(self, name, timeout=None):
        """Waits for the named root; returns its exit code. Raises TimeoutError."""
        proc = self._procs[name]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                self._poll_once()
                with self._lock:
                    self._rusage[name] = (proc.returncode, usage.ru_maxrss,
                                          usage.ru_utime + usage.ru_stime)
                return proc.returncode
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(name)
            time.sleep(0.05)

    def terminate(self, name):
        """SIGTERM to the named root (a process this group started), then waits for it."""
        proc = self._procs[name]
        if proc.returncode is None:
            proc.terminate()
            try:
                return self.wait(name, timeout=20)
            except TimeoutError:
                proc.kill()
                return self.wait(name)
        return proc.returncode

    def close(self):
        self._stop.set()
        self._poller.join()
        for reader in self._readers:
            reader.join(timeout=5)
        self._log.close()

    # Figures -------------------------------------------------------------------------------

    def cpu_at(self, t):
        samples = self.cpu_samples
        if not samples:
            return 0.0
        if t <= samples[0][0]:
            return samples[0][1]
        for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return samples[-1][1]

    def peak_rss_mib(self):
        """role -> peak RSS in MiB (the largest process of that role)."""
        peaks = {}
        with self._lock:
            for entry in self._pids.values():
                peaks[entry["role"]] = max(peaks.get(entry["role"], 0), entry["hwm"])
            for name, (_, maxrss, _) in self._rusage.items():
                # ru_maxrss covers the root and its reaped descendants: exact for a root that
                # was seen without children (a single process).
                root_pids = [p for p, r in self._roots.items() if r == name]
                tree = [p for p, e in self._pids.items() if e["root"] in root_pids]
                if len(tree) == 1 and name in peaks:
                    peaks[name] = max(peaks[name], maxrss)
        return {role: round(kib / 1024.0, 1) for role, kib in sorted(peaks.items())}

    def training_window(self, examples_per_step):
        """Steady training rate from the progress lines (global steps): the examples trained
        between two lines over the time between them, with its CPU use.

        The window starts at the first line of the trainer that printed last (so the interval
        before every trainer's first line -- start-up, the pipeline filling, a trainer waiting for
        another -- is left out) and ends at the last line of the trainer that finished first (so
        a trainer training alone at the end is left out too). With one trainer: its first to
        its last line. The first-to-last-line rate over all lines is returned as well
        (`overall_examples_per_s`). Returns a dict, or raises ValueError."""
        with self._lock:
            samples = sorted(self.progress)
        if len(samples) < 3:
            raise ValueError(f"only {len(samples)} progress lines: too few to time training "
                             "(more rows, or a smaller --log-every)")
        best = 0
        steps = []
        for t, step, _ in samples:
            best = max(best, step)
            steps.append((t, best))
        firsts, lasts = {}, {}
        for t, _, source in samples:
            firsts.setdefault(source, t)
            lasts[source] = t
        start, end = max(firsts.values()), min(lasts.values())
        inside = [(t, s) for t, s in steps if start <= t <= end]
        window = "all trainers"
        if len(inside) < 3:
            # The trainers hardly overlapped (small data, one waiting for another): fall back
            # to the first to the last line, and say so.
            inside, window = steps, "first to last line (the trainers did not overlap)"
        (t0, s0), (t1, s1) = inside[0], inside[-1]
        if t1 <= t0 or s1 <= s0:
            raise ValueError("progress lines do not advance")
        cpu = self.cpu_at(t1) - self.cpu_at(t0)
        (a0, b0), (a1, b1) = steps[0], steps[-1]
        return {"window_s": round(t1 - t0, 3), "window_steps": s1 - s0,
                "examples_per_s": (s1 - s0) * examples_per_step / (t1 - t0),
                "overall_examples_per_s": (b1 - b0) * examples_per_step / (a1 - a0),
                "trainers_seen": len(firsts), "window": window,
                "window_cpu_s": round(cpu, 3), "cores_used": cpu / (t1 - t0)}

    def phase_window(self, begin, end):
        """(seconds, cpu seconds) between two "phase NAME" lines."""
        t0, t1 = self.phases[begin], self.phases[end]
        return t1 - t0, self.cpu_at(t1) - self.cpu_at(t0)

    def total_cpu_s(self):
        return self.cpu_samples[-1][1] if self.cpu_samples else 0.0
