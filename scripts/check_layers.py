#!/usr/bin/env python3
"""Fails when a layer includes a layer above it, or a confined dependency leaks out.

The layer order is design section 5 (docs/architecture.md). Each folder under shoal/ is a layer and
may include only itself and the layers listed for it here; CMake DEPS must agree. Also enforced:
  - gRPC headers only under shoal/rpc/grpc/, and never in shoal/serving/
  - the HTTP client (curl) only under shoal/io/hdfs/
  - the HTTP server (cpp-httplib) only under shoal/serving/ (and the CLI; tests may fake servers)
  - getenv only in shoal/launch/ and shoal/tools/
Usage: check_layers.py REPO_ROOT      (exit 1 and a list of violations on failure)
"""
import pathlib
import re
import sys

# layer -> layers it may include (besides itself). Transitive closure is spelled out on purpose:
# a reader sees at a glance what a folder may touch.
ALLOWED = {
    "base": set(),
    "io": {"base"},
    "summary": {"base", "io"},
    "tensor": {"base"},
    "nn": {"base", "tensor"},
    "data": {"base", "io", "tensor"},
    "optim": {"base", "tensor"},
    "embedding": {"base", "tensor", "optim"},
    "checkpoint": {"base", "io", "tensor", "optim", "embedding"},
    "collective": {"base"},
    # What a model's parameters are (ModelSpec) and which shard owns each part (placement).
    "spec": {"base", "tensor", "optim", "embedding"},
    "rpc": {"base", "io", "tensor", "optim", "embedding", "checkpoint", "spec"},
    "coordinator": {"base", "io", "tensor", "data", "optim", "embedding", "checkpoint", "spec",
                    "rpc"},
    "ps": {"base", "io", "tensor", "optim", "embedding", "checkpoint", "spec", "rpc"},
    "parameter_client": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint",
                         "spec", "rpc"},
    "export": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint"},
    "config": {"base", "io", "tensor", "data", "optim"},
    # The model API (model_fn, heads, pre-made and graph models, plugins): no runtime, no server.
    "model": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint", "spec",
              "rpc", "parameter_client", "config"},
    "estimator": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint",
                  "export", "spec", "rpc", "coordinator", "ps", "parameter_client", "config",
                  "model", "summary", "collective"},
    # Serving runs the model code of the model layer on an export's weights: never a parameter
    # server, a coordinator or the gRPC transport (checked below). Of the estimator runtime it
    # uses only the prediction output's format.
    "serving": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint",
                "export", "spec", "rpc", "parameter_client", "config", "model", "estimator"},
    "launch": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint", "spec",
               "rpc", "coordinator", "ps", "parameter_client", "config", "model", "estimator",
               "export", "serving", "summary", "collective"},
    "tools": {"base", "io", "tensor", "nn", "data", "optim", "embedding", "checkpoint", "spec",
              "rpc", "coordinator", "ps", "parameter_client", "config", "model", "estimator",
              "export", "serving", "launch", "summary", "collective"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
GETENV = re.compile(r'\b(getenv|secure_getenv)\s*\(')


def check(root: pathlib.Path) -> list[str]:
    errors = []
    src = root / "shoal"
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        rel = path.relative_to(src)
        layer = rel.parts[0]
        sub = "/".join(rel.parts[:-1])
        if layer not in ALLOWED:
            errors.append(f"shoal/{rel}: folder '{layer}' is not a known layer "
                          "(add it to scripts/check_layers.py and docs/architecture.md)")
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"shoal/{rel}:{lineno}"
            m = INCLUDE.match(line)
            if m:
                header = m.group(1)
                if header.startswith("shoal/"):
                    target = header.split("/")[1]
                    if target != layer and target not in ALLOWED[layer]:
                        errors.append(f"{where}: layer '{layer}' may not include '{header}'")
                if header.startswith("grpc") and not sub.startswith("rpc/grpc"):
                    errors.append(f"{where}: gRPC headers belong only under shoal/rpc/grpc/")
                if header.startswith("curl/") and not sub.startswith("io/hdfs"):
                    errors.append(f"{where}: the HTTP client belongs only under shoal/io/hdfs/")
                if layer == "serving" and header.startswith("shoal/rpc/grpc/"):
                    errors.append(f"{where}: serving never uses the gRPC transport")
                if (header == "httplib.h" and layer not in ("serving", "tools")
                        and not path.name.endswith("_test.cc")):
                    errors.append(f"{where}: the HTTP server (httplib.h) belongs only under "
                                  "shoal/serving/")
            code = line.split("//", 1)[0]
            if GETENV.search(code) and layer not in ("launch", "tools"):
                errors.append(f"{where}: getenv is only for shoal/launch/ and shoal/tools/")
    return errors


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    errors = check(root)
    for e in errors:
        print(e)
    print(f"layering: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
