#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ into build-fuzz/ (clang, ASan + UBSan, -DSHOAL_FUZZ=ON) and
# runs each for SECONDS (default 30), two at a time, each from a fresh corpus seeded with the
# repository's test data, fuzz/seeds/ and the binary seeds fuzz_seeds writes.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 60 csv tfrecord
# Prints per target the runs, execs/s, coverage (cov/ft) and crashes, then
# "fuzz: N passed, M failed". A crash fails the script; its input, log and sanitizer report stay in
# the printed work directory (under ${TMPDIR:-/tmp}), which is deleted when every target passed.
# SHOAL_JOBS sets the build parallelism (default: all cores); SHOAL_FUZZ_PARALLEL the number of
# targets run at once (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
seconds="${1:-30}"
shift || true
all=(csv criteo libsvm tfrecord example idx job_config graph cluster_spec manifest checkpoint export
     rest grpc_convert webhdfs)
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${all[@]}"); fi
targets=("${targets[@]%_fuzzer}")
jobs="${SHOAL_JOBS:-$(nproc)}"
parallel="${SHOAL_FUZZ_PARALLEL:-2}"

# The same ccache sharing as scripts/build.sh.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [[ ! -f build-fuzz/build.ninja ]]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DSHOAL_FUZZ=ON -DSHOAL_BUILD_TESTS=OFF \
    -DSHOAL_BUILD_BENCH=OFF >/dev/null
fi
echo "fuzz: building ${targets[*]} in build-fuzz/ with $jobs jobs" >&2
ninja -C build-fuzz --quiet -j "$jobs" fuzz_seeds "${targets[@]/%/_fuzzer}"

work=$(mktemp -d "${TMPDIR:-/tmp}/shoal-fuzz.XXXXXX")
build-fuzz/fuzz/fuzz_seeds "$work/generated"

# Corpus of one target: its committed seeds, generated seeds and the repository's own test data.
seed_corpus() {
  local t=$1 dir=$2
  mkdir -p "$dir"
  cp -r "fuzz/seeds/$t/." "$dir/" 2>/dev/null || true
  cp -r "$work/generated/$t/." "$dir/" 2>/dev/null || true
  case "$t" in
    job_config)
      local i=0
      for f in examples/*/config.yaml shoal/estimator/testdata/*.yaml bench/compare/*.yaml; do
        cp "$f" "$dir/repo$((i++)).yaml"
      done ;;
    csv)  # the Titanic CSV (design brief, section 7) when this checkout has it; byte 0 picks CSV
      if [[ -f ../shared/data/titanic/train.csv ]]; then
        { printf '\0'; head -c 3000 ../shared/data/titanic/train.csv; } >"$dir/titanic.csv"
      fi ;;
  esac
}

run_target() {
  local t=$1
  local dir="$work/$t"
  seed_corpus "$t" "$dir/corpus"
  local dict=()
  case "$t" in
    job_config) dict=(-dict="$root/fuzz/dicts/yaml.dict") ;;
    cluster_spec | manifest | export | rest | webhdfs) dict=(-dict="$root/fuzz/dicts/json.dict") ;;
    graph) dict=(-dict="$root/fuzz/dicts/graph.dict") ;;
  esac
  # -timeout: one input taking 25 s is a hang; -rss_limit_mb: 2 GiB is an allocation bug.
  (cd "$dir" && UBSAN_OPTIONS=print_stacktrace=1 "$root/build-fuzz/fuzz/${t}_fuzzer" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "${dict[@]}" corpus >"$dir/log" 2>&1) && echo 0 >"$dir/rc" ||
    echo $? >"$dir/rc"
}
export -f run_target seed_corpus
export work root seconds

printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_target {}'

passed=0 failed=0
printf '%-14s %10s %9s %8s %8s  %s\n' target runs execs/s cov ft crashes
for t in "${targets[@]}"; do
  dir="$work/$t" log="$work/$t/log"
  touch "$log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  artifacts=$(find "$dir" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
    -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*' | sort)
  n=$(printf '%s' "$artifacts" | grep -c . || true)
  printf '%-14s %10s %9s %8s %8s  %s\n' "$t" "${runs:--}" "${speed:--}" "${cov:--}" "${ft:--}" "$n"
  rc=$(cat "$dir/rc" 2>/dev/null || echo "not run")
  if [[ "$rc" == 0 && "$n" == 0 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "---- $t failed (exit $rc); input: ${artifacts:-none}; log: $log"
    # The report: from the first sanitizer, CHECK or libFuzzer error line (or the log's end).
    report=$(sed -n '/ERROR: \|runtime error\|Check failed\|terminate called/,$p' "$log")
    if [[ -z "$report" ]]; then report=$(tail -20 "$log"); fi
    head -60 <<<"$report"
  fi
done
echo "fuzz: $passed passed, $failed failed"
if ((failed > 0)); then
  echo "fuzz: crash inputs and logs kept in $work" >&2
  exit 1
fi
rm -rf "$work"
