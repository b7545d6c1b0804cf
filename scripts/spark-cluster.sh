#!/usr/bin/env bash
# A real Spark standalone cluster on loopback for tests: one master and two workers (2 cores each,
# so 4 task slots), each a JVM of the pyspark package from PyPI. Not local mode: executors are
# separate JVMs and Python workers, launched by the workers, as on a real cluster.
#
#   scripts/spark-cluster.sh start DIR   start, wait until both workers are registered (deadline),
#                                        write DIR/ready: "spark://127.0.0.1:PORT http://...:UI"
#   scripts/spark-cluster.sh stop DIR    stop it (SIGTERM, then SIGKILL after a deadline), and any
#                                        process left running in DIR (executors, shoal members)
#
# pyspark comes from the Spark test virtualenv (scripts/requirements-spark.txt, installed by
# scripts/python-env.sh into ~/.cache/shoal/venv-spark on the first start: about 320 MB from PyPI).
# Needs java 17 (scripts/install-deps.sh). Everything the cluster writes stays in DIR: the
# daemons' logs (DIR/*.log), the workers' directories with each executor's stdout and stderr
# (DIR/worker-N/app-*/ID/). The cluster stops by itself after SHOAL_SPARK_MAX_SECONDS (default
# 3600) if nobody stops it.
#
# Environment: SHOAL_SPARK_PYTHON (a python with pyspark; default: the Spark test virtualenv's),
# SHOAL_SPARK_START_SECONDS (readiness deadline, default 120), SHOAL_SPARK_MAX_SECONDS,
# SHOAL_SPARK_WORKER_CORES (default 2).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
start_seconds="${SHOAL_SPARK_START_SECONDS:-120}"
max_seconds="${SHOAL_SPARK_MAX_SECONDS:-3600}"
worker_cores="${SHOAL_SPARK_WORKER_CORES:-2}"
num_workers=2

say() { echo "spark-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

usage() { echo "usage: $0 start DIR | stop DIR" >&2; exit 2; }
(($# == 2)) || usage
cmd="$1"
dir="$2"
[[ "$cmd" == start || "$cmd" == stop ]] || usage
if [[ "$cmd" == start ]]; then mkdir -p "$dir"; fi
if [[ -d "$dir" ]]; then dir="$(cd "$dir" && pwd)"; fi

# Every process of the cluster carries SHOAL_SPARK_CLUSTER=DIR in its environment: the daemons
# get it from this script, and the executors, their Python workers and whatever those start (shoal
# members) inherit it. It identifies ours whatever their command line (spark-class is a shell
# script until it execs java) and guards against recycled pids.
is_ours() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/environ" ]] || return 1
  grep -q -z -x -F -- "SHOAL_SPARK_CLUSTER=$dir" "/proc/$pid/environ" 2>/dev/null
}

# Every process of the cluster but this script (the self-destruct timer runs `stop`).
all_ours() {
  local p pid
  for p in /proc/[0-9]*; do
    pid="${p#/proc/}"
    [[ "$pid" == "$$" ]] && continue
    if is_ours "$pid"; then echo "$pid"; fi
  done
}

stop() {
  local pids=() pid
  for f in "$dir"/worker-*.pid "$dir"/master.pid; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f")"
    if is_ours "$pid"; then pids+=("$pid"); fi
  done
  # A worker that stops kills its executors first.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  local deadline=$((SECONDS + 20)) left
  while ((SECONDS < deadline)); do
    left=0
    for pid in "${pids[@]}"; do if is_ours "$pid"; then left=1; fi; done
    ((left == 0)) && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do
    if is_ours "$pid"; then
      say "still running 20 s after SIGTERM: killing $pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  # The self-destruct timer (its own process group, from setsid), unless it is what runs this.
  pid="$(cat "$dir/timer.pid" 2>/dev/null || true)"
  if [[ "$pid" != "$$" ]] && is_ours "$pid"; then kill -TERM -- "-$pid" 2>/dev/null || true; fi
  sleep 0.2
  # Executors, Python workers and shoal members that outlived their worker.
  local stray
  stray="$(all_ours | tr '\n' ' ')"
  if [[ -n "${stray// /}" ]]; then
    say "killing what is left of the cluster: $stray"
    # shellcheck disable=SC2086
    kill -KILL $stray 2>/dev/null || true
  fi
  rm -f "$dir"/*.pid "$dir/ready"
  say "stopped ($dir)"
}

free_ports() {
  "$python" - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# Prints "alive_workers cores" from the master's JSON status page, or nothing.
master_status() {
  "$python" - "$1" <<'PY' 2>/dev/null || true
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=2) as r:
    status = json.load(r)
print(status.get("aliveworkers", 0), status.get("cores", 0))
PY
}

start() {
  if [[ -s "$dir/ready" ]] && is_ours "$(cat "$dir/master.pid" 2>/dev/null || true)"; then
    say "already running: $(cat "$dir/ready")"
    return 0
  fi
  stop 2>/dev/null
  command -v java >/dev/null || die "java not found: run scripts/install-deps.sh (openjdk-17-jdk-headless)"
  if [[ -n "${SHOAL_SPARK_PYTHON:-}" ]]; then
    python="$SHOAL_SPARK_PYTHON"
  else
    python="$(SHOAL_VENV="${HOME:-/tmp}/.cache/shoal/venv-spark" \
      SHOAL_REQUIREMENTS="$here/requirements-spark.txt" "$here/python-env.sh")"
  fi
  local spark_home
  spark_home="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" ||
    die "$python has no pyspark"
  local t0=$SECONDS master_port master_ui
  read -r master_port master_ui < <(free_ports 2)

  # The daemons (and the executors they start) listen on loopback only, log into DIR and keep
  # small heaps.
  export SHOAL_SPARK_CLUSTER="$dir"
  export SPARK_HOME="$spark_home" SPARK_LOCAL_IP=127.0.0.1 SPARK_LOG_DIR="$dir"
  export SPARK_CONF_DIR="$dir/conf" SPARK_DAEMON_MEMORY=256m
  export SPARK_DAEMON_JAVA_OPTS="-XX:+UseSerialGC"
  export PYSPARK_PYTHON="$python"
  mkdir -p "$SPARK_CONF_DIR"
  local class=org.apache.spark.deploy
  "$spark_home/bin/spark-class" $class.master.Master --host 127.0.0.1 --port "$master_port" \
    --webui-port "$master_ui" </dev/null >"$dir/master.log" 2>&1 &
  echo $! >"$dir/master.pid"
  local i
  for ((i = 0; i < num_workers; i++)); do
    mkdir -p "$dir/worker-$i"
    "$spark_home/bin/spark-class" $class.worker.Worker --host 127.0.0.1 --port 0 \
      --webui-port 0 --cores "$worker_cores" --memory 2g --work-dir "$dir/worker-$i" \
      "spark://127.0.0.1:$master_port" </dev/null >"$dir/worker-$i.log" 2>&1 &
    echo $! >"$dir/worker-$i.pid"
  done
  # Stop everything after max_seconds, whoever forgets to: a detached timer running `stop`.
  # shellcheck disable=SC2016 # the arguments expand in the timer's shell
  setsid bash -c 'sleep "$1" && exec "$2" stop "$3"' \
    timer "$max_seconds" "$here/spark-cluster.sh" "$dir" </dev/null >>"$dir/timer.log" 2>&1 &
  echo $! >"$dir/timer.pid"

  local deadline=$((SECONDS + start_seconds)) status want="$num_workers $((num_workers * worker_cores))"
  while true; do
    status="$(master_status "$master_ui")"
    [[ "$status" == "$want" ]] && break
    for f in "$dir"/master.pid "$dir"/worker-*.pid; do
      if ! is_ours "$(cat "$f")"; then
        tail -n 30 "${f%.pid}.log" >&2 || true
        stop
        die "$(basename "${f%.pid}") exited before the cluster was ready: see ${f%.pid}.log"
      fi
    done
    if ((SECONDS >= deadline)); then
      tail -n 30 "$dir/master.log" >&2 || true
      stop
      die "not ready within $start_seconds s (SHOAL_SPARK_START_SECONDS; master says: ${status:-nothing})"
    fi
    sleep 0.5
  done
  echo "spark://127.0.0.1:$master_port http://127.0.0.1:$master_ui" >"$dir/ready.tmp"
  mv "$dir/ready.tmp" "$dir/ready"
  say "ready in $((SECONDS - t0)) s: spark://127.0.0.1:$master_port ($num_workers workers," \
    "$((num_workers * worker_cores)) cores; UI http://127.0.0.1:$master_ui)"
  say "stop it with: $0 stop $dir"
}

"$cmd"
