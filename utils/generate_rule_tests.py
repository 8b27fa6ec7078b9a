#!/usr/bin/env python3
"""Generates the finite-difference execution tests of test/Integration.

Rules/<dialect>-<type>.mlir check every derivative rule in f64, f32, f16 and
bf16; programs-<type>.mlir check whole programs with calls and fan-out.

Each case is a tiny function exercising one derivative rule. The test file
for element type T holds the case in T, the same case in f64 as the
reference, and a check per case and input point that compares the gradient
from `ad.grad` (computed in T) with a central finite difference of the f64
reference at the same point (the T-rounded point, extended exactly to f64).
A check prints "<case> p<point> d<argument>: ok" when

    |gradient - fd| <= tol(T) * max(|fd|, 0.01)

and "FAIL" with both numbers otherwise. The tolerances are justified in
docs/Testing.md. Regenerate with:

    /usr/bin/python3 utils/generate_rule_tests.py test/Integration
"""

import os
import sys

TOLERANCE = {"f64": 1e-6, "f32": 1e-5, "f16": 5e-3, "bf16": 2e-2}
WIDER = {"f16": "f32", "bf16": "f32", "f32": "f64"}


def unary(op):
    return lambda t: [f"%r = {op} %a : {t}"]


def binary(op):
    return lambda t: [f"%r = {op} %a, %b : {t}"]


def ternary(op):
    return lambda t: [f"%r = {op} %a, %b, %c : {t}"]


def compose(inner, outer):
    """outer(inner(args)) keeps points away from rules' singularities."""
    return lambda t: [f"%s = {inner} %a : {t}", f"%r = {outer} %s : {t}"]


def select_case(t):
    return [f"%c = arith.cmpf olt, %a, %b : {t}",
            f"%m = arith.mulf %a, %b : {t}",
            f"%r = arith.select %c, %m, %b : {t}"]


def extf_case(t):
    if t not in WIDER:
        return None
    w = WIDER[t]
    return [f"%e = arith.extf %a : {t} to {w}",
            f"%s = math.sin %e : {w}",
            f"%r = arith.truncf %s : {w} to {t}"]


def truncf_case(t):
    if t not in WIDER:
        return None
    w = WIDER[t]
    return [f"%e = arith.extf %a : {t} to {w}",
            f"%m = arith.mulf %e, %e : {w}",
            f"%r = arith.truncf %m : {w} to {t}"]


def fpowi_case(exponent):
    return lambda t: [f"%n = arith.constant {exponent} : i32",
                      f"%r = math.fpowi %a, %n : {t}, i32"]


def sitofp_case(t):
    # A gradient path through an integer: x * float(int(x)) has derivative
    # float(int(x)) away from integers.
    return [f"%i = arith.fptosi %a : {t} to i32",
            f"%f = arith.sitofp %i : i32 to {t}",
            f"%r = arith.mulf %a, %f : {t}"]


def rounding_case(op):
    # x * round(x): derivative round(x) away from the jumps.
    return lambda t: [f"%s = {op} %a : {t}", f"%r = arith.mulf %a, %s : {t}"]


# name -> (arity, body(T) -> lines or None, points, reference body or None)
ARITH = {
    "addf": (2, binary("arith.addf"), [(0.5, -1.25), (3.0, 2.0)]),
    "subf": (2, binary("arith.subf"), [(0.5, -1.25), (3.0, 2.0)]),
    "mulf": (2, binary("arith.mulf"), [(0.5, -1.25), (3.0, 2.0)]),
    "divf": (2, binary("arith.divf"), [(0.5, -1.25), (3.0, 2.0)]),
    "negf": (1, unary("arith.negf"), [(0.5,), (-2.0,)]),
    "remf": (2, binary("arith.remf"), [(5.3, 2.1), (-7.4, 2.3)]),
    "maximumf": (2, binary("arith.maximumf"), [(0.5, -1.25), (-3.0, 2.0)]),
    "minimumf": (2, binary("arith.minimumf"), [(0.5, -1.25), (-3.0, 2.0)]),
    "maxnumf": (2, binary("arith.maxnumf"), [(0.5, -1.25), (-3.0, 2.0)]),
    "minnumf": (2, binary("arith.minnumf"), [(0.5, -1.25), (-3.0, 2.0)]),
    "select": (2, select_case, [(0.5, 1.25), (3.0, 2.0)]),
    "extf": (1, extf_case, [(0.5,), (-2.0,)], unary("math.sin")),
    "truncf": (1, truncf_case, [(0.5,), (-2.0,)],
               lambda t: [f"%r = arith.mulf %a, %a : {t}"]),
    "sitofp": (1, sitofp_case, [(2.5,), (-1.5,)]),
}

MATH = {
    "exp": (1, unary("math.exp"), [(0.5,), (-1.5,)]),
    "exp2": (1, unary("math.exp2"), [(0.5,), (-1.5,)]),
    "expm1": (1, unary("math.expm1"), [(0.5,), (-1.5,)]),
    "log": (1, unary("math.log"), [(0.5,), (3.0,)]),
    "log2": (1, unary("math.log2"), [(0.5,), (3.0,)]),
    "log10": (1, unary("math.log10"), [(0.5,), (3.0,)]),
    "log1p": (1, unary("math.log1p"), [(0.5,), (-0.5,)]),
    "sqrt": (1, unary("math.sqrt"), [(0.5,), (3.0,)]),
    "rsqrt": (1, unary("math.rsqrt"), [(0.5,), (3.0,)]),
    "cbrt": (1, unary("math.cbrt"), [(0.5,), (-3.0,)]),
    "sin": (1, unary("math.sin"), [(0.5,), (2.5,)]),
    "cos": (1, unary("math.cos"), [(0.5,), (2.5,)]),
    "tan": (1, unary("math.tan"), [(0.5,), (-1.0,)]),
    "asin": (1, unary("math.asin"), [(0.5,), (-0.25,)]),
    "acos": (1, unary("math.acos"), [(0.5,), (-0.25,)]),
    "atan": (1, unary("math.atan"), [(0.5,), (-2.0,)]),
    "atan2": (2, binary("math.atan2"), [(0.5, 1.5), (1.0, -2.0)]),
    "sinh": (1, unary("math.sinh"), [(0.5,), (-1.5,)]),
    "cosh": (1, unary("math.cosh"), [(0.5,), (-1.5,)]),
    "tanh": (1, unary("math.tanh"), [(0.5,), (-1.5,)]),
    "asinh": (1, unary("math.asinh"), [(0.5,), (-2.0,)]),
    "acosh": (1, unary("math.acosh"), [(1.5,), (3.0,)]),
    "atanh": (1, unary("math.atanh"), [(0.5,), (-0.25,)]),
    "erf": (1, unary("math.erf"), [(0.5,), (-1.25,)]),
    "erfc": (1, unary("math.erfc"), [(0.5,), (-1.25,)]),
    "powf": (2, binary("math.powf"), [(1.5, 2.5), (0.75, -1.5)]),
    "fpowi3": (1, fpowi_case(3), [(1.5,), (-0.75,)]),
    "fpowi_neg2": (1, fpowi_case(-2), [(1.5,), (-0.75,)]),
    "absf": (1, unary("math.absf"), [(0.5,), (-2.0,)]),
    "copysign": (2, binary("math.copysign"), [(0.5, -2.0), (-1.5, 3.0)]),
    "fma": (3, ternary("math.fma"), [(0.5, -1.25, 2.0), (3.0, 2.0, -1.0)]),
    "floor": (1, rounding_case("math.floor"), [(2.25,), (-1.75,)]),
    "ceil": (1, rounding_case("math.ceil"), [(2.25,), (-1.75,)]),
    "round": (1, rounding_case("math.round"), [(2.25,), (-1.75,)]),
    "roundeven": (1, rounding_case("math.roundeven"), [(2.25,), (-1.75,)]),
    "trunc": (1, rounding_case("math.trunc"), [(2.25,), (-1.75,)]),
}

# The same rules applied elementwise to tensors: each argument becomes a
# 2x3 tensor (the scalar plus small offsets, so that the elements differ),
# every scalar type in the case becomes a tensor type, and the result is
# summed. The gradient is then the sum of the rule at six nearby points.
import re

OFFSETS = "dense<[[0.0, 0.01, 0.02], [0.03, 0.04, 0.05]]>"


def tensorize(body, arity):
    def make(t):
        lines = body(t)
        if lines is None:
            return None
        ty = f"tensor<2x3x{t}>"
        out = []
        for i in range(arity):
            n = ARG_NAMES[i]
            out += [f"%T{n}_s = tensor.splat %{n} : {ty}",
                    f"%T{n}_o = arith.constant {OFFSETS} : {ty}",
                    f"%T{n} = arith.addf %T{n}_s, %T{n}_o : {ty}"]
        args = "|".join(ARG_NAMES[:arity])
        for line in lines:
            line = re.sub(rf"%({args})\b", r"%T\1", line)
            line = re.sub(r"%r\b", "%T_r", line)
            code, _, types = line.rpartition(" : ")
            if "arith.select" in code:  # a tensor condition is spelled out
                types = "i1, " + types
            types = re.sub(r"\b(bf16|f16|f32|f64|i1|i32|i64)\b",
                           r"tensor<2x3x\1>", types)
            code = re.sub(r"arith.constant (\S+)$", r"arith.constant dense<\1>",
                          code)
            out.append(f"{code} : {types}")
        out += [f"%R_z = arith.constant 0.0 : {t}",
                f"%R_e = tensor.empty() : tensor<{t}>",
                f"%R_i = linalg.fill ins(%R_z : {t}) outs(%R_e : tensor<{t}>) -> tensor<{t}>",
                f"%R_s = linalg.reduce ins(%T_r : {ty}) outs(%R_i : tensor<{t}>) dimensions = [0, 1]",
                f"  (%R_in: {t}, %R_acc: {t}) {{",
                f"    %R_n = arith.addf %R_acc, %R_in : {t}",
                f"    linalg.yield %R_n : {t}",
                "  }",
                f"%r = tensor.extract %R_s[] : tensor<{t}>"]
        return out
    return make


def tensorized(cases):
    result = {}
    for name, spec in cases.items():
        arity, body, points = spec[0], spec[1], spec[2]
        ref = spec[3] if len(spec) > 3 and spec[3] else body
        result[name] = (arity, tensorize(body, arity), points,
                        tensorize(ref, arity))
    return result


# Whole programs: calls (chains, one callee from several places, results
# unused), fan-out and constants. Callees live in PROGRAM_SUPPORT.
# 8 units in the last place at 1, per type: a convergence tolerance that
# Newton's method reaches in every precision.
EIGHT_ULPS = {"f64": "1.7763568394002505e-15", "f32": "9.5367431640625e-07",
              "f16": "7.8125e-03", "bf16": "6.25e-02"}


def program(lines):
    return lambda t: [line.format(t=t, eight_ulps=EIGHT_ULPS[t])
                      for line in lines]


# A chain of DEEP_CHAIN functions, each keeping a float, an i1 (a select's
# condition) and the callee's result for its adjoint: more than 16 scalar
# tape values reach the top levels, which pack them into records
# (DerivativeGenerator::packTape).
DEEP_CHAIN = 24


def deep_chain_support():
    lines = []
    for i in range(DEEP_CHAIN):
        lines += [
            f"func.func @deep{i}(%x: {{t}}) -> {{t}} {{{{",
            "  %z = arith.constant 0.25 : {t}",
            "  %s = math.sin %x : {t}",
            "  %c = arith.cmpf ogt, %s, %z : {t}",
            "  %y = arith.select %c, %x, %s : {t}"]
        if i + 1 < DEEP_CHAIN:
            lines += [f"  %n = func.call @deep{i + 1}(%y) : ({{t}}) -> {{t}}",
                      "  %m = arith.mulf %n, %s : {t}"]
        else:
            lines += ["  %m = arith.mulf %y, %s : {t}"]
        lines += ["  %r = arith.addf %m, %x : {t}",
                  "  return %r : {t}",
                  "}}"]
    # The same chain calling the next link inside an scf.if (both ways): the
    # callee's tape leaves the branch before it is packed.
    for i in range(DEEP_CHAIN):
        lines += [
            f"func.func @bdeep{i}(%x: {{t}}) -> {{t}} {{{{",
            "  %z = arith.constant 0.25 : {t}",
            "  %s = math.sin %x : {t}",
            "  %c = arith.cmpf ogt, %s, %z : {t}"]
        if i + 1 < DEEP_CHAIN:
            lines += [
                "  %n = scf.if %c -> ({t}) {{",
                f"    %v = func.call @bdeep{i + 1}(%x) : ({{t}}) -> {{t}}",
                "    scf.yield %v : {t}",
                "  }} else {{",
                f"    %v = func.call @bdeep{i + 1}(%s) : ({{t}}) -> {{t}}",
                "    %w = arith.mulf %v, %s : {t}",
                "    scf.yield %w : {t}",
                "  }}",
                "  %m = arith.mulf %n, %s : {t}"]
        else:
            lines += ["  %m = arith.mulf %x, %s : {t}"]
        lines += ["  %r = arith.addf %m, %x : {t}",
                  "  return %r : {t}",
                  "}}"]
    return lines


PROGRAM_SUPPORT = [
    "func.func @leaf(%x: {t}) -> {t} {{",
    "  %s = math.sin %x : {t}",
    "  %y = arith.mulf %x, %s : {t}",
    "  return %y : {t}",
    "}}",
    "func.func @middle(%x: {t}, %w: {t}) -> {t} {{",
    "  %l = func.call @leaf(%x) : ({t}) -> {t}",
    "  %e = math.exp %l : {t}",
    "  %y = arith.mulf %e, %w : {t}",
    "  return %y : {t}",
    "}}",
    "func.func @top(%x: {t}, %w: {t}) -> {t} {{",
    "  %m = func.call @middle(%x, %w) : ({t}, {t}) -> {t}",
    "  %l = func.call @leaf(%w) : ({t}) -> {t}",
    "  %y = arith.addf %m, %l : {t}",
    "  return %y : {t}",
    "}}",
    # A helper that runs a loop; called from inside a loop below.
    "func.func @damp(%x: {t}, %k: {t}) -> {t} {{",
    "  %c0 = arith.constant 0 : index",
    "  %c1 = arith.constant 1 : index",
    "  %c3 = arith.constant 3 : index",
    "  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %x) -> ({t}) {{",
    "    %m = arith.mulf %s, %k : {t}",
    "    %e = math.sin %m : {t}",
    "    %n = arith.addf %e, %s : {t}",
    "    scf.yield %n : {t}",
    "  }}",
    "  return %r : {t}",
    "}}",
    "func.func @pair(%x: {t}, %y: {t}) -> ({t}, {t}) {{",
    "  %p = arith.mulf %x, %y : {t}",
    "  %q = arith.divf %x, %y : {t}",
    "  return %p, %q : {t}, {t}",
    "}}",
] + deep_chain_support()

PROGRAMS = {
    # A chain of 24 calls whose top levels pass their tapes as records.
    "deep_chain": (2, program([
        "%x = arith.mulf %a, %b : {t}",
        "%r = func.call @deep0(%x) : ({t}) -> {t}"]),
        [(0.7, 1.5), (-1.2, 0.4), (1.1, 0.3)]),
    # The chain calling inside branches, both ways at different points.
    "deep_branch_chain": (1, program([
        "%r = func.call @bdeep0(%a) : ({t}) -> {t}"]),
        [(0.7,), (-1.2,), (2.0,)]),
    # Three-level chain; @leaf is reached from two call sites.
    "call_chain": (2, program([
        "%r = func.call @top(%a, %b) : ({t}, {t}) -> {t}"]),
        [(0.7, 1.5), (-1.2, 0.4)]),
    # One callee called twice with different arguments, results combined.
    "call_twice": (2, program([
        "%u = func.call @leaf(%a) : ({t}) -> {t}",
        "%v = func.call @leaf(%b) : ({t}) -> {t}",
        "%w = func.call @leaf(%u) : ({t}) -> {t}",
        "%r = arith.mulf %w, %v : {t}"]),
        [(0.7, 1.5), (-1.2, 0.4)]),
    # Multiple results of a callee, one of them used twice, one call unused.
    "call_results": (2, program([
        "%p, %q = func.call @pair(%a, %b) : ({t}, {t}) -> ({t}, {t})",
        "%unused = func.call @leaf(%a) : ({t}) -> {t}",
        "%s = arith.mulf %q, %q : {t}",
        "%r = arith.subf %s, %p : {t}"]),
        [(0.7, 1.5), (-1.2, 0.4)]),
    # A call inside a loop to a function that runs a loop itself (the call
    # is inlined before differentiation).
    "call_loop_in_loop": (2, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c4 = arith.constant 4 : index",
        "%r = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %a) -> ({t}) {{",
        "  %d = func.call @damp(%s, %b) : ({t}, {t}) -> {t}",
        "  %h = arith.constant 0.5 : {t}",
        "  %q = arith.mulf %d, %h : {t}",
        "  scf.yield %q : {t}",
        "}}"]),
        [(0.7, 1.5), (-1.2, 0.4)]),
    # A value used many times: gradients of all uses add up.
    "fan_out": (2, program([
        "%c = arith.constant 2.5 : {t}",
        "%x2 = arith.mulf %a, %a : {t}",
        "%x3 = arith.mulf %x2, %a : {t}",
        "%t = arith.mulf %x3, %b : {t}",
        "%u = arith.divf %a, %b : {t}",
        "%v = arith.mulf %u, %c : {t}",
        "%w = math.sin %a : {t}",
        "%s = arith.addf %t, %v : {t}",
        "%r = arith.addf %s, %w : {t}"]),
        [(0.7, 1.5), (-1.2, 0.4)]),
    # A damped oscillator's energy-like expression mixing many rules.
    "mixed": (3, program([
        "%e = math.exp %c : {t}",
        "%k = arith.mulf %a, %a : {t}",
        "%l = math.log1p %k : {t}",
        "%m = math.atan2 %b, %a : {t}",
        "%n = math.tanh %m : {t}",
        "%o = arith.mulf %n, %e : {t}",
        "%p = math.sqrt %l : {t}",
        "%q = arith.maximumf %o, %p : {t}",
        "%r = math.fma %q, %l, %o : {t}"]),
        [(0.7, 1.5, -0.3), (-1.2, 0.4, 0.8)]),
}

# Structured control flow: scf.for (static and dynamic bounds, any step, zero
# iterations, float and integer iter_args, nesting, the induction variable in
# the body) and scf.if (with results, nested, inside loops), at points that
# take different branches and trip counts.
CONTROL_FLOW = {
    # Branches nested five deep, each on a condition computed at its level
    # (canonicalization would fold repeated conditions): the scalars of the
    # inner levels (floats, an i1 and an index the adjoint reads) go to the
    # branch tape.
    "deep_branches": (2, program([
        "%z = arith.constant 0.0 : {t}",
        "%c = arith.cmpf ogt, %a, %z : {t}",
        "%r = scf.if %c -> ({t}) {{",
        "  %p1 = arith.mulf %a, %b : {t}",
        "  %c1 = arith.cmpf ogt, %p1, %z : {t}",
        "  %r1 = scf.if %c1 -> ({t}) {{",
        "    %p2 = math.sin %p1 : {t}",
        "    %c2 = arith.cmpf olt, %p2, %b : {t}",
        "    %r2 = scf.if %c2 -> ({t}) {{",
        "      %p3 = arith.mulf %p2, %a : {t}",
        "      %c3 = arith.cmpf ogt, %p3, %p2 : {t}",
        "      %r3 = scf.if %c3 -> ({t}) {{",
        "        %p4 = math.cos %p3 : {t}",
        "        %e = arith.cmpf olt, %p4, %p3 : {t}",
        "        %m = arith.select %e, %p4, %p3 : {t}",
        "        %c4 = arith.cmpf olt, %p1, %a : {t}",
        "        %r4 = scf.if %c4 -> ({t}) {{",
        "          %k = arith.fptosi %p1 : {t} to i32",
        "          %kk = arith.index_cast %k : i32 to index",
        "          %t2 = tensor.from_elements %p4, %m, %p3 : tensor<3x{t}>",
        "          %v = tensor.extract %t2[%kk] : tensor<3x{t}>",
        "          %w = arith.mulf %v, %m : {t}",
        "          %x5 = math.exp %w : {t}",
        "          scf.yield %x5 : {t}",
        "        }} else {{",
        "          scf.yield %m : {t}",
        "        }}",
        "        %q4 = arith.mulf %r4, %p4 : {t}",
        "        scf.yield %q4 : {t}",
        "      }} else {{",
        "        %q3 = arith.mulf %p3, %p3 : {t}",
        "        scf.yield %q3 : {t}",
        "      }}",
        "      %s3 = arith.addf %r3, %p3 : {t}",
        "      scf.yield %s3 : {t}",
        "    }} else {{",
        "      scf.yield %p2 : {t}",
        "    }}",
        "    %s2 = arith.mulf %r2, %p2 : {t}",
        "    scf.yield %s2 : {t}",
        "  }} else {{",
        "    %n1 = arith.negf %p1 : {t}",
        "    scf.yield %n1 : {t}",
        "  }}",
        "  scf.yield %r1 : {t}",
        "}} else {{",
        "  %q = arith.mulf %a, %a : {t}",
        "  scf.yield %q : {t}",
        "}}"]),
        # Every level taken (the extract reads element 2, 1, 0), and a way
        # out at each level.
        [(3.0, 0.9), (2.0, 0.96), (1.05, 0.9), (1.5, 1.2), (0.5, 1.5),
         (1.5, 0.6), (0.8, -0.6), (-1.2, 0.4)]),
    # x^n by repeated multiplication; n = 0 runs no iteration.
    "power_loop": (1, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%one = arith.constant 1.0 : {t}",
        "%r = scf.for %i = %c0 to %n0 step %c1 iter_args(%p = %one) -> ({t}) {{",
        "  %q = arith.mulf %p, %a : {t}",
        "  scf.yield %q : {t}",
        "}}"]),
        [(1.3, 5), (0.7, 0), (-1.1, 1)], None, ["index"]),
    # s = 0.5 s + x^2 sin(x) + y cos(x i), i = 1, 3, 5, ... < n.
    "recurrence": (2, program([
        "%c1 = arith.constant 1 : index",
        "%c2 = arith.constant 2 : index",
        "%half = arith.constant 0.5 : {t}",
        "%r = scf.for %i = %c1 to %n0 step %c2 iter_args(%s = %b) -> ({t}) {{",
        "  %ii = arith.index_cast %i : index to i64",
        "  %fi = arith.sitofp %ii : i64 to {t}",
        "  %xi = arith.mulf %a, %fi : {t}",
        "  %cx = math.cos %xi : {t}",
        "  %ycx = arith.mulf %b, %cx : {t}",
        "  %sx = math.sin %a : {t}",
        "  %xx = arith.mulf %a, %a : {t}",
        "  %t1 = arith.mulf %xx, %sx : {t}",
        "  %hs = arith.mulf %half, %s : {t}",
        "  %t2 = arith.addf %hs, %t1 : {t}",
        "  %t3 = arith.addf %t2, %ycx : {t}",
        "  scf.yield %t3 : {t}",
        "}}"]),
        [(0.9, 0.4, 8), (-0.4, 1.2, 13), (0.3, -0.8, 1)], None, ["index"]),
    # A branch on the data, both ways.
    "branch": (2, program([
        "%gt = arith.cmpf ogt, %a, %b : {t}",
        "%r = scf.if %gt -> ({t}) {{",
        "  %s = math.sin %a : {t}",
        "  %p = arith.mulf %s, %b : {t}",
        "  scf.yield %p : {t}",
        "}} else {{",
        "  %q = arith.mulf %a, %a : {t}",
        "  %d = arith.subf %q, %b : {t}",
        "  scf.yield %d : {t}",
        "}}"]),
        [(1.5, 0.3), (0.2, 0.9)]),
    # Nested branches; one branch passes an argument through unchanged.
    "nested_branch": (2, program([
        "%zero = arith.constant 0.0 : {t}",
        "%apos = arith.cmpf ogt, %a, %zero : {t}",
        "%r = scf.if %apos -> ({t}) {{",
        "  %bpos = arith.cmpf ogt, %b, %zero : {t}",
        "  %inner = scf.if %bpos -> ({t}) {{",
        "    %p = arith.mulf %a, %b : {t}",
        "    %e = math.exp %p : {t}",
        "    scf.yield %e : {t}",
        "  }} else {{",
        "    scf.yield %b : {t}",
        "  }}",
        "  %w = arith.mulf %inner, %a : {t}",
        "  scf.yield %w : {t}",
        "}} else {{",
        "  %s = math.sin %b : {t}",
        "  %v = arith.mulf %s, %a : {t}",
        "  scf.yield %v : {t}",
        "}}"]),
        [(0.5, 0.7), (0.5, -0.7), (-0.5, 0.3)]),
    # Product of (x + i) over the primes i < n; primality is an inactive
    # integer loop, the factor is taken in only some iterations.
    "prime_product": (1, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c2 = arith.constant 2 : index",
        "%true = arith.constant true",
        "%one = arith.constant 1.0 : {t}",
        "%r = scf.for %i = %c2 to %n0 step %c1 iter_args(%p = %one) -> ({t}) {{",
        "  %prime = scf.for %d = %c2 to %i step %c1 iter_args(%ok = %true) -> (i1) {{",
        "    %rem = arith.remui %i, %d : index",
        "    %nz = arith.cmpi ne, %rem, %c0 : index",
        "    %ok2 = arith.andi %ok, %nz : i1",
        "    scf.yield %ok2 : i1",
        "  }}",
        "  %next = scf.if %prime -> ({t}) {{",
        "    %ii = arith.index_cast %i : index to i64",
        "    %fi = arith.sitofp %ii : i64 to {t}",
        "    %f = arith.addf %a, %fi : {t}",
        "    %q = arith.mulf %p, %f : {t}",
        "    scf.yield %q : {t}",
        "  }} else {{",
        "    scf.yield %p : {t}",
        "  }}",
        "  scf.yield %next : {t}",
        "}}"]),
        [(0.3, 10), (1.7, 2), (-0.6, 6)], None, ["index"]),
    # Nested loops with a branch inside; values from before the loops are
    # read inside them.
    "nested_loops": (2, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c2 = arith.constant 2 : index",
        "%c3 = arith.constant 3 : index",
        "%c4 = arith.constant 4 : index",
        "%ab = arith.mulf %a, %b : {t}",
        "%cb = math.cos %b : {t}",
        "%r = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %a) -> ({t}) {{",
        "  %inner = scf.for %j = %c0 to %c4 step %c1 iter_args(%u = %s) -> ({t}) {{",
        "    %k = arith.addi %i, %j : index",
        "    %odd = arith.remui %k, %c2 : index",
        "    %even = arith.cmpi eq, %odd, %c0 : index",
        "    %v = scf.if %even -> ({t}) {{",
        "      %w = arith.addf %u, %ab : {t}",
        "      scf.yield %w : {t}",
        "    }} else {{",
        "      %w = arith.mulf %u, %cb : {t}",
        "      scf.yield %w : {t}",
        "    }}",
        "    scf.yield %v : {t}",
        "  }}",
        "  %t = math.tanh %inner : {t}",
        "  scf.yield %t : {t}",
        "}}"]),
        [(0.6, 0.9), (-1.1, 0.2)]),
    # Integer and float iter_args together; the step depends on the data.
    "mixed_iter_args": (1, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c5 = arith.constant 5 : index",
        "%k0 = arith.constant 0 : i32",
        "%k1 = arith.constant 1 : i32",
        "%limit = arith.constant 1.0 : {t}",
        "%r, %kf = scf.for %i = %c0 to %c5 step %c1 iter_args(%s = %a, %k = %k0) -> ({t}, i32) {{",
        "  %big = arith.cmpf ogt, %s, %limit : {t}",
        "  %inc = arith.select %big, %k1, %k0 : i32",
        "  %k2 = arith.addi %k, %inc : i32",
        "  %fk = arith.sitofp %k2 : i32 to {t}",
        "  %m = arith.mulf %s, %a : {t}",
        "  %s2 = arith.addf %m, %fk : {t}",
        "  scf.yield %s2, %k2 : {t}, i32",
        "}}"]),
        [(0.8,), (1.2,)]),
    # while s < 10: s = s*x + 1, from s = y; y = 11 runs no iteration.
    "while_growth": (2, program([
        "%ten = arith.constant 10.0 : {t}",
        "%one = arith.constant 1.0 : {t}",
        "%r = scf.while (%s = %b) : ({t}) -> {t} {{",
        "  %go = arith.cmpf olt, %s, %ten : {t}",
        "  scf.condition(%go) %s : {t}",
        "}} do {{",
        "^bb0(%s: {t}):",
        "  %m = arith.mulf %s, %a : {t}",
        "  %n = arith.addf %m, %one : {t}",
        "  scf.yield %n : {t}",
        "}}"]),
        [(1.5, 0.5), (3.0, 2.0), (1.2, 11.0)]),
    # Work in the condition region: it computes the value it passes on.
    "while_condition_work": (2, program([
        "%ten = arith.constant 10.0 : {t}",
        "%one = arith.constant 1.0 : {t}",
        "%r = scf.while (%s = %b) : ({t}) -> {t} {{",
        "  %t = arith.mulf %s, %a : {t}",
        "  %e = math.sin %t : {t}",
        "  %u = arith.addf %t, %e : {t}",
        "  %go = arith.cmpf olt, %u, %ten : {t}",
        "  scf.condition(%go) %u : {t}",
        "}} do {{",
        "^bb0(%u: {t}):",
        "  %n = arith.addf %u, %one : {t}",
        "  scf.yield %n : {t}",
        "}}"]),
        [(1.3, 0.7), (2.1, 0.4)]),
    # Newton's iteration for sqrt(x), stopping on a relative tolerance.
    "newton_sqrt": (1, program([
        "%half = arith.constant 0.5 : {t}",
        "%eps = arith.constant {eight_ulps} : {t}",
        "%tol = arith.mulf %eps, %a : {t}",
        "%r = scf.while (%y = %a) : ({t}) -> {t} {{",
        "  %yy = arith.mulf %y, %y : {t}",
        "  %d = arith.subf %yy, %a : {t}",
        "  %ad = math.absf %d : {t}",
        "  %go = arith.cmpf ogt, %ad, %tol : {t}",
        "  scf.condition(%go) %y : {t}",
        "}} do {{",
        "^bb0(%y: {t}):",
        "  %q = arith.divf %a, %y : {t}",
        "  %s = arith.addf %y, %q : {t}",
        "  %n = arith.mulf %s, %half : {t}",
        "  scf.yield %n : {t}",
        "}}"]),
        [(2.0,), (9.5,), (0.3,)]),
    # A while loop inside a for loop: each outer iteration grows s past a
    # higher threshold.
    "while_in_for": (2, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c3 = arith.constant 3 : index",
        "%four = arith.constant 4.0 : {t}",
        "%half = arith.constant 0.5 : {t}",
        "%r = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %b) -> ({t}) {{",
        "  %ii = arith.index_cast %i : index to i64",
        "  %fi = arith.sitofp %ii : i64 to {t}",
        "  %fi1 = arith.addf %fi, %half : {t}",
        "  %limit = arith.mulf %four, %fi1 : {t}",
        "  %w = scf.while (%u = %s) : ({t}) -> {t} {{",
        "    %go = arith.cmpf olt, %u, %limit : {t}",
        "    scf.condition(%go) %u : {t}",
        "  }} do {{",
        "  ^bb0(%u: {t}):",
        "    %m = arith.mulf %u, %a : {t}",
        "    %n = arith.addf %m, %half : {t}",
        "    scf.yield %n : {t}",
        "  }}",
        "  %c = math.cos %w : {t}",
        "  %v = arith.addf %w, %c : {t}",
        "  scf.yield %v : {t}",
        "}}"]),
        [(1.4, 0.6), (1.9, 0.3)]),
    # scf.index_switch on an index argument; one case holds an
    # scf.execute_region.
    "index_switch": (1, program([
        "%r = scf.index_switch %n0 -> {t}",
        "case 0 {{",
        "  %s = math.sin %a : {t}",
        "  scf.yield %s : {t}",
        "}}",
        "case 1 {{",
        "  %e = scf.execute_region -> {t} {{",
        "    %m = arith.mulf %a, %a : {t}",
        "    %x3 = arith.mulf %m, %a : {t}",
        "    scf.yield %x3 : {t}",
        "  }}",
        "  scf.yield %e : {t}",
        "}}",
        "default {{",
        "  %t = math.exp %a : {t}",
        "  scf.yield %t : {t}",
        "}}"]),
        [(0.7, 0), (0.7, 1), (-0.3, 5)], None, ["index"]),
    # A triangular nest: the inner trip count depends on the outer
    # induction variable, so the inner loop keeps a growable tape.
    "triangular_loops": (1, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c5 = arith.constant 5 : index",
        "%r = scf.for %i = %c0 to %c5 step %c1 iter_args(%s = %a) -> ({t}) {{",
        "  %t = scf.for %j = %c0 to %i step %c1 iter_args(%u = %s) -> ({t}) {{",
        "    %m = arith.mulf %u, %a : {t}",
        "    %n = math.sin %m : {t}",
        "    %o = arith.addf %n, %u : {t}",
        "    scf.yield %o : {t}",
        "  }}",
        "  scf.yield %t : {t}",
        "}}"]),
        [(0.3,), (-0.7,)]),
    # A for loop inside a while loop, and a while loop inside a while loop.
    "for_in_while": (2, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%c3 = arith.constant 3 : index",
        "%ten = arith.constant 10.0 : {t}",
        "%r = scf.while (%s = %b) : ({t}) -> {t} {{",
        "  %go = arith.cmpf olt, %s, %ten : {t}",
        "  scf.condition(%go) %s : {t}",
        "}} do {{",
        "^bb0(%s: {t}):",
        "  %t = scf.for %i = %c0 to %c3 step %c1 iter_args(%u = %s) -> ({t}) {{",
        "    %m = arith.mulf %u, %a : {t}",
        "    %e = math.cos %u : {t}",
        "    %n = arith.addf %m, %e : {t}",
        "    scf.yield %n : {t}",
        "  }}",
        "  scf.yield %t : {t}",
        "}}"]),
        [(1.8, 0.5), (2.1, 2.0)]),
    "nested_while": (2, program([
        "%ten = arith.constant 10.0 : {t}",
        "%half = arith.constant 0.5 : {t}",
        "%r = scf.while (%s = %b) : ({t}) -> {t} {{",
        "  %go = arith.cmpf olt, %s, %ten : {t}",
        "  scf.condition(%go) %s : {t}",
        "}} do {{",
        "^bb0(%s: {t}):",
        "  %lim = arith.addf %s, %half : {t}",
        "  %w = scf.while (%u = %s) : ({t}) -> {t} {{",
        "    %go2 = arith.cmpf olt, %u, %lim : {t}",
        "    scf.condition(%go2) %u : {t}",
        "  }} do {{",
        "  ^bb0(%u: {t}):",
        "    %m = arith.mulf %u, %a : {t}",
        "    %n = arith.addf %m, %half : {t}",
        "    scf.yield %n : {t}",
        "  }}",
        "  %x = arith.addf %w, %half : {t}",
        "  scf.yield %x : {t}",
        "}}"]),
        [(1.2, 0.5), (1.5, 1.0)]),
    # Unstructured control flow (cf), structured by lift-cf-to-scf before
    # differentiation. A loop built from blocks with block arguments:
    # x^n, and sin(x^n) when x^n < 1 (two exits).
    "cf_block_loop": (1, program([
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        "%one = arith.constant 1.0 : {t}",
        "cf.br ^loop(%c0, %one : index, {t})",
        "^loop(%i: index, %p: {t}):",
        "%stop = arith.cmpi sge, %i, %n0 : index",
        "cf.cond_br %stop, ^exit(%p : {t}), ^body",
        "^body:",
        "%q = arith.mulf %p, %a : {t}",
        "%i1 = arith.addi %i, %c1 : index",
        "cf.br ^loop(%i1, %q : index, {t})",
        "^exit(%e: {t}):",
        "%small = arith.cmpf olt, %e, %one : {t}",
        "cf.cond_br %small, ^shrink, ^done(%e : {t})",
        "^shrink:",
        "%s = math.sin %e : {t}",
        "cf.br ^done(%s : {t})",
        "^done(%r: {t}):"]),
        [(1.3, 3), (0.6, 3), (0.9, 0)], None, ["index"]),
    # A diamond whose arms pass different values to the join block.
    "cf_diamond": (2, program([
        "%gt = arith.cmpf ogt, %a, %b : {t}",
        "cf.cond_br %gt, ^left, ^right",
        "^left:",
        "%l = arith.mulf %a, %b : {t}",
        "cf.br ^join(%l, %a : {t}, {t})",
        "^right:",
        "%e = math.exp %b : {t}",
        "cf.br ^join(%e, %b : {t}, {t})",
        "^join(%u: {t}, %v: {t}):",
        "%w = arith.divf %u, %v : {t}",
        "cf.br ^done(%w : {t})",
        "^done(%r: {t}):"]),
        [(1.5, 0.5), (0.5, 1.5)]),
    # cf.switch on an integer computed from the data.
    "cf_switch": (1, program([
        "%fl = math.floor %a : {t}",
        "%k = arith.fptosi %fl : {t} to i32",
        "cf.switch %k : i32, [",
        "  default: ^other,",
        "  0: ^zero,",
        "  1: ^one",
        "]",
        "^zero:",
        "%z = math.sin %a : {t}",
        "cf.br ^done(%z : {t})",
        "^one:",
        "%o = arith.mulf %a, %a : {t}",
        "cf.br ^done(%o : {t})",
        "^other:",
        "%t = math.tanh %a : {t}",
        "cf.br ^done(%t : {t})",
        "^done(%r: {t}):"]),
        [(0.5,), (1.5,), (2.5,), (-0.5,)]),
}

# Recursion: self-recursive and mutually recursive functions, with a depth
# fixed by an integer or decided by the data.
RECURSION_SUPPORT = [
    # x^n = x * x^(n-1)
    "func.func @power(%x: {t}, %n: i32) -> {t} {{",
    "  %c0 = arith.constant 0 : i32",
    "  %c1 = arith.constant 1 : i32",
    "  %one = arith.constant 1.0 : {t}",
    "  %done = arith.cmpi sle, %n, %c0 : i32",
    "  %r = scf.if %done -> ({t}) {{",
    "    scf.yield %one : {t}",
    "  }} else {{",
    "    %m = arith.subi %n, %c1 : i32",
    "    %p = func.call @power(%x, %m) : ({t}, i32) -> {t}",
    "    %q = arith.mulf %p, %x : {t}",
    "    scf.yield %q : {t}",
    "  }}",
    "  return %r : {t}",
    "}}",
    # n steps of v = v + x sin(v) on a tensor, by recursion: each
    # invocation's tensor goes to its row of the shared tape.
    "func.func @tensor_steps(%v: tensor<3x{t}>, %x: {t}, %n: i32) -> tensor<3x{t}> {{",
    "  %c0 = arith.constant 0 : i32",
    "  %c1 = arith.constant 1 : i32",
    "  %done = arith.cmpi sle, %n, %c0 : i32",
    "  %r = scf.if %done -> (tensor<3x{t}>) {{",
    "    scf.yield %v : tensor<3x{t}>",
    "  }} else {{",
    "    %s = math.sin %v : tensor<3x{t}>",
    "    %xs = tensor.splat %x : tensor<3x{t}>",
    "    %p = arith.mulf %s, %xs : tensor<3x{t}>",
    "    %w = arith.addf %p, %v : tensor<3x{t}>",
    "    %m = arith.subi %n, %c1 : i32",
    "    %q = func.call @tensor_steps(%w, %x, %m) : (tensor<3x{t}>, {t}, i32) -> tensor<3x{t}>",
    "    scf.yield %q : tensor<3x{t}>",
    "  }}",
    "  return %r : tensor<3x{t}>",
    "}}",
    # f(n) = f(n-1) + x f(n-2), f(0) = 1, f(1) = x: a Fibonacci on floats.
    "func.func @fib(%x: {t}, %n: i32) -> {t} {{",
    "  %c1 = arith.constant 1 : i32",
    "  %c2 = arith.constant 2 : i32",
    "  %one = arith.constant 1.0 : {t}",
    "  %small = arith.cmpi slt, %n, %c2 : i32",
    "  %r = scf.if %small -> ({t}) {{",
    "    %is0 = arith.cmpi slt, %n, %c1 : i32",
    "    %b = arith.select %is0, %one, %x : {t}",
    "    scf.yield %b : {t}",
    "  }} else {{",
    "    %n1 = arith.subi %n, %c1 : i32",
    "    %n2 = arith.subi %n, %c2 : i32",
    "    %f1 = func.call @fib(%x, %n1) : ({t}, i32) -> {t}",
    "    %f2 = func.call @fib(%x, %n2) : ({t}, i32) -> {t}",
    "    %xf2 = arith.mulf %x, %f2 : {t}",
    "    %s = arith.addf %f1, %xf2 : {t}",
    "    scf.yield %s : {t}",
    "  }}",
    "  return %r : {t}",
    "}}",
    # Mutual recursion: ping halves y until it drops below 1, pong adds at
    # most 1/4 (so y decreases) and squashes the result.
    "func.func @ping(%x: {t}, %y: {t}) -> {t} {{",
    "  %one = arith.constant 1.0 : {t}",
    "  %half = arith.constant 0.5 : {t}",
    "  %low = arith.cmpf olt, %y, %one : {t}",
    "  %r = scf.if %low -> ({t}) {{",
    "    %e = arith.mulf %x, %y : {t}",
    "    scf.yield %e : {t}",
    "  }} else {{",
    "    %h = arith.mulf %y, %half : {t}",
    "    %p = func.call @pong(%x, %h) : ({t}, {t}) -> {t}",
    "    scf.yield %p : {t}",
    "  }}",
    "  return %r : {t}",
    "}}",
    "func.func @pong(%x: {t}, %y: {t}) -> {t} {{",
    "  %quarter = arith.constant 0.25 : {t}",
    "  %sx = math.sin %x : {t}",
    "  %s = arith.mulf %sx, %quarter : {t}",
    "  %z = arith.addf %y, %s : {t}",
    "  %q = func.call @ping(%x, %z) : ({t}, {t}) -> {t}",
    "  %t = math.tanh %q : {t}",
    "  %u = arith.addf %t, %y : {t}",
    "  return %u : {t}",
    "}}",
]

RECURSION_SUPPORT += [
    # A loop inside a recursive function: n levels, each multiplying in
    # i + x for i < n, then recursing (the loop's rows share the tape).
    "func.func @looped(%x: {t}, %n: index) -> {t} {{",
    "  %c0 = arith.constant 0 : index",
    "  %c1 = arith.constant 1 : index",
    "  %one = arith.constant 1.0 : {t}",
    "  %done = arith.cmpi eq, %n, %c0 : index",
    "  %r = scf.if %done -> ({t}) {{",
    "    scf.yield %x : {t}",
    "  }} else {{",
    "    %p = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> ({t}) {{",
    "      %ii = arith.index_cast %i : index to i64",
    "      %fi = arith.sitofp %ii : i64 to {t}",
    "      %f = arith.addf %fi, %x : {t}",
    "      %s = math.sin %f : {t}",
    "      %q = arith.mulf %acc, %s : {t}",
    "      scf.yield %q : {t}",
    "    }}",
    "    %m = arith.subi %n, %c1 : index",
    "    %rec = func.call @looped(%x, %m) : ({t}, index) -> {t}",
    "    %t = arith.addf %p, %rec : {t}",
    "    scf.yield %t : {t}",
    "  }}",
    "  return %r : {t}",
    "}}",
]

RECURSION = {
    "recursion_with_loop": (1, program([
        "%r = func.call @looped(%a, %n0) : ({t}, index) -> {t}"]),
        [(0.4, 4), (1.3, 1), (-0.2, 0)], None, ["index"]),
    "recursive_power": (1, program([
        "%r = func.call @power(%a, %n0) : ({t}, i32) -> {t}"]),
        [(1.3, 5), (0.8, 0), (-1.1, 2)], None, ["i32"]),
    "tensor_recursion": (1, program([
        "%v0 = tensor.splat %a : tensor<3x{t}>",
        "%offsets = arith.constant dense<[0.0, 0.5, 1.0]> : tensor<3x{t}>",
        "%v1 = arith.addf %v0, %offsets : tensor<3x{t}>",
        "%vr = func.call @tensor_steps(%v1, %a, %n0) : (tensor<3x{t}>, {t}, i32) -> tensor<3x{t}>",
        "%i0 = arith.constant 0 : index",
        "%i2 = arith.constant 2 : index",
        "%e0 = tensor.extract %vr[%i0] : tensor<3x{t}>",
        "%e2 = tensor.extract %vr[%i2] : tensor<3x{t}>",
        "%r = arith.mulf %e0, %e2 : {t}"]),
        [(0.7, 4), (-0.4, 0), (1.1, 2)], None, ["i32"]),
    "fibonacci": (1, program([
        "%r = func.call @fib(%a, %n0) : ({t}, i32) -> {t}"]),
        [(0.7, 7), (1.2, 1), (-0.4, 5)], None, ["i32"]),
    # Depth decided by the data (how often y halves below 1).
    "mutual_recursion": (2, program([
        "%r = func.call @ping(%a, %b) : ({t}, {t}) -> {t}"]),
        [(0.6, 5.3), (1.1, 0.4), (0.3, 17.0)]),
}

# Tensors and linalg. Each case builds tensors whose entries are smooth
# functions of the scalar arguments (x sin(phase) + y cos(phase), with a
# phase per position), applies the op under test and reduces to a scalar,
# so the gradient checked is the op's adjoint contracted with the builder's.


def tensor_type(shape, t):
    return "tensor<" + "x".join(str(d) for d in shape) + ("x" if shape else "") + t + ">"


def build(name, shape, x, y, seed, sizes=None):
    """Lines making %name : tensor<shape x t> from scalars %x and %y. With
    `sizes` (SSA names of index values, see opaque_sizes), the tensor has
    a fully dynamic type whose sizes are known only at run time."""
    if sizes:
        return build_dynamic(name, shape, x, y, seed, sizes)
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    scalar_map = f"affine_map<({dims}) -> ()>"
    identity = f"affine_map<({dims}) -> ({dims})>"
    iters = ", ".join(['"parallel"'] * rank)
    ty = tensor_type(shape, "{t}")
    lines = [
        f"%{name}_e = tensor.empty() : {ty}",
        f"%{name} = linalg.generic {{{{indexing_maps = [{scalar_map}, {scalar_map}, {identity}], iterator_types = [{iters}]}}}} ins(%{x}, %{y} : {{t}}, {{t}}) outs(%{name}_e : {ty}) {{{{",
        f"^bb0(%{name}_x: {{t}}, %{name}_y: {{t}}, %{name}_o: {{t}}):",
        f"  %{name}_p0 = arith.constant {seed + 0.25} : {{t}}",
    ]
    for i in range(rank):
        lines += [
            f"  %{name}_i{i} = linalg.index {i} : index",
            f"  %{name}_l{i} = arith.index_cast %{name}_i{i} : index to i64",
            f"  %{name}_f{i} = arith.sitofp %{name}_l{i} : i64 to {{t}}",
            f"  %{name}_c{i} = arith.constant {1.3 + 0.6 * i} : {{t}}",
            f"  %{name}_m{i} = arith.mulf %{name}_f{i}, %{name}_c{i} : {{t}}",
            f"  %{name}_p{i + 1} = arith.addf %{name}_p{i}, %{name}_m{i} : {{t}}",
        ]
    last = f"%{name}_p{rank}"
    lines += [
        f"  %{name}_s = math.sin {last} : {{t}}",
        f"  %{name}_k = math.cos {last} : {{t}}",
        f"  %{name}_u = arith.mulf %{name}_x, %{name}_s : {{t}}",
        f"  %{name}_v = arith.mulf %{name}_y, %{name}_k : {{t}}",
        f"  %{name}_w = arith.addf %{name}_u, %{name}_v : {{t}}",
        f"  linalg.yield %{name}_w : {{t}}",
        f"}}}} -> {ty}",
    ]
    return lines


def build_dynamic(name, shape, x, y, seed, sizes):
    lines = build(name + "_s", shape, x, y, seed)
    dyn = tensor_type(["?"] * len(shape), "{t}")
    # The static values are copied into a tensor whose sizes the compiler
    # cannot see, so that no canonicalization makes the code static again.
    lines += [f"%{name}_de = tensor.empty({', '.join(sizes)}) : {dyn}",
              f"%{name} = linalg.copy ins(%{name}_s : {tensor_type(shape, '{t}')}) outs(%{name}_de : {dyn}) -> {dyn}"]
    return lines


def opaque_sizes(values):
    """Lines defining %n<k> for each k in `values`: index k, computed at run
    time from %a (a - a is not folded: it is NaN for inf)."""
    lines = ["%n_z = arith.subf %a, %a : {t}"]
    for k in sorted(set(values)):
        lines += [f"%n{k}_c = arith.constant {float(k)} : {{t}}",
                  f"%n{k}_f = arith.addf %n_z, %n{k}_c : {{t}}",
                  f"%n{k}_i = arith.fptosi %n{k}_f : {{t}} to i64",
                  f"%n{k} = arith.index_cast %n{k}_i : i64 to index"]
    return lines


def dynamic_zeros(name, sizes):
    dyn = tensor_type(["?"] * len(sizes), "{t}")
    return [f"%{name}_z0 = arith.constant 0.0 : {{t}}",
            f"%{name}_ze = tensor.empty({', '.join(sizes)}) : {dyn}",
            f"%{name} = linalg.fill ins(%{name}_z0 : {{t}}) outs(%{name}_ze : {dyn}) -> {dyn}"]


def d(rank):
    """The fully dynamic tensor type of `rank`."""
    return tensor_type(["?"] * rank, "{t}")


def loss(name, shape):
    """Lines reducing %name to the scalar %r: sum of sin(v) + v^2 / 3."""
    ty = tensor_type(shape, "{t}")
    dims = ", ".join(str(i) for i in range(len(shape)))
    return [
        "%l_zero = arith.constant 0.0 : {t}",
        "%l_e = tensor.empty() : tensor<{t}>",
        "%l_init = linalg.fill ins(%l_zero : {t}) outs(%l_e : tensor<{t}>) -> tensor<{t}>",
        f"%l_sum = linalg.reduce ins(%{name} : {ty}) outs(%l_init : tensor<{{t}}>) dimensions = [{dims}]",
        "  (%l_in: {t}, %l_acc: {t}) {{",
        "    %l_third = arith.constant 0.3333 : {t}",
        "    %l_s = math.sin %l_in : {t}",
        "    %l_q = arith.mulf %l_in, %l_in : {t}",
        "    %l_q3 = arith.mulf %l_q, %l_third : {t}",
        "    %l_v = arith.addf %l_s, %l_q3 : {t}",
        "    %l_n = arith.addf %l_acc, %l_v : {t}",
        "    linalg.yield %l_n : {t}",
        "  }}",
        "%r = tensor.extract %l_sum[] : tensor<{t}>",
    ]


def zeros(name, shape):
    ty = tensor_type(shape, "{t}")
    return [f"%{name}_z0 = arith.constant 0.0 : {{t}}",
            f"%{name}_ze = tensor.empty() : {ty}",
            f"%{name} = linalg.fill ins(%{name}_z0 : {{t}}) outs(%{name}_ze : {ty}) -> {ty}"]


def diagonal_sum(name, shape, result):
    """Lines summing the diagonal of %name (a generic reading (d0, d0))."""
    ty = "tensor<" + shape + "x{t}>"
    return [
        f"%{result}_z = arith.constant 0.0 : {{t}}",
        f"%{result}_e = tensor.empty() : tensor<{{t}}>",
        f"%{result}_i = linalg.fill ins(%{result}_z : {{t}}) outs(%{result}_e : tensor<{{t}}>) -> tensor<{{t}}>",
        f"%{result} = linalg.generic {{{{indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> ()>], iterator_types = [\"reduction\"]}}}} ins(%{name} : {ty}) outs(%{result}_i : tensor<{{t}}>) {{{{",
        f"^bb0(%{result}_x: {{t}}, %{result}_acc: {{t}}):",
        f"  %{result}_s = arith.addf %{result}_acc, %{result}_x : {{t}}",
        f"  linalg.yield %{result}_s : {{t}}",
        "}} -> tensor<{t}>",
    ]


def tensor_case(lines):
    return (2, program(lines), [(0.7, -0.4), (-0.3, 0.9)])


def binary_named(op, shape):
    ty = tensor_type(shape, "{t}")
    return tensor_case(
        build("A", shape, "a", "b", 0) + build("B", shape, "b", "a", 1) +
        zeros("O", shape) +
        [f"%C = {op} ins(%A, %B : {ty}, {ty}) outs(%O : {ty}) -> {ty}"] +
        loss("C", shape))


def unary_named(op, shape, pre=None):
    ty = tensor_type(shape, "{t}")
    return tensor_case(
        build("A", shape, "a", "b", 0) + zeros("O", shape) +
        [f"%C = {op} ins(%A : {ty}) outs(%O : {ty}) -> {ty}"] + loss("C", shape))


TENSORS = {
    "matmul": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [4, 5], "b", "a", 1) +
        zeros("O", [3, 5]) +
        ["%C = linalg.matmul ins(%A, %B : tensor<3x4x{t}>, tensor<4x5x{t}>) outs(%O : tensor<3x5x{t}>) -> tensor<3x5x{t}>"] +
        loss("C", [3, 5])),
    "batch_matmul": tensor_case(
        build("A", [2, 3, 4], "a", "b", 0) + build("B", [2, 4, 2], "b", "a", 1) +
        zeros("O", [2, 3, 2]) +
        ["%C = linalg.batch_matmul ins(%A, %B : tensor<2x3x4x{t}>, tensor<2x4x2x{t}>) outs(%O : tensor<2x3x2x{t}>) -> tensor<2x3x2x{t}>"] +
        loss("C", [2, 3, 2])),
    "matvec": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("V", [4], "b", "a", 1) +
        zeros("O", [3]) +
        ["%C = linalg.matvec ins(%A, %V : tensor<3x4x{t}>, tensor<4x{t}>) outs(%O : tensor<3x{t}>) -> tensor<3x{t}>"] +
        loss("C", [3])),
    "vecmat": tensor_case(
        build("V", [4], "a", "b", 0) + build("A", [4, 3], "b", "a", 1) +
        zeros("O", [3]) +
        ["%C = linalg.vecmat ins(%V, %A : tensor<4x{t}>, tensor<4x3x{t}>) outs(%O : tensor<3x{t}>) -> tensor<3x{t}>"] +
        loss("C", [3])),
    "dot": tensor_case(
        build("U", [5], "a", "b", 0) + build("V", [5], "b", "a", 1) +
        zeros("O", []) +
        ["%C = linalg.dot ins(%U, %V : tensor<5x{t}>, tensor<5x{t}>) outs(%O : tensor<{t}>) -> tensor<{t}>"] +
        loss("C", [])),
    "transpose": tensor_case(
        build("A", [3, 4], "a", "b", 0) + zeros("O", [4, 3]) +
        ["%C = linalg.transpose ins(%A : tensor<3x4x{t}>) outs(%O : tensor<4x3x{t}>) permutation = [1, 0]"] +
        loss("C", [4, 3])),
    "broadcast": tensor_case(
        build("A", [4], "a", "b", 0) + zeros("O", [3, 4]) +
        ["%C = linalg.broadcast ins(%A : tensor<4x{t}>) outs(%O : tensor<3x4x{t}>) dimensions = [0]"] +
        loss("C", [3, 4])),
    "copy": unary_named("linalg.copy", [2, 3]),
    "add": binary_named("linalg.add", [2, 3]),
    "sub": binary_named("linalg.sub", [2, 3]),
    "mul": binary_named("linalg.mul", [2, 3]),
    "exp": unary_named("linalg.exp", [2, 3]),
    # Named ops whose domain needs positive inputs: exp first.
    "div_log_sqrt": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        zeros("O1", [2, 3]) + zeros("O2", [2, 3]) + zeros("O3", [2, 3]) +
        ["%EB = math.exp %B : tensor<2x3x{t}>",
         "%D = linalg.div ins(%A, %EB : tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O1 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%L = linalg.log ins(%EB : tensor<2x3x{t}>) outs(%O2 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%Q = linalg.sqrt ins(%EB : tensor<2x3x{t}>) outs(%O3 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%DL = arith.mulf %D, %L : tensor<2x3x{t}>",
         "%C = arith.addf %DL, %Q : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
    "max_min_negf_abs": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        zeros("O1", [2, 3]) + zeros("O2", [2, 3]) + zeros("O3", [2, 3]) + zeros("O4", [2, 3]) +
        ["%M = linalg.max ins(%A, %B : tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O1 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%N = linalg.min ins(%A, %B : tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O2 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%G = linalg.negf ins(%M : tensor<2x3x{t}>) outs(%O3 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%S = linalg.abs ins(%N : tensor<2x3x{t}>) outs(%O4 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%C = arith.mulf %G, %S : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
    # The remaining elementwise named ops, and linalg.elementwise.
    "named_rest": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        [line for k in range(1, 12) for line in zeros(f"O{k}", [2, 3])] +
        ["%EA = math.exp %A : tensor<2x3x{t}>",
         "%R1 = linalg.reciprocal ins(%EA : tensor<2x3x{t}>) outs(%O1 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R2 = linalg.rsqrt ins(%EA : tensor<2x3x{t}>) outs(%O2 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R3 = linalg.square ins(%B : tensor<2x3x{t}>) outs(%O3 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R4 = linalg.tanh ins(%A : tensor<2x3x{t}>) outs(%O4 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R5 = linalg.erf ins(%B : tensor<2x3x{t}>) outs(%O5 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R6 = linalg.powf ins(%EA, %B : tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O6 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R7 = linalg.floor ins(%R6 : tensor<2x3x{t}>) outs(%O7 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R8 = linalg.ceil ins(%R5 : tensor<2x3x{t}>) outs(%O8 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R9 = linalg.round ins(%R4 : tensor<2x3x{t}>) outs(%O9 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%cond = arith.cmpf olt, %A, %B : tensor<2x3x{t}>",
         "%R10 = linalg.select ins(%cond, %R1, %R2 : tensor<2x3xi1>, tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O10 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%R11 = linalg.elementwise kind=#linalg.elementwise_kind<exp> ins(%R3 : tensor<2x3x{t}>) outs(%O11 : tensor<2x3x{t}>) -> tensor<2x3x{t}>",
         "%S1 = arith.addf %R10, %R11 : tensor<2x3x{t}>",
         "%S2 = arith.mulf %R4, %R5 : tensor<2x3x{t}>",
         "%S3 = arith.addf %S1, %S2 : tensor<2x3x{t}>",
         "%S4 = arith.mulf %R6, %R7 : tensor<2x3x{t}>",
         "%S5 = arith.addf %S3, %S4 : tensor<2x3x{t}>",
         "%S6 = arith.mulf %R8, %R9 : tensor<2x3x{t}>",
         "%C = arith.addf %S5, %S6 : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
    "map": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        zeros("O", [2, 3]) +
        ["%C = linalg.map ins(%A, %B : tensor<2x3x{t}>, tensor<2x3x{t}>) outs(%O : tensor<2x3x{t}>)",
         "  (%m_x: {t}, %m_y: {t}, %m_o: {t}) {{",
         "    %m_p = arith.mulf %m_x, %m_y : {t}",
         "    %m_t = math.tanh %m_p : {t}",
         "    linalg.yield %m_t : {t}",
         "  }}"] +
        loss("C", [2, 3])),
    "conv_2d_nhwc_hwcf": tensor_case(
        build("I", [1, 5, 5, 2], "a", "b", 0) + build("F", [3, 3, 2, 2], "b", "a", 1) +
        zeros("O", [1, 3, 3, 2]) +
        ["%C = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%I, %F : tensor<1x5x5x2x{t}>, tensor<3x3x2x2x{t}>) outs(%O : tensor<1x3x3x2x{t}>) -> tensor<1x3x3x2x{t}>"] +
        loss("C", [1, 3, 3, 2])),
    "pooling_nhwc_sum": tensor_case(
        build("I", [1, 4, 4, 2], "a", "b", 0) +
        ["%W = tensor.empty() : tensor<2x2x{t}>"] + zeros("O", [1, 3, 3, 2]) +
        ["%C = linalg.pooling_nhwc_sum {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%I, %W : tensor<1x4x4x2x{t}>, tensor<2x2x{t}>) outs(%O : tensor<1x3x3x2x{t}>) -> tensor<1x3x3x2x{t}>"] +
        loss("C", [1, 3, 3, 2])),
    "pooling_nhwc_max": tensor_case(
        build("I", [1, 4, 4, 2], "a", "b", 0) +
        ["%W = tensor.empty() : tensor<2x2x{t}>",
         "%low = arith.constant -1.0e30 : {t}",
         "%Oe = tensor.empty() : tensor<1x3x3x2x{t}>",
         "%O = linalg.fill ins(%low : {t}) outs(%Oe : tensor<1x3x3x2x{t}>) -> tensor<1x3x3x2x{t}>",
         "%C = linalg.pooling_nhwc_max {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%I, %W : tensor<1x4x4x2x{t}>, tensor<2x2x{t}>) outs(%O : tensor<1x3x3x2x{t}>) -> tensor<1x3x3x2x{t}>"] +
        loss("C", [1, 3, 3, 2])),
    # A max-reduction whose init takes part (it wins in some rows).
    "reduce_max": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [3], "b", "a", 1) +
        ["%C = linalg.reduce ins(%A : tensor<3x4x{t}>) outs(%B : tensor<3x{t}>) dimensions = [1]",
         "  (%r_in: {t}, %r_acc: {t}) {{",
         "    %r_m = arith.maximumf %r_in, %r_acc : {t}",
         "    linalg.yield %r_m : {t}",
         "  }}"] +
        loss("C", [3])),
    # A product reduction whose init takes part.
    "reduce_prod": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [3], "b", "a", 1) +
        ["%C = linalg.reduce ins(%A : tensor<3x4x{t}>) outs(%B : tensor<3x{t}>) dimensions = [1]",
         "  (%r_in: {t}, %r_acc: {t}) {{",
         "    %r_m = arith.mulf %r_in, %r_acc : {t}",
         "    linalg.yield %r_m : {t}",
         "  }}"] +
        loss("C", [3])),
    # Products with exact zeros at the first point (a = 0.7, b = -0.4):
    # row 0 has one zero factor (a - 0.7), whose cotangent is the product
    # of the others; row 1 has two (a - 0.7 and b + 0.4), so nothing flows.
    "prod_zeros": tensor_case(
        ["%z_c7 = arith.constant 0.7 : {t}",
         "%z_c4 = arith.constant 0.4 : {t}",
         "%z_one = arith.constant 1.0 : {t}",
         "%z_two = arith.constant 2.0 : {t}",
         "%z_f0 = arith.subf %a, %z_c7 : {t}",
         "%z_f1 = arith.addf %b, %z_c4 : {t}",
         "%z_ab = arith.mulf %a, %b : {t}",
         "%z_f2 = arith.addf %z_ab, %z_one : {t}",
         "%z_f3 = arith.addf %a, %z_two : {t}",
         "%z_i0 = arith.addf %b, %z_two : {t}",
         "%V = tensor.from_elements %z_f0, %b, %z_f2, %z_f0, %z_f1, %z_f3 : tensor<2x3x{t}>",
         "%I = tensor.from_elements %z_i0, %z_f3 : tensor<2x{t}>",
         "%C = linalg.reduce ins(%V : tensor<2x3x{t}>) outs(%I : tensor<2x{t}>) dimensions = [1]",
         "  (%r_in: {t}, %r_acc: {t}) {{",
         "    %r_m = arith.mulf %r_in, %r_acc : {t}",
         "    linalg.yield %r_m : {t}",
         "  }}"] +
        loss("C", [2])),
    # Ties: max of equal elements shares the cotangent (derivative 1, not 3).
    "max_ties": tensor_case(
        ["%ab = arith.mulf %a, %b : {t}",
         "%S = tensor.splat %ab : tensor<3x{t}>",
         "%low = arith.constant -1.0e30 : {t}",
         "%Oe = tensor.empty() : tensor<{t}>",
         "%O = linalg.fill ins(%low : {t}) outs(%Oe : tensor<{t}>) -> tensor<{t}>",
         "%C = linalg.reduce ins(%S : tensor<3x{t}>) outs(%O : tensor<{t}>) dimensions = [0]",
         "  (%r_in: {t}, %r_acc: {t}) {{",
         "    %r_m = arith.maximumf %r_in, %r_acc : {t}",
         "    linalg.yield %r_m : {t}",
         "  }}"] +
        loss("C", [])),
    # arith and math applied to whole tensors.
    "elementwise": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        ["%P = arith.mulf %A, %B : tensor<2x3x{t}>",
         "%E = math.exp %P : tensor<2x3x{t}>",
         "%C = arith.subf %E, %A : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
    # Dynamic shapes: the same matmul on tensor<?x?>.
    "matmul_dynamic": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [4, 5], "b", "a", 1) +
        ["%Ad = tensor.cast %A : tensor<3x4x{t}> to tensor<?x?x{t}>",
         "%Bd = tensor.cast %B : tensor<4x5x{t}> to tensor<?x?x{t}>",
         "%i0 = arith.constant 0 : index",
         "%i1 = arith.constant 1 : index",
         "%d0 = tensor.dim %Ad, %i0 : tensor<?x?x{t}>",
         "%d1 = tensor.dim %Bd, %i1 : tensor<?x?x{t}>",
         "%Oz = arith.constant 0.0 : {t}",
         "%Oe = tensor.empty(%d0, %d1) : tensor<?x?x{t}>",
         "%O = linalg.fill ins(%Oz : {t}) outs(%Oe : tensor<?x?x{t}>) -> tensor<?x?x{t}>",
         "%C = linalg.matmul ins(%Ad, %Bd : tensor<?x?x{t}>, tensor<?x?x{t}>) outs(%O : tensor<?x?x{t}>) -> tensor<?x?x{t}>"] +
        loss("C", ["?", "?"])),
    # A tensor carried through scf.for, one element inserted per iteration.
    "tensor_loop_insert": tensor_case(
        zeros("T0", [6]) +
        ["%i0 = arith.constant 0 : index",
         "%i1 = arith.constant 1 : index",
         "%i6 = arith.constant 6 : index",
         "%C = scf.for %i = %i0 to %i6 step %i1 iter_args(%acc = %T0) -> (tensor<6x{t}>) {{",
         "  %ii = arith.index_cast %i : index to i64",
         "  %fi = arith.sitofp %ii : i64 to {t}",
         "  %v = arith.mulf %a, %fi : {t}",
         "  %w = arith.addf %v, %b : {t}",
         "  %s = math.sin %w : {t}",
         "  %u = tensor.insert %s into %acc[%i] : tensor<6x{t}>",
         "  scf.yield %u : tensor<6x{t}>",
         "}}"] +
        loss("C", [6])),
    # A recurrence on tensors (h = tanh(W h + u h) four times): the adjoint
    # reads each iteration's tensors, stored per iteration.
    "tensor_loop_recurrence": tensor_case(
        build("W", [3, 3], "a", "b", 0) + build("H", [3], "b", "a", 1) +
        build("U", [3], "a", "a", 2) +
        ["%i0 = arith.constant 0 : index",
         "%i1 = arith.constant 1 : index",
         "%i4 = arith.constant 4 : index",
         "%C = scf.for %i = %i0 to %i4 step %i1 iter_args(%h = %H) -> (tensor<3x{t}>) {{",
         "  %rz = arith.constant 0.0 : {t}",
         "  %re = tensor.empty() : tensor<3x{t}>",
         "  %rf = linalg.fill ins(%rz : {t}) outs(%re : tensor<3x{t}>) -> tensor<3x{t}>",
         "  %m = linalg.matvec ins(%W, %h : tensor<3x3x{t}>, tensor<3x{t}>) outs(%rf : tensor<3x{t}>) -> tensor<3x{t}>",
         "  %uh = arith.mulf %U, %h : tensor<3x{t}>",
         "  %s = arith.addf %m, %uh : tensor<3x{t}>",
         "  %n = math.tanh %s : tensor<3x{t}>",
         "  scf.yield %n : tensor<3x{t}>",
         "}}"] +
        loss("C", [3])),
    # A tensor updated in a while loop whose trip count depends on the
    # arguments: each iteration's tensors go to rows of the growable tape.
    "tensor_while": tensor_case(
        build("A", [2, 3], "a", "b", 0) +
        ["%w_one = arith.constant 1.0 : {t}",
         # 17 to 24 iterations: the tape (16 rows at first) grows.
         "%w_grow = arith.constant 1.1 : {t}",
         "%w_tenth = arith.constant 0.1 : {t}",
         "%w_a2 = arith.mulf %a, %a : {t}",
         "%w_aa = arith.mulf %w_a2, %w_tenth : {t}",
         "%w_f = arith.addf %w_grow, %w_aa : {t}",
         "%C, %w_s = scf.while (%v = %A, %s = %w_one) : (tensor<2x3x{t}>, {t}) -> (tensor<2x3x{t}>, {t}) {{",
         "  %w_ten = arith.constant 10.0 : {t}",
         "  %w_go = arith.cmpf olt, %s, %w_ten : {t}",
         "  scf.condition(%w_go) %v, %s : tensor<2x3x{t}>, {t}",
         "}} do {{",
         "^bb0(%v: tensor<2x3x{t}>, %s: {t}):",
         "  %w_sin = math.sin %v : tensor<2x3x{t}>",
         "  %w_x = arith.mulf %w_sin, %v : tensor<2x3x{t}>",
         "  %w_y = arith.addf %w_x, %A : tensor<2x3x{t}>",
         "  %w_s2 = arith.mulf %s, %w_f : {t}",
         "  scf.yield %w_y, %w_s2 : tensor<2x3x{t}>, {t}",
         "}}"] +
        loss("C", [2, 3])),
    # Tensors computed in a branch and read by the adjoint: the forward if
    # carries them out. The points take both branches.
    "tensor_if": tensor_case(
        build("A", [2, 3], "a", "b", 0) +
        ["%f_zero = arith.constant 0.0 : {t}",
         "%f_pos = arith.cmpf ogt, %a, %f_zero : {t}",
         "%C = scf.if %f_pos -> (tensor<2x3x{t}>) {{",
         "  %f_s = math.sin %A : tensor<2x3x{t}>",
         "  %f_p = arith.mulf %f_s, %A : tensor<2x3x{t}>",
         "  scf.yield %f_p : tensor<2x3x{t}>",
         "}} else {{",
         "  %f_e = math.exp %A : tensor<2x3x{t}>",
         "  %f_q = arith.mulf %f_e, %f_e : tensor<2x3x{t}>",
         "  scf.yield %f_q : tensor<2x3x{t}>",
         "}}"] +
        loss("C", [2, 3])),
    # A gather (an embedding lookup): the generic's body reads rows of an
    # active table by index and also has an active input. Its adjoint is a
    # scatter-add, with repeated indices (row 1 is read twice).
    "gather": tensor_case(
        build("T", [4, 3], "a", "b", 0) + build("X", [3, 3], "b", "a", 1) +
        ["%ids = arith.constant dense<[1, 3, 1]> : tensor<3xindex>",
         "%ge = tensor.empty() : tensor<3x3x{t}>",
         "%C = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]}} ins(%ids, %X : tensor<3xindex>, tensor<3x3x{t}>) outs(%ge : tensor<3x3x{t}>) {{",
         "^bb0(%g_id: index, %g_x: {t}, %g_o: {t}):",
         "  %g_j = linalg.index 1 : index",
         "  %g_v = tensor.extract %T[%g_id, %g_j] : tensor<4x3x{t}>",
         "  %g_p = arith.mulf %g_v, %g_x : {t}",
         "  %g_s = math.sin %g_p : {t}",
         "  linalg.yield %g_s : {t}",
         "}} -> tensor<3x3x{t}>"] +
        loss("C", [3, 3])),
    # tensor.generate reading an active tensor (a permuted gather with
    # repeats): written as loops, like the generic gather.
    "generate_gather": tensor_case(
        build("A", [5], "a", "b", 0) +
        ["%G = tensor.generate {{",
         "^bb0(%g_i: index):",
         "  %g_two = arith.constant 2 : index",
         "  %g_five = arith.constant 5 : index",
         "  %g_d = arith.muli %g_i, %g_two : index",
         "  %g_j = arith.remui %g_d, %g_five : index",
         "  %g_v = tensor.extract %A[%g_j] : tensor<5x{t}>",
         "  %g_s = math.sin %g_v : {t}",
         "  %g_p = arith.mulf %g_s, %a : {t}",
         "  tensor.yield %g_p : {t}",
         "}} : tensor<7x{t}>",
         "%C = arith.mulf %G, %G : tensor<7x{t}>"] +
        loss("C", [7])),
    "slices": tensor_case(
        build("A", [4, 5], "a", "b", 0) + build("B", [2, 3], "b", "a", 1) +
        ["%S = tensor.extract_slice %A[1, 1] [2, 3] [1, 1] : tensor<4x5x{t}> to tensor<2x3x{t}>",
         "%P = arith.mulf %S, %B : tensor<2x3x{t}>",
         "%C = tensor.insert_slice %P into %A[2, 0] [2, 3] [1, 2] : tensor<2x3x{t}> into tensor<4x5x{t}>"] +
        loss("C", [4, 5])),
    "splat_from_elements": tensor_case(
        ["%ab = arith.mulf %a, %b : {t}",
         "%S = tensor.splat %ab : tensor<2x3x{t}>",
         "%F = tensor.from_elements %a, %b, %ab, %a, %ab, %b : tensor<2x3x{t}>",
         "%C = arith.mulf %S, %F : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
    "reshapes": tensor_case(
        build("A", [2, 6], "a", "b", 0) +
        ["%E = tensor.expand_shape %A [[0], [1, 2]] output_shape [2, 2, 3] : tensor<2x6x{t}> into tensor<2x2x3x{t}>",
         "%M = math.tanh %E : tensor<2x2x3x{t}>",
         "%C = tensor.collapse_shape %M [[0, 1], [2]] : tensor<2x2x3x{t}> into tensor<4x3x{t}>"] +
        loss("C", [4, 3])),
    "concat_pad": tensor_case(
        build("A", [2, 3], "a", "b", 0) + build("B", [1, 3], "b", "a", 1) +
        ["%J = tensor.concat dim(0) %A, %B : (tensor<2x3x{t}>, tensor<1x3x{t}>) -> tensor<3x3x{t}>",
         "%pv = arith.mulf %a, %b : {t}",
         "%C = tensor.pad %J low[1, 0] high[0, 2] {{",
         "^bb0(%p_i: index, %p_j: index):",
         "  tensor.yield %pv : {t}",
         "}} : tensor<3x3x{t}> to tensor<4x5x{t}>"] +
        loss("C", [4, 5])),
    # Padding computed per position from the indices and the arguments,
    # on a dynamically shaped source with a dynamic low padding.
    "pad_positional": tensor_case(
        build("A", [2, 3], "a", "b", 0) +
        ["%Ad = tensor.cast %A : tensor<2x3x{t}> to tensor<?x?x{t}>",
         # 3, computed at run time (a - a is not folded: it is NaN for inf).
         "%lz = arith.subf %a, %a : {t}",
         "%l3 = arith.constant 3.0 : {t}",
         "%lf = arith.addf %lz, %l3 : {t}",
         "%li = arith.fptosi %lf : {t} to i64",
         "%lo = arith.index_cast %li : i64 to index",
         "%P = tensor.pad %Ad low[1, %lo] high[2, 1] {{",
         "^bb0(%p_i: index, %p_j: index):",
         "  %p_k = arith.addi %p_i, %p_j : index",
         "  %p_l = arith.index_cast %p_k : index to i64",
         "  %p_f = arith.sitofp %p_l : i64 to {t}",
         "  %p_s = math.sin %p_f : {t}",
         "  %p_u = arith.mulf %a, %p_s : {t}",
         "  %p_v = arith.mulf %p_u, %b : {t}",
         "  tensor.yield %p_v : {t}",
         "}} : tensor<?x?x{t}> to tensor<?x?x{t}>",
         "%C = tensor.cast %P : tensor<?x?x{t}> to tensor<5x7x{t}>"] +
        loss("C", [5, 7])),
    # collapse_shape of dynamic shapes: with one dynamic size per group
    # (sizes inferred from the cotangent) and with two (read from the
    # source).
    "collapse_dynamic": tensor_case(
        build("A", [2, 2, 3], "a", "b", 0) +
        ["%Ad = tensor.cast %A : tensor<2x2x3x{t}> to tensor<?x2x?x{t}>",
         "%M = math.tanh %Ad : tensor<?x2x?x{t}>",
         "%K = tensor.collapse_shape %M [[0, 1], [2]] : tensor<?x2x?x{t}> into tensor<?x?x{t}>",
         "%Ae = tensor.cast %A : tensor<2x2x3x{t}> to tensor<?x?x?x{t}>",
         "%N = math.sin %Ae : tensor<?x?x?x{t}>",
         "%L = tensor.collapse_shape %N [[0, 1, 2]] : tensor<?x?x?x{t}> into tensor<?x{t}>",
         "%Lc = tensor.cast %L : tensor<?x{t}> to tensor<12x{t}>",
         "%Le = tensor.expand_shape %Lc [[0, 1]] output_shape [4, 3] : tensor<12x{t}> into tensor<4x3x{t}>",
         "%Kc = tensor.cast %K : tensor<?x?x{t}> to tensor<4x3x{t}>",
         "%C = arith.mulf %Kc, %Le : tensor<4x3x{t}>"] +
        loss("C", [4, 3])),
    # A generic whose body reads the scalar arguments directly.
    "generic_captures": tensor_case(
        build("A", [3, 4], "a", "b", 0) + zeros("O", [3, 4]) +
        ["%C = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]}} ins(%A : tensor<3x4x{t}>) outs(%O : tensor<3x4x{t}>) {{",
         "^bb0(%c_in: {t}, %c_out: {t}):",
         "  %c_p = arith.mulf %c_in, %a : {t}",
         "  %c_e = math.exp %b : {t}",
         "  %c_s = arith.addf %c_p, %c_e : {t}",
         "  linalg.yield %c_s : {t}",
         "}} -> tensor<3x4x{t}>"] +
        loss("C", [3, 4])),
    "generate_reshape": tensor_case(
        ["%ab = arith.mulf %a, %b : {t}",
         "%G = tensor.generate {{",
         "^bb0(%g_i: index, %g_j: index):",
         "  %g_k = arith.addi %g_i, %g_j : index",
         "  %g_l = arith.index_cast %g_k : index to i64",
         "  %g_f = arith.sitofp %g_l : i64 to {t}",
         "  %g_s = math.sin %g_f : {t}",
         "  %g_u = arith.mulf %a, %g_s : {t}",
         "  %g_v = arith.addf %g_u, %ab : {t}",
         "  tensor.yield %g_v : {t}",
         "}} : tensor<2x6x{t}>",
         "%shape = arith.constant dense<[3, 4]> : tensor<2xindex>",
         "%C = tensor.reshape %G(%shape) : (tensor<2x6x{t}>, tensor<2xindex>) -> tensor<3x4x{t}>"] +
        loss("C", [3, 4])),
    # trace(A B): the trace's adjoint writes a diagonal, which the
    # simplified matmul adjoint reads without materializing it.
    "trace_matmul": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [4, 3], "b", "a", 1) +
        zeros("O", [3, 3]) +
        ["%M = linalg.matmul ins(%A, %B : tensor<3x4x{t}>, tensor<4x3x{t}>) outs(%O : tensor<3x3x{t}>) -> tensor<3x3x{t}>"] +
        diagonal_sum("M", "3x3", "C") + loss("C", [])),
    # The same on dynamic shapes.
    "trace_matmul_dynamic": tensor_case(
        build("A", [3, 4], "a", "b", 0) + build("B", [4, 3], "b", "a", 1) +
        ["%Ad = tensor.cast %A : tensor<3x4x{t}> to tensor<?x?x{t}>",
         "%Bd = tensor.cast %B : tensor<4x3x{t}> to tensor<?x?x{t}>",
         "%i0 = arith.constant 0 : index",
         "%d0 = tensor.dim %Ad, %i0 : tensor<?x?x{t}>",
         "%Oz = arith.constant 0.0 : {t}",
         "%Oe = tensor.empty(%d0, %d0) : tensor<?x?x{t}>",
         "%O = linalg.fill ins(%Oz : {t}) outs(%Oe : tensor<?x?x{t}>) -> tensor<?x?x{t}>",
         "%M = linalg.matmul ins(%Ad, %Bd : tensor<?x?x{t}>, tensor<?x?x{t}>) outs(%O : tensor<?x?x{t}>) -> tensor<?x?x{t}>"] +
        diagonal_sum("M", "?x?", "C") + loss("C", [])),
    # The diagonal of a product as a vector, then an elementwise product
    # read on the diagonal (whose adjoint must keep both dimensions).
    "diagonal_products": tensor_case(
        build("A", [3, 3], "a", "b", 0) + build("B", [3, 3], "b", "a", 1) +
        zeros("O", [3, 3]) + zeros("V", [3]) +
        ["%M = linalg.matmul ins(%A, %B : tensor<3x3x{t}>, tensor<3x3x{t}>) outs(%O : tensor<3x3x{t}>) -> tensor<3x3x{t}>",
         "%P = arith.mulf %M, %A : tensor<3x3x{t}>",
         "%C = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]}} ins(%M, %P : tensor<3x3x{t}>, tensor<3x3x{t}>) outs(%V : tensor<3x{t}>) {{",
         "^bb0(%g_m: {t}, %g_p: {t}, %g_o: {t}):",
         "  %g_e = math.exp %g_m : {t}",
         "  %g_s = arith.subf %g_e, %g_p : {t}",
         "  linalg.yield %g_s : {t}",
         "}} -> tensor<3x{t}>"] +
        loss("C", [3])),
    "extract_insert": tensor_case(
        build("A", [2, 3], "a", "b", 0) +
        ["%i0 = arith.constant 0 : index",
         "%i1 = arith.constant 1 : index",
         "%i2 = arith.constant 2 : index",
         "%x01 = tensor.extract %A[%i0, %i1] : tensor<2x3x{t}>",
         "%x12 = tensor.extract %A[%i1, %i2] : tensor<2x3x{t}>",
         "%prod = arith.mulf %x01, %x12 : {t}",
         "%C = tensor.insert %prod into %A[%i1, %i0] : tensor<2x3x{t}>"] +
        loss("C", [2, 3])),
}

# The ops of TENSORS again on fully dynamic shapes (sizes computed at run
# time, so nothing is folded back to static types).
D1, D2, D3, D4 = d(1), d(2), d(3), d(4)
DYNAMIC_TENSORS = {
    "dyn_elementwise": tensor_case(
        opaque_sizes([2, 3]) +
        build("A", [2, 3], "a", "b", 0, ["%n2", "%n3"]) +
        build("B", [2, 3], "b", "a", 1, ["%n2", "%n3"]) +
        [f"%P = arith.mulf %A, %B : {D2}",
         f"%E = math.exp %P : {D2}",
         f"%T = math.tanh %E : {D2}",
         f"%Q = arith.divf %T, %E : {D2}",
         f"%R = arith.maximumf %Q, %A : {D2}",
         f"%C = arith.subf %R, %B : {D2}"] +
        loss("C", ["?", "?"])),
    "dyn_named_elementwise": tensor_case(
        opaque_sizes([2, 3]) +
        build("A", [2, 3], "a", "b", 0, ["%n2", "%n3"]) +
        build("B", [2, 3], "b", "a", 1, ["%n2", "%n3"]) +
        [line for k in range(1, 9) for line in dynamic_zeros(f"O{k}", ["%n2", "%n3"])] +
        [f"%EB = linalg.exp ins(%B : {D2}) outs(%O1 : {D2}) -> {D2}",
         f"%DV = linalg.div ins(%A, %EB : {D2}, {D2}) outs(%O2 : {D2}) -> {D2}",
         f"%L = linalg.log ins(%EB : {D2}) outs(%O3 : {D2}) -> {D2}",
         f"%Q = linalg.sqrt ins(%EB : {D2}) outs(%O4 : {D2}) -> {D2}",
         f"%M = linalg.max ins(%DV, %L : {D2}, {D2}) outs(%O5 : {D2}) -> {D2}",
         f"%N = linalg.min ins(%A, %Q : {D2}, {D2}) outs(%O6 : {D2}) -> {D2}",
         f"%G = linalg.negf ins(%M : {D2}) outs(%O7 : {D2}) -> {D2}",
         f"%S = linalg.abs ins(%N : {D2}) outs(%O8 : {D2}) -> {D2}",
         f"%AS = arith.addf %G, %S : {D2}",
         f"%MS = arith.mulf %AS, %Q : {D2}",
         f"%C = arith.subf %MS, %A : {D2}"] +
        loss("C", ["?", "?"])),
    "dyn_batch_matmul": tensor_case(
        opaque_sizes([2, 3, 4]) +
        build("A", [2, 3, 4], "a", "b", 0, ["%n2", "%n3", "%n4"]) +
        build("B", [2, 4, 2], "b", "a", 1, ["%n2", "%n4", "%n2"]) +
        dynamic_zeros("O", ["%n2", "%n3", "%n2"]) +
        [f"%C = linalg.batch_matmul ins(%A, %B : {D3}, {D3}) outs(%O : {D3}) -> {D3}"] +
        loss("C", ["?", "?", "?"])),
    "dyn_matvec_vecmat_dot": tensor_case(
        opaque_sizes([3, 4]) +
        build("A", [3, 4], "a", "b", 0, ["%n3", "%n4"]) +
        build("V", [4], "b", "a", 1, ["%n4"]) +
        build("W", [3], "a", "b", 2, ["%n3"]) +
        dynamic_zeros("O1", ["%n3"]) + dynamic_zeros("O2", ["%n4"]) + zeros("O3", []) +
        [f"%MV = linalg.matvec ins(%A, %V : {D2}, {D1}) outs(%O1 : {D1}) -> {D1}",
         f"%VM = linalg.vecmat ins(%MV, %A : {D1}, {D2}) outs(%O2 : {D1}) -> {D1}",
         f"%C = linalg.dot ins(%VM, %V : {D1}, {D1}) outs(%O3 : tensor<{{t}}>) -> tensor<{{t}}>"] +
        loss("C", [])),
    "dyn_transpose_broadcast_map": tensor_case(
        opaque_sizes([3, 4]) +
        build("A", [3, 4], "a", "b", 0, ["%n3", "%n4"]) +
        build("V", [4], "b", "a", 1, ["%n4"]) +
        dynamic_zeros("O1", ["%n4", "%n3"]) + dynamic_zeros("O2", ["%n3", "%n4"]) +
        dynamic_zeros("O3", ["%n3", "%n4"]) +
        [f"%T = linalg.transpose ins(%A : {D2}) outs(%O1 : {D2}) permutation = [1, 0]",
         f"%Bc = linalg.broadcast ins(%V : {D1}) outs(%O2 : {D2}) dimensions = [0]",
         f"%Tt = linalg.transpose ins(%T : {D2}) outs(%O3 : {D2}) permutation = [1, 0]",
         f"%C = linalg.map ins(%Tt, %Bc : {D2}, {D2}) outs(%O2 : {D2})",
         "  (%m_x: {t}, %m_y: {t}, %m_o: {t}) {{",
         "    %m_p = arith.mulf %m_x, %m_y : {t}",
         "    %m_t = math.tanh %m_p : {t}",
         "    linalg.yield %m_t : {t}",
         "  }}"] +
        loss("C", ["?", "?"])),
    "dyn_reduce_max": tensor_case(
        opaque_sizes([3, 4]) +
        build("A", [3, 4], "a", "b", 0, ["%n3", "%n4"]) +
        build("B", [3], "b", "a", 1, ["%n3"]) +
        [f"%C = linalg.reduce ins(%A : {D2}) outs(%B : {D1}) dimensions = [1]",
         "  (%r_in: {t}, %r_acc: {t}) {{",
         "    %r_m = arith.maximumf %r_in, %r_acc : {t}",
         "    linalg.yield %r_m : {t}",
         "  }}"] +
        loss("C", ["?"])),
    "dyn_conv_pool": tensor_case(
        opaque_sizes([1, 2, 3, 5]) +
        build("I", [1, 5, 5, 2], "a", "b", 0, ["%n1", "%n5", "%n5", "%n2"]) +
        build("F", [3, 3, 2, 2], "b", "a", 1, ["%n3", "%n3", "%n2", "%n2"]) +
        dynamic_zeros("O", ["%n1", "%n3", "%n3", "%n2"]) +
        dynamic_zeros("S", ["%n1", "%n2", "%n2", "%n2"]) +
        ["%W = tensor.empty(%n2, %n2) : " + D2,
         "%low = arith.constant -1.0e30 : {t}",
         f"%Me = tensor.empty(%n1, %n2, %n2, %n2) : {D4}",
         f"%M0 = linalg.fill ins(%low : {{t}}) outs(%Me : {D4}) -> {D4}",
         f"%Cv = linalg.conv_2d_nhwc_hwcf {{{{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}}} ins(%I, %F : {D4}, {D4}) outs(%O : {D4}) -> {D4}",
         f"%Ps = linalg.pooling_nhwc_sum {{{{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}}} ins(%Cv, %W : {D4}, {D2}) outs(%S : {D4}) -> {D4}",
         f"%Pm = linalg.pooling_nhwc_max {{{{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}}} ins(%Cv, %W : {D4}, {D2}) outs(%M0 : {D4}) -> {D4}",
         f"%C = arith.mulf %Ps, %Pm : {D4}"] +
        loss("C", ["?", "?", "?", "?"])),
    "dyn_slices_extract_insert": tensor_case(
        opaque_sizes([0, 1, 2, 3, 4, 5]) +
        build("A", [4, 5], "a", "b", 0, ["%n4", "%n5"]) +
        build("B", [2, 3], "b", "a", 1, ["%n2", "%n3"]) +
        [f"%S = tensor.extract_slice %A[%n1, %n1] [%n2, %n3] [1, 1] : {D2} to {D2}",
         f"%P = arith.mulf %S, %B : {D2}",
         f"%I = tensor.insert_slice %P into %A[%n2, %n0] [%n2, %n3] [1, 2] : {D2} into {D2}",
         f"%x01 = tensor.extract %I[%n0, %n1] : {D2}",
         f"%x32 = tensor.extract %I[%n3, %n2] : {D2}",
         "%prod = arith.mulf %x01, %x32 : {t}",
         f"%C = tensor.insert %prod into %I[%n1, %n4] : {D2}"] +
        loss("C", ["?", "?"])),
    "dyn_splat_generate_reshape": tensor_case(
        opaque_sizes([2, 3, 4, 6]) +
        ["%ab = arith.mulf %a, %b : {t}",
         f"%Sp = tensor.splat %ab[%n2, %n6] : {D2}",
         "%G = tensor.generate %n2, %n6 {{",
         "^bb0(%g_i: index, %g_j: index):",
         "  %g_k = arith.addi %g_i, %g_j : index",
         "  %g_l = arith.index_cast %g_k : index to i64",
         "  %g_f = arith.sitofp %g_l : i64 to {t}",
         "  %g_s = math.sin %g_f : {t}",
         "  %g_u = arith.mulf %a, %g_s : {t}",
         "  tensor.yield %g_u : {t}",
         f"}}}} : {D2}",
         f"%GS = arith.mulf %G, %Sp : {D2}",
         "%shape = tensor.from_elements %n3, %n4 : tensor<2xindex>",
         f"%R = tensor.reshape %GS(%shape) : ({D2}, tensor<2xindex>) -> {D2}",
         # Two dynamic sizes in a group (ad-legalize-for-bufferization
         # makes that lowerable).
         f"%E = tensor.expand_shape %R [[0], [1, 2]] output_shape [%n3, %n2, %n2] : {D2} into {D3}",
         f"%Td = math.tanh %E : {D3}",
         # Two dynamic sizes in a group: its adjoint reshapes instead.
         f"%C = tensor.collapse_shape %Td [[0, 1], [2]] : {D3} into {D2}"] +
        loss("C", ["?", "?"])),
    "dyn_concat_cast": tensor_case(
        opaque_sizes([1, 2, 3]) +
        build("A", [2, 3], "a", "b", 0, ["%n2", "%n3"]) +
        build("B", [1, 3], "b", "a", 1, ["%n1", "%n3"]) +
        [f"%J = tensor.concat dim(0) %A, %B : ({D2}, {D2}) -> {D2}",
         "%Js = tensor.cast %J : " + D2 + " to tensor<3x?x{t}>",
         "%Jt = math.sin %Js : tensor<3x?x{t}>",
         "%C = tensor.cast %Jt : tensor<3x?x{t}> to " + D2] +
        loss("C", ["?", "?"])),
    # The recurrence with a trip count known only at run time, in a nest.
    "dyn_loop_recurrence": tensor_case(
        opaque_sizes([0, 1, 2, 3]) +
        build("W", [3, 3], "a", "b", 0) + build("H", [3], "b", "a", 1) +
        ["%C = scf.for %i = %n0 to %n3 step %n1 iter_args(%h = %H) -> (tensor<3x{t}>) {{",
         "  %h2 = scf.for %j = %n0 to %n2 step %n1 iter_args(%g = %h) -> (tensor<3x{t}>) {{",
         "    %rz = arith.constant 0.0 : {t}",
         "    %re = tensor.empty() : tensor<3x{t}>",
         "    %rf = linalg.fill ins(%rz : {t}) outs(%re : tensor<3x{t}>) -> tensor<3x{t}>",
         "    %m = linalg.matvec ins(%W, %g : tensor<3x3x{t}>, tensor<3x{t}>) outs(%rf : tensor<3x{t}>) -> tensor<3x{t}>",
         "    %n = math.sin %m : tensor<3x{t}>",
         "    scf.yield %n : tensor<3x{t}>",
         "  }}",
         "  %q = arith.mulf %h2, %h2 : tensor<3x{t}>",
         "  scf.yield %q : tensor<3x{t}>",
         "}}"] +
        loss("C", [3])),
    "dyn_loop_insert": tensor_case(
        opaque_sizes([0, 1, 6]) +
        dynamic_zeros("T0", ["%n6"]) +
        [f"%C = scf.for %i = %n0 to %n6 step %n1 iter_args(%acc = %T0) -> ({D1}) {{{{",
         "  %ii = arith.index_cast %i : index to i64",
         "  %fi = arith.sitofp %ii : i64 to {t}",
         "  %v = arith.mulf %a, %fi : {t}",
         "  %w = arith.addf %v, %b : {t}",
         "  %s = math.sin %w : {t}",
         f"  %u = tensor.insert %s into %acc[%i] : {D1}",
         f"  scf.yield %u : {D1}",
         "}}"] +
        loss("C", ["?"])),
}
TENSORS.update(DYNAMIC_TENSORS)

ARG_NAMES = ["a", "b", "c"]


def function(name, arity, body, t, prefix, ints=()):
    """A case function: `arity` float arguments of type t, then integer
    arguments %n0, %n1, ... of the types in `ints`. Calls of support
    functions get the `prefix` type."""
    args = ", ".join([f"%{ARG_NAMES[i]}: {t}" for i in range(arity)] +
                     [f"%n{i}: {it}" for i, it in enumerate(ints)])
    lines = [f"func.func @{name}({args}) -> {t} {{"]
    lines += ["  " + line.replace("call @", f"call @{prefix}_") for line in body]
    lines += [f"  return %r : {t}", "}"]
    return lines


def convert(value, src, dst):
    """MLIR op converting `value` between float types (none if equal)."""
    if src == dst:
        return None
    op = "arith.truncf" if dst != "f64" and src == "f64" else "arith.extf"
    return f"{op} %{value} : {src} to {dst}"


def check_function(name, arity, t, ints=()):
    """Checks the gradient of @name (type t) against FD of @name_ref (f64)."""
    args = ", ".join([f"%p{i}: f64" for i in range(arity)] +
                     [f"%n{i}: {it}" for i, it in enumerate(ints)])
    int_args = [f"%n{i}" for i in range(len(ints))]
    out = [f"func.func @check_{name}(%point: i64, {args}) {{"]
    typed, exact = [], []
    for i in range(arity):
        conv = convert(f"p{i}", "f64", t)
        if conv:
            out.append(f"  %x{i} = {conv}")
            out.append(f"  %e{i} = arith.extf %x{i} : {t} to f64")
            typed.append(f"%x{i}"), exact.append(f"%e{i}")
        else:
            typed.append(f"%p{i}"), exact.append(f"%p{i}")
    grads = ", ".join(f"%g{i}" for i in range(arity))
    types = ", ".join([t] * arity)
    all_types = ", ".join([t] * arity + list(ints))
    out.append(f"  {grads} = ad.grad @case_{name}({', '.join(typed + int_args)})"
               f" : ({all_types}) -> ({types})")
    ref_types = ", ".join(["f64"] * arity + list(ints))
    out.append(f"  %tol = arith.constant {TOLERANCE[t]:e} : f64")
    for i in range(arity):
        g = f"%g{i}"
        if t != "f64":
            out.append(f"  %gw{i} = arith.extf %g{i} : {t} to f64")
            g = f"%gw{i}"
        plus = list(exact)
        minus = list(exact)
        plus[i], minus[i] = f"%xp{i}", f"%xm{i}"
        out += [
            f"  %xp{i}, %xm{i} = func.call @step({exact[i]}) : (f64) -> (f64, f64)",
            f"  %fp{i} = func.call @case_{name}_ref({', '.join(plus + int_args)})"
            f" : ({ref_types}) -> f64",
            f"  %fm{i} = func.call @case_{name}_ref({', '.join(minus + int_args)})"
            f" : ({ref_types}) -> f64",
            f"  %df{i} = arith.subf %fp{i}, %fm{i} : f64",
            f"  %dx{i} = arith.subf %xp{i}, %xm{i} : f64",
            f"  %fd{i} = arith.divf %df{i}, %dx{i} : f64",
            f'  vector.print str "{name} p"',
            "  vector.print %point : i64 punctuation <no_punctuation>",
            f'  vector.print str " d{ARG_NAMES[i]}: "',
            f"  func.call @report({g}, %fd{i}, %tol) : (f64, f64, f64) -> ()",
        ]
    out += ["  return", "}"]
    return out


HELPERS = """\
// x +- h with h = 1e-5 * max(1, |x|): central differences in f64 then err
// by about 1e-10 relative for the smooth cases here.
func.func @step(%x: f64) -> (f64, f64) {
  %one = arith.constant 1.0 : f64
  %eps = arith.constant 1.0e-5 : f64
  %ax = math.absf %x : f64
  %s = arith.maximumf %ax, %one : f64
  %h = arith.mulf %s, %eps : f64
  %p = arith.addf %x, %h : f64
  %m = arith.subf %x, %h : f64
  return %p, %m : f64, f64
}

// Prints "ok" when |g - fd| <= tol * max(|fd|, 0.01), else both numbers.
func.func @report(%g: f64, %fd: f64, %tol: f64) {
  %floor = arith.constant 1.0e-2 : f64
  %d = arith.subf %g, %fd : f64
  %ad = math.absf %d : f64
  %afd = math.absf %fd : f64
  %scale = arith.maximumf %afd, %floor : f64
  %bound = arith.mulf %tol, %scale : f64
  %ok = arith.cmpf ole, %ad, %bound : f64
  scf.if %ok {
    vector.print str "ok\\n"
  } else {
    vector.print str "FAIL gradient "
    vector.print %g : f64 punctuation <no_punctuation>
    vector.print str " finite difference "
    vector.print %fd : f64
  }
  return
}
"""


def generate(dialect, cases, t, support=()):
    lines = [
        f"// Generated by utils/generate_rule_tests.py: do not edit.",
        f"// Reverse rules ({dialect} dialect) in {t}: ad.grad against "
        f"central finite",
        f"// differences of the f64 reference, tolerance {TOLERANCE[t]:g} "
        f"(docs/Testing.md).",
        "// RUN: ad-opt %s --ad-lower-to-llvm | %run | FileCheck %s",
        "",
    ]
    checks, calls = [], []
    for typ in dict.fromkeys([t, "f64"]):
        lines += [line.format(t=typ).replace("@", "@" + typ + "_")
                  if "@" in line else line.format(t=typ) for line in support]
    for name, spec in cases.items():
        arity, body, points = spec[0], spec[1], spec[2]
        ref = spec[3] if len(spec) > 3 and spec[3] else body
        ints = spec[4] if len(spec) > 4 else ()
        typed_body = body(t)
        if typed_body is None:
            continue
        # Prefixed: a bare @erf or @sin would clash with the libm symbols the
        # math lowering calls.
        lines += function(f"case_{name}", arity, typed_body, t, t, ints)
        lines += [""]
        lines += function(f"case_{name}_ref", arity, ref("f64"), "f64",
                          "f64", ints) + [""]
        lines += check_function(name, arity, t, ints) + [""]
        for index, point in enumerate(points):
            consts = []
            arg_types = ["f64"] * arity + list(ints)
            for i, (v, at) in enumerate(zip(point, arg_types)):
                calls.append(f"  %{name}_{index}_{i} = arith.constant {v!r} : {at}")
                consts.append(f"%{name}_{index}_{i}")
            calls.append(f"  %{name}_{index}_id = arith.constant {index} : i64")
            calls.append(
                f"  func.call @check_{name}(%{name}_{index}_id, {', '.join(consts)})"
                f" : (i64, {', '.join(arg_types)}) -> ()")
            for i in range(arity):
                checks.append(f"// CHECK: {name} p{index} d{ARG_NAMES[i]}: ok")
    lines += HELPERS.splitlines() + [""]
    lines += ["func.func @main() {"] + calls + ["  return", "}", ""]
    lines += ["// CHECK-NOT: FAIL"] + checks + ["// CHECK-NOT: FAIL", ""]
    return "\n".join(lines)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "test/Integration"
    out_dir = os.path.join(root, "Rules")
    os.makedirs(out_dir, exist_ok=True)
    for dialect, cases in (("arith", ARITH), ("math", MATH)):
        for t in TOLERANCE:
            path = os.path.join(out_dir, f"{dialect}-{t}.mlir")
            with open(path, "w") as f:
                f.write(generate(dialect, cases, t))
            path = os.path.join(out_dir, f"{dialect}-tensor-{t}.mlir")
            with open(path, "w") as f:
                f.write(generate(dialect + " on tensors", tensorized(cases),
                                 t))
    for t in ("f64", "f32"):
        path = os.path.join(root, f"programs-{t}.mlir")
        with open(path, "w") as f:
            f.write(generate("func", PROGRAMS, t, PROGRAM_SUPPORT))
        path = os.path.join(root, f"control-flow-{t}.mlir")
        with open(path, "w") as f:
            f.write(generate("scf", CONTROL_FLOW, t))
        path = os.path.join(root, f"tensors-{t}.mlir")
        with open(path, "w") as f:
            f.write(generate("linalg/tensor", TENSORS, t))
        path = os.path.join(root, f"recursion-{t}.mlir")
        with open(path, "w") as f:
            f.write(generate("func", RECURSION, t, RECURSION_SUPPORT))


if __name__ == "__main__":
    main()
