#!/usr/bin/env python3
"""Checks that differentiation leaves the user's functions unchanged.

The contract: `--ad-differentiate` adds functions and rewrites the ad ops;
it never changes a function of the user's. For every input file given (each
`// -----` chunk separately), this script prints the module once as parsed
and once after `--ad-differentiate`, and compares, function by function, the
printed text of every function of the input that holds no ad op: it must be
identical after differentiation, and still there. Functions that hold ad
ops are rewritten by design (their requests become calls), and chunks the
pass rejects (diagnostic tests) produce no output to compare; both are
counted and skipped.

Usage: check_user_functions.py --ad-opt PATH FILE...
Exits 1 and names the function on the first difference.
"""

import argparse
import re
import subprocess
import sys

AD_OP = re.compile(r"\bad\.(grad|value_and_grad|forward|pullback|make_pullback|jvp|hvp|stop_gradient)\b")
FUNC_START = re.compile(r"^  func\.func (?:(?:private|public|nested) )?@([\w$.]+)")


def split_chunks(text):
    """The `// -----` chunks of an input, as --split-input-file sees them."""
    return re.split(r"^// -----\s*$", text, flags=re.MULTILINE)


def top_level_functions(printed):
    """Maps the name of each top-level func.func of a printed module to its
    text (a declaration is one line, a definition runs to its closing brace
    at the same indentation)."""
    functions = {}
    lines = printed.splitlines()
    i = 0
    while i < len(lines):
        match = FUNC_START.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        if lines[i].rstrip().endswith("{"):
            while lines[i] != "  }":
                i += 1
        functions[match.group(1)] = "\n".join(lines[start:i + 1])
        i += 1
    return functions


def run(ad_opt, source, *flags):
    """ad-opt's output on `source`, or None when it fails."""
    result = subprocess.run([ad_opt, "-", "--mlir-print-local-scope", *flags],
                            input=source,
                            capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def check_chunk(ad_opt, source, where):
    """Compares one chunk; returns (functions compared, skipped) or exits."""
    parsed = run(ad_opt, source)
    if parsed is None:
        return 0, 1
    differentiated = run(ad_opt, source, "--ad-differentiate")
    if differentiated is None:
        return 0, 1
    before = top_level_functions(parsed)
    after = top_level_functions(differentiated)
    compared = 0
    for name, text in before.items():
        if AD_OP.search(text):
            continue
        if after.get(name) != text:
            print(f"{where}: @{name} changed by --ad-differentiate:\n"
                  f"--- before\n{text}\n--- after\n{after.get(name)}",
                  file=sys.stderr)
            sys.exit(1)
        compared += 1
    return compared, 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ad-opt", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    compared = skipped = 0
    for path in args.files:
        with open(path) as f:
            chunks = split_chunks(f.read())
        for index, chunk in enumerate(chunks):
            done, missed = check_chunk(args.ad_opt, chunk,
                                       f"{path} chunk {index}")
            compared += done
            skipped += missed
    print(f"{compared} user functions unchanged; "
          f"{skipped} chunks rejected or unparsable, skipped")


if __name__ == "__main__":
    main()
