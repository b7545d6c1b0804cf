#!/usr/bin/env python3
"""Cache keys of scripts/tidy.sh: one per source, over what clang-tidy's result depends on.

For each file named on stdin (one path per line, relative to the repository root), prints
"path:key", where key hashes .clang-tidy, the file and every repository header it includes,
directly or through other headers (`#include "shoal/..."`; a generated `X.pb.h` or
`X.grpc.pb.h` counts as its `X.proto`). A change to a header thus re-checks only the sources that
include it, not the whole tree.
"""
import hashlib
import os
import re
import sys

INCLUDE = re.compile(rb'^\s*#\s*include\s+"(shoal/[^"]+)"', re.MULTILINE)


def source_of(include):
    for suffix in (".grpc.pb.h", ".pb.h"):
        if include.endswith(suffix):
            return include[: -len(suffix)] + ".proto"
    return include


def main():
    contents = {}

    def read(path):
        if path not in contents:
            try:
                with open(path, "rb") as f:
                    contents[path] = f.read()
            except OSError:
                contents[path] = None  # not in the tree: nothing of ours to hash
        return contents[path]

    with open(".clang-tidy", "rb") as f:
        config = f.read()
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        seen = set()
        stack = [path]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            text = read(current)
            if text is None:
                continue
            for m in INCLUDE.finditer(text):
                stack.append(source_of(m.group(1).decode()))
        h = hashlib.sha256(config)
        for dep in sorted(seen):
            text = read(dep)
            h.update(dep.encode() + b"\0" + (text if text is not None else b"<missing>") + b"\0")
        print(f"{path}:{h.hexdigest()[:24]}")


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    main()
