#!/usr/bin/env python3
"""Writes one libFuzzer seed per `// -----` chunk of every .mlir file given.

Seeds are named after a hash of their content (duplicates collapse), like
libFuzzer's own corpus files. Chunks larger than --max-bytes (0: no limit)
are skipped. Prints the number of seeds written, the size of the largest
one (scripts/fuzz.sh uses it for -max_len) and the number skipped.

Usage: split-seeds.py [--max-bytes N] <out-dir> <file-or-dir>...
"""
import hashlib
import os
import re
import sys

SEPARATOR = re.compile(r"^// -----.*$", re.MULTILINE)


def mlir_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for dirpath, _, names in os.walk(path):
                for name in sorted(names):
                    if name.endswith(".mlir"):
                        yield os.path.join(dirpath, name)
        elif path.endswith(".mlir"):
            yield path


def main():
    args = sys.argv[1:]
    limit = 0
    if args[:1] == ["--max-bytes"]:
        limit, args = int(args[1]), args[2:]
    out = args[0]
    os.makedirs(out, exist_ok=True)
    count, largest, skipped = 0, 0, 0
    for path in mlir_files(args[1:]):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for chunk in SEPARATOR.split(text):
            if not chunk.strip():
                continue
            data = chunk.encode()
            if limit and len(data) > limit:
                skipped += 1
                continue
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            count += 1
            largest = max(largest, len(data))
    print(count, largest, skipped)


if __name__ == "__main__":
    main()
