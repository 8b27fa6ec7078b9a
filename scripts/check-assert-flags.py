#!/usr/bin/env python3
"""Checks that a build directory compiles MLIR-AD's own code with assertions.

Reads <build-dir>/compile_commands.json and, for every translation unit of
the project (lib/ and tools/), checks that the command line does not define
NDEBUG and does define _GLIBCXX_ASSERTIONS. Then it runs the preprocessor on
one of them (the real command, with -E -dM) to check the macros as the
compiler sees them after all headers: NDEBUG undefined (so `assert` fires),
_GLIBCXX_ASSERTIONS defined, and LLVM_ENABLE_ABI_BREAKING_CHECKS equal to
what the installed LLVM was built with (abi-breaking.h pins it; a mismatch
would break the ABI of some LLVM ADTs against libLLVM.so/libMLIR.so).

Usage: check-assert-flags.py <build-dir> <source-root>
"""
import json
import os
import shlex
import subprocess
import sys


def main():
    build, root = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    ours = [
        e for e in entries
        if os.path.realpath(e["file"]).startswith(
            (os.path.join(root, "lib") + os.sep, os.path.join(root, "tools") + os.sep))
    ]
    if not ours:
        sys.exit("error: no project sources in compile_commands.json")
    bad = []
    for e in ours:
        args = shlex.split(e["command"]) if "command" in e else e["arguments"]
        if "-DNDEBUG" in args or "-D NDEBUG" in " ".join(args):
            bad.append(e["file"] + ": -DNDEBUG on the command line")
        if "-D_GLIBCXX_ASSERTIONS" not in args:
            bad.append(e["file"] + ": no -D_GLIBCXX_ASSERTIONS")
    if bad:
        sys.exit("error: assertions are not enabled:\n  " + "\n  ".join(bad))

    # The preprocessor's view of one real translation unit.
    probe = ours[0]
    args = shlex.split(probe["command"]) if "command" in probe else list(probe["arguments"])
    cleaned, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT"):
            skip = True
            continue
        if a in ("-c", "-MD"):
            continue
        cleaned.append(a)
    cleaned += ["-E", "-dM", "-o", "-"]
    out = subprocess.run(cleaned, cwd=probe["directory"], check=True,
                         capture_output=True, text=True).stdout
    macros = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == "#define":
            macros[parts[1]] = parts[2] if len(parts) > 2 else ""
    problems = []
    if "NDEBUG" in macros:
        problems.append("NDEBUG is defined after preprocessing")
    if "_GLIBCXX_ASSERTIONS" not in macros:
        problems.append("_GLIBCXX_ASSERTIONS is not defined after preprocessing")
    with open("/usr/lib/llvm-22/include/llvm/Config/abi-breaking.h") as f:
        installed = next(l.split()[2] for l in f
                         if l.startswith("#define LLVM_ENABLE_ABI_BREAKING_CHECKS"))
    seen = macros.get("LLVM_ENABLE_ABI_BREAKING_CHECKS")
    if seen != installed:
        problems.append("LLVM_ENABLE_ABI_BREAKING_CHECKS is %r, the installed LLVM has %r"
                        % (seen, installed))
    if problems:
        sys.exit("error: %s:\n  %s" % (probe["file"], "\n  ".join(problems)))
    print("assertions enabled in %d project translation units (checked: no -DNDEBUG, "
          "-D_GLIBCXX_ASSERTIONS; preprocessed %s: NDEBUG undefined, "
          "LLVM_ENABLE_ABI_BREAKING_CHECKS=%s as installed)"
          % (len(ours), os.path.relpath(probe["file"], root), seen))


if __name__ == "__main__":
    main()
