#!/usr/bin/env python3
"""Groups ad-fuzz artifacts (crash-*, timeout-*, oom-*, leak-*) by cause.

Runs each artifact alone through the fuzzer binary (with
AD_FUZZ_TRACE_PASSES=1, so the last pass started is known), extracts the
error kind and the stack, classifies it, and prints one group per
signature (error kind + top frames) with its inputs, smallest first:

  ours      a frame of the stack is in the project's lib/ or include/ (or a
            generated .inc of the build), or a pass produced IR that does not
            verify and that pass is one of ours (ad-*);
  upstream  every frame below the harness is in libMLIR.so/libLLVM.so. The
            last pass started tells whether the crash was in the parser
            (no pass), in an upstream pass before differentiation (input IR),
            or in one after ad-generate-derivatives (on IR our passes made:
            check whether mlir-opt crashes on the same input without them).

Usage: triage.py [--fuzzer BIN] [--root SRC] [--timeout S] ARTIFACT...
"""
import argparse
import collections
import os
import re
import subprocess
import sys

ERROR_PATTERNS = [
    re.compile(r"==ad-fuzz== (BUG .*)"),
    re.compile(r"==\d+==ERROR: (AddressSanitizer: [\w-]+)"),
    re.compile(r"==\d+==ERROR: (LeakSanitizer: .*)"),
    re.compile(r"(runtime error: .*)"),
    re.compile(r"(Assertion .* failed)"),
    re.compile(r"(LLVM ERROR: .*)"),
    re.compile(r"ERROR: libFuzzer: (timeout.*|out-of-memory.*|deadly signal|fuzz target exited)"),
]
FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.+?)(?: (/\S+?):(\d+)(?::\d+)?)?(?: \(.*\))?$")
RUNTIME = ("__sanitizer", "__asan", "__ubsan", "fuzzer::", "__interceptor",
           "abort", "raise", "__pthread_kill", "__libc", "_start", "main",
           "LLVMFuzzerTestOneInput", "std::__invoke", "llvm::function_ref",
           "std::function", "llvm::unique_function", "memcpy", "memmove",
           "malloc", "operator new", "operator delete", "free")


def run(fuzzer, path, timeout):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "allow_user_poisoning=0:symbolize=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:symbolize=1")
    env.setdefault("ASAN_SYMBOLIZER_PATH", "/usr/lib/llvm-22/bin/llvm-symbolizer")
    env["AD_FUZZ_TRACE_PASSES"] = "1"
    env["AD_FUZZ_NO_SKIP"] = "1"  # artifacts of older binaries may hit them
    try:
        proc = subprocess.run([fuzzer, "-timeout=%d" % timeout, "-rss_limit_mb=4096", path],
                              env=env, capture_output=True, text=True,
                              errors="replace", timeout=timeout * 3 + 30)
        return proc.returncode, proc.stderr + proc.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stderr or ""
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return None, out + "\nERROR: libFuzzer: timeout (triage kill)"


def analyse(output, root, build):
    kind = None
    for line in output.splitlines():
        for pattern in ERROR_PATTERNS:
            m = pattern.search(line)
            if m:
                kind = m.group(1)
                break
        if kind:
            break
    passes = re.findall(r"==ad-fuzz== pass (\S+) \(pipeline (\S+)\)", output)
    frames = []
    for line in output.splitlines():
        m = FRAME.match(line)
        if not m:
            if frames and not line.strip().startswith("#"):
                break  # only the first stack (the access, not the allocation)
            continue
        index, function, path, lineno = m.groups()
        if index == "0" and frames:
            break
        frames.append((function, path, lineno))
    harness = os.path.join(root, "tools", "ad-fuzz")
    ours_frames = [
        f for f in frames
        if f[1] and not f[1].startswith(harness)
        and (f[1].startswith(os.path.join(root, "lib"))
             or f[1].startswith(os.path.join(root, "include"))
             or f[1].startswith(os.path.join(root, "tools"))
             or f[1].startswith(build))
    ]
    last_pass = passes[-1] if passes else None
    if ours_frames:
        owner = "ours"
    elif kind and kind.startswith("BUG") and re.search(r"after pass 'ad-", kind):
        owner = "ours"
    elif kind and kind.startswith("BUG"):
        owner = "ours? (upstream pass, IR from our pipeline)"
    elif kind is None:
        owner = "no crash when run alone"
    else:
        owner = "upstream"
    interesting = [f for f in frames if not f[0].startswith(RUNTIME)]
    top = interesting[:3]
    location = ["%s:%s" % (os.path.relpath(f[1], root), f[2]) for f in ours_frames[:3]]
    kind_key = re.sub(r"0x[0-9a-f]+|\d+", "N", kind or "none")
    if kind and kind.startswith("BUG"):
        kind_key = re.sub(r"on '.*'", "", kind_key)
    signature = (kind_key, tuple(f[0][:120] for f in top))
    return {
        "kind": kind or "no crash when run alone",
        "owner": owner,
        "top": top,
        "ours": location,
        "pass": last_pass,
        "signature": signature,
    }


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    parser.add_argument("--fuzzer")
    parser.add_argument("--timeout", type=int, default=10)
    parser.add_argument("artifacts", nargs="+")
    args = parser.parse_args()
    root = os.path.realpath(args.root)
    fuzzer = args.fuzzer or os.path.join(root, "build-fuzzer", "bin", "ad-fuzz")
    build = os.path.realpath(os.path.dirname(os.path.dirname(fuzzer)))
    groups = collections.OrderedDict()
    for path in sorted(args.artifacts, key=os.path.getsize):
        code, output = run(fuzzer, path, args.timeout)
        info = analyse(output, root, build)
        info["path"] = path
        groups.setdefault(info["signature"], []).append(info)
    for n, (signature, items) in enumerate(groups.items(), 1):
        first = items[0]
        print("[%d] %s -- %s (%d input%s)" % (n, first["owner"], first["kind"], len(items),
                                            "" if len(items) == 1 else "s"))
        if first["pass"]:
            print("    last pass started: %s (pipeline %s)" % first["pass"])
        else:
            print("    last pass started: none (parser or verifier)")
        for function, path, line in first["top"]:
            where = "%s:%s" % (path, line) if path else "(no line info)"
            print("    at %s  %s" % (function[:150], where))
        if first["ours"]:
            print("    our frames: " + ", ".join(first["ours"]))
        for item in items:
            print("    input: %s (%d bytes)" % (item["path"], os.path.getsize(item["path"])))
        print()


if __name__ == "__main__":
    main()
