import sys, timeit, importlib, statistics
import numpy as np
name = sys.argv[1]
m = importlib.import_module(name)
R = 5
def best(stmt, number):
    return min(timeit.repeat(stmt, number=number, repeat=R)) / number

print(f"module {name} from {m.__file__}")
# 1. noop
t = best(m.noop, 10**6); print(f"noop: {t*1e9:.1f} ns/call")
pyf = lambda: None
t = best(pyf, 10**6); print(f"  (ref: python lambda call: {t*1e9:.1f} ns/call)")
# 2. sum_f32
rng = np.random.default_rng(0)
a = rng.random(10_000_000, dtype=np.float32)
assert abs(m.sum_f32(a) - float(a.astype(np.float64).sum())) < 1e-3 * a.size
t = best(lambda: m.sum_f32(a), 20); print(f"sum_f32 10M: {t*1e3:.2f} ms")
t = best(lambda: a.sum(), 20); print(f"  (ref: numpy a.sum(): {t*1e3:.2f} ms)")
small = np.ones(10, np.float32)
t = best(lambda: m.sum_f32(small), 10**5); print(f"  sum_f32 on 10-element array (arg-conversion overhead): {t*1e9:.0f} ns/call")
a64 = a.astype(np.float64)
try:
    t = best(lambda: m.sum_f32(a64), 5); print(f"  float64 input 10M: accepted (converted copy), {t*1e3:.2f} ms")
except TypeError as e:
    print(f"  float64 input: TypeError ({str(e).splitlines()[0][:90]})")
try:
    m.sum_f32(a[::2]); print("  non-contiguous a[::2]: accepted (copy)")
except TypeError as e:
    print("  non-contiguous a[::2]: TypeError")
# 3. count_strings
strs = [f"s{i}" for i in range(1_000_000)]
expect = sum(len(s.encode()) for s in strs)
obj = np.array(strs, dtype=object)
for label, fn in [("count_strings(iterable)", m.count_strings), ("count_strings_vec(std::vector<std::string>)", m.count_strings_vec)]:
    for dlabel, d in [("list", strs), ("ndarray[object]", obj)]:
        try:
            assert fn(d) == expect
            t = best(lambda: fn(d), 5); print(f"{label} 1M {dlabel}: {t*1e3:.1f} ms")
        except TypeError as e:
            print(f"{label} 1M {dlabel}: TypeError")
t = best(lambda: sum(len(s.encode()) for s in strs), 3); print(f"  (ref: pure python sum(len(s.encode())) list: {t*1e3:.1f} ms)")
# 4. call_back
n = 100_000
cnt = [0]
def hook(i): pass
t = best(lambda: m.call_back(hook, n), 1) / n; print(f"call_back n=1e5: {t*1e9:.0f} ns/callback")
def pyloop():
    for i in range(n): hook(i)
t = best(pyloop, 1) / n; print(f"  (ref: python loop calling hook: {t*1e9:.0f} ns/call)")
# exceptions
for fn, arg in [(m.raise_value, "bad value"), (m.raise_invalid_arg, "bad arg"), (m.raise_fnf, "/x/y"), (m.raise_custom, "custom msg")]:
    try: fn(arg)
    except Exception as e:
        print(f"exc {fn.__name__}: {type(e).__module__}.{type(e).__qualname__} mro={[c.__name__ for c in type(e).__mro__[1:3]]} msg={str(e)!r}")
