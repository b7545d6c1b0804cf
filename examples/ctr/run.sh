#!/usr/bin/env bash
# The CTR example in one command: generate the data (once), train wide & deep on it, and compare
# the eval AUC with the generator's best reachable AUC (target: within 0.02).
#   examples/ctr/run.sh [extra `shoal train` flags, e.g. --set run.max_steps=1000]
# SHOAL (default build/shoal) is the binary; DATA (default /tmp/shoal/ctr-data) must match the
# config's input files; MODEL_DIR (default /tmp/shoal/ctr) is wiped first.
set -euo pipefail
cd "$(dirname "$0")/../.."
shoal="${SHOAL:-build/shoal}"
data="${DATA:-/tmp/shoal/ctr-data}"
model_dir="${MODEL_DIR:-/tmp/shoal/ctr}"
[[ -x "$shoal" ]] || scripts/build.sh shoal
if [[ ! -f "$data/generator.json" ]]; then
  "$shoal" gen-data ctr --rows 1000000 --files 4 --max-vocabulary 1000 --seed 1 --out "$data"
fi
rm -rf "$model_dir"
"$shoal" train examples/ctr/config.yaml --model-dir "$model_dir" "$@"
python3 - "$data/generator.json" "$model_dir/summary.json" <<'PY'
import json, sys
best = json.load(open(sys.argv[1]))["best_auc"]
auc = json.load(open(sys.argv[2]))["metrics"]["auc"]
gap = best - auc
print(f"eval auc {auc:.4f}, generator best_auc {best:.4f}, gap {gap:.4f} (target <= 0.02): "
      + ("met" if gap <= 0.02 else "NOT met"))
sys.exit(0 if gap <= 0.02 else 1)
PY
