#!/usr/bin/env bash
# A real HDFS on loopback for tests: Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS
# on, permissions on) from Maven Central, run by the small Java program in scripts/hdfs/.
#
#   scripts/hdfs-minicluster.sh start DIR   build once, start, wait until ready (deadline), print
#                                           the address; DIR/ready holds "127.0.0.1:RPC HTTP"
#   scripts/hdfs-minicluster.sh stop DIR    stop it (SIGTERM, then SIGKILL after a deadline)
#
# The first start downloads Hadoop's jars into ~/.m2 (about 140 MB) and compiles the helper into
# ~/.cache/shoal/hdfs-minicluster; later starts build nothing and work offline. The cluster runs
# as the calling user (the HDFS superuser) and stops by itself after SHOAL_HDFS_MAX_SECONDS
# (default 3600) if nobody stops it. Needs java (17) and mvn: scripts/install-deps.sh installs them.
#
# Environment: SHOAL_HDFS_BUILD_DIR (compiled helper and class path), SHOAL_HDFS_START_SECONDS
# (readiness deadline, default 180), SHOAL_HDFS_MAX_SECONDS.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
project="$here/hdfs"
build="${SHOAL_HDFS_BUILD_DIR:-$HOME/.cache/shoal/hdfs-minicluster}"
start_seconds="${SHOAL_HDFS_START_SECONDS:-180}"
max_seconds="${SHOAL_HDFS_MAX_SECONDS:-3600}"

say() { echo "hdfs-minicluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

usage() { echo "usage: $0 start DIR | stop DIR" >&2; exit 2; }
(($# == 2)) || usage
cmd="$1"
dir="$2"
[[ "$cmd" == start || "$cmd" == stop ]] || usage
if [[ "$cmd" == start ]]; then mkdir -p "$dir"; fi
if [[ -d "$dir" ]]; then dir="$(cd "$dir" && pwd)"; fi

# Whether PID is our MiniHdfs serving DIR (guards against a recycled pid).
is_ours() {
  local pid="$1"
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -F -- "org.shoal.hdfs.MiniHdfs --dir $dir "
}

stop() {
  local pidfile="$dir/pid"
  if [[ ! -f "$pidfile" ]]; then
    say "not running in $dir"
    return 0
  fi
  local pid
  pid="$(cat "$pidfile")"
  if [[ "$pid" =~ ^[0-9]+$ ]] && is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 30))
    while is_ours "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    if is_ours "$pid"; then
      say "still running 30 s after SIGTERM: killing $pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$pidfile" "$dir/ready" "$dir/data" "$dir/tmp"
  say "stopped ($dir)"
}

# The helper's inputs; the build is redone when they change.
inputs_hash() {
  (cd "$project" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

build() {
  command -v java >/dev/null || die "java not found: run scripts/install-deps.sh (openjdk-17-jdk-headless)"
  command -v mvn >/dev/null || die "mvn not found: run scripts/install-deps.sh (maven)"
  local hash stamp="$build/stamp"
  hash="$(inputs_hash)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$hash" && -s "$build/classpath.txt" ]]; then
    local missing=0 jar
    IFS=: read -r -a jars <"$build/classpath.txt" || true  # no newline at its end
    for jar in "${jars[@]}"; do [[ -f "$jar" ]] || missing=1; done
    ((missing == 0)) && return 0
  fi
  mkdir -p "$build"
  local mvn_args=(-B -f "$project/pom.xml" "-Dshoal.build.dir=$build" compile)
  say "building the helper in $build"
  if ! mvn -q -o "${mvn_args[@]}" >"$build/mvn-offline.log" 2>&1; then
    local t0=$SECONDS
    say "downloading Hadoop's minicluster from Maven Central into ~/.m2 (about 140 MB, first run only)"
    # Maven prints one line per artifact; show a count now and then instead of all of them.
    if ! mvn "${mvn_args[@]}" 2>&1 | tee "$build/mvn.log" | awk '
        /Downloaded from/ { n++; if (n % 100 == 0) { printf "hdfs-minicluster: %d files downloaded\n", n > "/dev/stderr" } }
        /ERROR/ { print > "/dev/stderr" }
        END { printf "hdfs-minicluster: %d files downloaded\n", n > "/dev/stderr" }'; then
      die "maven build failed: see $build/mvn.log"
    fi
    say "download and build took $((SECONDS - t0)) s"
  fi
  [[ -s "$build/classpath.txt" ]] || die "maven wrote no class path: see $build/mvn.log"
  echo "$hash" >"$stamp"
}

start() {
  if [[ -f "$dir/pid" ]] && is_ours "$(cat "$dir/pid")" && [[ -s "$dir/ready" ]]; then
    say "already running: $(cat "$dir/ready")"
    return 0
  fi
  rm -rf "$dir/pid" "$dir/ready" "$dir/ready.tmp" "$dir/data" "$dir/tmp"
  build
  local t0=$SECONDS
  # Hadoop 3.4 reflects into the JDK's internals, which Java 17 closes by default.
  local opens=(java.lang java.lang.reflect java.io java.net java.nio java.util
               java.util.concurrent java.security sun.nio.ch sun.net.dns sun.net.util)
  # Jetty unpacks its web apps into java.io.tmpdir: keep that inside DIR, removed on stop.
  mkdir -p "$dir/tmp"
  local jvm=(-Xmx768m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true "-Djava.io.tmpdir=$dir/tmp")
  for p in "${opens[@]}"; do jvm+=("--add-opens=java.base/$p=ALL-UNNAMED"); done
  java "${jvm[@]}" -cp "$build/classes:$(cat "$build/classpath.txt")" \
    org.shoal.hdfs.MiniHdfs --dir "$dir" --ready-file "$dir/ready" --max-seconds "$max_seconds" \
    </dev/null >"$dir/minicluster.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/pid"
  local deadline=$((SECONDS + start_seconds))
  while [[ ! -s "$dir/ready" ]]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/minicluster.log" >&2 || true
      rm -f "$dir/pid"
      die "the minicluster exited before it was ready: see $dir/minicluster.log"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$dir/minicluster.log" >&2 || true
      stop
      die "not ready within $start_seconds s (SHOAL_HDFS_START_SECONDS): see $dir/minicluster.log"
    fi
    sleep 0.2
  done
  local rpc http
  read -r rpc http <"$dir/ready"
  say "ready in $((SECONDS - t0)) s: hdfs://$rpc (WebHDFS: webhdfs://127.0.0.1:$http), pid $pid"
  say "use it with: export SHOAL_HDFS_HTTP_PORTS=${rpc##*:}:$http; stop it with: $0 stop $dir"
}

"$cmd"
