#!/usr/bin/env bash
# Training throughput of the CTR example (examples/ctr/config.yaml) on a local cluster of 1 PS +
# the chief as the only trainer, over gRPC on loopback (`shoal launch --ps 1 --workers 0`),
# divided by the same config trained in one process (`shoal train`): the distributed-runtime
# issue asks for a ratio >= 0.7. Figures go to docs/benchmarks.md by hand.
#
#   bench/cluster_throughput.sh [--pinned] [ROWS [RUNS]]
#       ROWS of `gen-data ctr` (default 300000); RUNS pairs of runs (default 3), the median reported
#
# --pinned measures per worker core (issue 23's goal): the in-process training runs on core 0
# alone (`taskset -c 0 shoal train`), and the cluster's trainer too, with the PS on core 1: the
# members are started one by one (`shoal run` with TF_CONFIG, a fresh job secret and id), the
# chief under `taskset -c 0`, the PS under `taskset -c 1`. Then both sides have one core for the
# input, the model and the client side of the parameters; the cluster's PS does the updates on
# a core of its own, as a PS on another machine would, and its round trips over loopback are what
# the ratio shows. Without --pinned nothing is pinned: the PS, the trainer and the input threads
# share the machine's cores. Needs 2 cores or more.
#
# SHOAL_BIN names the binary to measure (default: build/shoal, built first by scripts/build.sh);
# SHOAL_KEEP=1 keeps the data, model directories and logs (the directory is printed).
#
# Both trainings read the same data (2 files, vocabularies up to 1000 values) once (num_epochs 1),
# checkpoint only at the end and evaluate one batch, so nearly all their time is training. The
# rate of each is taken from its progress lines ("step N | loss L | R ex/s", one every 100
# steps): the examples of all intervals but the first (start-up, pipeline fill), divided by their
# time. Each pair runs the two back to back, so that a slower or
# faster period of the machine affects both; the ratio is the median of the pairs' ratios.
# Nothing is pinned: the PS, the trainer and the input threads share the machine's cores. "cpu s"
# is the user + system time of the command and its children.
set -euo pipefail
cd "$(dirname "$0")/.."
pinned=0
if [[ "${1:-}" == --pinned ]]; then
  pinned=1
  shift
  if (($(nproc) < 2)); then
    echo "--pinned needs 2 cores, this machine has $(nproc)" >&2
    exit 2
  fi
fi
rows="${1:-300000}"
runs="${2:-3}"
if [[ -z "${SHOAL_BIN:-}" ]]; then
  scripts/build.sh shoal
  bin=build/shoal
else
  bin="$SHOAL_BIN"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/shoal-cluster-throughput.XXXXXX")"
if [[ "${SHOAL_KEEP:-0}" == 1 ]]; then
  echo "keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores, $(date -u +%F)"
"$bin" gen-data ctr --rows "$rows" --files 2 --max-vocabulary 1000 --out "$work/data" >/dev/null
overrides=(
  --set "input.train.files=[$work/data/part-00000.txt, $work/data/part-00001.txt]"
  --set input.train.num_epochs=1
  --set "input.eval.files=[$work/data/part-00001.txt]"
  --set eval.steps=1
  --set run.save_checkpoints_secs=0
  --set run.save_checkpoints_steps=0
  --set run.log_step_count_steps=100
)

# Steady-state examples/s of a log: the progress intervals after the first all have the same
# number of examples, so their total over their total time is the harmonic mean of the rates.
steady_rate() {
  grep -E 'step [0-9]+ \| loss [^|]+\| [0-9,]+ ex/s' "$1" |
    sed -E 's/.*\| ([0-9,]+) ex\/s.*/\1/; s/,//g' |
    awk '{ r[NR] = $1 } END {
           if (NR < 2) { print "nan"; exit }
           for (i = 2; i <= NR; ++i) inv += 1 / r[i]
           printf "%.0f\n", (NR - 1) / inv }'
}

# train NAME COMMAND...: trains into $work/NAME with the overrides; writes "ex/s wall_s cpu_s"
# to $work/NAME.result.
train() {
  local name="$1" wall user sys
  shift
  rm -rf "${work:?}/$name"
  local TIMEFORMAT='%R %U %S'
  if ! { time "$@" --model-dir "$work/$name" "${overrides[@]}" >"$work/$name.log" 2>&1; } \
      2>"$work/$name.time"; then
    echo "$name failed; its log:" >&2
    cat "$work/$name.log" >&2
    exit 1
  fi
  read -r wall user sys <"$work/$name.time"
  echo "$(steady_rate "$work/$name.log") $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
    >"$work/$name.result"
}

# cluster_pinned: the chief on core 0, the PS on core 1, as separate `shoal run` members; takes
# the arguments after `--model-dir`, as `train` passes them. Prints the chief's output.
cluster_pinned() {
  local ports chief_port ps_port ps_pid status
  ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  read -r chief_port ps_port <<<"$ports"
  local cluster="\"cluster\": {\"chief\": [\"127.0.0.1:$chief_port\"], \"ps\": [\"127.0.0.1:$ps_port\"]}"
  local secret job_id
  secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  job_id=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
  SHOAL_JOB_SECRET="$secret" SHOAL_JOB_ID="$job_id" \
    TF_CONFIG="{$cluster, \"task\": {\"type\": \"ps\", \"index\": 0}}" \
    taskset -c 1 "$bin" run examples/ctr/config.yaml "$@" >"$work/ps.log" 2>&1 &
  ps_pid=$!
  status=0
  SHOAL_JOB_SECRET="$secret" SHOAL_JOB_ID="$job_id" \
    TF_CONFIG="{$cluster, \"task\": {\"type\": \"chief\", \"index\": 0}}" \
    taskset -c 0 "$bin" run examples/ctr/config.yaml "$@" || status=$?
  wait "$ps_pid" || { echo "the PS failed; its log:" >&2; cat "$work/ps.log" >&2; return 1; }
  return "$status"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-4s %-34s %10s %8s %8s\n' run trainer "ex/s" "wall s" "cpu s"
ratios=()
label="1 PS + 1 trainer (shoal launch)"
if ((pinned)); then
  echo "pinned: in-process on core 0; the cluster's chief on core 0, its PS on core 1"
  label="1 PS + 1 trainer (shoal run)"
fi
for ((r = 1; r <= runs; ++r)); do
  if ((pinned)); then
    train "local$r" taskset -c 0 "$bin" train examples/ctr/config.yaml
    train "cluster$r" cluster_pinned
  else
    train "local$r" "$bin" train examples/ctr/config.yaml
    train "cluster$r" "$bin" launch examples/ctr/config.yaml --ps 1 --workers 0
  fi
  read -r local_rate local_wall local_cpu <"$work/local$r.result"
  read -r cluster_rate cluster_wall cluster_cpu <"$work/cluster$r.result"
  printf '%-4s %-34s %10s %8s %8s\n' "$r" "in-process (shoal train)" "$local_rate" "$local_wall" \
    "$local_cpu"
  printf '%-4s %-34s %10s %8s %8s\n' "$r" "$label" "$cluster_rate" "$cluster_wall" "$cluster_cpu"
  ratios+=("$(awk -v c="$cluster_rate" -v l="$local_rate" 'BEGIN { printf "%.3f", c / l }')")
done
ratio="$(printf '%s\n' "${ratios[@]}" | median)"
echo "ratios: ${ratios[*]}"
if ((pinned)); then
  awk -v q="$ratio" 'BEGIN { printf "median ratio per worker core: %.3f (issue 23: >= 0.85: %s)\n", q, (q ~ /^[0-9.]+$/ && q >= 0.85) ? "met" : "not met" }'
else
  awk -v q="$ratio" 'BEGIN { printf "median ratio: %.3f (issue 5: >= 0.7: %s)\n", q, (q ~ /^[0-9.]+$/ && q >= 0.7) ? "met" : "not met" }'
fi
