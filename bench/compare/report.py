"""Prints the comparison's markdown table from the runs that compare.py recorded (one JSON line
per run in OUT/runs.jsonl): the median of each figure over the runs, and its ratio to shoal's
row of the same shape; then the raw runs and the issue's targets, met or not.

  bench/compare/report.py OUT_DIR        (OUT_DIR/runs.jsonl, OUT_DIR/machine.json)
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctr_model as M  # noqa: E402

CTR_FLOPS = M.ctr_training_flops_per_example()
MNIST_FLOPS = M.mlp_training_flops_per_example((784, 256, 10))
AUC_TOLERANCE = 0.001  # "equal AUC" within this (run-to-run noise is of this order)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, spec=",.0f"):
    return "-" if value is None else format(value, spec)


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def load(out_dir):
    path = os.path.join(out_dir, "runs.jsonl")
    if not os.path.exists(path):
        sys.exit(f"report: {path} does not exist: run bench/compare/run.sh first")
    runs = [json.loads(line) for line in open(path) if line.strip()]
    machine_path = os.path.join(out_dir, "machine.json")
    machine = json.load(open(machine_path)) if os.path.exists(machine_path) else {}
    return runs, machine


def summarise(runs, bench, peer, machine_cores, flops, rate_key="examples_per_s",
              cores_key="cores_used"):
    rows = [r for r in runs if r["bench"] == bench and r["peer"] == peer and rate_key in r]
    if not rows:
        return None
    rate = median([r[rate_key] for r in rows])
    cores = median([r.get(cores_key) for r in rows])
    per_core_used = median([r[rate_key] / r[cores_key] for r in rows if r.get(cores_key)])
    roles = sorted({role for r in rows for role in r.get("peak_rss_mib", {})
                    if role != "launcher"})
    rss = {role: median([r["peak_rss_mib"].get(role) for r in rows]) for role in roles}
    return {
        "peer": peer, "runs": len(rows), "processes": rows[0].get("processes"),
        "rate": rate, "cores": cores, "per_core_used": per_core_used,
        "per_machine_core": rate / machine_cores,
        "gflops_per_core": per_core_used * flops / 1e9 if per_core_used else None,
        "auc": median([r.get("auc") for r in rows]),
        "accuracy": median([r.get("accuracy") for r in rows]),
        "rss": rss, "rss_total": sum(v for v in rss.values() if v),
        "settings": rows[0].get("settings", ""),
    }


def rss_text(rss):
    if len(rss) == 1:
        return fmt(next(iter(rss.values())), ",.0f")
    return ", ".join(f"{role} {fmt(v, ',.0f')}" for role, v in rss.items())


def ctr_table(runs, cores):
    shapes = [("", ["shoal", "TF Estimator", "PyTorch", "PyTorch (parse included)"]),
              (" 1 PS + 1 trainer", ["shoal launch 1 PS + 1 trainer",
                                    "TF Estimator 1 PS + 1 trainer"]),
              (" 1 PS + 2 trainers", ["shoal launch 1 PS + 2 trainers",
                                     "TF Estimator 1 PS + 2 trainers"])]
    lines = ["| peer | processes | examples/s | x shoal | cores used | examples/s per core used "
             "| x shoal | examples/s per machine core | x shoal | model GFLOP/s per core used "
             "| AUC (held out) | AUC - shoal | peak RSS per process, MiB | x shoal (sum) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summaries = {}
    for _, peers in shapes:
        base = None
        for peer in peers:
            if peer == "PyTorch (parse included)":
                s = summarise(runs, "ctr", "PyTorch", cores, CTR_FLOPS,
                              "examples_per_s_with_parse", "cores_used_with_parse")
                if s:
                    s["peer"] = peer
            else:
                s = summarise(runs, "ctr", peer, cores, CTR_FLOPS)
            if s is None:
                continue
            summaries[peer] = s
            if base is None:
                base = s
            lines.append(
                f"| {peer} | {s['processes']} | {fmt(s['rate'])} | "
                f"{fmt(ratio(s['rate'], base['rate']), '.2f')} | {fmt(s['cores'], '.2f')} | "
                f"{fmt(s['per_core_used'])} | "
                f"{fmt(ratio(s['per_core_used'], base['per_core_used']), '.2f')} | "
                f"{fmt(s['per_machine_core'])} | "
                f"{fmt(ratio(s['per_machine_core'], base['per_machine_core']), '.2f')} | "
                f"{fmt(s['gflops_per_core'], '.1f')} | {fmt(s['auc'], '.4f')} | "
                f"{fmt(None if s['auc'] is None else s['auc'] - base['auc'], '+.4f')} | "
                f"{rss_text(s['rss'])} | {fmt(ratio(s['rss_total'], base['rss_total']), '.2f')} |")
    return lines, summaries


def mnist_table(runs, cores):
    lines = ["| peer | examples/s | x shoal | cores used | examples/s per core used | x shoal "
             "| examples/s per machine core | model GFLOP/s per core used | test accuracy "
             "| peak RSS, MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    summaries = {}
    base = None
    for peer in ["shoal", "PyTorch"]:
        s = summarise(runs, "mnist", peer, cores, MNIST_FLOPS)
        if s is None:
            continue
        summaries[peer] = s
        base = base or s
        lines.append(
            f"| {peer} | {fmt(s['rate'])} | {fmt(ratio(s['rate'], base['rate']), '.2f')} | "
            f"{fmt(s['cores'], '.2f')} | {fmt(s['per_core_used'])} | "
            f"{fmt(ratio(s['per_core_used'], base['per_core_used']), '.2f')} | "
            f"{fmt(s['per_machine_core'])} | {fmt(s['gflops_per_core'], '.1f')} | "
            f"{fmt(s['accuracy'], '.4f')} | {rss_text(s['rss'])} |")
    return lines, summaries


def targets(ctr, mnist):
    out = ["| target | measured (medians) | met |", "|---|---|---|"]

    def row(text, value, ok):
        out.append(f"| {text} | {value} | {'-' if ok is None else ('yes' if ok else '**no**')} |")

    # One process: issue 23's 6x (two training threads); clusters: issue 6's 5x.
    for shape, shoal, tf, goal in [("one process", "shoal", "TF Estimator", 6),
                                   ("1 PS + 1 trainer", "shoal launch 1 PS + 1 trainer",
                                    "TF Estimator 1 PS + 1 trainer", 5),
                                   ("1 PS + 2 trainers", "shoal launch 1 PS + 2 trainers",
                                    "TF Estimator 1 PS + 2 trainers", 5)]:
        if shoal in ctr and tf in ctr:
            q = ratio(ctr[shoal]["rate"], ctr[tf]["rate"])
            d = ctr[shoal]["auc"] - ctr[tf]["auc"]
            row(f"CTR, {shape}: shoal >= {goal}x TF Estimator examples/s at equal or better AUC "
                f"(equal: within {AUC_TOLERANCE})",
                f"{q:.2f}x ({ctr[shoal]['rate']:,.0f} vs {ctr[tf]['rate']:,.0f}); AUC "
                f"{ctr[shoal]['auc']:.4f} vs {ctr[tf]['auc']:.4f} ({d:+.4f})",
                q >= goal and d >= -AUC_TOLERANCE)
    for peer in ["PyTorch", "PyTorch (parse included)"]:
        if "shoal" in ctr and peer in ctr:
            q = ratio(ctr["shoal"]["rate"], ctr[peer]["rate"])
            row(f"CTR, one process: shoal >= 1.5x {peer} examples/s",
                f"{q:.2f}x ({ctr['shoal']['rate']:,.0f} vs {ctr[peer]['rate']:,.0f}); AUC "
                f"{ctr['shoal']['auc']:.4f} vs {ctr[peer]['auc']:.4f}", q >= 1.5)
    if "shoal" in mnist:
        s = mnist["shoal"]
        if "PyTorch" in mnist:
            q = ratio(s["rate"], mnist["PyTorch"]["rate"])
            # Issue 23 sets it per core: both pinned to one core (taskset -c 0, one thread each).
            row("Fashion-MNIST MLP 784-256-10: shoal >= 1.0x PyTorch examples/s (issue 23: per "
                "core, both pinned to one core)",
                f"{q:.2f}x ({s['rate']:,.0f} vs {mnist['PyTorch']['rate']:,.0f}); shoal used "
                f"{s['cores']:.2f} cores", q >= 1.0)
        else:
            row("Fashion-MNIST MLP 784-256-10: shoal examples/s (no PyTorch run to compare)",
                f"{s['rate']:,.0f} ({s['cores']:.2f} cores used)", None)
    if "shoal" in ctr:
        local = ctr["shoal"]
        for peer, trainers in [("shoal launch 1 PS + 1 trainer", 1),
                               ("shoal launch 1 PS + 2 trainers", 2)]:
            if peer not in ctr:
                continue
            c = ctr[peer]
            per_trainer = ratio(c["rate"] / trainers, local["rate"])
            per_core = ratio(c["per_core_used"], local["per_core_used"])
            # Per worker core: examples/s per core the cluster's processes used (PS included)
            # against the one process's per core it used, which trains on run.train_threads
            # threads; the per-trainer ratio divides by a process that has all the cores.
            # Issue 23's pinned measurement (a core for the trainer, one for the PS) is
            # bench/cluster_throughput.sh --pinned; this one shares the cores.
            row(f"cluster over loopback >= 0.85x in-process per worker core (issue 23; "
                f"bench/cluster_throughput.sh --pinned measures it), "
                f"{peer[len('shoal launch '):]}",
                f"examples/s per core used / in-process's: {per_core:.2f}; examples/s per "
                f"trainer / in-process's examples/s: {per_trainer:.2f}", per_core >= 0.85)
    return out


def raw_table(runs):
    lines = ["| bench | peer | run | examples/s | overall examples/s | window | window s | "
             "cores used | AUC / accuracy | peak RSS MiB | load before | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["bench"], r["peer"], r["run"])):
        quality = r.get("auc", r.get("accuracy"))
        notes = []
        if "examples_per_s_with_parse" in r:
            notes.append(f"parse included {r['examples_per_s_with_parse']:,.0f} ex/s at "
                         f"{r['cores_used_with_parse']:.2f} cores (parse {r['parse_s']} s)")
        if r.get("own_auc") is not None:
            notes.append(f"shoal's own auc {r['own_auc']:.4f}")
        if r.get("error"):
            notes.append(r["error"])
        lines.append(
            f"| {r['bench']} | {r['peer']} | {r['run']} | {fmt(r.get('examples_per_s'))} | "
            f"{fmt(r.get('overall_examples_per_s'))} | {r.get('window', '-')} | "
            f"{fmt(r.get('window_s'), '.1f')} | {fmt(r.get('cores_used'), '.2f')} | "
            f"{fmt(quality, '.4f')} | "
            f"{', '.join(f'{k} {v:,.0f}' for k, v in r.get('peak_rss_mib', {}).items())} | "
            f"{r.get('loadavg_before', '-')} | {'; '.join(notes)} |")
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runs, machine = load(sys.argv[1])
    cores = machine.get("cores") or os.cpu_count()
    generator = {"shoal": "`shoal gen-data ctr`", "numpy": "bench/compare/gen_ctr.py"}.get(
        machine.get("data", "shoal"), "?")
    images = {"fashion": "Fashion-MNIST", "numpy": "bench/compare/gen_idx.py's images"}.get(
        machine.get("mnist_data", "fashion"), "?")
    print(f"Machine: {machine.get('cpu', '?')}, {cores} cores. CTR data from {generator}, the "
          f"MLP's from {images}. CTR: {machine.get('rows', '?'):,} "
          f"training rows, {machine.get('eval_rows', '?'):,} held out (the generator's best "
          f"AUC: {machine.get('best_auc', float('nan')):.4f}); batch {machine.get('batch_size')}, "
          f"one epoch. Medians of {machine.get('runs', '?')} runs; started "
          f"{machine.get('date', '?')}.\n")
    print(f"Model FLOPs per training example (dense layers): CTR 6 x (429x256 + 256x128 + "
          f"128x64 + 64x1) = {CTR_FLOPS / 1e6:.3f} MFLOP; MLP 4 x 784x256 + 6 x 256x10 = "
          f"{MNIST_FLOPS / 1e6:.3f} MFLOP (2 FLOPs per multiply-add forward, 2 for the weights' "
          "gradients, 2 for the inputs' gradients except the MLP's pixels; embeddings, the wide "
          "part and optimizer updates not counted).\n")
    print("### CTR wide & deep\n")
    lines, ctr = ctr_table(runs, cores)
    print("\n".join(lines))
    print("\n### Fashion-MNIST MLP 784-256-10\n")
    lines, mnist = mnist_table(runs, cores)
    print("\n".join(lines))
    print("\n### Targets\n")
    print("\n".join(targets(ctr, mnist)))
    print("\n### Settings\n")
    seen = set()
    for r in runs:
        key = (r["bench"], r["peer"])
        if key not in seen:
            seen.add(key)
            print(f"- {r['bench']} / {r['peer']}: {r.get('settings', '')}")
    print("\n### Raw runs\n")
    print("\n".join(raw_table(runs)))


if __name__ == "__main__":
    main()
