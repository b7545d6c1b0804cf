#!/usr/bin/env bash
# Trains wide & deep with shoal inside Spark executors: one spark-submit (docs/spark.md).
# --score-eval then scores the evaluation file as a DataFrame too (shoal.spark.predict).
#
#   examples/spark/submit.sh standalone spark://HOST:7077 [train_wide_deep.py flags...]
#   examples/spark/submit.sh yarn [train_wide_deep.py flags...]
#
# What it ships: the shoal Python package zipped for --py-files (the driver and the executors
# import it from there; `pip install ./python` on every host works too), and with --files the
# `shoal` binary (it links Debian 12's gRPC, protobuf, Abseil... : the executors' hosts need
# those libraries, e.g. by running scripts/install-deps.sh) and the job's config. The cluster is
# sized for the job's processes, PS + 1 chief + WORKERS + 1 evaluator, one task slot each, all
# running at once in one barrier stage; dynamic allocation is off (barrier stages refuse it).
#
# Environment (defaults in brackets):
#   SHOAL [build/shoal]  SPARK_SUBMIT [spark-submit]  CONFIG [examples/ctr/config.yaml]
#   DATA [/tmp/shoal/ctr-data-small: 20,000 rows of `shoal gen-data ctr`, made here if absent;
#   on YARN an hdfs:// directory holding part-0000{0..3}.txt]
#   MODEL_DIR [/tmp/shoal/spark-wide-deep; on YARN an hdfs:// path]
#   WORKERS [2]  PS [1]  EXECUTOR_MEMORY [1g]
#   SHOAL_HDFS_HTTP_PORTS [unset; passed on to the executors when set: docs/hdfs.md]
#   On YARN (docs/spark.md, "YARN"; HADOOP_CONF_DIR names the cluster): DEPLOY_MODE [client],
#   EXECUTOR_OVERHEAD [1g: spark.executor.memoryOverhead, which holds each shoal process]
# On one machine (a standalone cluster on loopback) set SPARK_LOCAL_IP=127.0.0.1 too.
set -euo pipefail
cd "$(dirname "$0")/../.."
usage() { sed -n '5,6p' "$0" | sed 's/^# //' >&2; exit 2; }
(($# >= 1)) || usage
mode="$1"
shift
case "$mode" in
  standalone) (($# >= 1)) || usage; master="$1"; shift ;;
  yarn) master=yarn ;;
  *) usage ;;
esac

shoal="${SHOAL:-build/shoal}"
spark_submit="${SPARK_SUBMIT:-spark-submit}"
config="${CONFIG:-examples/ctr/config.yaml}"
data="${DATA:-/tmp/shoal/ctr-data-small}"
model_dir="${MODEL_DIR:-/tmp/shoal/spark-wide-deep}"
workers="${WORKERS:-2}"
ps="${PS:-1}"
processes=$((ps + 1 + workers + 1))

if [[ "$mode" == yarn && ( "$data" != *://* || "$model_dir" != *://* ) ]]; then
  echo "submit.sh: on YARN the executors need DATA and MODEL_DIR on a shared file system:" \
    "set both to hdfs://... (DATA=$data, MODEL_DIR=$model_dir)" >&2
  exit 2
fi
[[ -x "$shoal" ]] || scripts/build.sh shoal
if [[ "$data" != *://* && ! -f "$data/part-00003.txt" ]]; then
  "$shoal" gen-data ctr --rows 20000 --files 4 --max-vocabulary 100 --seed 1 --out "$data"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -c 'import shutil, sys; shutil.make_archive(sys.argv[1], "zip", "python", "shoal")' \
  "$work/shoal-python"
cp "$config" "$work/config.yaml"

common=(
  --conf spark.dynamicAllocation.enabled=false
  --conf spark.task.cpus=1
  --executor-memory "${EXECUTOR_MEMORY:-1g}"
  --py-files "$work/shoal-python.zip"
  # Or an archive holding bin/shoal: --archives shoal.tgz#shoal (docs/spark.md, "The binary").
  --files "$shoal,$work/config.yaml"
)
# A NameNode whose ports are not the defaults (docs/hdfs.md): the members need the mapping too.
if [[ -n "${SHOAL_HDFS_HTTP_PORTS:-}" ]]; then
  common+=(--conf "spark.executorEnv.SHOAL_HDFS_HTTP_PORTS=$SHOAL_HDFS_HTTP_PORTS")
fi
if [[ "$mode" == standalone ]]; then
  # One core per executor, as many cores in all as the job has processes.
  sizing=(--master "$master" --total-executor-cores "$processes" --executor-cores 1)
else
  # The shoal process of each executor lives in its container's overhead; a failed application
  # is not run a second time by YARN (run this again instead: it resumes from model_dir).
  sizing=(--master yarn --deploy-mode "${DEPLOY_MODE:-client}" --num-executors "$processes"
          --executor-cores 1 --conf "spark.executor.memoryOverhead=${EXECUTOR_OVERHEAD:-1g}"
          --conf spark.yarn.maxAppAttempts=1)
fi
if [[ "$model_dir" != *://* ]]; then rm -rf "$model_dir"; fi  # on HDFS, choose a fresh path
"$spark_submit" "${sizing[@]}" "${common[@]}" examples/spark/train_wide_deep.py \
  --config config.yaml --train "$data/part-0000[0-2].txt" --eval "$data/part-00003.txt" \
  --model-dir "$model_dir" --workers "$workers" --ps "$ps" "$@"
