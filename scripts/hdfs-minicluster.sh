#!/usr/bin/env bash
# A real HDFS on loopback for tests: Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS
# on, permissions on) from Maven Central, run by the small Java program in scripts/hdfs/; with
# --yarn, a real YARN beside it in the same JVM (MiniYARNCluster: a ResourceManager and a
# NodeManager that launches containers; scripts/hdfs/.../MiniYarn.java says how it is sized).
#
#   scripts/hdfs-minicluster.sh start DIR [--yarn]
#                         build once, start, wait until ready (deadline), print the address;
#                         DIR/ready holds "127.0.0.1:RPC HTTP", DIR/conf/ the Hadoop client
#                         configuration (core-site.xml, and with --yarn yarn-site.xml) for
#                         HADOOP_CONF_DIR; with --yarn, DIR/ready.yarn holds "RM_ADDRESS
#                         RM_WEB_ADDRESS" and DIR/yarn/ the NodeManager's directories (container
#                         logs, and working directories kept an hour after each application)
#   scripts/hdfs-minicluster.sh stop DIR    stop it (SIGTERM, then SIGKILL after a deadline), and
#                         any process left running in DIR (YARN containers and their children)
#
# The first start downloads Hadoop's jars into ~/.m2 (about 140 MB) and compiles the helper into
# ~/.cache/shoal/hdfs-minicluster; later starts build nothing and work offline. The cluster runs
# as the calling user (the HDFS superuser) and stops by itself after SHOAL_HDFS_MAX_SECONDS
# (default 3600) if nobody stops it. Needs java (17) and mvn: scripts/install-deps.sh installs them.
#
# Environment: SHOAL_HDFS_BUILD_DIR (compiled helper and class path), SHOAL_HDFS_START_SECONDS
# (readiness deadline, default 180), SHOAL_HDFS_MAX_SECONDS, SHOAL_YARN_MEMORY_MB (the memory the
# NodeManager offers containers, default 8192: YARN's accounting, not what they use).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
project="$here/hdfs"
build="${SHOAL_HDFS_BUILD_DIR:-$HOME/.cache/shoal/hdfs-minicluster}"
start_seconds="${SHOAL_HDFS_START_SECONDS:-180}"
max_seconds="${SHOAL_HDFS_MAX_SECONDS:-3600}"

say() { echo "hdfs-minicluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

usage() { echo "usage: $0 start DIR [--yarn] | stop DIR" >&2; exit 2; }
(($# == 2 || $# == 3)) || usage
cmd="$1"
dir="$2"
yarn=0
if (($# == 3)); then
  [[ "$cmd" == start && "$3" == --yarn ]] || usage
  yarn=1
fi
[[ "$cmd" == start || "$cmd" == stop ]] || usage
if [[ "$cmd" == start ]]; then mkdir -p "$dir"; fi
if [[ -d "$dir" ]]; then dir="$(cd "$dir" && pwd)"; fi

# Whether PID is our MiniHdfs serving DIR (guards against a recycled pid).
is_ours() {
  local pid="$1"
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -F -- "org.shoal.hdfs.MiniHdfs --dir $dir "
}

# Processes working in DIR/yarn/ (YARN's containers run in directories there, and what they start
# inherits them) or naming it on their command line: what the NodeManager may leave behind.
yarn_leftovers() {
  local p pid cwd
  for p in /proc/[0-9]*; do
    pid="${p#/proc/}"
    [[ "$pid" == "$$" ]] && continue
    cwd="$(readlink "$p/cwd" 2>/dev/null || true)"
    if [[ "$cwd" == "$dir/yarn/"* ]] ||
      tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -F -- "$dir/yarn/"; then
      echo "$pid"
    fi
  done
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
  if [[ -d "$dir/yarn" ]]; then
    local stray
    stray="$(yarn_leftovers | tr '\n' ' ')"
    if [[ -n "${stray// /}" ]]; then
      say "killing what is left of YARN's containers: $stray"
      # shellcheck disable=SC2086
      kill -KILL $stray 2>/dev/null || true
    fi
    # The containers' copies of what applications shipped; their logs stay for a look.
    rm -rf "$dir"/yarn/shoal-yarn/*/shoal-yarn-localDir-*
  fi
  rm -rf "$pidfile" "$dir/ready" "$dir/ready.yarn" "$dir/data" "$dir/tmp"
  say "stopped ($dir)"
}

# The helper's inputs; the build is redone when they change.
inputs_hash() {
  (cd "$project" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

# Whether the helper in $build is built from the current inputs, with every jar still there.
built() {
  local stamp="$build/stamp"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$(inputs_hash)" && -s "$build/classpath.txt" ]] ||
    return 1
  local jar
  IFS=: read -r -a jars <"$build/classpath.txt" || true  # no newline at its end
  for jar in "${jars[@]}"; do [[ -f "$jar" ]] || return 1; done
}

build() {
  command -v java >/dev/null || die "java not found: run scripts/install-deps.sh (openjdk-17-jdk-headless)"
  command -v mvn >/dev/null || die "mvn not found: run scripts/install-deps.sh (maven)"
  built && return 0
  # Two starts at once (ctest -j: the HDFS fixture and the YARN tests) build one after the other;
  # the lock is closed again before the cluster starts, so the JVM does not hold it.
  mkdir -p "$build"
  exec 8>"$build.lock"
  flock 8
  if built; then
    exec 8>&-
    return 0
  fi
  local hash stamp="$build/stamp"
  hash="$(inputs_hash)"
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
  exec 8>&-
}

start() {
  if [[ -f "$dir/pid" ]] && is_ours "$(cat "$dir/pid")" && [[ -s "$dir/ready" ]]; then
    say "already running: $(cat "$dir/ready")"
    return 0
  fi
  rm -rf "$dir/pid" "$dir/ready" "$dir/ready.tmp" "$dir/ready.yarn" "$dir/data" "$dir/tmp" \
    "$dir/conf" "$dir/yarn"
  build
  local t0=$SECONDS
  # Hadoop 3.4 reflects into the JDK's internals, which Java 17 closes by default.
  local opens=(java.lang java.lang.reflect java.io java.net java.nio java.util
               java.util.concurrent java.security sun.nio.ch sun.net.dns sun.net.util)
  # Jetty unpacks its web apps into java.io.tmpdir: keep that inside DIR, removed on stop.
  mkdir -p "$dir/tmp"
  local jvm=(-Xmx768m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true "-Djava.io.tmpdir=$dir/tmp"
             "-Djava.util.logging.config.file=$build/classes/logging.properties")
  for p in "${opens[@]}"; do jvm+=("--add-opens=java.base/$p=ALL-UNNAMED"); done
  local args=(--dir "$dir" --ready-file "$dir/ready" --conf-dir "$dir/conf"
              --max-seconds "$max_seconds")
  if ((yarn)); then
    # The ResourceManager and NodeManager need a larger heap; the containers are processes of
    # their own. Their launch scripts run $JAVA_HOME/bin/java, so the NodeManager needs it set.
    jvm[0]=-Xmx1g
    args+=(--yarn --yarn-memory-mb "${SHOAL_YARN_MEMORY_MB:-8192}")
    if [[ -z "${JAVA_HOME:-}" ]]; then
      JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
      export JAVA_HOME
    fi
  fi
  # MiniYARNCluster puts its directories under Hadoop's test data directory: DIR/yarn/shoal-yarn/.
  jvm+=("-Dtest.build.data=$dir/yarn")
  java "${jvm[@]}" -cp "$build/classes:$(cat "$build/classpath.txt")" \
    org.shoal.hdfs.MiniHdfs "${args[@]}" </dev/null >"$dir/minicluster.log" 2>&1 &
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
  if ((yarn)); then
    local rm web
    read -r rm web <"$dir/ready.yarn"
    say "YARN: ResourceManager $rm, web http://$web; HADOOP_CONF_DIR=$dir/conf"
  fi
  say "use it with: export SHOAL_HDFS_HTTP_PORTS=${rpc##*:}:$http; stop it with: $0 stop $dir"
}

"$cmd"
