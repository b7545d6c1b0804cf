#!/usr/bin/env python3
"""Peak RSS of a parameter server against the bytes its embedding rows and slots need (issue 6:
within 1.5x).

    python3 bench/ps_memory.py --bin build/shoal [--rows 2000000] [--vocabulary 300000]
                                [--checkpoint-steps 1000] [--keep]

Generates CTR data (`shoal gen-data ctr`, vocabularies up to --vocabulary values per column, so
that the tables, not the process, dominate the PS's memory), trains bench/compare/shoal_ctr.yaml
for one epoch on `shoal launch --ps 1 --workers 1` with a checkpoint every --checkpoint-steps
global steps, and polls the PS's /proc status every 0.1 s: VmHWM (the kernel's high-water mark of
its resident memory) and VmRSS. "Needed" is what the final checkpoint's manifest says the PS
holds: every table's rows x dim x (1 + slots) floats and every dense variable's elements x
(1 + slots) floats, 4 bytes each; ids and hash-table overhead are not counted as needed. The PS's
RSS when first seen (the process before it holds a model) is printed too, and, for the
checkpoints (from a ckpt-N directory's appearance until its manifest exists), the highest RSS
sampled when one began and while one was being saved. Prints one JSON line and a table.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def task_type(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    except OSError:
        return None
    config = env.get(b"TF_CONFIG")
    if not config:
        return None
    return json.loads(config).get("task", {}).get("type")


def status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def needed_bytes(manifest):
    total = 0
    for e in manifest["entries"]:
        floats = e["rows"] * e["dim"] if e["kind"] == "table" else e["elements"]
        total += floats * (1 + len(e.get("slot_names", []))) * 4
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--vocabulary", type=int, default=300_000)
    p.add_argument("--checkpoint-steps", type=int, default=1000)
    p.add_argument("--keep", action="store_true", help="keep the data and model directory")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="shoal-ps-memory.")
    try:
        data = os.path.join(work, "data")
        subprocess.run([a.bin, "gen-data", "ctr", "--rows", str(a.rows), "--files", "3",
                        "--max-vocabulary", str(a.vocabulary), "--seed", "5", "--out", data],
                       check=True, stdout=subprocess.DEVNULL)
        files = sorted(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".txt"))
        model_dir = os.path.join(work, "model")
        argv = [a.bin, "launch", os.path.join(HERE, "compare", "shoal_ctr.yaml"), "--ps", "1",
                "--workers", "1", "--model-dir", model_dir,
                "--set", "input.train.files=[%s]" % ", ".join(files[:-1]),
                "--set", f"input.eval.files=[{files[-1]}]",
                "--set", f"run.save_checkpoints_steps={a.checkpoint_steps}",
                "--set", "run.log_step_count_steps=1000"]
        log_path = os.path.join(work, "launch.log")
        with open(log_path, "w") as log:
            launcher = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            ps_pid, hwm, rss_last, rss_first = None, 0, 0, None
            # Checkpoints seen in model_dir: each from its directory's appearance (the save has
            # begun) until its manifest exists; the PS's RSS when one begins, and sampled during.
            ckpt_seen, ckpt_open, rss_at_ckpt_start, rss_in_ckpt = set(), set(), 0, 0
            while launcher.poll() is None:
                if ps_pid is None:
                    for child in children(launcher.pid):
                        if task_type(child) == "ps":
                            ps_pid = child
                if ps_pid is not None:
                    value = status_kib(ps_pid, "VmHWM")
                    if value is not None:
                        hwm = max(hwm, value)
                        if rss_first is None:
                            rss_first = status_kib(ps_pid, "VmRSS")
                        rss_last = status_kib(ps_pid, "VmRSS") or rss_last
                    try:
                        names = [n for n in os.listdir(model_dir) if n.startswith("ckpt-")]
                    except OSError:
                        names = []
                    for name in names:
                        if name not in ckpt_seen:
                            ckpt_seen.add(name)
                            ckpt_open.add(name)
                            rss_at_ckpt_start = max(rss_at_ckpt_start, rss_last)
                    for name in list(ckpt_open):
                        rss_in_ckpt = max(rss_in_ckpt, rss_last)
                        if os.path.exists(os.path.join(model_dir, name, "MANIFEST.json")):
                            ckpt_open.discard(name)
                time.sleep(0.1)
        if launcher.returncode != 0 or ps_pid is None:
            sys.exit(f"ps_memory: the job failed (exit {launcher.returncode}); log: {log_path}")
        with open(os.path.join(model_dir, "checkpoint")) as f:
            latest = os.path.join(model_dir, json.load(f)["latest"])
        with open(os.path.join(latest, "MANIFEST.json")) as f:
            manifest = json.load(f)
        needed = needed_bytes(manifest)
        rows = sum(e["rows"] for e in manifest["entries"] if e["kind"] == "table")
        result = {"rows": rows, "needed_mib": needed / 2**20, "ps_peak_rss_mib": hwm / 1024,
                  "ps_rss_at_end_mib": rss_last / 1024,
                  "ps_rss_at_start_mib": (rss_first or 0) / 1024, "ratio_peak": hwm * 1024 / needed,
                  "ratio_end": rss_last * 1024 / needed, "step": manifest["step"],
                  "checkpoints": len(ckpt_seen),
                  "ps_rss_entering_checkpoints_mib": rss_at_ckpt_start / 1024,
                  "ps_rss_during_checkpoints_mib": rss_in_ckpt / 1024,
                  "data_rows": a.rows, "vocabulary": a.vocabulary,
                  "checkpoint_steps": a.checkpoint_steps}
        print(json.dumps(result))
        print(f"| rows on the PS | needed (rows + slots) | PS RSS at start | PS peak RSS | x needed "
              f"| PS RSS at the end | x needed |\n|---|---|---|---|---|---|---|\n| {rows:,} | "
              f"{needed / 2**20:,.1f} MiB | {(rss_first or 0) / 1024:,.1f} MiB | "
              f"{hwm / 1024:,.1f} MiB | {result['ratio_peak']:.2f} | "
              f"{rss_last / 1024:,.1f} MiB | {result['ratio_end']:.2f} |")
        print(f"checkpoints: {len(ckpt_seen)}; PS RSS when one began (highest): "
              f"{rss_at_ckpt_start / 1024:,.1f} MiB; sampled while one was saved (highest): "
              f"{rss_in_ckpt / 1024:,.1f} MiB")
    finally:
        if a.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
