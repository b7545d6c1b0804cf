#!/usr/bin/env bash
# The checkpoint scale test of issue 8 and its figures (docs/benchmarks.md, "Checkpoints at
# scale"): a parameter-server shard file over 4 GiB is saved while pushes run, restored into a
# fresh server and saved again byte-identically (bench/checkpoint_scale.cc), on the local disk and
# on a real HDFS (the Hadoop minicluster of scripts/hdfs-minicluster.sh, on the same disk), next
# to what `dd` reaches on that disk: writing with fsync, and reading with O_DIRECT.
#
#   bench/checkpoint_scale.sh [--gib 4.5] [--dir DIR] [--no-hdfs]
#
# Needs about 2 x GIB of memory and 5 x GIB of free disk in DIR (default /tmp/shoal-ckpt-scale,
# deleted at the end). Not part of scripts/test.sh: it takes minutes and gigabytes. SHOAL_JOBS
# sets the build's parallelism (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
gib=4.5
dir=/tmp/shoal-ckpt-scale
hdfs=1
while (($#)); do
  case $1 in
    --gib) gib=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --no-hdfs) hdfs=0; shift ;;
    *) echo "usage: $0 [--gib 4.5] [--dir DIR] [--no-hdfs]" >&2; exit 2 ;;
  esac
done
scripts/build.sh checkpoint_scale >/dev/null
rm -rf "$dir"
mkdir -p "$dir"
cleanup() {
  [[ $hdfs == 1 ]] && scripts/hdfs-minicluster.sh stop "$dir/hdfs" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc --all) cores, $(date -u '+%F %H:%M UTC'), disk of $dir: $(df --output=source "$dir" | tail -1)"
mib=$(python3 -c "print(int($gib * 1024))")
echo "== dd: write ${mib} MiB with fsync, read it back with O_DIRECT three times (restores are timed three times too)"
dd if=/dev/zero of="$dir/dd.bin" bs=4M count=$((mib / 4)) conv=fsync 2>&1 | tail -1
for _ in 1 2 3; do dd if="$dir/dd.bin" of=/dev/null bs=4M iflag=direct 2>&1 | tail -1; done
rm -f "$dir/dd.bin"

echo "== local: $dir/model"
build/bench/checkpoint_scale --dir "$dir/model" --gib "$gib" 2>&1 | grep -v '^filling'
rm -rf "$dir/model"

if [[ $hdfs == 1 ]]; then
  echo "== hdfs (minicluster, data on the same disk)"
  scripts/hdfs-minicluster.sh start "$dir/hdfs" >/dev/null
  read -r address http <"$dir/hdfs/ready"
  rpc=${address##*:}
  SHOAL_HDFS_HTTP_PORTS="$rpc:$http" build/bench/checkpoint_scale \
    --dir "hdfs://127.0.0.1:$rpc/scale" --gib "$gib" 2>&1 | grep -v '^filling'
fi
