import subprocess, sys, statistics, time
py, mod = sys.argv[1], sys.argv[2]
cum = []
for _ in range(30):
    err = subprocess.run([py, "-X", "importtime", "-c", f"import {mod}"], capture_output=True, text=True).stderr
    line = [l for l in err.splitlines() if l.rstrip().endswith("| " + mod)][0]
    cum.append(int(line.split("|")[1]))
def wall(code):
    ts = []
    for _ in range(30):
        t = time.perf_counter(); subprocess.run([py, "-c", code], check=True); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
print(f"{mod}: -X importtime cumulative median {statistics.median(cum)} us (min {min(cum)}), "
      f"fresh-process wall median: import {wall('import '+mod):.1f} ms vs 'pass' {wall('pass'):.1f} ms")
