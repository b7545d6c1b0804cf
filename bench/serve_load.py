#!/usr/bin/env python3
"""Load test of `shoal serve` over loopback, from a second process (this one): requests/s and
latency percentiles for requests of 1 and of 64 rows, each case bounded in time.

    python3 bench/serve_load.py --shoal build/shoal [--seconds 10] [--clients 4] [--threads 4]

It trains the small wide & deep CTR task of shoal/tools/job_cli_test.py with the CLI, exports it,
starts `shoal serve EXPORT --port 0 --threads N`, and for each case runs `--clients` client
threads, each with its own keep-alive HTTP connection, sending requests back to back for
`--seconds` (after a one-second warm-up). Every answer is checked (status 200, one prediction per
row). The client is Python (http.client): on a 2-core machine it competes with the server for the
cores, so the figures are a floor for the server, not its ceiling. Prints one Markdown table row
per case (docs/benchmarks.md, "Serving").
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shoal", "tools"))
from job_cli_test import write_job  # noqa: E402  (the test task: CSV data and a config)


def instances(n, rng):
    return [{"x1": round(rng.uniform(-1, 1), 4), "x2": round(rng.uniform(-1, 1), 4),
             "color": rng.choice(["red", "green", "blue"]), "city": f"city{rng.randrange(12)}"}
            for _ in range(n)]


def run_case(port, name, rows, seconds, clients):
    rng = random.Random(rows)
    bodies = [json.dumps({"instances": instances(rows, rng)}).encode() for _ in range(32)]
    latencies = []
    errors = []
    lock = threading.Lock()
    stop_warmup = time.monotonic() + 1.0
    stop = stop_warmup + seconds

    def client(k):
        try:
            serve(k)
        except (OSError, http.client.HTTPException) as error:  # a reset connection, a timeout
            with lock:
                errors.append(("connection", repr(error)))

    def serve(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        i = k
        while True:
            now = time.monotonic()
            if now >= stop:
                break
            body = bodies[i % len(bodies)]
            i += 1
            start = time.perf_counter()
            conn.request("POST", f"/v1/models/{name}:predict", body,
                         {"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            elapsed = time.perf_counter() - start
            if response.status != 200 or len(json.loads(data)["predictions"]) != rows:
                with lock:
                    errors.append((response.status, data[:200]))
                break
            if now >= stop_warmup:
                mine.append(elapsed)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"batch {rows}: bad answers: {errors[:3]}")
    latencies.sort()
    n = len(latencies)
    pct = lambda p: latencies[min(n - 1, int(p * n))] * 1000  # noqa: E731
    return {"rows": rows, "requests": n, "rps": n / seconds, "rows_per_s": n * rows / seconds,
            "p50_ms": pct(0.50), "p99_ms": pct(0.99)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shoal", default="build/shoal")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4, help="shoal serve --threads")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="serve_load_") as tmp:
        job = write_job(tmp, os.path.join(tmp, "model"))
        trained = subprocess.run([args.shoal, "train", job.config], capture_output=True,
                                 text=True)
        if trained.returncode != 0:
            raise SystemExit(trained.stderr[-2000:])
        base = os.path.join(job.model_dir, "export", "final")
        server = subprocess.Popen(
            [args.shoal, "serve", base, "--port", "0", "--name", "ctr", "--threads",
             str(args.threads)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = server.stdout.readline()
            port = int(re.search(r":(\d+)$", line.strip()).group(1))
            print(f"# {line.strip()}; {args.clients} client threads, {args.seconds:g} s per case")
            print("| rows per request | requests/s | rows/s | p50 ms | p99 ms |")
            print("|---|---|---|---|---|")
            for rows in args.batches:
                r = run_case(port, "ctr", rows, args.seconds, args.clients)
                print(f"| {rows} | {r['rps']:.0f} | {r['rows_per_s']:.0f} | "
                      f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |", flush=True)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
