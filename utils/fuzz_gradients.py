#!/usr/bin/env python3
"""Random differentiable MLIR programs, their gradients checked against
finite differences.

Each program is a few functions written with func, scf, cf, arith, math,
tensor and linalg (see README "What is differentiated"), built from a
seeded random generator: every arith and math op with a rule, its
arguments kept inside its domain by construction (log of x*x + c, asin of
tanh(x) * 0.9, divisions by x*x + c, powf of a positive base, ...) and
magnitudes kept bounded (every value carries an estimate of its bound,
and a value about to grow too large is scaled down first); calls (one
callee from several places, results unused), scf.if, scf.for (static and
dynamic bounds, nesting, float and integer iter_args), scf.while
(counting, or growing a value past a data-dependent limit with an
iteration guard), scf.index_switch, unstructured cf (loops, diamonds,
switches, early returns, with block arguments), recursion (self, tree and
mutual, depth from an index argument or from the data), and tensors.
Programs are written in f64 or f32.

The function @f of each program (one float result, or a rank-0 tensor) is
differentiated in a generated caller with ad.grad, ad.value_and_grad or
ad.forward + ad.pullback, sometimes for a `wrt` subset. Every number is
printed as its bit pattern (an i64), so Python reads exact values. The
reference is a second module holding only the primal functions (the f64
twin of an f32 program, in which the f32 -> f64 -> f32 conversions become
identities), lowered by the same pipeline, which without ad ops is
upstream lowering alone; it evaluates @f at the point and at x +- h and
x +- h/4 along each differentiated scalar argument (and along a random
direction of each tensor argument), h = 1e-5 * max(1, |x|). The calls go
through non-inlined wrappers, so no value is folded at compile time.

For each point and argument:

- fd1, fd2 are the central differences at h and h/4 (divided by the exact
  distance between the two evaluation points). They agree to about
  h^2 |f'''| plus rounding noise eps * |f| / h on smooth functions; where
  they differ by more than SKIP_TOLERANCE * max(|fd2|, FLOOR), a kink, a
  branch flip or a trip-count change lies within h of the point, and the
  point is skipped (counted, never a failure).
- The reference is Richardson's extrapolation fd2 + (fd2 - fd1) / 15, and
  the check passes when |gradient - reference| <= TOLERANCE[T] *
  max(|reference|, FLOOR), the criterion of docs/Testing.md.
- A gradient that is NaN or infinite where the primal is finite fails;
  the primal of ad.value_and_grad / ad.forward must equal the plain call
  (to PRIMAL_TOLERANCE[T], relative), and a pullback applied twice must
  give the same gradients (bit for bit).

Tolerances: f64 1e-6, the contract of the existing execution tests; the
accepted reference is at least 10x more accurate (fd1 and fd2 agree to
1e-7), and AD in f64 is exact to about 1e-13 on these programs. f32 2e-3:
random programs chain tens of ops through loops, so the f32 gradient
carries eps32 (1.2e-7) amplified by condition numbers up to 10^3 on some
points (the largest f32 error seen over thousands of correct programs is
in docs/Testing.md); a wrong rule, a missing term or a lost cotangent is
off by far more. FLOOR = 0.01 keeps the bound meaningful for zero
derivatives.

When ad-opt fails on a batch, each program is compiled alone to find the
culprit; when mlir-runner fails, the programs that finished keep their
results, the one that started without finishing is blamed and the rest
run again. Outcomes per program: ok, skipped (no point could be checked),
WRONG GRADIENT, WRONG PRIMAL, ad-opt CRASH, ad-opt DIAGNOSTIC (message
recorded), INVALID IR (a verifier error after an ad pass), RUNNER FAILURE,
and REFERENCE FAILURE (the primal-only module failed: a generator bug).

Usage:

    utils/fuzz_gradients.py --seed 1 --count 200 [--keep-dir DIR] [--jobs 2]

Program i of seed S depends only on (S, i), whatever the batch size and
the number of jobs. Exits 1 when any program fails.
"""

import argparse
import concurrent.futures
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction

# Checking (see the module docstring for the reasons).
TOLERANCE = {"f64": 1e-6, "f32": 2e-3}
SKIP_TOLERANCE = {"f64": 1e-7, "f32": 1e-7}
PRIMAL_TOLERANCE = {"f64": 1e-12, "f32": 1e-5}
FLOOR = 0.01
STEP = 1e-5

# Outcomes, worst first.
WRONG_GRADIENT = "WRONG GRADIENT"
WRONG_PRIMAL = "WRONG PRIMAL"
CRASH = "ad-opt CRASH"
DIAGNOSTIC = "ad-opt DIAGNOSTIC"
INVALID_IR = "INVALID IR"
RUNNER_FAILURE = "RUNNER FAILURE"
REFERENCE_FAILURE = "REFERENCE FAILURE"
SKIPPED = "skipped"
OK = "ok"
FAILURES = [WRONG_GRADIENT, WRONG_PRIMAL, CRASH, DIAGNOSTIC, INVALID_IR,
            RUNNER_FAILURE, REFERENCE_FAILURE]

# Constructs that trigger known bugs, by the name --avoid takes.
KNOWN_BUGS = {}

LLVM_BIN = "/usr/lib/llvm-22/bin"
RUNTIME_LIBS = ",".join(f"/usr/lib/llvm-22/lib/{lib}" for lib in
                        ("libmlir_runner_utils.so",
                         "libmlir_c_runner_utils.so"))
TIMEOUT = 120


# ---------------------------------------------------------------------------
# Values and regions
# ---------------------------------------------------------------------------

@dataclass
class Value:
    """An SSA value of the program being generated. `bound` estimates the
    largest magnitude it takes for arguments of magnitude <= 2; a tensor
    has the sizes `shape` (known to the generator) and a '?' in its type
    where `dynamic` says so."""
    name: str
    bound: float
    shape: tuple = None
    dynamic: tuple = ()
    elem: str = "$T"

    @property
    def type(self):
        return value_type(self.shape, self.dynamic, self.elem)

    def like(self, name, bound, elem=None):
        """A value of the same shape named `name`."""
        return Value(name, bound, self.shape, self.dynamic,
                     elem or self.elem)


def value_type(shape, dynamic, elem):
    """The MLIR type of a scalar (shape None) or a tensor."""
    if shape is None:
        return elem
    dims = "".join(("?" if d else str(s)) + "x"
                   for s, d in zip(shape, dynamic))
    return f"tensor<{dims}{elem}>"


class Region:
    """The lines of a region (or a straight run of blocks) being written
    and the values visible in it: float values (scalars and tensors),
    index values, and `depth`, the nesting of control flow."""

    def __init__(self, indent, floats=(), indices=(), depth=0):
        self.indent = indent
        self.lines = []
        self.floats = list(floats)
        self.indices = list(indices)
        self.depth = depth

    def child(self):
        """A nested region: it sees everything visible here."""
        return Region(self.indent + 1, self.floats, self.indices,
                      self.depth + 1)

    def sibling(self):
        """A block at the same level (a successor in a CFG): it sees what
        is visible here, and what it defines is not visible after it."""
        return Region(self.indent, self.floats, self.indices, self.depth)

    def emit(self, line):
        self.lines.append("  " * self.indent + line)

    def label(self, line):
        self.lines.append("  " * (self.indent - 1) + line)


def flit(value):
    """A float literal MLIR parses back to exactly `value`."""
    text = repr(float(value))
    if "e" in text and "." not in text:
        text = f"{value:.17e}"
    return text


@dataclass
class Callee:
    """A generated function others may call: its argument types in order
    ('$T' arguments are bounded by 2, 'index' ones by 5), float results
    with their bounds."""
    name: str
    types: list
    bounds: list
    recursive: bool = False


# ---------------------------------------------------------------------------
# Scalar and elementwise ops, their arguments kept in their domains
# ---------------------------------------------------------------------------

def op_negf(g, r, x):
    return g.un(r, "arith.negf", x, x.bound)


def op_exp(g, r, x):
    op = g.pick(["math.exp", "math.exp2", "math.expm1"])
    return g.un(r, op, g.limit(r, x, 2.0), 7.5)


def op_log(g, r, x):
    op = g.pick(["math.log", "math.log2", "math.log10"])
    p = g.positive(r, x, g.pick([0.5, 1.0, 2.0]))
    return g.un(r, op, p, abs(math.log(0.5)) + math.log2(1 + p.bound))


def op_log1p(g, r, x):
    if g.chance(0.5):
        return g.un(r, "math.log1p", g.positive(r, x, 0.0),
                    math.log1p(min(x.bound, 8.0) ** 2))
    return g.un(r, "math.log1p", g.unit(r, x, 0.9), 2.31)


def op_sqrt(g, r, x):
    op = g.pick(["math.sqrt", "math.rsqrt"])
    p = g.positive(r, x, 0.5)
    return g.un(r, op, p, max(1.5, math.sqrt(p.bound)))


def op_cbrt(g, r, x):
    p = g.positive(r, x, 0.5)
    if g.chance(0.5):
        p = g.un(r, "arith.negf", p, p.bound)
    return g.un(r, "math.cbrt", p, max(1.0, p.bound ** (1 / 3)))


def op_trig(g, r, x):
    op = g.pick(["math.sin", "math.cos"])
    return g.un(r, op, g.limit(r, x, 6.0), 1.0)


def op_tan(g, r, x):
    return g.un(r, "math.tan", g.unit(r, x, 1.2), 2.6)


def op_arc(g, r, x):
    op = g.pick(["math.asin", "math.acos", "math.atanh"])
    return g.un(r, op, g.unit(r, x, 0.9), 3.2)


def op_saturating(g, r, x):
    op = g.pick(["math.atan", "math.tanh", "math.erf", "math.erfc"])
    return g.un(r, op, g.limit(r, x, 4.0), 2.0)


def op_asinh(g, r, x):
    return g.un(r, "math.asinh", x, 1 + math.log1p(x.bound))


def op_acosh(g, r, x):
    p = g.positive(r, x, 1.5)
    return g.un(r, "math.acosh", p, 1 + math.log1p(p.bound))


def op_hyperbolic(g, r, x):
    op = g.pick(["math.sinh", "math.cosh"])
    return g.un(r, op, g.limit(r, x, 2.0), 3.8)


def op_absf(g, r, x):
    return g.un(r, "math.absf", x, x.bound)


def op_rounding(g, r, x):
    """x * round(y): the rounding op has a zero derivative, the product
    makes it matter."""
    op = g.pick(["math.floor", "math.ceil", "math.round", "math.roundeven",
                 "math.trunc"])
    y = g.limit(r, g.other(r, x), 4.0)
    q = g.un(r, op, y, y.bound + 1)
    return g.bin(r, "arith.mulf", g.limit(r, x, 3.0), q, 3.0 * q.bound)


def op_fpowi(g, r, x):
    if g.chance(0.5):
        k = g.pick([2, 3])
        base = g.limit(r, x, 1.5)
    else:
        k = g.pick([-1, -2])
        base = g.positive(r, g.limit(r, x, 2.0), 0.5)
    n = g.int_const(r, k, "i32", base)
    bound = max(abs(base.bound) ** k, 2.0 ** (-k)) if k > 0 else 2.0 ** -k
    return g.emit_value(r, base.like(None, bound),
                        f"math.fpowi {base.name}, {n} : {base.type}, "
                        f"{value_type(base.shape, base.dynamic, 'i32')}")


def op_through_int(g, r, x):
    """x * sitofp(fptosi(y)) (or the unsigned pair on a positive y): a
    path through an integer that carries no derivative."""
    y = g.limit(r, g.other(r, x), 4.0)
    signed = g.chance(0.5)
    if not signed:
        y = g.positive(r, g.limit(r, y, 2.0), 0.0)
    it = g.pick(["i32", "i64"])
    ity = value_type(y.shape, y.dynamic, it)
    i = g.fresh()
    r.emit(f"{i} = arith.{'fptosi' if signed else 'fptoui'} {y.name} : "
           f"{y.type} to {ity}")
    f = g.emit_value(r, y.like(None, y.bound + 1),
                     f"arith.{'sitofp' if signed else 'uitofp'} {i} : "
                     f"{ity} to {y.type}")
    return g.bin(r, "arith.mulf", g.limit(r, x, 3.0), f, 3.0 * f.bound)


def op_widen(g, r, x):
    """extf to f64, an op there, truncf back (f32 programs only; in the f64
    twin the conversions are identities)."""
    w = g.emit_value(r, x.like(None, x.bound, "$W"),
                     f"arith.extf {x.name} : {x.type} to "
                     f"{value_type(x.shape, x.dynamic, '$W')}")
    y = g.un(r, g.pick(["math.sin", "math.tanh", "math.atan"]),
             g.limit(r, w, 4.0), 1.6)
    return g.emit_value(r, x.like(None, y.bound),
                        f"arith.truncf {y.name} : {y.type} to {x.type}")


def op_index_float(g, r, x):
    """x * float(n) for an index n in scope (a loop counter, a size)."""
    n = g.pick(r.indices)
    i = g.fresh()
    r.emit(f"{i} = arith.index_cast {n} : index to i64")
    f = g.fresh()
    op = g.pick(["arith.sitofp", "arith.uitofp"])
    r.emit(f"{f} = {op} {i} : i64 to $T")
    fv = Value(f, 8.0)
    if x.shape is not None:
        fv = g.splat(r, fv, x)
    return g.bin(r, "arith.mulf", g.limit(r, x, 1.0), fv, 8.0)


def op_addsub(g, r, x):
    y = g.other(r, x)
    return g.bin(r, g.pick(["arith.addf", "arith.subf"]), x, y,
                 x.bound + y.bound)


def op_mulf(g, r, x):
    a, b = g.limit(r, x, 3.0), g.limit(r, g.other(r, x), 3.0)
    return g.bin(r, "arith.mulf", a, b, a.bound * b.bound)


def op_divf(g, r, x):
    c = g.pick([0.5, 1.0, 2.0])
    d = g.positive(r, g.other(r, x), c)
    return g.bin(r, "arith.divf", x, d, x.bound / c)


def op_remf(g, r, x):
    d = g.positive(r, g.limit(r, g.other(r, x), 2.0), 0.5)
    return g.bin(r, "arith.remf", x, d, d.bound)


def op_minmax(g, r, x):
    y = g.other(r, x)
    op = g.pick(["arith.maximumf", "arith.minimumf", "arith.maxnumf",
                 "arith.minnumf"])
    return g.bin(r, op, x, y, max(x.bound, y.bound))


def op_select(g, r, x):
    y = g.other(r, x)
    a, b = g.pick_two(r, x)
    cond = g.compare(r, a, b)
    ctype = value_type(x.shape, x.dynamic, "i1")
    types = f"{ctype}, {x.type}" if x.shape is not None else x.type
    return g.emit_value(r, x.like(None, max(x.bound, y.bound)),
                        f"arith.select {cond}, {x.name}, {y.name} : {types}")


def op_atan2(g, r, x):
    d = g.positive(r, g.limit(r, g.other(r, x), 3.0), 0.3)
    return g.bin(r, "math.atan2", x, d, 1.6)


def op_powf(g, r, x):
    base = g.positive(r, g.limit(r, x, 1.5), 0.5)
    e = g.limit(r, g.other(r, x), 2.0)
    return g.bin(r, "math.powf", base, e, base.bound ** 2 + 4.0)


def op_copysign(g, r, x):
    y = g.other(r, x)
    return g.bin(r, "math.copysign", x, y, x.bound)


def op_fma(g, r, x):
    a, b = g.limit(r, x, 3.0), g.limit(r, g.other(r, x), 3.0)
    c = g.other(r, x)
    return g.emit_value(r, x.like(None, a.bound * b.bound + c.bound),
                        f"math.fma {a.name}, {b.name}, {c.name} : {x.type}")


# name -> (weight, op); every op takes the value it mainly transforms and
# may pick others of the same type from the region.
ELEMENTWISE_OPS = {
    "negf": (1, op_negf),
    "exp": (2, op_exp),
    "log": (2, op_log),
    "log1p": (1, op_log1p),
    "sqrt": (2, op_sqrt),
    "cbrt": (1, op_cbrt),
    "sin_cos": (3, op_trig),
    "tan": (1, op_tan),
    "asin_acos_atanh": (2, op_arc),
    "atan_tanh_erf": (3, op_saturating),
    "asinh": (1, op_asinh),
    "acosh": (1, op_acosh),
    "sinh_cosh": (1, op_hyperbolic),
    "absf": (1, op_absf),
    "rounding": (1, op_rounding),
    "fpowi": (1, op_fpowi),
    "through_int": (1, op_through_int),
    "widen": (1, op_widen),
    "index_float": (1, op_index_float),
    "addf_subf": (4, op_addsub),
    "mulf": (4, op_mulf),
    "divf": (2, op_divf),
    "remf": (1, op_remf),
    "min_max": (2, op_minmax),
    "select": (2, op_select),
    "atan2": (1, op_atan2),
    "powf": (1, op_powf),
    "copysign": (1, op_copysign),
    "fma": (1, op_fma),
}


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------

class Generator:
    """Writes the functions of one random program: helpers (straight-line
    with structured control flow, unstructured, recursive) and the
    differentiated @f. Text uses `$T` for the float type, `$W` for f64
    (the wide type of an f32 program), `@$P` for the program's prefix."""

    def __init__(self, rng, elem, avoid):
        self.rng = rng
        self.elem = elem
        self.avoid = avoid
        self.counter = 0
        self.functions = []
        self.callees = []
        self.features = set()
        self.budget = 0
        self.rank0 = False

    # -- randomness ---------------------------------------------------------

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, items):
        return self.rng.choice(list(items))

    def weighted(self, table):
        """A key of `table` (name -> (weight, ...)) chosen by weight."""
        names = list(table)
        return self.rng.choices(names, [table[n][0] for n in names])[0]

    def fresh(self, prefix="%v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def note(self, feature):
        self.features.add(feature)

    # -- emitting ops -------------------------------------------------------

    def emit_value(self, r, value, text):
        """Emits `%name = text` for `value` (its name is made here), makes
        it visible and returns it."""
        value.name = self.fresh()
        r.emit(f"{value.name} = {text}")
        r.floats.append(value)
        return value

    def un(self, r, op, x, bound):
        return self.emit_value(r, x.like(None, bound),
                               f"{op} {x.name} : {x.type}")

    def bin(self, r, op, x, y, bound):
        return self.emit_value(r, x.like(None, bound),
                               f"{op} {x.name}, {y.name} : {x.type}")

    def const(self, r, value, like):
        """A constant of like's type (a splat for tensors)."""
        name = self.fresh()
        if like.shape is None:
            r.emit(f"{name} = arith.constant {flit(value)} : {like.elem}")
            return Value(name, abs(value), elem=like.elem)
        if not any(like.dynamic):
            r.emit(f"{name} = arith.constant dense<{flit(value)}> : "
                   f"{like.type}")
            return like.like(name, abs(value))
        scalar = self.const(r, value, Value("", 0, elem=like.elem))
        return self.splat(r, scalar, like)

    def int_const(self, r, value, itype, like):
        """An integer constant of itype, shaped like `like`."""
        name = self.fresh()
        if like.shape is None:
            r.emit(f"{name} = arith.constant {value} : {itype}")
        elif not any(like.dynamic):
            r.emit(f"{name} = arith.constant dense<{value}> : "
                   f"{value_type(like.shape, like.dynamic, itype)}")
        else:
            scalar = self.int_const(r, value, itype, Value("", 0))
            name = self.fresh()
            r.emit(f"{name} = tensor.splat {scalar}[{self.dims(r, like)}] : "
                   f"{value_type(like.shape, like.dynamic, itype)}")
        return name

    def index(self, r, value):
        name = self.fresh("%c")
        r.emit(f"{name} = arith.constant {value} : index")
        return name

    def splat(self, r, scalar, like):
        """tensor.splat of a scalar to like's type."""
        name = self.fresh()
        dims = self.dims(r, like)
        sizes = f"[{dims}]" if dims else ""
        r.emit(f"{name} = tensor.splat {scalar.name}{sizes} : {like.type}")
        return like.like(name, scalar.bound, scalar.elem)

    def dims(self, r, t):
        """The dynamic sizes of tensor t, read with tensor.dim."""
        names = []
        for i, dyn in enumerate(t.dynamic):
            if dyn:
                d = self.fresh()
                r.emit(f"{d} = tensor.dim {t.name}, {self.index(r, i)} : "
                       f"{t.type}")
                names.append(d)
        return ", ".join(names)

    # -- keeping values in range --------------------------------------------

    def limit(self, r, x, bound):
        """x scaled (or squashed) so that its bound is at most `bound`."""
        if x.bound <= bound:
            return x
        if self.chance(0.7):
            c = self.const(r, bound / x.bound, x)
            return self.bin(r, "arith.mulf", x, c, bound)
        s = self.un(r, self.pick(["math.tanh", "math.sin", "math.atan"]),
                    x, 1.6)
        return self.limit(r, s, bound)

    def positive(self, r, x, c):
        """x * x + c (at least c)."""
        x = self.limit(r, x, 3.0)
        sq = self.bin(r, "arith.mulf", x, x, x.bound ** 2)
        if c == 0.0:
            return sq
        return self.bin(r, "arith.addf", sq, self.const(r, c, x),
                        sq.bound + c)

    def unit(self, r, x, k):
        """tanh(x) * k, inside (-k, k)."""
        t = self.un(r, "math.tanh", x, 1.0)
        return self.bin(r, "arith.mulf", t, self.const(r, k, x), k)

    def squash(self, r, x):
        """A bounded smooth function of x (|result| <= 1.6)."""
        if self.chance(0.3):
            d = self.positive(r, x, 1.0)
            return self.bin(r, "arith.divf", self.limit(r, x, 3.0), d, 1.6)
        return self.un(r, self.pick(["math.tanh", "math.sin", "math.atan"]),
                       self.limit(r, x, 5.0), 1.6)

    # -- choosing operands --------------------------------------------------

    def operand(self, r, like=None):
        """A float value in scope of like's type (a $T scalar by default),
        recent ones preferred."""
        wanted = like.type if like else "$T"
        pool = [v for v in r.floats if v.type == wanted]
        if self.chance(0.6):
            return pool[-1] if self.chance(0.4) else self.pick(pool[-4:])
        return self.pick(pool)

    def other(self, r, x):
        """A second operand of x's type (sometimes a constant)."""
        if self.chance(0.15):
            return self.const(r, self.pick([-1.5, -0.5, 0.25, 0.75, 2.0]), x)
        return self.operand(r, x)

    def pick_two(self, r, x):
        return self.operand(r, x), self.other(r, x)

    def compare(self, r, a, b):
        """An i1 (or tensor of i1) comparing a and b."""
        name = self.fresh()
        pred = self.pick(["olt", "ogt", "ole", "oge", "ult", "ugt"])
        r.emit(f"{name} = arith.cmpf {pred}, {a.name}, {b.name} : {a.type}")
        return name

    def condition(self, r):
        """A scalar i1 from the data or from an index in scope."""
        if r.indices and self.chance(0.3):
            n = self.pick(r.indices)
            c = self.index(r, self.pick([0, 1, 2, 3]))
            name = self.fresh()
            pred = self.pick(["slt", "sgt", "eq", "ne", "ule"])
            r.emit(f"{name} = arith.cmpi {pred}, {n}, {c} : index")
            return name
        a = self.operand(r)
        return self.compare(r, a, self.other(r, a))

    # -- statements ---------------------------------------------------------

    def elementwise(self, r, x=None):
        """One random op of ELEMENTWISE_OPS on x (or a value in scope)."""
        x = x or self.operand(r)
        while True:
            name = self.weighted(ELEMENTWISE_OPS)
            if name == "widen" and self.elem != "f32":
                continue
            if name == "index_float" and not r.indices:
                continue
            break
        self.note(name)
        return ELEMENTWISE_OPS[name][1](self, r, x)

    def statements(self, r, count):
        """`count` random statements: ops, calls and control flow."""
        for _ in range(count):
            self.statement(r)

    def statement(self, r):
        kinds = {"op": (10, None), "call": (2 if self.callees else 0, None),
                 "if": (1, None), "for": (1, None), "while": (1, None),
                 "switch": (1, None)}
        if r.depth >= 3 or self.budget <= 0:
            kinds = {"op": (1, None)}
        kind = self.weighted(kinds)
        self.budget -= 1
        if kind == "op":
            self.elementwise(r)
        elif kind == "call":
            self.call(r)
        elif kind == "if":
            self.scf_if(r)
        elif kind == "for":
            self.scf_for(r)
        elif kind == "while":
            self.scf_while(r)
        else:
            self.index_switch(r)

    def call(self, r, callee=None, results_used=True):
        """func.call of a generated function with operands from scope."""
        callee = callee or self.pick(self.callees)
        args = [self.limit(r, self.operand(r), 2.0).name if t == "$T"
                else self.small_index(r) for t in callee.types]
        names = [self.fresh() for _ in callee.bounds]
        rtypes = ", ".join(["$T"] * len(callee.bounds))
        r.emit(f"{', '.join(names)} = func.call {callee.name}("
               f"{', '.join(args)}) : ({', '.join(callee.types)}) -> "
               f"({rtypes})")
        self.note("call")
        if results_used:
            r.floats += [Value(n, b) for n, b in zip(names, callee.bounds)]
        else:
            self.note("call_unused")

    def small_index(self, r):
        """An index in [0, 5] from scope, or a constant."""
        if r.indices and self.chance(0.8):
            return self.pick(r.indices)
        return self.index(r, self.pick([0, 1, 2, 3]))

    def yields(self, r, count):
        """`count` scalar values to yield from a region: computed there,
        from outside, or constants."""
        scalars = [v for v in r.floats if v.type == "$T"]
        out = []
        for _ in range(count):
            if self.chance(0.1):
                out.append(self.const(r, self.pick([0.5, -1.0]),
                                      Value("", 0)))
            else:
                out.append(self.pick(scalars[-3:] if self.chance(0.7)
                                     else scalars))
        return out

    def scf_if(self, r):
        self.note("scf.if")
        cond = self.condition(r)
        count = self.pick([1, 1, 2])
        types = ", ".join(["$T"] * count)
        branches = []
        for _ in range(2):
            b = r.child()
            self.statements(b, self.rng.randint(0, 3))
            ys = self.yields(b, count)
            b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
            branches.append((b, ys))
        names = [self.fresh() for _ in range(count)]
        r.emit(f"{', '.join(names)} = scf.if {cond} -> ({types}) {{")
        r.lines += branches[0][0].lines
        r.emit("} else {")
        r.lines += branches[1][0].lines
        r.emit("}")
        for i, name in enumerate(names):
            bound = max(branches[0][1][i].bound, branches[1][1][i].bound)
            r.floats.append(Value(name, bound))

    def loop_bounds(self, r):
        """(lower, upper, step) of a loop: static or from an index."""
        lower = self.index(r, self.pick([0, 0, 1]))
        if r.indices and self.chance(0.6):
            upper = self.pick(r.indices)
            self.note("scf.for_dynamic")
        else:
            upper = self.index(r, self.pick([0, 1, 3, 4]))
        step = self.index(r, self.pick([1, 1, 2]))
        return lower, upper, step

    def update(self, r, s):
        """The next value of a loop-carried scalar s, bounded whatever the
        trip count: a contraction towards a bounded expression."""
        e = self.squash(r, self.operand(r))
        form = self.pick(["mix", "squash", "scale"])
        if form == "squash":
            t = self.bin(r, "arith.addf", e, self.limit(r, s, 2.0),
                         e.bound + 2.0)
            return self.squash(r, t)
        if form == "scale":
            return self.bin(r, "arith.mulf", s, self.unit(r, e, 0.9),
                            s.bound)
        a = self.pick([0.5, -0.6, 0.75])
        half = self.bin(r, "arith.mulf", s, self.const(r, a, s),
                        s.bound * abs(a))
        bound = max(s.bound, e.bound / (1 - abs(a)))
        return self.bin(r, "arith.addf", half, e, bound)

    def scf_for(self, r):
        self.note("scf.for")
        lower, upper, step = self.loop_bounds(r)
        inits = [self.limit(r, self.operand(r), 2.0)
                 for _ in range(self.pick([1, 1, 2, 3]))]
        counter = self.chance(0.2)
        iv_type = self.pick(["index"] * 4 + ["i32", "i64"])
        if iv_type != "index":
            self.note("scf.for_" + iv_type)
            lower, upper, step = (self.cast_index(r, v, iv_type)
                                  for v in (lower, upper, step))
        body = r.child()
        iv = self.fresh("%i")
        if iv_type == "index":
            body.indices.append(iv)
        carried = [Value(self.fresh("%s"), 2.0) for _ in inits]
        body.floats += carried
        k = self.fresh("%k") if counter else None
        self.statements(body, self.rng.randint(1, 4))
        nexts = [self.update(body, s) for s in carried]
        bounds = [max(s.bound, n.bound) for s, n in zip(inits, nexts)]
        yielded = [n.name for n in nexts]
        types = ["$T"] * len(inits)
        init_names = [v.name for v in inits]
        arg_names = [v.name for v in carried]
        if counter:
            self.note("scf.for_int_iter_arg")
            k0 = self.fresh()
            r.emit(f"{k0} = arith.constant 0 : i32")
            yielded.append(self.count_up(body, k, carried[0]))
            types.append("i32")
            init_names.append(k0)
            arg_names.append(k)
        names = [self.fresh() for _ in types]
        body.emit(f"scf.yield {', '.join(yielded)} : {', '.join(types)}")
        ivt = f" : {iv_type}" if iv_type != "index" else ""
        iters = ", ".join(f"{a} = {i}" for a, i in zip(arg_names, init_names))
        r.emit(f"{', '.join(names)} = scf.for {iv} = {lower} to {upper} step "
               f"{step} iter_args({iters}) -> ({', '.join(types)}){ivt} {{")
        r.lines += body.lines
        r.emit("}")
        r.floats += [Value(n, b) for n, b in zip(names, bounds)]
        if counter:
            f = self.fresh()
            r.emit(f"{f} = arith.sitofp {names[-1]} : i32 to $T")
            r.floats.append(Value(f, 6.0))

    def cast_index(self, r, value, itype):
        name = self.fresh()
        r.emit(f"{name} = arith.index_cast {value} : index to {itype}")
        return name

    def count_up(self, r, k, s):
        """k + (1 if s > 0 else 0): an integer iter_arg driven by data."""
        zero = self.const(r, 0.0, s)
        cond = self.compare(r, s, zero)
        one, none = self.fresh(), self.fresh()
        r.emit(f"{one} = arith.constant 1 : i32")
        r.emit(f"{none} = arith.constant 0 : i32")
        inc, k2 = self.fresh(), self.fresh()
        r.emit(f"{inc} = arith.select {cond}, {one}, {none} : i32")
        r.emit(f"{k2} = arith.addi {k}, {inc} : i32")
        return k2

    def scf_while(self, r):
        """A while loop counting to an index, or growing a value past a
        limit that depends on the data (at most 12 iterations)."""
        self.note("scf.while")
        counting = bool(r.indices) and self.chance(0.4)
        carried = [self.limit(r, self.operand(r), 2.0)
                   for _ in range(self.pick([1, 2]))]
        guard0 = self.fresh()
        r.emit(f"{guard0} = arith.constant 0 : i32")
        if counting:
            limit_name = self.pick(r.indices)
            self.note("scf.while_counter")
        else:
            self.note("scf.while_data")
            lim = self.bin(r, "arith.addf",
                           self.squash(r, self.operand(r)),
                           self.const(r, 2.5, Value("", 0)), 4.1)
        before = r.child()
        after = r.child()
        g_b, g_a = self.fresh("%m"), self.fresh("%m")
        s_b = [Value(self.fresh("%s"), 2.0) for _ in carried]
        s_a = [Value(self.fresh("%s"), 2.0) for _ in carried]
        max_trips = self.fresh()
        before.emit(f"{max_trips} = arith.constant 12 : i32")
        go = self.fresh()
        if counting:
            ix = self.fresh()
            before.emit(f"{ix} = arith.index_cast {limit_name} : index to i32")
            before.emit(f"{go} = arith.cmpi slt, {g_b}, {ix} : i32")
        else:
            before.floats += s_b
            below = self.fresh()
            before.emit(f"{below} = arith.cmpf olt, {s_b[0].name}, "
                        f"{lim.name} : $T")
            ok = self.fresh()
            before.emit(f"{ok} = arith.cmpi slt, {g_b}, {max_trips} : i32")
            before.emit(f"{go} = arith.andi {below}, {ok} : i1")
        passed = [s.name for s in s_b]
        if len(carried) > 1 and self.chance(0.5):
            self.note("scf.while_condition_work")
            before.floats = before.floats[:len(r.floats)] + s_b
            passed[1] = self.squash(before, s_b[1]).name
        types = ", ".join(["i32"] + ["$T"] * len(carried))
        before.emit(f"scf.condition({go}) {', '.join([g_b] + passed)} : "
                    f"{types}")
        after.floats += s_a
        self.statements(after, self.rng.randint(1, 3))
        nexts = []
        if counting:
            nexts = [self.update(after, s) for s in s_a]
        else:
            step = self.squash(after, self.operand(after))
            inc = self.bin(after, "arith.mulf", step,
                           self.const(after, 0.12, step), 0.2)
            inc = self.bin(after, "arith.addf", inc,
                           self.const(after, 0.3, inc), 0.5)
            nexts.append(self.bin(after, "arith.addf", s_a[0], inc, 0))
            nexts += [self.update(after, s) for s in s_a[1:]]
        one, g2 = self.fresh(), self.fresh()
        after.emit(f"{one} = arith.constant 1 : i32")
        after.emit(f"{g2} = arith.addi {g_a}, {one} : i32")
        after.emit(f"scf.yield {', '.join([g2] + [n.name for n in nexts])} : "
                   f"{types}")
        names = [self.fresh() for _ in range(len(carried) + 1)]
        inits = ", ".join(f"{a} = {i}" for a, i in
                          zip([g_b] + [s.name for s in s_b],
                              [guard0] + [c.name for c in carried]))
        params = ", ".join(f"{a}: {t}" for a, t in
                           zip([g_a] + [s.name for s in s_a],
                               types.split(", ")))
        r.emit(f"{', '.join(names)} = scf.while ({inits}) : ({types}) -> "
               f"({types}) {{")
        r.lines += before.lines
        r.emit("} do {")
        r.emit(f"^bb0({params}):")
        r.lines += after.lines
        r.emit("}")
        bounds = [max(c.bound, 2.0) for c in carried]
        if not counting:
            bounds[0] = 4.1 + 0.5 * 13
        r.floats += [Value(n, b) for n, b in zip(names[1:], bounds)]

    def index_switch(self, r):
        self.note("scf.index_switch")
        if r.indices and self.chance(0.7):
            selector = self.pick(r.indices)
        else:
            scalar = self.limit(r, self.operand(r), 2.0)
            p = self.positive(r, scalar, 0.0)
            i = self.fresh()
            r.emit(f"{i} = arith.fptosi {p.name} : $T to i64")
            selector = self.fresh()
            r.emit(f"{selector} = arith.index_cast {i} : i64 to index")
        cases = sorted(self.rng.sample([0, 1, 2, 3], self.pick([1, 2, 3])))
        count = self.pick([1, 1, 2])
        names = [self.fresh() for _ in range(count)]
        types = ", ".join(["$T"] * count)
        r.emit(f"{', '.join(names)} = scf.index_switch {selector} -> {types}")
        bounds = [0.0] * count
        for case in cases + ["default"]:
            r.emit(f"case {case} {{" if case != "default" else "default {")
            b = r.child()
            if self.chance(0.3):
                ys = self.execute_region(b, count)
            else:
                self.statements(b, self.rng.randint(0, 3))
                ys = self.yields(b, count)
            b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
            r.lines += b.lines
            r.emit("}")
            bounds = [max(x, y.bound) for x, y in zip(bounds, ys)]
        r.floats += [Value(n, b) for n, b in zip(names, bounds)]

    def execute_region(self, r, count):
        self.note("scf.execute_region")
        b = r.child()
        self.statements(b, self.rng.randint(1, 3))
        ys = self.yields(b, count)
        types = ", ".join(["$T"] * count)
        names = [self.fresh() for _ in range(count)]
        r.emit(f"{', '.join(names)} = scf.execute_region -> ({types}) {{")
        b.emit(f"scf.yield {', '.join(y.name for y in ys)} : {types}")
        r.lines += b.lines
        r.emit("}")
        return [Value(n, y.bound) for n, y in zip(names, ys)]

    # -- results ------------------------------------------------------------

    def combine(self, r, values, bound=8.0):
        """A bounded sum of `values` (each limited), the region's result."""
        total = self.limit(r, values[0], bound)
        for v in values[1:]:
            v = self.limit(r, v, bound)
            total = self.bin(r, "arith.addf", total, v, total.bound + v.bound)
        return self.limit(r, total, bound)

    def result_of(self, r, first):
        """The values of r defined since index `first` that nothing used,
        summed: every computed value reaches the result."""
        used = set()
        for line in r.lines:
            operands = re.sub(r"^\s*%[\w, %]+ = ", "", line)
            used.update(re.findall(r"%\w+", operands))
        fresh = [v for v in r.floats[first:]
                 if v.name not in used and v.type == "$T"]
        return self.combine(r, fresh or [self.operand(r)])

    # -- functions ----------------------------------------------------------

    def signature(self, floats, indices):
        """Argument names and types, in a shuffled order."""
        args = ([("%x" + str(i), "$T") for i in range(floats)] +
                [("%n" + str(i), "index") for i in range(indices)])
        self.rng.shuffle(args)
        return args

    def function_region(self, args):
        r = Region(1)
        r.floats = [Value(n, 2.0) for n, t in args if t == "$T"]
        r.indices = [n for n, t in args if t == "index"]
        return r

    def ret(self, r, values):
        """Returns `values` (as a rank-0 tensor from @f when self.rank0)."""
        names = [v.name for v in values]
        types = ["$T"] * len(values)
        if self.rank0:
            t = self.fresh()
            r.emit(f"{t} = tensor.from_elements {names[0]} : tensor<$T>")
            names, types = [t], ["tensor<$T>"]
        r.emit(f"return {', '.join(names)} : {', '.join(types)}")

    def write_function(self, name, args, results, r):
        header = ", ".join(f"{n}: {t}" for n, t in args)
        rtypes = ", ".join(results)
        rtext = f"({rtypes})" if len(results) != 1 else rtypes
        self.functions.append("\n".join(
            [f"func.func {name}({header}) -> {rtext} {{"] + r.lines + ["}"]))

    def helper(self, number):
        """A callable function: straight-line with structured control flow,
        unstructured (cf), or recursive."""
        kind = self.pick(["straight", "straight", "cf", "recursive"])
        name = f"@$Ph{number}"
        if kind == "recursive":
            return self.recursive(name)
        args = self.signature(self.rng.randint(1, 3), self.pick([0, 0, 1]))
        r = self.function_region(args)
        self.budget = 4
        results = []
        if kind == "cf":
            self.note("cf")
            self.cf_body(r, self.rng.randint(1, 3))
            results = [self.result_of(r, 0)]
        else:
            for _ in range(self.pick([1, 1, 2])):
                first = len(r.floats)
                self.statements(r, self.rng.randint(2, 5))
                results.append(self.result_of(r, first))
        self.ret(r, results)
        self.write_function(name, args, ["$T"] * len(results), r)
        return Callee(name, [t for _, t in args], [v.bound for v in results])

    def recursive(self, name):
        """x -> base(x) at depth 0, else combine(x, self(step(x), n - 1));
        sometimes through a second function (mutual recursion), sometimes
        calling itself twice (a tree), sometimes with the depth decided by
        the data (a value halved until below 1)."""
        kind = self.pick(["self", "tree", "mutual", "data"])
        self.note("recursion_" + kind)
        floats = self.rng.randint(1, 2)
        if kind == "data":
            return self.data_recursion(name, floats)
        partner = name + "m" if kind == "mutual" else name
        calls = 2 if kind == "tree" else 1
        self.recursion_step(name, partner, floats, calls, decrement=True)
        if kind == "mutual":
            self.recursion_step(partner, name, floats, 1, decrement=False)
        return Callee(name, ["$T"] * floats + ["index"], [3.0],
                      recursive=True)

    def recursion_step(self, name, target, floats, calls, decrement):
        """One function of a recursion over %n: the base case when n == 0
        (when `decrement`), else calls of `target` on transformed
        arguments, combined with the arguments into a result bounded by 3."""
        args = [(f"%x{i}", "$T") for i in range(floats)] + [("%n", "index")]
        r = self.function_region(args)
        self.budget = 1
        zero = self.index(r, 0)
        one = self.index(r, 1)
        body = r
        if decrement:
            done = self.fresh()
            r.emit(f"{done} = arith.cmpi eq, %n, {zero} : index")
            base = r.child()
            self.statements(base, self.rng.randint(1, 3))
            b = self.combine(base, [base.floats[-1]], 3.0)
            res = self.fresh()
            r.emit(f"{res} = scf.if {done} -> ($T) {{")
            r.lines += base.lines
            r.emit(f"  scf.yield {b.name} : $T")
            r.emit("} else {")
            body = r.child()
        depth = "%n"
        if decrement:
            depth = self.fresh()
            body.emit(f"{depth} = arith.subi %n, {one} : index")
        first = len(body.floats)
        for _ in range(calls):
            self.statements(body, self.rng.randint(1, 2))
            actual = [self.limit(body, self.squash(body, self.operand(body)),
                                 2.0) for _ in range(floats)]
            rec = self.fresh()
            types = ", ".join(["$T"] * floats + ["index"])
            body.emit(f"{rec} = func.call {target}("
                      f"{', '.join([a.name for a in actual] + [depth])}) : "
                      f"({types}) -> $T")
            body.floats.append(Value(rec, 3.0))
        self.statements(body, self.rng.randint(0, 2))
        out = self.result_of(body, first)
        out = self.limit(body, out, 3.0)
        if decrement:
            body.emit(f"scf.yield {out.name} : $T")
            r.lines += body.lines
            r.emit("}")
            r.emit(f"return {res} : $T")
        else:
            r.emit(f"return {out.name} : $T")
        self.write_function(name, args, ["$T"], r)

    def data_recursion(self, name, floats):
        """f(x, y) = base(x) if y < 1 else combine(x, f(step(x), y/2 + c)),
        c < 1/4: the depth is log2 of the first y (the caller passes a
        positive value at most 10)."""
        args = [(f"%x{i}", "$T") for i in range(floats)] + [("%y", "$T")]
        r = Region(1)
        r.floats = [Value(n, 2.0) for n, _ in args[:-1]]
        self.budget = 1
        one = self.const(r, 1.0, Value("", 0))
        low = self.fresh()
        r.emit(f"{low} = arith.cmpf olt, %y, {one.name} : $T")
        base = r.child()
        base.floats.append(Value("%y", 1.0))
        self.statements(base, self.rng.randint(1, 2))
        b = self.combine(base, [base.floats[-1]], 3.0)
        res = self.fresh()
        r.emit(f"{res} = scf.if {low} -> ($T) {{")
        r.lines += base.lines
        r.emit(f"  scf.yield {b.name} : $T")
        r.emit("} else {")
        body = r.child()
        first = len(body.floats)
        self.statements(body, self.rng.randint(1, 2))
        actual = [self.limit(body, self.squash(body, self.operand(body)), 2.0)
                  for _ in range(floats)]
        half = self.bin(body, "arith.mulf", Value("%y", 10.0),
                        self.const(body, 0.5, Value("", 0)), 5.0)
        nudge = self.unit(body, self.operand(body), 0.2)
        y2 = self.bin(body, "arith.addf", half, nudge, 5.2)
        rec = self.fresh()
        types = ", ".join(["$T"] * (floats + 1))
        body.emit(f"{rec} = func.call {name}("
                  f"{', '.join([a.name for a in actual] + [y2.name])}) : "
                  f"({types}) -> $T")
        body.floats.append(Value(rec, 3.0))
        self.statements(body, self.rng.randint(0, 2))
        out = self.limit(body, self.result_of(body, first), 3.0)
        body.emit(f"scf.yield {out.name} : $T")
        r.lines += body.lines
        r.emit("}")
        r.emit(f"return {res} : $T")
        self.write_function(name, args, ["$T"], r)
        # Callers pass floats; the wrapper makes y = 1 + 4.5 sin(x0)^2.
        wrapper = name + "w"
        fargs = ", ".join(f"%a{i}: $T" for i in range(floats))
        self.functions.append("\n".join([
            f"func.func {wrapper}({fargs}) -> $T {{",
            "  %s = math.sin %a0 : $T",
            "  %q = arith.mulf %s, %s : $T",
            "  %c = arith.constant 4.5 : $T",
            "  %one = arith.constant 1.0 : $T",
            "  %p = arith.mulf %q, %c : $T",
            "  %y = arith.addf %p, %one : $T",
            f"  %r = func.call {name}("
            f"{', '.join([f'%a{i}' for i in range(floats)] + ['%y'])}) : "
            f"({types}) -> $T",
            "  return %r : $T",
            "}"]))
        return Callee(wrapper, ["$T"] * floats, [3.0], recursive=True)

    # -- unstructured control flow ------------------------------------------

    def cf_body(self, r, segments):
        """A CFG: straight code, then `segments` of diamonds, block loops,
        switches and early returns, each joining through block arguments."""
        self.statements(r, self.rng.randint(1, 2))
        for _ in range(segments):
            kind = self.pick(["diamond", "loop", "switch", "return"])
            self.note("cf_" + kind)
            getattr(self, "cf_" + kind)(r)

    def block(self, r, label, params=()):
        """Starts block `label` with parameters [(Value, type)]."""
        if params:
            args = ", ".join(f"{v.name}: {t}" for v, t in params)
            r.label(f"{label}({args}):")
        else:
            r.label(f"{label}:")

    def branch_args(self, values):
        if not values:
            return ""
        return (f"({', '.join(v.name for v in values)} : "
                f"{', '.join(['$T'] * len(values))})")

    def cf_diamond(self, r):
        cond = self.condition(r)
        left, right, join = (self.fresh("^bb") for _ in range(3))
        count = self.pick([1, 2])
        r.emit(f"cf.cond_br {cond}, {left}, {right}")
        arms = []
        for label in (left, right):
            arm = r.sibling()
            self.block(arm, label)
            self.statements(arm, self.rng.randint(1, 3))
            ys = self.yields(arm, count)
            arm.emit(f"cf.br {join}{self.branch_args(ys)}")
            r.lines += arm.lines
            arms.append(ys)
        joined = [Value(self.fresh(), max(a.bound, b.bound))
                  for a, b in zip(*arms)]
        self.block(r, join, [(v, "$T") for v in joined])
        r.floats += joined

    def cf_loop(self, r):
        """A block loop over i < upper (and, sometimes, while the first
        carried value stays below a limit)."""
        carried = [self.limit(r, self.operand(r), 2.0)
                   for _ in range(self.pick([1, 2]))]
        zero, one = self.index(r, 0), self.index(r, 1)
        upper = self.small_index(r)
        head, body_label, out = (self.fresh("^bb") for _ in range(3))
        i = self.fresh("%i")
        params = [Value(self.fresh("%s"), 2.0) for _ in carried]
        r.emit(f"cf.br {head}({zero}, "
               f"{', '.join(c.name for c in carried)} : index, "
               f"{', '.join(['$T'] * len(carried))})")
        hd = r.sibling()
        hd.label(f"{head}({i}: index, "
                 f"{', '.join(f'{p.name}: $T' for p in params)}):")
        stop = self.fresh()
        hd.emit(f"{stop} = arith.cmpi sge, {i}, {upper} : index")
        if self.chance(0.4):
            self.note("cf_loop_data_exit")
            lim = self.const(hd, 1.5, Value("", 0))
            high, either = self.fresh(), self.fresh()
            hd.emit(f"{high} = arith.cmpf ogt, {params[0].name}, "
                    f"{lim.name} : $T")
            hd.emit(f"{either} = arith.ori {stop}, {high} : i1")
            stop = either
        hd.emit(f"cf.cond_br {stop}, {out}{self.branch_args(params)}, "
                f"{body_label}")
        r.lines += hd.lines
        body = r.sibling()
        body.floats += params
        body.indices.append(i)
        self.block(body, body_label)
        self.statements(body, self.rng.randint(1, 3))
        nexts = [self.update(body, p) for p in params]
        i1 = self.fresh()
        body.emit(f"{i1} = arith.addi {i}, {one} : index")
        body.emit(f"cf.br {head}({i1}, {', '.join(n.name for n in nexts)} : "
                  f"index, {', '.join(['$T'] * len(nexts))})")
        r.lines += body.lines
        results = [Value(self.fresh(), max(c.bound, n.bound))
                   for c, n in zip(carried, nexts)]
        self.block(r, out, [(v, "$T") for v in results])
        r.floats += results

    def cf_switch(self, r):
        if r.indices and self.chance(0.6):
            sel = self.fresh()
            r.emit(f"{sel} = arith.index_cast {self.pick(r.indices)} : "
                   f"index to i32")
        else:
            x = self.limit(r, self.operand(r), 2.0)
            fl = self.un(r, "math.floor", x, 2.0)
            sel = self.fresh()
            r.emit(f"{sel} = arith.fptosi {fl.name} : $T to i32")
        cases = sorted(self.rng.sample([-1, 0, 1, 2], self.pick([1, 2, 3])))
        labels = [self.fresh("^bb") for _ in range(len(cases) + 1)]
        join = self.fresh("^bb")
        targets = [f"  default: {labels[0]}"] + [
            f"  {c}: {lab}" for c, lab in zip(cases, labels[1:])]
        r.emit(f"cf.switch {sel} : i32, [")
        for k, t in enumerate(targets):
            r.emit(t + ("," if k < len(targets) - 1 else ""))
        r.emit("]")
        arms = []
        for label in labels:
            arm = r.sibling()
            self.block(arm, label)
            self.statements(arm, self.rng.randint(1, 2))
            ys = self.yields(arm, 1)
            arm.emit(f"cf.br {join}{self.branch_args(ys)}")
            r.lines += arm.lines
            arms.append(ys[0])
        joined = Value(self.fresh(), max(a.bound for a in arms))
        self.block(r, join, [(joined, "$T")])
        r.floats.append(joined)

    def cf_return(self, r):
        """An early return on one side of a branch."""
        cond = self.condition(r)
        early, rest = self.fresh("^bb"), self.fresh("^bb")
        r.emit(f"cf.cond_br {cond}, {early}, {rest}")
        arm = r.sibling()
        self.block(arm, early)
        self.statements(arm, self.rng.randint(1, 2))
        self.ret(arm, [self.combine(arm, [self.operand(arm)])])
        r.lines += arm.lines
        self.block(r, rest)

    # -- the differentiated function ----------------------------------------

    def top(self, floats, indices):
        """@f: calls (one callee from several places, an unused call),
        control flow, possibly unstructured; a scalar or rank-0 result."""
        args = self.signature(floats, indices)
        r = self.function_region(args)
        self.budget = 6
        self.rank0 = self.chance(0.3)
        if self.rank0:
            self.note("rank0_result")
        if self.callees and self.chance(0.5):
            self.note("call_unused")
            self.call(r, results_used=False)
        if self.chance(0.25):
            self.note("cf")
            self.cf_body(r, self.rng.randint(1, 3))
        else:
            self.statements(r, self.rng.randint(3, 8))
        for callee in self.callees:
            if callee.recursive or self.chance(0.5):
                for _ in range(self.pick([1, 2])):
                    self.call(r, callee)
        self.ret(r, [self.result_of(r, 0)])
        self.write_function("@$Pf", args,
                            ["tensor<$T>" if self.rank0 else "$T"], r)
        return args, self.rank0


# ---------------------------------------------------------------------------
# Programs and their points
# ---------------------------------------------------------------------------

@dataclass
class Program:
    """One generated program: its functions (placeholders unrendered), the
    signature of @f, how its gradient is asked for, and its points."""
    seed: int
    number: int
    elem: str
    functions: list
    args: list            # [(name, type)] of @f, types '$T' or 'index'
    rank0: bool
    mode: str             # grad | value_and_grad | forward
    wrt: list             # positions of the differentiated arguments
    twice: bool           # forward mode: apply the pullback twice
    points: list          # [[value per argument]]
    features: set = field(default_factory=set)

    @property
    def float_positions(self):
        return [i for i, (_, t) in enumerate(self.args) if t == "$T"]

    def text(self, elem, prefix):
        """The program's functions with the placeholders filled in: `elem`
        for $T (f64 for the reference twin), prefix for @$P."""
        text = "\n\n".join(self.functions)
        text = text.replace("@$P", "@" + prefix).replace("$W", "f64")
        text = text.replace("$T", elem)
        # In the f64 twin of an f32 program, f64 -> f64 conversions are
        # identities.
        return re.sub(r"arith\.(?:extf|truncf) (%\w+) : (\S+) to \2$",
                      r"arith.maximumf \1, \1 : \2", text, flags=re.M)


def generate(seed, number, avoid):
    """Program `number` of `seed`: the same whatever else is generated."""
    rng = random.Random(f"{seed}:{number}")
    elem = rng.choice(["f64", "f64", "f32"])
    g = Generator(rng, elem, avoid)
    for k in range(rng.choice([0, 1, 1, 2, 3])):
        g.callees.append(g.helper(k))
    floats, indices = rng.randint(1, 3), rng.choice([0, 1, 1, 2])
    args, rank0 = g.top(floats, indices)
    positions = [i for i, (_, t) in enumerate(args) if t == "$T"]
    wrt = positions
    if len(positions) > 1 and rng.random() < 0.25:
        wrt = sorted(rng.sample(positions, rng.randint(1, len(positions) - 1)))
    mode = rng.choice(["grad", "grad", "value_and_grad", "forward"])
    points = []
    for _ in range(2):
        point = []
        for _, t in args:
            if t == "index":
                point.append(rng.randint(0, 4))
            else:
                x = rng.uniform(-1.8, 1.8)
                if elem == "f32":
                    x = float(struct.unpack("f", struct.pack("f", x))[0])
                point.append(x)
        points.append(point)
    features = set(g.features) | {mode, elem}
    if wrt != positions:
        features.add("wrt")
    return Program(seed, number, elem, g.functions, args, rank0, mode, wrt,
                   mode == "forward" and rng.random() < 0.5, points, features)


# ---------------------------------------------------------------------------
# Modules: the AD module (gradients) and the reference module (primal only)
# ---------------------------------------------------------------------------

def print_bits(lines, tag, value, elem):
    """Lines printing `tag <bits>` for a scalar of type elem."""
    wide = value
    if elem != "f64":
        wide = value + "_w"
        lines.append(f"  {wide} = arith.extf {value} : {elem} to f64")
    lines += [f"  {value}_b = arith.bitcast {wide} : f64 to i64",
              f'  vector.print str "{tag} "',
              f"  vector.print {value}_b : i64"]


def print_result(lines, tag, value, rank0, elem):
    """Prints a result of @f (a scalar or a rank-0 tensor)."""
    if rank0:
        lines.append(f"  {value}_e = tensor.extract {value}[] : "
                     f"tensor<{elem}>")
        value += "_e"
    print_bits(lines, tag, value, elem)


def ad_function(p, prefix):
    """@<prefix>run(args): prints the plain call, then the gradients (and
    primal, for value_and_grad and forward) of @f."""
    e = p.elem
    args = [(n, t.replace("$T", e)) for n, t in p.args]
    header = ", ".join(f"{n}: {t}" for n, t in args)
    names = ", ".join(n for n, _ in args)
    types = ", ".join(t for _, t in args)
    rtype = f"tensor<{e}>" if p.rank0 else e
    gtypes = ", ".join(args[i][1] for i in p.wrt)
    grads = [f"%g{i}" for i in p.wrt]
    wrt = ""
    if p.wrt != p.float_positions:
        wrt = f" {{wrt = array<i64: {', '.join(map(str, p.wrt))}>}}"
    f = f"@{prefix}f"
    lines = [f"func.func @{prefix}run({header}) {{",
             f"  %v = func.call {f}({names}) : ({types}) -> {rtype}"]
    print_result(lines, "v", "%v", p.rank0, e)
    if p.mode == "grad":
        lines.append(f"  {', '.join(grads)} = ad.grad {f}({names}){wrt} : "
                     f"({types}) -> ({gtypes})")
    elif p.mode == "value_and_grad":
        lines.append(f"  %y, {', '.join(grads)} = ad.value_and_grad "
                     f"{f}({names}){wrt} : ({types}) -> ({rtype}, {gtypes})")
        print_result(lines, "y", "%y", p.rank0, e)
    else:
        pb = f"!ad.pullback<({rtype}) -> ({gtypes})>"
        lines.append(f"  %y, %pb = ad.forward {f}({names}){wrt} : "
                     f"({types}) -> ({rtype}, {pb})")
        print_result(lines, "y", "%y", p.rank0, e)
        lines.append(f"  %dy0 = arith.constant 2.0 : {e}")
        dy = "%dy0"
        if p.rank0:
            lines.append(f"  %dy = tensor.from_elements %dy0 : {rtype}")
            dy = "%dy"
        lines.append(f"  {', '.join(grads)} = ad.pullback %pb({dy}) : {pb}")
        if p.twice:
            again = [f"%q{i}" for i in p.wrt]
            lines.append(f"  {', '.join(again)} = ad.pullback %pb({dy}) : "
                         f"{pb}")
            for i in p.wrt:
                print_bits(lines, f"q{i}", f"%q{i}", e)
    for i in p.wrt:
        print_bits(lines, f"g{i}", f"%g{i}", e)
    lines += ["  return", "}"]
    return "\n".join(lines)


def constants(lines, name, point, args, elem):
    """Constants for one call of a wrapper; returns their names."""
    names = []
    for k, ((_, t), x) in enumerate(zip(args, point)):
        c = f"%{name}_{k}"
        if t == "index":
            lines.append(f"  {c} = arith.constant {x} : index")
        else:
            lines.append(f"  {c} = arith.constant {flit(x)} : {elem}")
        names.append(c)
    return names


def ad_module(programs):
    """The module computing every program's gradients at its points."""
    parts, main = [], ["func.func @main() {"]
    for p in programs:
        prefix = f"p{p.number}_"
        parts += [p.text(p.elem, prefix), ad_function(p, prefix)]
        types = ", ".join(t.replace("$T", p.elem) for _, t in p.args)
        for j, point in enumerate(p.points):
            names = constants(main, f"a{p.number}_{j}", point, p.args, p.elem)
            main += [f'  vector.print str "B {p.number} {j}\\n"',
                     f"  func.call @{prefix}run({', '.join(names)}) "
                     f"{{no_inline}} : ({types}) -> ()",
                     f'  vector.print str "E {p.number} {j}\\n"']
    main += ["  return", "}"]
    return "\n\n".join(parts + ["\n".join(main)]) + "\n"


def perturbations(p, point):
    """The evaluation points of the reference: the point itself, then for
    each differentiated argument x + h, x - h, x + h/4, x - h/4."""
    out = [list(point)]
    for i in p.wrt:
        h = STEP * max(1.0, abs(point[i]))
        for delta in (h, -h, h / 4, -h / 4):
            q = list(point)
            q[i] = point[i] + delta
            out.append(q)
    return out


def reference_module(programs):
    """The module evaluating each program's f64 twin at the points the
    finite differences need (no ad op: upstream lowering only)."""
    parts, main = [], ["func.func @main() {"]
    for p in programs:
        prefix = f"p{p.number}_"
        args = [(n, t.replace("$T", "f64")) for n, t in p.args]
        header = ", ".join(f"{n}: {t}" for n, t in args)
        names = ", ".join(n for n, _ in args)
        types = ", ".join(t for _, t in args)
        rtype = "tensor<f64>" if p.rank0 else "f64"
        lines = [f"func.func @{prefix}eval({header}) {{",
                 f"  %v = func.call @{prefix}f({names}) : ({types}) -> "
                 f"{rtype}"]
        print_result(lines, "=", "%v", p.rank0, "f64")
        lines += ["  return", "}"]
        parts += [p.text("f64", prefix), "\n".join(lines)]
        for j, point in enumerate(p.points):
            for m, q in enumerate(perturbations(p, point)):
                cn = constants(main, f"r{p.number}_{j}_{m}", q, p.args, "f64")
                main += [f'  vector.print str "{p.number} {j} {m} "',
                         f"  func.call @{prefix}eval({', '.join(cn)}) "
                         f"{{no_inline}} : ({types}) -> ()"]
    main += ["  return", "}"]
    return "\n\n".join(parts + ["\n".join(main)]) + "\n"


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

@dataclass
class Run:
    """The result of lowering a module with ad-opt and running it."""
    stage: str            # "ad-opt" or "runner" when it failed, else "ok"
    returncode: int
    stdout: str
    stderr: str


def run_module(text, ad_opt, workdir):
    """Lowers `text` with ad-opt --ad-lower-to-llvm and runs main."""
    lowered = lower(text, ad_opt, workdir)
    if lowered.returncode != 0:
        return Run("ad-opt", lowered.returncode, lowered.stdout,
                   lowered.stderr)
    ran = run_tool([os.path.join(LLVM_BIN, "mlir-runner"), "-e", "main",
                    "-entry-point-result=void",
                    "-shared-libs=" + RUNTIME_LIBS], lowered.stdout)
    return Run("ok" if ran.returncode == 0 else "runner", ran.returncode,
               ran.stdout, ran.stderr)


def lower(text, ad_opt, workdir):
    """ad-opt --ad-lower-to-llvm on `text` (a completed process)."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", dir=workdir,
                                     delete=False) as f:
        f.write(text)
    try:
        return run_tool([ad_opt, f.name, "--ad-lower-to-llvm"], None)
    finally:
        os.unlink(f.name)


def run_tool(command, stdin):
    """Runs a tool; a timeout is reported as return code -1000. Retries
    for a while if the tool is missing (build/ is being rebuilt)."""
    for attempt in range(60):
        if os.path.exists(command[0]):
            break
        time.sleep(5)
    try:
        return subprocess.run(command, input=stdin, capture_output=True,
                              text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(command, -1000, e.stdout or "",
                                           "timeout")


def classify_ad_opt(run):
    """The outcome of an ad-opt failure and its message."""
    message = first_error(run.stderr)
    if run.returncode == -1000:
        return CRASH, "timeout"
    if run.returncode < 0 or re.search(
            r"Assertion|Stack dump|PLEASE submit|Segmentation|LLVM ERROR",
            run.stderr):
        return CRASH, message
    if re.search(r"failed to verify|verification failed|does not dominate"
                 r"|operand #\d+ does not", run.stderr):
        return INVALID_IR, message
    return DIAGNOSTIC, message


def first_error(stderr):
    """The first error line of a tool's stderr (for the summary)."""
    for line in stderr.splitlines():
        if "error" in line.lower() or "Assertion" in line:
            return line.strip()[:300]
    return stderr.strip().splitlines()[0][:300] if stderr.strip() else ""


def bits_to_float(text):
    return struct.unpack("<d", struct.pack("<q", int(text)))[0]


def parse_ad_output(stdout):
    """{(program, point): {tag: value}}; points that began but did not end
    are absent. Also returns the (program, point) that began last without
    ending, if any."""
    results, current, values = {}, None, {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "B":
            current, values = (int(parts[1]), int(parts[2])), {}
        elif len(parts) == 3 and parts[0] == "E":
            results[current] = values
            current = None
        elif len(parts) == 2 and current is not None:
            values[parts[0]] = bits_to_float(parts[1])
    return results, current


def parse_reference_output(stdout):
    """{(program, point, evaluation): value}."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[3] == "=":
            out[(int(parts[0]), int(parts[1]), int(parts[2]))] = \
                bits_to_float(parts[4])
    return out


# ---------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------

@dataclass
class Outcome:
    """What happened to one program: its class, the points checked and
    skipped, and details for the report."""
    program: Program
    kind: str = OK
    checked: int = 0
    skipped: int = 0
    details: list = field(default_factory=list)

    def fail(self, kind, detail):
        """Records a failure; the worst one names the outcome."""
        if self.kind not in FAILURES or \
                FAILURES.index(kind) < FAILURES.index(self.kind):
            self.kind = kind
        self.details.append(detail)


def close(a, b, tol):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1.0)


def central(fp, fm, xp, xm):
    """(f(xp) - f(xm)) / (xp - xm) with the exact step."""
    return (fp - fm) / float(Fraction(xp) - Fraction(xm))


def check(p, ad, ref):
    """Compares one program's AD output with its reference evaluations."""
    out = Outcome(p)
    tol = TOLERANCE[p.elem]
    for j, point in enumerate(p.points):
        values = ad.get((p.number, j))
        center = ref.get((p.number, j, 0))
        if values is None or center is None:
            out.fail(RUNNER_FAILURE, f"point {j}: no output")
            continue
        v = values["v"]
        if not math.isfinite(center) or not math.isfinite(v):
            out.skipped += 1
            continue
        if p.elem == "f64" and v != center:
            out.fail(WRONG_PRIMAL, f"point {j}: plain call {v!r} in the AD "
                     f"module, {center!r} in the reference module")
        if "y" in values and not close(values["y"], v,
                                       PRIMAL_TOLERANCE[p.elem]):
            out.fail(WRONG_PRIMAL, f"point {j}: {p.mode} primal "
                     f"{values['y']!r}, plain call {v!r}")
        evaluations = perturbations(p, point)
        for k, i in enumerate(p.wrt):
            g = values[f"g{i}"] / (2.0 if p.mode == "forward" else 1.0)
            if p.twice and values[f"q{i}"] != values[f"g{i}"]:
                out.fail(WRONG_GRADIENT, f"point {j} d{p.args[i][0]}: "
                         f"pullback applied twice gives "
                         f"{values[f'q{i}']!r}, then {values[f'g{i}']!r}")
            fs = [ref.get((p.number, j, 1 + 4 * k + m)) for m in range(4)]
            xs = [evaluations[1 + 4 * k + m][i] for m in range(4)]
            verdict = compare_gradient(g, fs, xs, tol, p.elem)
            name = f"point {j} ({format_point(p, point)}) d{p.args[i][0]}"
            if verdict is None:
                out.skipped += 1
            elif verdict:
                out.fail(WRONG_GRADIENT, f"{name}: {verdict}")
            else:
                out.checked += 1
    if out.kind == OK and out.checked == 0:
        out.kind = SKIPPED
    return out


def compare_gradient(g, fs, xs, tol, elem):
    """None to skip, '' when g matches the finite differences, else why
    not."""
    if any(f is None or not math.isfinite(f) for f in fs):
        return None
    if not math.isfinite(g):
        return f"gradient {g!r} where the function is finite"
    fd1 = central(fs[0], fs[1], xs[0], xs[1])
    fd2 = central(fs[2], fs[3], xs[2], xs[3])
    scale = max(abs(fd2), FLOOR)
    if abs(fd1 - fd2) > SKIP_TOLERANCE[elem] * scale:
        return None
    reference = fd2 + (fd2 - fd1) / 15
    if abs(g - reference) <= tol * max(abs(reference), FLOOR):
        return ""
    return f"expected {reference!r} (finite differences), got {g!r}"


def format_point(p, point):
    return ", ".join(f"{n} = {x!r}" for (n, _), x in zip(p.args, point))


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------

class Runner:
    """Runs batches of programs, isolating failures."""

    def __init__(self, ad_opt, workdir):
        self.ad_opt = ad_opt
        self.workdir = workdir

    def batch(self, programs):
        """Outcomes of `programs`, one per program."""
        ref = run_module(reference_module(programs), self.ad_opt,
                         self.workdir)
        if ref.stage == "ok":
            return self.gradients(programs,
                                  parse_reference_output(ref.stdout))
        if len(programs) == 1:
            o = Outcome(programs[0])
            o.fail(REFERENCE_FAILURE, f"{ref.stage}: {first_error(ref.stderr)}")
            return [o]
        return [o for p in programs for o in self.batch([p])]

    def gradients(self, programs, reference):
        """Runs the AD module of `programs` and checks it against the
        reference evaluations."""
        ad = run_module(ad_module(programs), self.ad_opt, self.workdir)
        if ad.stage == "ad-opt":
            return self.after_ad_opt_failure(programs, ad, reference)
        results, unfinished = parse_ad_output(ad.stdout)
        if ad.stage == "runner":
            return self.after_runner_failure(programs, ad, results,
                                             unfinished, reference)
        return [check(p, results, reference) for p in programs]

    def after_ad_opt_failure(self, programs, ad, reference):
        """Alone, the program failed; in a batch, each program is lowered
        alone and those that lower run again together."""
        if len(programs) == 1:
            o = Outcome(programs[0])
            o.fail(*classify_ad_opt(ad))
            return [o]
        outcomes, good = [], []
        for p in programs:
            alone = lower(ad_module([p]), self.ad_opt, self.workdir)
            if alone.returncode == 0:
                good.append(p)
            else:
                o = Outcome(p)
                o.fail(*classify_ad_opt(alone))
                outcomes.append(o)
        if len(good) == len(programs):
            return [o for p in programs
                    for o in self.gradients([p], reference)]
        return outcomes + (self.gradients(good, reference) if good else [])

    def after_runner_failure(self, programs, ad, results, unfinished,
                             reference):
        """Programs that finished are checked. Alone, a program that did
        not finish failed; in a batch, the one running when the runner died
        runs again alone, and so do the others (as a batch when the culprit
        is known, one by one when it is not)."""
        if len(programs) == 1:
            o = Outcome(programs[0])
            o.fail(RUNNER_FAILURE, f"exit {ad.returncode}: "
                   f"{first_error(ad.stderr)}")
            return [o]
        outcomes, rest = [], []
        for p in programs:
            if all((p.number, j) in results for j in range(len(p.points))):
                outcomes.append(check(p, results, reference))
            elif unfinished and p.number == unfinished[0]:
                outcomes += self.gradients([p], reference)
            else:
                rest.append(p)
        if rest and unfinished:
            outcomes += self.gradients(rest, reference)
        else:
            outcomes += [o for p in rest
                         for o in self.gradients([p], reference)]
        return outcomes


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------

def keep(outcome, directory):
    """Writes a failing program, with what went wrong, to `directory`."""
    p = outcome.program
    name = f"seed{p.seed}-{p.number}-{outcome.kind.split()[-1].lower()}.mlir"
    header = [f"// utils/fuzz_gradients.py --seed {p.seed}: program "
              f"{p.number} ({p.elem}), {outcome.kind}",
              "// features: " + ", ".join(sorted(p.features))]
    header += ["// " + line for d in outcome.details
               for line in d.splitlines()]
    header += ["// points: " + "; ".join(format_point(p, pt)
                                         for pt in p.points),
               "// RUN: ad-opt %s --ad-lower-to-llvm | %run", ""]
    with open(os.path.join(directory, name), "w") as f:
        f.write("\n".join(header) + ad_module([p]))


def summarize(outcomes, elapsed):
    """The summary text; returns (text, number of failures)."""
    counts = {}
    for o in outcomes:
        counts[o.kind] = counts.get(o.kind, 0) + 1
    checked = sum(o.checked for o in outcomes)
    skipped = sum(o.skipped for o in outcomes)
    failures = sum(counts.get(k, 0) for k in FAILURES)
    lines = [f"programs: {len(outcomes)} in {elapsed:.0f} s",
             f"points checked: {checked} (gradients compared), skipped: "
             f"{skipped}",
             f"ok: {counts.get(OK, 0)}, all points skipped: "
             f"{counts.get(SKIPPED, 0)}"]
    for kind in FAILURES:
        if counts.get(kind):
            lines.append(f"{kind}: {counts[kind]}")
    for o in outcomes:
        if o.kind in FAILURES:
            lines.append(f"  program {o.program.number} ({o.program.elem}, "
                         f"{o.program.mode}): {o.kind}: {o.details[0]}")
    return "\n".join(lines), failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--first", type=int, default=0,
                        help="number of the first program")
    parser.add_argument("--batch", type=int, default=20,
                        help="programs per module")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--keep-dir")
    parser.add_argument("--build-dir", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "build"))
    parser.add_argument("--avoid", action="append", default=[],
                        choices=sorted(KNOWN_BUGS),
                        help="do not generate constructs that trigger this "
                        "known bug")
    parser.add_argument("--print", type=int, metavar="N",
                        help="print program N's AD module and exit")
    args = parser.parse_args()
    avoid = set(args.avoid)
    if args.print is not None:
        sys.stdout.write(ad_module([generate(args.seed, args.print, avoid)]))
        return 0
    start = time.time()
    ad_opt = os.path.join(args.build_dir, "bin", "ad-opt")
    numbers = range(args.first, args.first + args.count)
    programs = [generate(args.seed, n, avoid) for n in numbers]
    batches = [programs[k:k + args.batch]
               for k in range(0, len(programs), args.batch)]
    with tempfile.TemporaryDirectory() as workdir:
        runner = Runner(ad_opt, workdir)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            outcomes = [o for result in pool.map(runner.batch, batches)
                        for o in result]
    outcomes.sort(key=lambda o: o.program.number)
    if args.keep_dir:
        os.makedirs(args.keep_dir, exist_ok=True)
        for o in outcomes:
            if o.kind in FAILURES:
                keep(o, args.keep_dir)
    text, failures = summarize(outcomes, time.time() - start)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
